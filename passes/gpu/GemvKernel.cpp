//===- GemvKernel.cpp - decode's projection as a warp-per-column GEMV -----===//

#include "passes/gpu/GemvKernel.h"
#include "passes/common/Builders.h"
#include "passes/gpu/KernelBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace mlir::tlm {

namespace {

constexpr int64_t kWarp = 32;

bool isF32Buffer(Value v) {
  auto t = dyn_cast<MemRefType>(v.getType());
  return t && t.getElementType().isF32();
}

bool unstrided(Value v) {
  return cast<MemRefType>(v.getType()).getLayout().isIdentity();
}

/// `v` summed over the 32 lanes of the warp (butterfly: every lane ends
/// with the total).
Value warpSum(OpBuilder &b, Location loc, Value v) {
  for (int32_t offset = kWarp / 2; offset > 0; offset /= 2) {
    Value other = gpu::ShuffleOp::create(b, loc, v, offset, kWarp,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    v = arith::AddFOp::create(b, loc, v, other);
  }
  return v;
}

} // namespace

bool gemvApplies(const GemvProblem &p) {
  return isF32Buffer(p.x) && isF32Buffer(p.w) && isF32Buffer(p.out) &&
         !ShapedType::isDynamic(p.n) && !ShapedType::isDynamic(p.k);
}

void buildGemvLaunch(OpBuilder &b, Location loc, const GemvProblem &p,
                     int64_t maxRows, int64_t warps) {
  OpBuilder::InsertionGuard guard(b);
  // Every row of x and w starts 16-byte aligned when k is a multiple of 4
  // and the buffers are whole allocations (the driver's are 256-aligned).
  int64_t vec = p.k % 4 == 0 && unstrided(p.x) && unstrided(p.w) ? 4 : 1;
  Type f32 = b.getF32Type();
  Type accType = vec == 1 ? f32 : Type(VectorType::get({vec}, f32));

  Value c1 = index(b, loc, 1);
  Value blocks = index(b, loc, llvm::divideCeil(p.n, warps));
  gpu::LaunchOp launch = makeLaunch(b, loc, {blocks, c1, c1},
                                    {index(b, loc, kWarp),
                                     index(b, loc, warps), c1});
  gpu::KernelDim3 block = launch.getBlockIds(), thread = launch.getThreadIds();
  Value lane = thread.x;
  Value col = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, block.x, index(b, loc, warps)),
      thread.y);
  // A warp past the last column has nothing to do; the condition is the
  // same for all its lanes, so the shuffles below still see a full warp.
  auto colOk = scf::IfOp::create(b, loc, lessThan(b, loc, col, index(b, loc, p.n)));
  b.setInsertionPointToStart(colOk.thenBlock());

  SmallVector<Value> rowOk;
  SmallVector<SmallVector<Value>> rowIdx;
  for (int64_t r = 0; r < maxRows; ++r) {
    Value rv = index(b, loc, r);
    rowOk.push_back(lessThan(b, loc, rv, p.rows));
    rowIdx.push_back(delinearize(b, loc, rv, p.rowSizes));
  }
  auto load = [&](OpBuilder &ob, Value memref, ValueRange idx) -> Value {
    if (vec == 1)
      return memref::LoadOp::create(ob, loc, memref, idx);
    return vector::LoadOp::create(ob, loc, cast<VectorType>(accType), memref,
                                  idx, /*nontemporal=*/false,
                                  llvm::MaybeAlign(16));
  };

  // Lane l reads k = l·vec, l·vec + 32·vec, ...: a warp reads 32·vec
  // consecutive floats of w's row at each step.
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(accType));
  SmallVector<Value> inits(maxRows, zero);
  Value start = arith::MulIOp::create(b, loc, lane, index(b, loc, vec));
  auto kLoop = scf::ForOp::create(b, loc, start, index(b, loc, p.k),
                                  index(b, loc, kWarp * vec), inits);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(kLoop.getBody());
    Value kk = kLoop.getInductionVar();
    Value wv = load(b, p.w, {col, kk});
    SmallVector<Value> next;
    for (int64_t r = 0; r < maxRows; ++r) {
      Value acc = kLoop.getRegionIterArgs()[r];
      auto step = scf::IfOp::create(
          b, loc, rowOk[r],
          [&](OpBuilder &nb, Location nl) {
            SmallVector<Value> idx(rowIdx[r]);
            idx.push_back(kk);
            Value xv = load(nb, p.x, idx);
            scf::YieldOp::create(
                nb, nl, math::FmaOp::create(nb, nl, xv, wv, acc).getResult());
          },
          [&](OpBuilder &nb, Location nl) {
            scf::YieldOp::create(nb, nl, acc);
          });
      next.push_back(step.getResult(0));
    }
    scf::YieldOp::create(b, loc, next);
  }

  Value lane0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                      index(b, loc, 0));
  for (int64_t r = 0; r < maxRows; ++r) {
    Value partial = kLoop.getResult(r);
    if (vec > 1)
      partial = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD,
                                            partial);
    Value total = warpSum(b, loc, partial);
    auto store = scf::IfOp::create(
        b, loc, arith::AndIOp::create(b, loc, lane0, rowOk[r]));
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(store.thenBlock());
    SmallVector<Value> outIdx(rowIdx[r]);
    outIdx.push_back(col);
    Value old = memref::LoadOp::create(b, loc, p.out, outIdx);
    memref::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, old, total),
                            p.out, outIdx);
  }
}

} // namespace mlir::tlm
