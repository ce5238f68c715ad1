//===- tlm-opt.cpp - mlir-opt with the tlm dialect and passes -------------===//
//
// Runs any pass pipeline on .mlir files, the way mlir-opt does, with the tlm
// dialect, the tlm passes and the tlm pipelines registered beside every
// upstream dialect, pass and LLVM-IR translation.
//
//===----------------------------------------------------------------------===//

#include "dialect/TlmDialect.h"
#include "passes/pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::tlm::registerTlmPassesAndPipelines();

  mlir::DialectRegistry registry;
  registry.insert<mlir::tlm::TlmDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // Needed by gpu-module-to-binary and by anything that translates to LLVM IR.
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::tlm::registerPipelineInterfaces(registry);

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tlm optimizer driver\n", registry));
}
