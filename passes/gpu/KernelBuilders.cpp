//===- KernelBuilders.cpp - builders of the hand-shaped GPU kernels -------===//

#include "passes/gpu/KernelBuilders.h"
#include "passes/common/Builders.h"
#include "passes/gpu/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace mlir::tlm {

namespace {
struct BarrierEffects
    : public MemoryEffectOpInterface::ExternalModel<BarrierEffects,
                                                    gpu::BarrierOp> {
  void
  getEffects(Operation *,
             SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
                 &effects) const {
    effects.emplace_back(MemoryEffects::Read::get());
    effects.emplace_back(MemoryEffects::Write::get());
  }
};
} // namespace

void registerGpuInterfaces(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, gpu::GPUDialect *) {
    gpu::BarrierOp::attachInterface<BarrierEffects>(*ctx);
  });
}

Value product(OpBuilder &b, Location loc, ArrayRef<Value> sizes) {
  Value p = index(b, loc, 1);
  for (Value s : sizes)
    p = arith::MulIOp::create(b, loc, p, s);
  return p;
}

Value lessThan(OpBuilder &b, Location loc, Value a, Value c) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, a, c);
}

SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value flat,
                               ArrayRef<Value> sizes) {
  SmallVector<Value> idx(sizes.size());
  for (int64_t i = int64_t(sizes.size()) - 1; i > 0; --i) {
    idx[i] = arith::RemUIOp::create(b, loc, flat, sizes[i]);
    flat = arith::DivUIOp::create(b, loc, flat, sizes[i]);
  }
  if (!sizes.empty())
    idx[0] = flat;
  return idx;
}

Value blocksFor(OpBuilder &b, Location loc, Value rows, int64_t span) {
  return arith::DivUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, rows, index(b, loc, span - 1)),
      index(b, loc, span));
}

MemRefType workgroupF32(MLIRContext *ctx, ArrayRef<int64_t> shape) {
  return MemRefType::get(
      shape, Float32Type::get(ctx), MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
}

gpu::LaunchOp makeLaunch(OpBuilder &b, Location loc, std::array<Value, 3> grid,
                         std::array<Value, 3> block, TypeRange workgroup) {
  auto launch = gpu::LaunchOp::create(
      b, loc, grid[0], grid[1], grid[2], block[0], block[1], block[2],
      /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/ValueRange(), workgroup);
  Block &body = launch.getBody().front();
  b.setInsertionPointToEnd(&body);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&body);
  return launch;
}

namespace {
template <typename Combine>
Value warpReduce(OpBuilder &b, Location loc, Value v) {
  for (int32_t offset = kWarp / 2; offset > 0; offset /= 2) {
    Value other =
        gpu::ShuffleOp::create(b, loc, v, offset, kWarp, gpu::ShuffleMode::XOR)
            .getShuffleResult();
    v = Combine::create(b, loc, v, other);
  }
  return v;
}
} // namespace

Value warpSum(OpBuilder &b, Location loc, Value v) {
  return warpReduce<arith::AddFOp>(b, loc, v);
}

Value warpMax(OpBuilder &b, Location loc, Value v) {
  return warpReduce<arith::MaximumFOp>(b, loc, v);
}

Value guardedLoad(OpBuilder &b, Location loc, Value cond, Value memref,
                  ValueRange indices, Value zero) {
  auto ifOp = scf::IfOp::create(
      b, loc, cond,
      [&](OpBuilder &nb, Location nl) {
        Value v = memref::LoadOp::create(nb, nl, memref, indices);
        if (v.getType() != zero.getType())
          v = arith::ExtFOp::create(nb, nl, zero.getType(), v);
        scf::YieldOp::create(nb, nl, v);
      },
      [&](OpBuilder &nb, Location nl) { scf::YieldOp::create(nb, nl, zero); });
  return ifOp.getResult(0);
}

} // namespace mlir::tlm
