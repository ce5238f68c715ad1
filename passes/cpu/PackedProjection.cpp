//===- PackedProjection.cpp - projections over packed panels of W ---------===//
//
// The split-k blocks (x rows · W rows, both read along k) end every block
// with one horizontal sum per output and keep both operands streaming; in
// small.json they ran at about half the FMA peak. Here W's panel of `cols`
// columns is transposed once into a k x cols buffer, so that for every k
// one row of it is `cols / lanes` contiguous vectors; a tile of `rows` rows
// of x then broadcasts x[r, k] against them, `rows * cols / lanes` FMAs per
// k with no reduction at the end (the BLIS micro-kernel shape). The pack
// costs one pass over the panel (16 x 16 vector transposes) per call and
// is skipped when no full row tile exists (decode), where the remaining
// rows stay a plain projection for the GEMV blocks.
//
// The IR is built directly on tensors (vector transfers, tensor.extract,
// scf loops carrying the accumulators as vectors) rather than vectorized
// from linalg: the kernel's shape is fixed and the vectorizer would have to
// be coaxed into broadcasting x across lanes.
//
//===----------------------------------------------------------------------===//

#include "passes/cpu/PackedProjection.h"
#include "passes/cpu/PackedKernel.h"

#include "passes/common/Quantized.h"
#include "dialect/TlmDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/IRMapping.h"

#include <functional>

using namespace mlir;
using mlir::tlm::index;
using namespace mlir::tlm::packed;

namespace {

/// The unit-dim slices that view a (1, ..., 1, rows, cols) tensor as
/// (rows, cols): rank-reducing, so bufferization makes them subviews (a
/// collapse_shape of a column chunk's strided buffer would be copied).
struct Unit {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  RankedTensorType flat;
};
Unit unitView(OpBuilder &b, Location loc, Value v, int64_t keep) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t rank = type.getRank();
  Unit u;
  for (int64_t i = 0; i < rank; ++i) {
    u.offsets.push_back(b.getIndexAttr(0));
    u.sizes.push_back(tensor::getMixedSize(b, loc, v, i));
    u.strides.push_back(b.getIndexAttr(1));
  }
  u.flat = RankedTensorType::get(type.getShape().take_back(keep),
                                 type.getElementType());
  return u;
}
/// `v` without its leading unit dims: its last `keep` dims.
Value flatten(OpBuilder &b, Location loc, Value v, int64_t keep = 2) {
  if (cast<RankedTensorType>(v.getType()).getRank() == keep)
    return v;
  Unit u = unitView(b, loc, v, keep);
  return tensor::ExtractSliceOp::create(b, loc, u.flat, v, u.offsets, u.sizes,
                                        u.strides);
}

/// The tensor that holds W's rows [row, row + cols) and the first of them in
/// it: W itself, or when W is (a slice of) a concatenation, the part the
/// panel lies in (packedMismatch checked that no panel straddles two).
std::pair<Value, Value> panelSource(OpBuilder &b, Location loc, Value w,
                                    Value row) {
  std::optional<tlm::ConcatRows> rows = tlm::concatRows(w);
  if (!rows)
    return {w, row};
  Value abs = row;
  for (OpFoldResult offset : rows->rowOffsets)
    abs = arith::AddIOp::create(
        b, loc, abs, getValueOrCreateConstantIndexOp(b, loc, offset));
  OperandRange parts = rows->concat.getInputs();
  int64_t k = cast<RankedTensorType>(w.getType()).getDimSize(1);
  auto anyRows = RankedTensorType::get(
      {ShapedType::kDynamic, k},
      cast<RankedTensorType>(w.getType()).getElementType());
  auto asAny = [&](Value part) -> Value {
    return part.getType() == anyRows
               ? part
               : tensor::CastOp::create(b, loc, anyRows, part).getResult();
  };
  // Quantized parts: the choice is between their codes and scales, and the
  // source their dequantization (which the readers look through).
  SmallVector<std::optional<tlm::Dequantized>> codes;
  for (Value part : parts)
    codes.push_back(tlm::matchDequantized(part));
  bool quantized = llvm::all_of(codes, [&](const auto &c) {
    return c && c->bits == codes.front()->bits;
  });
  auto dynRows = [&](Value v) -> Value {
    auto type = cast<RankedTensorType>(v.getType());
    auto any = RankedTensorType::get({ShapedType::kDynamic, type.getDimSize(1)},
                                     type.getElementType());
    return type == any ? v : tensor::CastOp::create(b, loc, any, v).getResult();
  };
  Value source = asAny(parts[0]), start = index(b, loc, 0);
  Value values = quantized ? dynRows(codes[0]->values) : Value();
  Value scales = quantized ? dynRows(codes[0]->scales) : Value();
  int64_t partStart = 0;
  for (size_t i = 1; i < parts.size(); ++i) {
    partStart += cast<RankedTensorType>(parts[i - 1].getType()).getDimSize(0);
    Value here = index(b, loc, partStart);
    Value inPart =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, abs, here);
    if (quantized) {
      values = arith::SelectOp::create(b, loc, inPart,
                                       dynRows(codes[i]->values), values);
      scales = arith::SelectOp::create(b, loc, inPart,
                                       dynRows(codes[i]->scales), scales);
    } else {
      source = arith::SelectOp::create(b, loc, inPart, asAny(parts[i]), source);
    }
    start = arith::SelectOp::create(b, loc, inPart, here, start);
  }
  if (quantized)
    source = tlm::buildDequantize(
        b, loc, tlm::Dequantized{values, scales, codes[0]->bits}, anyRows);
  return {source, arith::SubIOp::create(b, loc, abs, start)};
}

} // namespace

namespace mlir::tlm::packed {

/// The lanes x lanes block of W at (row, kb) as f32: widened from bf16 /
/// f16, or dequantized from the codes W is read through (each block lies in
/// one quantization block: packedMismatch checked that lanes divides a
/// block's codes).
static Value readBlock(OpBuilder &b, Location loc, Value w, Value row, Value kb,
                       VectorType blockType) {
  SmallVector<bool> inBounds{true, true};
  std::optional<std::pair<tlm::Dequantized, Value>> rows =
      tlm::quantizedRows(b, loc, w);
  if (!rows) {
    Type wElem = cast<ShapedType>(w.getType()).getElementType();
    Value wPad =
        arith::ConstantOp::create(b, loc, wElem, b.getFloatAttr(wElem, 0.0));
    return tlm::widenToF32(
        b, loc,
        vector::TransferReadOp::create(b, loc, blockType.clone(wElem), w,
                                       ValueRange{row, kb}, wPad, inBounds));
  }
  const tlm::Dequantized &d = rows->first;
  row = arith::AddIOp::create(b, loc, row, rows->second);
  int64_t lanes = blockType.getDimSize(0);
  Value codePad = arith::ConstantOp::create(b, loc, b.getI8IntegerAttr(0));
  auto codesAt = [&](Value col) {
    return vector::TransferReadOp::create(
        b, loc, blockType.clone(b.getI8Type()), d.values, ValueRange{row, col},
        codePad, inBounds);
  };
  Value qBlock = arith::DivUIOp::create(b, loc, kb, index(b, loc, kQuantBlock));
  Value block;
  if (d.bits == 8) {
    block = tlm::codesToF32(b, loc, codesAt(kb), 8, false);
  } else {
    // Byte (kb / 32) · 16 + kb % 16, its high nibbles in a block's second
    // half.
    constexpr int64_t half = kQuantBlock / 2;
    Value inBlock =
        arith::RemUIOp::create(b, loc, kb, index(b, loc, kQuantBlock));
    Value col = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, qBlock, index(b, loc, half)),
        arith::RemUIOp::create(b, loc, inBlock, index(b, loc, half)));
    Value codes = codesAt(col);
    Value high = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                       inBlock, index(b, loc, half));
    block = arith::SelectOp::create(b, loc, high,
                                    tlm::codesToF32(b, loc, codes, 4, true),
                                    tlm::codesToF32(b, loc, codes, 4, false));
  }
  // Row i's scale along its row: the column of scales (row.., kb / 32).
  Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  MLIRContext *ctx = b.getContext();
  Value column = vector::TransferReadOp::create(
      b, loc, VectorType::get({lanes}, b.getF32Type()), d.scales,
      ValueRange{row, qBlock}, pad,
      AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx),
      ArrayRef<bool>{true});
  Value scales = vector::BroadcastOp::create(
      b, loc, blockType,
      vector::ShapeCastOp::create(
          b, loc, VectorType::get({lanes, 1}, b.getF32Type()), column));
  return arith::MulFOp::create(b, loc, block, scales);
}

Value packBuffer(OpBuilder &b, Location loc, int64_t k, const PackedShape &s) {
  // int8: rows [0, k / 4) the codes as i32 quads (lane j: 4 bytes of column
  // j along k, each code + 128 as an unsigned byte), rows
  // [k / 4, k / 4 + k / 32) each block's scales as f32 bits.
  if (s.int8)
    return tensor::EmptyOp::create(
        b, loc, ArrayRef<int64_t>{k / 4 + k / kQuantBlock, s.cols},
        b.getI32Type());
  if (s.bf16)
    return tensor::EmptyOp::create(b, loc,
                                   ArrayRef<int64_t>{k / 2, 2 * s.cols},
                                   b.getBF16Type());
  return tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{k, s.cols},
                                 b.getF32Type());
}

Value kernelInput(OpBuilder &b, Location loc, Value x, Value rows,
                  Value gain, const PackedShape &s) {
  if (s.int8)
    return quantizeRows(b, loc, x, rows, gain,
                        cast<RankedTensorType>(x.getType()).getDimSize(1));
  if (!s.bf16)
    return x;
  MLIRContext *ctx = b.getContext();
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  x = tensor::ExtractSliceOp::create(
      b, loc, x, ArrayRef<OpFoldResult>{zero, zero},
      ArrayRef<OpFoldResult>{rows, tensor::getMixedSize(b, loc, x, 1)},
      ArrayRef<OpFoldResult>{one, one});
  Value init = tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, x),
                                       b.getBF16Type());
  SmallVector<AffineMap> maps(2, tlm::dimsMapOf(ctx, 2, {0, 1}));
  SmallVector<utils::IteratorType> iters(2, utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{x},
             ValueRange{init}, maps, iters,
             [&](OpBuilder &nb, Location nl, ValueRange a) {
               linalg::YieldOp::create(
                   nb, nl,
                   ValueRange{arith::TruncFOp::create(nb, nl, nb.getBF16Type(),
                                                      a[0])});
             })
      .getResult(0);
}

/// Transposes the panel's rows (`rowsOf` each block of `lanes` columns),
/// all of k, into `buf` (k x cols), one lanes x lanes block at a time (a
/// loop, not unrolled: each 16 x 16 transpose is 64 shuffles of code, and
/// LLVM's time grows with it).
Value pack(OpBuilder &b, Location loc, const PanelRows &rowsOf, Value buf,
           int64_t k, const tlm::PackedShape &s, Value gain) {
  // int8's gain (a folded norm) multiplies x as it is quantized instead.
  if (s.int8)
    return packCodes(b, loc, rowsOf, buf, k, s);
  auto blockType = VectorType::get({s.lanes, s.lanes}, b.getF32Type());
  Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  SmallVector<bool> inBounds{true, true};
  Value c0 = index(b, loc, 0), step = index(b, loc, s.lanes);
  auto cols = scf::ForOp::create(
      b, loc, c0, index(b, loc, s.cols), step, ValueRange{buf},
      [&](OpBuilder &cb, Location cl, Value c, ValueRange outer) {
        std::pair<Value, Value> rows = rowsOf(cb, cl, c);
        Value w = rows.first, row = rows.second;
        auto ks = scf::ForOp::create(
            cb, cl, c0, index(cb, cl, k), step, ValueRange{outer[0]},
            [&](OpBuilder &nb, Location nl, Value kb, ValueRange it) {
              // A bf16 / f16 W is widened here, once per panel (a quantized
              // one dequantized): the kernel reads f32 from the packed
              // buffer.
              Value block = readBlock(nb, nl, w, row, kb, blockType);
              if (gain) {
                // W[c, k] · gain[k]: every row of the block times the gain.
                Value g = vector::TransferReadOp::create(
                    nb, nl, VectorType::get({s.lanes}, nb.getF32Type()), gain,
                    ValueRange{kb}, pad, SmallVector<bool>{true});
                block = arith::MulFOp::create(
                    nb, nl, block,
                    vector::BroadcastOp::create(nb, nl, blockType, g));
              }
              Value t = vector::TransposeOp::create(nb, nl, block,
                                                    ArrayRef<int64_t>{1, 0});
              if (!s.bf16) {
                scf::YieldOp::create(
                    nb, nl,
                    vector::TransferWriteOp::create(nb, nl, t, it[0],
                                                    ValueRange{kb, c}, inBounds)
                        .getResult());
                return;
              }
              scf::YieldOp::create(nb, nl,
                                   packPairs(nb, nl, t, it[0], kb, c, s));
            });
        scf::YieldOp::create(cb, cl, ks.getResult(0));
      });
  return cols.getResult(0);
}

/// `op`'s payload (elementwise ops on f32 scalars) on vectors: `args` for
/// its inputs, outer scalars broadcast.
Value applyPayload(OpBuilder &b, Location loc, linalg::GenericOp op,
                   ValueRange args) {
  Block &body = op.getRegion().front();
  auto vecType = cast<VectorType>(args[0].getType());
  IRMapping map;
  for (auto [arg, v] : llvm::zip(body.getArguments(), args))
    map.map(arg, v);
  for (Operation &inner : body.without_terminator()) {
    for (Value operand : inner.getOperands())
      if (!map.contains(operand))
        map.map(operand, vector::BroadcastOp::create(b, loc, vecType, operand));
    Operation *clone = b.clone(inner, map);
    for (Value r : clone->getResults())
      r.setType(vecType);
  }
  return map.lookup(body.getTerminator()->getOperand(0));
}

/// out[row0 : row0 + rows, col0 : col0 + cols] (+)= x[row0.., :] · buf, or
/// with `epilogue` its result on the sums at out[row0.., col0].
Value kernel(OpBuilder &b, Location loc, Value x, Value buf, Value out,
             Value row0, Value col0, int64_t k, const tlm::PackedShape &s,
             bool overwrite, Value rms, const Epilogue *epilogue) {
  auto vecType = VectorType::get({s.lanes}, b.getF32Type());
  Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  SmallVector<bool> inBounds{true};
  int64_t perRow = s.cols / s.lanes;
  SmallVector<Value> rowIdx, colIdx;
  for (int64_t r = 0; r < s.rows; ++r)
    rowIdx.push_back(arith::AddIOp::create(b, loc, row0, index(b, loc, r)));
  for (int64_t c = 0; c < perRow; ++c)
    colIdx.push_back(
        arith::AddIOp::create(b, loc, col0, index(b, loc, c * s.lanes)));

  SmallVector<Value> init;
  Value zero = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(vecType, b.getF32FloatAttr(0.0)));
  for (int64_t r = 0; r < s.rows; ++r)
    for (int64_t c = 0; c < perRow; ++c)
      init.push_back(overwrite
                         ? zero
                         : vector::TransferReadOp::create(
                               b, loc, vecType, out,
                               ValueRange{rowIdx[r], colIdx[c]}, pad, inBounds)
                               .getResult());

  auto loop =
      s.int8   ? int8Loop(b, loc, x, buf, rowIdx, init, k, s)
      : s.bf16 ? bf16Loop(b, loc, x, buf, rowIdx, init, k, s)
               : scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, k), index(b, loc, 1), init,
      [&](OpBuilder &nb, Location nl, Value kk, ValueRange acc) {
        SmallVector<Value> w;
        for (int64_t c = 0; c < perRow; ++c)
          w.push_back(vector::TransferReadOp::create(
              nb, nl, vecType, buf, ValueRange{kk, index(nb, nl, c * s.lanes)},
              pad, inBounds));
        SmallVector<Value> next;
        for (int64_t r = 0; r < s.rows; ++r) {
          Value xs =
              tensor::ExtractOp::create(nb, nl, x, ValueRange{rowIdx[r], kk});
          Value xv = vector::BroadcastOp::create(nb, nl, vecType, xs);
          for (int64_t c = 0; c < perRow; ++c)
            next.push_back(
                vector::FMAOp::create(nb, nl, xv, w[c], acc[r * perRow + c]));
        }
        scf::YieldOp::create(nb, nl, next);
      });

  for (int64_t r = 0; r < s.rows; ++r) {
    // A folded norm: the row's sums times 1 / rms (one division per row
    // rather than one per accumulator).
    Value scale;
    if (rms) {
      Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0));
      Value inv = arith::DivFOp::create(
          b, loc, one,
          tensor::ExtractOp::create(b, loc, rms, ValueRange{rowIdx[r]}));
      scale = vector::BroadcastOp::create(b, loc, vecType, inv);
    }
    SmallVector<Value> sums;
    for (int64_t c = 0; c < perRow; ++c) {
      Value sum = loop.getResult(r * perRow + c);
      if (scale)
        sum = arith::MulFOp::create(b, loc, sum, scale);
      sums.push_back(sum);
    }
    if (epilogue) {
      SmallVector<Value> args;
      for (int64_t i : epilogue->inputs)
        args.push_back(sums[i]);
      sums = {applyPayload(b, loc, epilogue->payload, args)};
    }
    for (auto [c, sum] : llvm::enumerate(sums))
      out = vector::TransferWriteOp::create(
                b, loc, sum, out, ValueRange{rowIdx[r], colIdx[c]}, inBounds)
                .getResult();
  }
  return out;
}

/// out[rows, n] += x[rows, k] · w[n, k] as a generic the rest of
/// tlm-tile-matmuls recognizes (tlm::matchProjection).
linalg::GenericOp projection(OpBuilder &b, Location loc, Value x, Value w,
                             Value out) {
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps{tlm::dimsMapOf(ctx, 3, {0, 2}),
                              tlm::dimsMapOf(ctx, 3, {1, 2}),
                              tlm::dimsMapOf(ctx, 3, {0, 1})};
  SmallVector<utils::IteratorType> iters{utils::IteratorType::parallel,
                                         utils::IteratorType::parallel,
                                         utils::IteratorType::reduction};
  auto fmf = arith::FastMathFlagsAttr::get(ctx, arith::FastMathFlags::contract);
  return linalg::GenericOp::create(
      b, loc, TypeRange{out.getType()}, ValueRange{x, w}, ValueRange{out}, maps,
      iters, [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value m = arith::MulFOp::create(nb, nl, a[0],
                                        tlm::widenToF32(nb, nl, a[1]), fmf);
        linalg::YieldOp::create(
            nb, nl, ValueRange{arith::AddFOp::create(nb, nl, a[2], m, fmf)});
      });
}

RowSplit splitRows(OpBuilder &b, Location loc, Value x, Value rms, Value gain,
                   int64_t tileRows) {
  RowSplit r;
  int64_t k = cast<RankedTensorType>(x.getType()).getDimSize(1);
  Value m = tensor::DimOp::create(b, loc, x, 0);
  r.tileRows = index(b, loc, tileRows);
  r.full = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, m, r.tileRows), r.tileRows);
  r.hasFull = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, r.full,
                                    index(b, loc, 0));
  r.restRows = arith::SubIOp::create(b, loc, m, r.full);
  OpFoldResult one = b.getIndexAttr(1);
  r.xRest = tensor::ExtractSliceOp::create(
      b, loc, x, SmallVector<OpFoldResult>{r.full, b.getIndexAttr(0)},
      SmallVector<OpFoldResult>{r.restRows, b.getIndexAttr(k)},
      SmallVector<OpFoldResult>{one, one});
  if (rms)
    r.xRest = normalizeRows(b, loc, r.xRest,
                            tensor::ExtractSliceOp::create(
                                b, loc, rms, ArrayRef<OpFoldResult>{r.full},
                                ArrayRef<OpFoldResult>{r.restRows},
                                ArrayRef<OpFoldResult>{one}),
                            gain);
  return r;
}

/// y[r, k] = x[r, k] / rms[r] · gain[k]: the payload tlm::matchNormScale
/// matches, on the (rows, k) rows given.
Value normalizeRows(OpBuilder &b, Location loc, Value x, Value rms,
                    Value gain) {
  MLIRContext *ctx = b.getContext();
  Value init = tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, x),
                                       b.getF32Type());
  SmallVector<AffineMap> maps{
      tlm::dimsMapOf(ctx, 2, {0, 1}), tlm::dimsMapOf(ctx, 2, {0}),
      tlm::dimsMapOf(ctx, 2, {1}), tlm::dimsMapOf(ctx, 2, {0, 1})};
  SmallVector<utils::IteratorType> iters(2, utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{x, rms, gain},
             ValueRange{init}, maps, iters,
             [&](OpBuilder &nb, Location nl, ValueRange a) {
               Value n = arith::DivFOp::create(nb, nl, a[0], a[1]);
               linalg::YieldOp::create(
                   nb, nl, ValueRange{arith::MulFOp::create(nb, nl, n, a[2])});
             })
      .getResult(0);
}

} // namespace mlir::tlm::packed

linalg::GenericOp tlm::foldNormScale(RewriterBase &rewriter,
                                     linalg::LinalgOp projection,
                                     const ProjectionDims &p,
                                     const NormScale &norm) {
  MLIRContext *ctx = projection->getContext();
  unsigned loops = projection.getNumLoops();
  SmallVector<AffineMap> maps{
      projection.getMatchingIndexingMap(projection.getDpsInputOperand(0)),
      dimsMapOf(ctx, loops, p.rows), dimsMapOf(ctx, loops, {p.k}),
      projection.getMatchingIndexingMap(projection.getDpsInputOperand(1)),
      projection.getMatchingIndexingMap(projection.getDpsInitOperand(0))};
  auto fmf = arith::FastMathFlagsAttr::get(ctx, arith::FastMathFlags::contract);
  rewriter.setInsertionPoint(projection);
  auto folded = linalg::GenericOp::create(
      rewriter, projection.getLoc(), projection->getResultTypes(),
      ValueRange{norm.x, norm.rms, norm.gain, projection.getDpsInputs()[1]},
      projection.getDpsInits(), maps, projection.getIteratorTypesArray(),
      [&](OpBuilder &b, Location l, ValueRange a) {
        Value y = arith::MulFOp::create(
            b, l, arith::DivFOp::create(b, l, a[0], a[1]), a[2]);
        Value m = arith::MulFOp::create(b, l, y, a[3], fmf);
        linalg::YieldOp::create(
            b, l, ValueRange{arith::AddFOp::create(b, l, a[4], m, fmf)});
      });
  rewriter.replaceOp(projection, folded->getResults());
  return folded;
}

std::string tlm::packedMismatch(linalg::LinalgOp op, const ProjectionDims &p,
                                PackedShape shape) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges[p.n] % shape.cols != 0)
    return "n is not a multiple of the panel width";
  if (ranges[p.k] % shape.lanes != 0)
    return "k is not a multiple of the vector width";
  if (!op.hasPureTensorSemantics())
    return "not on tensors";
  if (shape.bf16 && shape.lanes != 16)
    return "bf16-dot takes AVX-512's 16 lanes";
  if (shape.int8) {
    if (shape.lanes != 16)
      return "int8-dot takes AVX-512's 16 lanes";
    if (ranges[p.k] % 64 != 0)
      return "int8-dot packs k 64 at a time";
    Value w8 = op.getDpsInputs().back();
    SmallVector<Value> w8Parts{w8};
    if (std::optional<ConcatRows> rows = concatRows(w8))
      w8Parts = rows->concat.getInputs();
    // A thread's chunk of W is a slice of the dequantization:
    // matchQuantizedRows looks through it, as packCodes' reads do. Parts
    // of two dtypes would pack from a select of f32 parts (panelSource),
    // which has no codes.
    std::optional<int64_t> bits;
    for (Value part : w8Parts) {
      std::optional<QuantizedRows> rows = matchQuantizedRows(part);
      if (!rows)
        return "int8-dot takes q8_0 or q4_0 weights";
      if (bits && *bits != rows->codes.bits)
        return "int8-dot takes parts of one dtype";
      bits = rows->codes.bits;
    }
  }
  Value w = op.getDpsInputs().back();
  SmallVector<Value> parts{w};
  if (std::optional<ConcatRows> rows = concatRows(w)) {
    parts = rows->concat.getInputs();
    for (Value part : parts)
      if (cast<RankedTensorType>(part.getType()).getDimSize(0) % shape.cols)
        return "a part of the concatenated W is not a multiple of the panel "
               "width";
  }
  // The pack reads a lanes x lanes block from one quantization block.
  for (Value part : parts)
    if (std::optional<Dequantized> d = matchDequantized(part))
      if ((d->bits == 8 ? kQuantBlock : kQuantBlock / 2) % shape.lanes != 0)
        return "a vector is wider than the codes of a quantization block";
  return "";
}

LogicalResult tlm::packProjection(RewriterBase &rewriter, linalg::LinalgOp op,
                                  const ProjectionDims &p, PackedShape shape,
                                  bool overwrite, linalg::LinalgOp &rest) {
  assert(packedMismatch(op, p, shape).empty() && "checked by the caller");
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  OpBuilder &b = rewriter;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t n = ranges[p.n], k = ranges[p.k];
  // foldNormScale's form: (x, rms, gain, w).
  bool folded = op.getNumDpsInputs() == 4;
  assert((!folded || overwrite) && "a folded norm divides fresh sums");
  Value x = flatten(b, loc, op.getDpsInputs()[0]);
  Value rms = folded ? flatten(b, loc, op.getDpsInputs()[1], 1) : Value();
  Value gain = folded ? op.getDpsInputs()[2] : Value();
  Value w = op.getDpsInputs().back();
  Value outND = op.getDpsInits()[0];
  Value out = flatten(b, loc, outND);

  // The rows after the last full tile go through the GEMV blocks as they
  // are, normalized first (once, not per panel) when the norm is folded.
  RowSplit split = splitRows(b, loc, x, rms, gain, shape.rows);
  Value tileRows = split.tileRows, full = split.full, hasFull = split.hasFull,
        restRows = split.restRows, xRest = split.xRest;
  OpFoldResult zeroAttr = b.getIndexAttr(0), oneAttr = b.getIndexAttr(1);
  // One buffer per call (per thread inside a forall), reused by every panel.
  Value buf = packBuffer(b, loc, k, shape);
  Value xk = kernelInput(b, loc, x, full, gain, shape);

  auto panels = scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, n), index(b, loc, shape.cols),
      ValueRange{out, buf},
      [&](OpBuilder &nb, Location nl, Value col0, ValueRange it) {
        // The panel's rows of W: in W, or in the part of it that holds them.
        std::pair<Value, Value> panel = panelSource(nb, nl, w, col0);
        Value source = panel.first, wRow = panel.second;
        auto ifFull = scf::IfOp::create(nb, nl, it.getTypes(), hasFull,
                                        /*withElseRegion=*/true);
        {
          OpBuilder tb = ifFull.getThenBodyBuilder();
          PanelRows rowsOf = [&](OpBuilder &cb, Location cl, Value c) {
            return std::pair<Value, Value>(
                source, arith::AddIOp::create(cb, cl, wRow, c));
          };
          Value packed = pack(tb, nl, rowsOf, it[1], k, shape, gain);
          auto tiles = scf::ForOp::create(
              tb, nl, index(tb, nl, 0), full, tileRows, ValueRange{it[0]},
              [&](OpBuilder &lb, Location ll, Value row0, ValueRange acc) {
                scf::YieldOp::create(lb, ll,
                                     kernel(lb, ll, xk, packed, acc[0], row0,
                                            col0, k, shape, overwrite, rms));
              });
          scf::YieldOp::create(tb, nl, ValueRange{tiles.getResult(0), packed});
        }
        OpBuilder eb = ifFull.getElseBodyBuilder();
        scf::YieldOp::create(eb, nl, it);

        // The rows after the last full tile, against W's panel itself.
        Value o = ifFull.getResult(0);
        SmallVector<OpFoldResult> ones{oneAttr, oneAttr};
        Value wPanel = tensor::ExtractSliceOp::create(
            nb, nl, source, SmallVector<OpFoldResult>{wRow, zeroAttr},
            SmallVector<OpFoldResult>{nb.getIndexAttr(shape.cols),
                                      nb.getIndexAttr(k)},
            ones);
        SmallVector<OpFoldResult> outOffsets{full, col0};
        SmallVector<OpFoldResult> outSizes{restRows,
                                           nb.getIndexAttr(shape.cols)};
        Value oRest = tensor::ExtractSliceOp::create(nb, nl, o, outOffsets,
                                                     outSizes, ones);
        linalg::GenericOp restOp =
            tlm::packed::projection(nb, nl, xRest, wPanel, oRest);
        rest = restOp;
        Value merged = tensor::InsertSliceOp::create(
            nb, nl, restOp.getResult(0), o, outOffsets, outSizes, ones);
        scf::YieldOp::create(nb, nl, ValueRange{merged, ifFull.getResult(1)});
      });

  Value result = panels.getResult(0);
  if (result.getType() != outND.getType()) {
    Unit u = unitView(b, loc, outND, 2);
    result = tensor::InsertSliceOp::create(b, loc, result, outND, u.offsets,
                                           u.sizes, u.strides);
  }
  rewriter.replaceOp(op, result);
  return success();
}
