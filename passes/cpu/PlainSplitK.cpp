//===- PlainSplitK.cpp - split-k GEMV blocks on f32 / bf16 / f16 ----------===//

#include "passes/cpu/PlainSplitK.h"
#include "passes/common/Builders.h"
#include "passes/cpu/Tiling.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using mlir::tlm::tiling::joinDims;
using mlir::tlm::tiling::splitLastDim;

linalg::GenericOp tlm::plainPart(OpBuilder &b, linalg::LinalgOp op,
                                 const ProjectionDims &p, int64_t lanes,
                                 int64_t chains, Value part) {
  MLIRContext *ctx = op->getContext();
  Location loc = op.getLoc();
  unsigned nRows = p.rows.size();
  unsigned c = nRows, kb = nRows + 1;
  SmallVector<unsigned> u;
  if (chains > 1)
    u.push_back(nRows + 2);
  unsigned l = kb + 1 + u.size(), loops = l + 1;
  SmallVector<unsigned> rows = llvm::to_vector(llvm::seq<unsigned>(0, nRows));
  int64_t k = op.getStaticLoopRanges()[p.k];
  SmallVector<int64_t> kDims{k / (chains * lanes)};
  if (chains > 1)
    kDims.push_back(chains);
  kDims.push_back(lanes);
  Value x = splitLastDim(b, loc, op.getDpsInputs()[0], kDims);
  Value w = splitLastDim(b, loc, op.getDpsInputs()[1], kDims);
  SmallVector<AffineMap> maps{
      dimsMapOf(ctx, loops, joinDims({rows, {kb}, u, {l}})),
      dimsMapOf(ctx, loops, joinDims({{c, kb}, u, {l}})),
      dimsMapOf(ctx, loops, joinDims({rows, {c}, u, {l}}))};
  SmallVector<utils::IteratorType> iters(loops,
                                         utils::IteratorType::parallel);
  iters[kb] = utils::IteratorType::reduction;
  // `contract` lets LLVM fuse the multiply-add into one FMA.
  auto fmf =
      arith::FastMathFlagsAttr::get(ctx, arith::FastMathFlags::contract);
  return linalg::GenericOp::create(
      b, loc, TypeRange{part.getType()}, ValueRange{x, w},
      ValueRange{part}, maps, iters,
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        // A bf16 / f16 W widens in registers, after its narrow load.
        Value m = arith::MulFOp::create(nb, nl, a[0],
                                        widenToF32(nb, nl, a[1]), fmf);
        linalg::YieldOp::create(
            nb, nl, ValueRange{arith::AddFOp::create(nb, nl, a[2], m, fmf)});
      });
}
