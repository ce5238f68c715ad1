//===- CudaRuntimeTest.cpp - the GPU runtime with and without a driver ----===//
//
// tlm loads the CUDA driver at run time. Without one (CI), every GPU entry
// point must fail with one clear message and leave the process healthy; the
// GPU pipeline and the JIT of its host code must still work up to the point
// where the driver is needed. With a driver, a GPU session must reproduce
// the CPU's logits.
//
//===----------------------------------------------------------------------===//

#include "lib/runtime/cuda/CudaRuntime.h"
#include "lib/compiler/Builder.h"
#include "lib/model/Weights.h"
#include "lib/compiler/Jit.h"
#include "lib/runtime/Session.h"
#include "passes/pipelines/Pipelines.h"

#include "mlir/IR/MLIRContext.h"

#include <cstdlib>

#include <gtest/gtest.h>

using namespace tlm;

namespace {

model::Config tinyConfig() {
  model::Config c;
  c.vocabSize = 64;
  c.contextLength = 16;
  c.dModel = 32;
  c.numLayers = 2;
  c.numHeads = 4;
  c.numKvHeads = 2;
  c.dFF = 64;
  return c;
}

TEST(CudaRuntime, ProbeNamesTheMissingLibrary) {
  Error err = runtime::cuda::probeLibrary("libtlm-no-such-driver.so.1");
  ASSERT_TRUE(bool(err));
  std::string message = err.message();
  EXPECT_NE(message.find("no CUDA driver"), std::string::npos) << message;
  EXPECT_NE(message.find("libtlm-no-such-driver.so.1"), std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
}

TEST(CudaRuntime, WithoutADriverEveryEntryFailsCleanly) {
  Error available = runtime::cuda::available();
  if (!available)
    GTEST_SKIP() << "a GPU answers here: "
                 << runtime::cuda::deviceDescription();
  std::string why = available.message();
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;

  auto buffer = runtime::cuda::allocate(1024);
  ASSERT_FALSE(bool(buffer));
  EXPECT_EQ(buffer.takeError().message(), why);

  // The host code's mgpu* calls return nothing usable and record why; the
  // error is reported once.
  void *alloc = nullptr;
  for (auto [name, address] : runtime::cuda::mgpuSymbols())
    if (std::string(name) == "mgpuMemAlloc")
      alloc = address;
  ASSERT_NE(alloc, nullptr);
  using MemAlloc = void *(*)(uint64_t, void *, bool);
  EXPECT_EQ(reinterpret_cast<MemAlloc>(alloc)(256, nullptr, false), nullptr);
  Error sticky = runtime::cuda::takeError();
  ASSERT_TRUE(bool(sticky));
  EXPECT_EQ(sticky.message(), why);
  EXPECT_FALSE(bool(runtime::cuda::takeError()));

  // A GPU session stops before compiling, with the same message.
  runtime::JitOptions jit;
  jit.target = runtime::Target::Cuda;
  auto session = runtime::Session::compile(tinyConfig(), {}, jit);
  ASSERT_FALSE(bool(session));
  EXPECT_EQ(session.takeError().message(), why);
}

mlir::OwningOpRef<mlir::ModuleOp> buildModel(mlir::MLIRContext &context,
                                             const model::Config &c) {
  context.loadAllAvailableDialects();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(mlir::UnknownLoc::get(&context));
  model::addGenerationFunctions(*module, c);
  return module;
}

TEST(CudaRuntime, MissingLibdeviceIsNamed) {
  // The kernels need libdevice; a toolkit folder without it is reported as
  // such, before any PTX is made.
  const char *saved = std::getenv("CUDA_HOME");
  std::string savedValue = saved ? saved : "";
  ::setenv("CUDA_HOME", "/nonexistent/tlm-cuda-toolkit", 1);
  mlir::DialectRegistry registry;
  runtime::registerAll(registry);
  mlir::MLIRContext context(registry);
  runtime::JitOptions options;
  options.target = runtime::Target::Cuda;
  auto jit = runtime::Jit::compile(buildModel(context, tinyConfig()), options);
  if (saved)
    ::setenv("CUDA_HOME", savedValue.c_str(), 1);
  else
    ::unsetenv("CUDA_HOME");
  ASSERT_FALSE(bool(jit));
  std::string message = llvm::toString(jit.takeError());
  EXPECT_NE(message.find("needs CUDA's libdevice"), std::string::npos)
      << message;
  EXPECT_NE(message.find("set CUDA_HOME"), std::string::npos) << message;
}

TEST(CudaRuntime, GpuModelCompilesAndRunsWhereADriverAnswers) {
  if (mlir::tlm::findLibdevice().empty())
    GTEST_SKIP() << "no CUDA libdevice (set CUDA_HOME)";
  model::Config c = tinyConfig();
  mlir::DialectRegistry registry;
  runtime::registerAll(registry);
  mlir::MLIRContext context(registry);
  runtime::JitOptions options;
  options.target = runtime::Target::Cuda;
  auto jit = runtime::Jit::compile(buildModel(context, c), options);

  if (Error none = runtime::cuda::available()) {
    // Pipeline, PTX, translation and the mgpu* symbols all went through:
    // only loading the kernels into the (absent) driver failed.
    ASSERT_FALSE(bool(jit));
    std::string message = llvm::toString(jit.takeError());
    EXPECT_EQ(message, "loading the GPU kernels failed: " + none.message());
    return;
  }
  ASSERT_TRUE(bool(jit)) << llvm::toString(jit.takeError());

  // With a GPU: prefill then decode on both targets, same logits.
  auto weights = model::Weights::init(c, 3, model::InitScheme::Module);
  ASSERT_TRUE(bool(weights)) << weights.takeError().message();
  std::vector<std::vector<float>> logits(2);
  for (int t = 0; t < 2; ++t) {
    runtime::JitOptions jit;
    jit.target = t ? runtime::Target::Cuda : runtime::Target::Cpu;
    auto s = runtime::Session::create(c, weights->pointers(), {}, jit);
    ASSERT_TRUE(bool(s)) << s.takeError().message();
    std::vector<int64_t> ids = {1, 5, 9, 13, 2};
    std::vector<float> prefill(ids.size() * c.vocabSize), step(c.vocabSize);
    ASSERT_FALSE(bool((*s)->step(ids.data(), ids.size(), prefill.data())));
    int64_t next = 7;
    ASSERT_FALSE(bool((*s)->step(&next, 1, step.data())));
    logits[t] = prefill;
    logits[t].insert(logits[t].end(), step.begin(), step.end());
  }
  for (size_t i = 0; i < logits[0].size(); ++i)
    ASSERT_NEAR(logits[1][i], logits[0][i],
                1e-4 + 1e-3 * std::abs(logits[0][i]))
        << "logit " << i;
}

} // namespace
