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

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext &ctx = context();
  mlir::ScopedDiagnosticHandler quiet(
      &ctx, [](mlir::Diagnostic &) { return mlir::success(); });
  // MLIR's lexer reads up to a terminating NUL, as every file buffer has;
  // libFuzzer's bytes have none.
  std::string text(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &ctx);
  if (!module || !onlyTlmPrograms(*module))
    return 0;
  mlir::PassManager pm(&ctx);
  mlir::tlm::buildCpuPipeline(pm);
  (void)pm.run(*module);
  return 0;
}
