//===- DedupKernels.cpp - tlm-gpu-dedup-kernels ---------------------------===//
//
// Outlined kernels that print the same are one kernel: the duplicates go and
// their launches call the one kept.
//
//===----------------------------------------------------------------------===//

#include "passes/gpu/Passes.h"

#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "tlm-gpu-dedup-kernels"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMGPUDEDUPKERNELS
#include "passes/gpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;
using namespace mlir::tlm;

namespace {

struct TlmGpuDedupKernels
    : public tlm::impl::TlmGpuDedupKernelsBase<TlmGpuDedupKernels> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<StringAttr> keptByContents;
    DenseMap<StringAttr, StringAttr> replacement;
    SmallVector<gpu::GPUModuleOp> duplicates;
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>()) {
      // The contents with names local to each op, so that identical
      // kernels print identically whatever surrounds them.
      std::string contents;
      llvm::raw_string_ostream os(contents);
      for (Operation &op : gpuModule.getBody()->getOperations())
        op.print(os, OpPrintingFlags().useLocalScope());
      for (NamedAttribute attr : gpuModule->getAttrs())
        if (attr.getName() != SymbolTable::getSymbolAttrName())
          os << attr.getName() << "=" << attr.getValue() << ";";
      auto [it, inserted] =
          keptByContents.try_emplace(contents, gpuModule.getSymNameAttr());
      if (inserted)
        continue;
      replacement[gpuModule.getSymNameAttr()] = it->second;
      duplicates.push_back(gpuModule);
    }
    if (duplicates.empty())
      return;
    module.walk([&](gpu::LaunchFuncOp launch) {
      SymbolRefAttr kernel = launch.getKernel();
      auto it = replacement.find(kernel.getRootReference());
      if (it != replacement.end())
        launch.setKernelAttr(
            SymbolRefAttr::get(it->second, kernel.getNestedReferences()));
    });
    for (gpu::GPUModuleOp gpuModule : duplicates)
      gpuModule.erase();
  }
};

} // namespace
