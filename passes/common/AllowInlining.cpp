//===- AllowInlining.cpp - tlm-allow-inlining -----------------------------===//
//
// Drops the no-inline marks the model builder puts on the per-layer function,
// for pipelines that want one function per entry (the GPU pipeline).
//
//===----------------------------------------------------------------------===//

#include "passes/common/Passes.h"

#define DEBUG_TYPE "tlm-allow-inlining"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMALLOWINLINING
#include "passes/common/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;

namespace {

struct TlmAllowInlining
    : public tlm::impl::TlmAllowInliningBase<TlmAllowInlining> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      func.setNoInline(false);
      func->removeAttr("passthrough");
    }
  }
};

} // namespace
