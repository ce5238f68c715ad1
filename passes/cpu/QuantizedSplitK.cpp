//===- QuantizedSplitK.cpp - split-k GEMV blocks on q8_0 / q4_0 -----------===//
//
// Decode streams every weight once per token, so its speed is the bytes a
// weight takes: the GEMV blocks read the int8 (or packed 4-bit) codes and
// their block scales where they lie and widen them in registers, instead of
// reading the f32 matrix tlm.dequantize stands for (which the fallback
// lowering would write out at every call).
//
//===----------------------------------------------------------------------===//

#include "passes/cpu/QuantizedSplitK.h"

#include "passes/common/Quantized.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace {

/// `v` with its last dim split into `factors` (their product).
Value splitLastDim(OpBuilder &b, Location loc, Value v,
                   ArrayRef<int64_t> factors) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(type.getShape().drop_back());
  llvm::append_range(shape, factors);
  SmallVector<ReassociationIndices> groups;
  int64_t rank = type.getRank();
  for (int64_t i = 0; i + 1 < rank; ++i)
    groups.push_back({i});
  ReassociationIndices last;
  for (size_t i = 0; i < factors.size(); ++i)
    last.push_back(rank - 1 + int64_t(i));
  groups.push_back(last);
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), v, groups);
}

/// Rows [row, row + rows) of the 2-D `v`, all its columns.
Value rowsOf(OpBuilder &b, Location loc, Value v, Value row, int64_t rows) {
  int64_t cols = cast<RankedTensorType>(v.getType()).getDimSize(1);
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({rows, cols}, getElementTypeOrSelf(v)), v,
      ValueRange{row}, ValueRange{}, ValueRange{},
      ArrayRef<int64_t>{ShapedType::kDynamic, 0}, ArrayRef<int64_t>{rows, cols},
      ArrayRef<int64_t>{1, 1});
}

/// x (r.., kb, 2, j, l) at half `h` of every block: (r.., kb, j, l).
Value halfOf(OpBuilder &b, Location loc, Value x, int64_t h) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank(), halfDim = rank - 3;
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), sizes,
      strides(rank, b.getIndexAttr(1));
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    sizes.push_back(tensor::getMixedSize(b, loc, x, i));
    if (i != halfDim)
      shape.push_back(type.getDimSize(i));
  }
  offsets[halfDim] = b.getIndexAttr(h);
  sizes[halfDim] = b.getIndexAttr(1);
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), x, offsets,
      sizes, strides);
}

} // namespace

namespace {
/// The codes of one block in a row of `d`: all 32 for q8_0, one half (16
/// bytes) for q4_0.
int64_t codesPerBlock(const tlm::Dequantized &d) {
  return d.bits == 8 ? tlm::kQuantBlock : tlm::kQuantBlock / 2;
}
} // namespace

std::optional<int64_t> tlm::quantizedSteps(linalg::LinalgOp op, int64_t lanes) {
  std::optional<QuantizedRows> rows = matchQuantizedRows(op.getDpsInputs()[1]);
  if (!rows)
    return std::nullopt;
  int64_t perBlock = codesPerBlock(rows->codes);
  if (perBlock % lanes != 0)
    return std::nullopt;
  return perBlock / lanes;
}

linalg::GenericOp tlm::quantizedPart(OpBuilder &b, linalg::LinalgOp op,
                                     const ProjectionDims &p, int64_t lanes,
                                     Value part) {
  Location loc = op.getLoc();
  std::optional<std::pair<Dequantized, Value>> rows =
      quantizedRows(b, loc, op.getDpsInputs()[1]);
  assert(rows && "quantizedSteps said the codes are there");
  const Dequantized &d = rows->first;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t cols = ranges[p.n], k = ranges[p.k], kb = k / kQuantBlock,
          j = codesPerBlock(d) / lanes;
  MLIRContext *ctx = b.getContext();

  Value codes = splitLastDim(
      b, loc, rowsOf(b, loc, d.values, rows->second, cols), {kb, j, lanes});
  Value scales = rowsOf(b, loc, d.scales, rows->second, cols);
  Value x = op.getDpsInputs()[0];
  SmallVector<Value> xs;
  if (d.bits == 8) {
    xs.push_back(splitLastDim(b, loc, x, {kb, j, lanes}));
  } else {
    Value halves = splitLastDim(b, loc, x, {kb, 2, j, lanes});
    xs = {halfOf(b, loc, halves, 0), halfOf(b, loc, halves, 1)};
  }

  // Loops (r.., c, kb, j, l).
  unsigned nRows = p.rows.size(), c = nRows, kbDim = nRows + 1,
           jDim = nRows + 2, l = nRows + 3, loops = nRows + 4;
  SmallVector<unsigned> rowDims =
      llvm::to_vector(llvm::seq<unsigned>(0, nRows));
  auto dims = [&](ArrayRef<unsigned> tail) {
    SmallVector<unsigned> v(rowDims);
    v.append(tail.begin(), tail.end());
    return v;
  };
  SmallVector<AffineMap> maps;
  for (size_t i = 0; i < xs.size(); ++i)
    maps.push_back(dimsMapOf(ctx, loops, dims({kbDim, jDim, l})));
  maps.push_back(dimsMapOf(ctx, loops, {c, kbDim, jDim, l}));
  maps.push_back(dimsMapOf(ctx, loops, {c, kbDim}));
  maps.push_back(dimsMapOf(ctx, loops, dims({c, jDim, l})));
  SmallVector<utils::IteratorType> iters(loops, utils::IteratorType::parallel);
  iters[kbDim] = utils::IteratorType::reduction;
  SmallVector<Value> inputs(xs);
  inputs.append({codes, scales});
  auto fmf = arith::FastMathFlagsAttr::get(ctx, arith::FastMathFlags::contract);
  int64_t bits = d.bits;
  size_t nx = xs.size();
  return linalg::GenericOp::create(
      b, loc, TypeRange{part.getType()}, inputs, ValueRange{part}, maps, iters,
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        // w = code · scale, as tlm.dequantize defines it, then x · w; the
        // two halves' products are summed first (the vectorizer takes one
        // combining add of the accumulator).
        Value code = a[nx], scale = a[nx + 1];
        Value sum;
        for (size_t h = 0; h < nx; ++h) {
          Value w = arith::MulFOp::create(
              nb, nl, codesToF32(nb, nl, code, bits, /*high=*/h == 1), scale);
          Value m = arith::MulFOp::create(nb, nl, a[h], w, fmf);
          sum =
              sum ? arith::AddFOp::create(nb, nl, sum, m, fmf).getResult() : m;
        }
        linalg::YieldOp::create(
            nb, nl,
            ValueRange{arith::AddFOp::create(nb, nl, a.back(), sum, fmf)});
      });
}
