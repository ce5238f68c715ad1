//===- JitCuda.cpp - the JIT's CUDA cases ---------------------------------===//
//
// GPU kernels loaded into this process (ExecutionEngine runs the host code,
// whose module constructors hand the kernels to the driver), and cuda
// artifacts: a cubin + PTX fat binary with host code for any CPU, written
// but not loaded. The CPU cases and the shared steps are in Jit.cpp.
//
//===----------------------------------------------------------------------===//

#include "lib/compiler/ArtifactLink.h"
#include "lib/compiler/Jit.h"
#include "lib/compiler/JitSteps.h"
#include "lib/compiler/LlvmError.h"
#include "lib/runtime/cuda/CudaRuntime.h"

#include "passes/pipelines/Pipelines.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Target/TargetMachine.h"

namespace tlm::runtime {
using namespace mlir;
using namespace jit;

llvm::Error Jit::compileGpuHost(ModuleOp module,
                                std::unique_ptr<llvm::TargetMachine> tm,
                                llvm::CodeGenOptLevel level, unsigned optLevel,
                                bool dumpObject) {
  ExecutionEngineOptions engineOptions;
  // `transformer` is a function_ref: the std::function must outlive create().
  std::function<llvm::Error(llvm::Module *)> optimize =
      makeOptimizingTransformer(optLevel, /*sizeLevel=*/0, tm.get());
  engineOptions.transformer = optimize;
  engineOptions.jitCodeGenOptLevel = level;
  engineOptions.enableObjectDump = dumpObject;
  static const llvm::StringRef runnerUtils[] = {TLM_MLIR_C_RUNNER_UTILS};
  engineOptions.sharedLibPaths = runnerUtils;
  auto engine = ExecutionEngine::create(module, engineOptions, std::move(tm));
  if (!engine)
    return engine.takeError();
  engine_ = std::move(*engine);
  // The host code calls mgpu*; they are ours (CudaRuntime.cpp).
  engine_->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap map;
    for (auto [name, address] : cuda::mgpuSymbols())
      map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                             llvm::JITSymbolFlags::Exported};
    return map;
  });
  return llvm::Error::success();
}

llvm::Error
Jit::writeCudaArtifact(ModuleOp module,
                       const llvm::orc::JITTargetMachineBuilder &machine,
                       const JitOptions &options,
                       const ArtifactRequest &request) {
  auto start = std::chrono::steady_clock::now();
  auto llvm = translateFor(module, machine);
  if (!llvm)
    return llvm.takeError();
  if (!llvm->module)
    return llvm::createStringError("translation to LLVM IR failed");
  std::vector<std::string> imports;
  CpuCodegenOptions codegen;
  codegen.optLevel = options.optLevel;
  // The host code is launches and allocations: one part is quick enough.
  codegen.threads = 1;
  auto objects = CpuCode::compileObjects(
      std::move(llvm->module), std::move(llvm->context), machine,
      keysOf(entries_),
      [&](llvm::Module &m) {
        compileWrappersQuickly(m);
        imports = detachCudaRuntime(m);
      },
      codegen);
  if (!objects)
    return llvm::createStringError("compiling the host code failed: " +
                                   llvm::toString(objects.takeError()));
  ArtifactManifest manifest = manifestOf(machine, options, request);
  manifest.target = "cuda";
  manifest.chip = mlir::tlm::GpuPipelineOptions().chip;
  manifest.imports = std::move(imports);
  manifest.threads = 1;
  if (llvm::Error err = linkArtifact(*objects, manifest, machine,
                                     {TLM_ABI_LIBRARY}, request.path))
    return err;
  // Run where a GPU is; written, not loaded, here.
  written_ = std::move(manifest);
  stats_.codegenMs = msSince(start);
  return llvm::Error::success();
}

llvm::Error Jit::compileCuda(ModuleOp module, PassManager &pm,
                             const llvm::orc::JITTargetMachineBuilder &machine,
                             const JitOptions &options, bool dumpObject,
                             const DiagnosticLog &log) {
  auto start = std::chrono::steady_clock::now();
  if (llvm::Error err = lower(module, pm, options, log))
    return err;
  stats_.pipelineMs = msSince(start);
  start = std::chrono::steady_clock::now();
  auto tm = llvm::orc::JITTargetMachineBuilder(machine).createTargetMachine();
  if (!tm)
    return tm.takeError();
  if (llvm::Error err =
          compileGpuHost(module, std::move(*tm), codeGenLevel(options.optLevel),
                         options.optLevel, dumpObject))
    return log.error("JIT compilation failed: " +
                     llvm::toString(std::move(err)));
  if (llvm::Error err = resolveEntries())
    return err;
  // Run the module constructors now (the engine would at the first call):
  // they hand every kernel to the driver, whose PTX compilation belongs
  // to compile time, and whose errors belong here.
  engine_->initialize();
  if (Error err = cuda::takeError())
    return unavailable("loading the GPU kernels failed: " + err.message());
  stats_.codegenMs = msSince(start);
  return llvm::Error::success();
}

} // namespace tlm::runtime
