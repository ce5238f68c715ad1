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
#include "passes/cpu/Tiling.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using mlir::tlm::dimsMapOf;
using mlir::tlm::tiling::joinDims;
using mlir::tlm::tiling::splitLastDim;

namespace {

/// Rows [row, row + rows) of the 2-D `v`, all its columns.
Value rowsOf(OpBuilder &b, Location loc, Value v, Value row, int64_t rows) {
  int64_t cols = cast<RankedTensorType>(v.getType()).getDimSize(1);
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({rows, cols}, getElementTypeOrSelf(v)), v,
      ValueRange{row}, ValueRange{}, ValueRange{},
      ArrayRef<int64_t>{ShapedType::kDynamic, 0}, ArrayRef<int64_t>{rows, cols},
      ArrayRef<int64_t>{1, 1});
}

/// `v` at `index` of its dim `dim`, which is dropped.
Value sliceAt(OpBuilder &b, Location loc, Value v, int64_t dim,
              int64_t index) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), sizes,
      strides(rank, b.getIndexAttr(1));
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    sizes.push_back(tensor::getMixedSize(b, loc, v, i));
    if (i != dim)
      shape.push_back(type.getDimSize(i));
  }
  offsets[dim] = b.getIndexAttr(index);
  sizes[dim] = b.getIndexAttr(1);
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), v, offsets,
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

bool tlm::readsQ4(linalg::LinalgOp op) {
  std::optional<QuantizedRows> rows = matchQuantizedRows(op.getDpsInputs()[1]);
  return rows && rows->codes.bits == 4;
}

Value tlm::q4Offsets(OpBuilder &b, Location loc, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank(), k = type.getShape().back();
  constexpr int64_t half = kQuantBlock / 2;
  Value halves = splitLastDim(b, loc, x, {k / kQuantBlock, 2, half});
  // Loops (r.., kb, l) over x's two halves (r.., kb, l) and the result.
  unsigned loops = unsigned(rank) + 1;
  AffineMap id = b.getMultiDimIdentityMap(loops);
  SmallVector<OpFoldResult> shape =
      tensor::getMixedSizes(b, loc, x); // the rows may be dynamic
  shape.back() = b.getIndexAttr(k / kQuantBlock);
  shape.push_back(b.getIndexAttr(half));
  Value init = tensor::EmptyOp::create(b, loc, shape, b.getF32Type());
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()},
      ValueRange{sliceAt(b, loc, halves, rank, 0),
                 sliceAt(b, loc, halves, rank, 1)},
      ValueRange{init}, SmallVector<AffineMap>(3, id),
      SmallVector<utils::IteratorType>(loops, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value minus8 =
            arith::ConstantOp::create(nb, nl, nb.getF32FloatAttr(-8.0f));
        Value sum = arith::AddFOp::create(nb, nl, a[0], a[1]);
        linalg::YieldOp::create(
            nb, nl, ValueRange{arith::MulFOp::create(nb, nl, sum, minus8)});
      });
  SmallVector<ReassociationIndices> groups;
  for (int64_t i = 0; i + 1 < rank; ++i)
    groups.push_back({i});
  groups.push_back({rank - 1, rank});
  return tensor::CollapseShapeOp::create(b, loc, generic.getResult(0), groups);
}

namespace {

/// The rows of codes a part reads, and how a row's blocks are laid out.
struct QuantizedBlocks {
  tlm::Dequantized d;
  Value row; ///< the part's first row of the codes
  int64_t cols, j, lanes, chains;
  SmallVector<int64_t> blockDims;

  QuantizedBlocks(const tlm::Dequantized &d, Value row, int64_t cols, int64_t k,
                  int64_t lanes, int64_t chains)
      : d(d), row(row), cols(cols), j(codesPerBlock(d) / lanes), lanes(lanes),
        chains(chains) {
    int64_t blocks = k / tlm::kQuantBlock;
    assert(blocks % chains == 0 && "chains divide the blocks");
    // The blocks of a row as (kb, u): `chains` consecutive blocks u per step
    // of kb; without chains the u dim is left out.
    blockDims.push_back(blocks / chains);
    if (chains > 1)
      blockDims.push_back(chains);
  }

  /// `blockDims` followed by `tail`.
  SmallVector<int64_t> withBlocks(ArrayRef<int64_t> tail) const {
    SmallVector<int64_t> v(blockDims);
    v.append(tail.begin(), tail.end());
    return v;
  }
};

/// The generic's inputs: x's vectors, the codes', the scales, the offsets'.
struct PartInputs {
  SmallVector<Value> values;
  size_t nx;      ///< x's vectors, first in `values`
  size_t perCode; ///< x's vectors per vector of codes: x's halves
  bool offset;    ///< q4_0 with the offsets
};

/// The generic's loops (r.., c, kb, [u], l).
struct PartLoops {
  SmallVector<unsigned> rows, u;
  unsigned c, kb, l, count;

  PartLoops(unsigned nRows, int64_t chains)
      : rows(llvm::to_vector(llvm::seq<unsigned>(0, nRows))), c(nRows),
        kb(nRows + 1) {
    if (chains > 1)
      u.push_back(nRows + 2);
    l = kb + 1 + u.size();
    count = l + 1;
  }
};

} // namespace

/// Slice jj < j of each of `tensors` at its dim before the lanes.
static SmallVector<Value> vectorsOf(OpBuilder &b, Location loc,
                                    ArrayRef<Value> tensors, int64_t j) {
  SmallVector<Value> vectors;
  for (int64_t jj = 0; jj < j; ++jj)
    for (Value t : tensors) {
      int64_t rank = cast<RankedTensorType>(t.getType()).getRank();
      vectors.push_back(sliceAt(b, loc, t, rank - 2, jj));
    }
  return vectors;
}

/// x as (r.., blocks.., j, lanes): once for q8_0, twice for q4_0.
static SmallVector<Value> xHalves(OpBuilder &b, Location loc, Value x,
                                  const QuantizedBlocks &q) {
  // q4_0's low nibbles multiply the block's first 16 x, the high ones the
  // last 16.
  if (q.d.bits == 4) {
    Value split = splitLastDim(b, loc, x, q.withBlocks({2, q.j, q.lanes}));
    int64_t rank = cast<RankedTensorType>(split.getType()).getRank();
    return {sliceAt(b, loc, split, rank - 3, 0),
            sliceAt(b, loc, split, rank - 3, 1)};
  }
  return {splitLastDim(b, loc, x, q.withBlocks({q.j, q.lanes}))};
}

/// Slices the part's codes, scales, x and offsets into the generic's inputs.
static PartInputs partInputs(OpBuilder &b, Location loc, Value x, Value offsets,
                             const QuantizedBlocks &q) {
  // Each of a block's j vectors of codes, and of x the vectors they
  // multiply: x[jj] for q8_0, x[half][jj] for q4_0.
  Value codes = splitLastDim(b, loc, rowsOf(b, loc, q.d.values, q.row, q.cols),
                             q.withBlocks({q.j, q.lanes}));
  Value scales = rowsOf(b, loc, q.d.scales, q.row, q.cols);
  if (q.chains > 1)
    scales = splitLastDim(b, loc, scales, q.blockDims);
  SmallVector<Value> halves = xHalves(b, loc, x, q);
  PartInputs in;
  in.values = vectorsOf(b, loc, halves, q.j);
  in.nx = in.values.size();
  in.perCode = halves.size();
  in.values.append(vectorsOf(b, loc, {codes}, q.j));
  in.values.push_back(scales);
  // q4_0 with the offsets: each j's -8·(x_lo + x_hi), laid out as a half.
  in.offset = offsets && q.d.bits == 4;
  if (in.offset) {
    Value split = splitLastDim(b, loc, offsets, q.withBlocks({q.j, q.lanes}));
    in.values.append(vectorsOf(b, loc, {split}, q.j));
  }
  return in;
}

/// The generic's maps: one per input of `in`, then the part's.
static SmallVector<AffineMap> partMaps(MLIRContext *ctx, const PartLoops &loops,
                                       int64_t j, const PartInputs &in) {
  unsigned c = loops.c, kbDim = loops.kb, l = loops.l, count = loops.count;
  ArrayRef<unsigned> rowDims = loops.rows, u = loops.u;
  SmallVector<AffineMap> maps;
  for (size_t i = 0; i < in.nx; ++i)
    maps.push_back(dimsMapOf(ctx, count, joinDims({rowDims, {kbDim}, u, {l}})));
  for (int64_t jj = 0; jj < j; ++jj)
    maps.push_back(dimsMapOf(ctx, count, joinDims({{c, kbDim}, u, {l}})));
  maps.push_back(dimsMapOf(ctx, count, joinDims({{c, kbDim}, u})));
  if (in.offset)
    for (int64_t jj = 0; jj < j; ++jj)
      maps.push_back(
          dimsMapOf(ctx, count, joinDims({rowDims, {kbDim}, u, {l}})));
  maps.push_back(dimsMapOf(ctx, count, joinDims({rowDims, {c}, u, {l}})));
  return maps;
}

/// The generic's payload: the part plus one block's scaled Σ x · code.
static void partPayload(OpBuilder &nb, Location nl, ValueRange a,
                        const QuantizedBlocks &q, const PartInputs &in) {
  auto fmf = arith::FastMathFlagsAttr::get(nb.getContext(),
                                           arith::FastMathFlags::contract);
  size_t nx = in.nx, j = size_t(q.j);
  // Σ x · code over the block's vectors, then times the block's
  // scale: one multiply per block and lane instead of one per code.
  // (x · code · scale rounds differently from tlm.dequantize's
  // x · (code · scale); both are within the f32 tolerance.) With the
  // offsets, a q4_0 block is x_lo · lo + x_hi · hi - 8·(x_lo + x_hi)
  // on the nibbles as they are: two FMAs where re-centring each
  // nibble took two subtractions and a multiply more.
  Value sum;
  for (size_t i = 0; i < nx; ++i) {
    size_t jj = i / in.perCode;
    Value w =
        tlm::codesToF32(nb, nl, a[nx + jj], q.d.bits,
                        /*high=*/i % in.perCode == 1, /*centred=*/!in.offset);
    Value m = arith::MulFOp::create(nb, nl, a[i], w, fmf);
    if (in.offset && i % in.perCode == 0)
      m = arith::AddFOp::create(nb, nl, m, a[nx + j + 1 + jj], fmf);
    sum = sum ? arith::AddFOp::create(nb, nl, sum, m, fmf).getResult() : m;
  }
  Value scale = a[nx + j];
  Value scaled = arith::MulFOp::create(nb, nl, sum, scale, fmf);
  linalg::YieldOp::create(
      nb, nl, ValueRange{arith::AddFOp::create(nb, nl, a.back(), scaled, fmf)});
}

linalg::GenericOp tlm::quantizedPart(OpBuilder &b, linalg::LinalgOp op,
                                     const ProjectionDims &p, int64_t lanes,
                                     int64_t chains, Value part, Value offsets,
                                     int64_t prefetchBytes) {
  Location loc = op.getLoc();
  std::optional<std::pair<Dequantized, Value>> rows =
      quantizedRows(b, loc, op.getDpsInputs()[1]);
  assert(rows && "quantizedSteps said the codes are there");
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  QuantizedBlocks q(rows->first, rows->second, ranges[p.n], ranges[p.k], lanes,
                    chains);
  if (prefetchBytes > 0)
    tiling::prefetchRowsAhead(b, loc, q.d.values, q.row, q.cols, prefetchBytes);

  PartInputs in = partInputs(b, loc, op.getDpsInputs()[0], offsets, q);
  PartLoops loops(p.rows.size(), chains);
  SmallVector<utils::IteratorType> iters(loops.count,
                                         utils::IteratorType::parallel);
  iters[loops.kb] = utils::IteratorType::reduction;
  return linalg::GenericOp::create(
      b, loc, TypeRange{part.getType()}, in.values, ValueRange{part},
      partMaps(b.getContext(), loops, q.j, in), iters,
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        partPayload(nb, nl, a, q, in);
      });
}
