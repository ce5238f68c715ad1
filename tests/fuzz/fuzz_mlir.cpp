//===- fuzz_mlir.cpp - libFuzzer target over .mlir input ------------------===//
//
// tlm-opt's promise (issue 29, class 5): input the parser and the verifier
// accept never crashes the CPU pipeline. Each input is parsed with the
// dialects tlm-run registers and verified; a module of func, arith and tlm
// ops only (small tlm programs: the pipeline is tlm's, upstream dialects'
// robustness is not ours to fuzz) then goes through buildCpuPipeline.
// Diagnostics are swallowed: a parse error, a verifier error or a pass
// failure is fine, a crash or a sanitizer report is a finding.
//
// The pipeline's options vary too (a SIGFPE at lanes=1 hid from a fuzzer
// that ran the defaults only): an input whose first line is `//opts ...`
// runs with those options (tlm-opt's --tlm-cpu-pipeline='...' syntax, so
// libFuzzer mutates them like the rest), any other with one of kOptionSets
// chosen by its length.
//
// Built by CMake in a sanitizer build with clang (TLM_SANITIZE=address,...):
// build-asan/bin/fuzz_mlir, seeded from tests/Dialect and tests/Pipelines
// by tests/fuzz/run-mlir-fuzz.sh.
//
//===----------------------------------------------------------------------===//

#include "lib/compiler/Jit.h"
#include "passes/pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>

namespace {

mlir::MLIRContext &context() {
  // One context for the whole run: loading every dialect per input would
  // cost more than the input. Threading off: libFuzzer's inputs are serial.
  static mlir::MLIRContext *ctx = [] {
    mlir::DialectRegistry registry;
    tlm::runtime::registerAll(registry);
    auto *c = new mlir::MLIRContext(registry,
                                    mlir::MLIRContext::Threading::DISABLED);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

bool onlyTlmPrograms(mlir::ModuleOp module) {
  bool ours = true;
  module->walk([&](mlir::Operation *op) {
    llvm::StringRef ns = op->getName().getDialectNamespace();
    if (op != module.getOperation() && ns != "tlm" && ns != "func" &&
        ns != "arith")
      ours = false;
  });
  return ours;
}

/// Option sets for inputs that name none: every lane count a target has,
/// one lane, threads, the smallest blocks.
constexpr const char *kOptionSets[] = {
    "",
    "lanes=1",
    "lanes=2",
    "lanes=4",
    "lanes=8",
    "lanes=32",
    "parallel=true threads=3 min-parallel-work=1",
    "attention-block=1 gemv-columns=1",
    "lanes=1 parallel=true threads=2 min-parallel-work=1 attention-block=2",
    // --compute bf16's packed tiles; with lanes=8 the tile pass refuses it.
    "compute=bf16",
    "compute=bf16 parallel=true threads=2 min-parallel-work=1",
    "compute=bf16 lanes=8",
    // --compute int8's quantized tiles (q8_0 inputs), one and two threads.
    "compute=int8",
    "compute=int8 parallel=true threads=2 min-parallel-work=1",
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext &ctx = context();
  mlir::ScopedDiagnosticHandler quiet(
      &ctx, [](mlir::Diagnostic &) { return mlir::success(); });
  // MLIR's lexer reads up to a terminating NUL, as every file buffer has;
  // libFuzzer's bytes have none.
  std::string text(reinterpret_cast<const char *>(data), size);
  std::string optionText = kOptionSets[size % std::size(kOptionSets)];
  if (text.rfind("//opts ", 0) == 0)
    optionText = text.substr(7, text.find('\n') - 7);
  auto options = mlir::tlm::CpuPipelineOptions::createFromString(optionText);
  if (!options)
    return 0;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &ctx);
  if (!module || !onlyTlmPrograms(*module))
    return 0;
  mlir::PassManager pm(&ctx);
  mlir::tlm::buildCpuPipeline(pm, *options);
  (void)pm.run(*module);
  return 0;
}
