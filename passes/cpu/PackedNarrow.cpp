//===- PackedNarrow.cpp - the packed kernel's bf16 and int8 forms ---------===//
//
// --compute bf16 and int8 (docs/cpu-codegen.md#bf16-compute, #int8-compute):
// the pack, the rounding or quantization of x and the kernel's loop for
// each, which PackedProjection.cpp's pack, kernelInput and kernel call in
// place of their f32 forms.
//
//===----------------------------------------------------------------------===//

#include "passes/cpu/PackedKernel.h"

#include "dialect/TlmDialect.h"
#include "passes/common/Quantized.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

#include <cassert>

using namespace mlir;
using mlir::tlm::index;

namespace mlir::tlm::packed {

/// Writes the transposed block `t` (t[k][c], lanes x lanes f32) at rows
/// kb .. kb + lanes of k into the bf16 buffer: rows 2i and 2i + 1
/// interleaved ((t[2i][0], t[2i + 1][0], t[2i][1], ...)) and rounded to
/// bf16, at row kb / 2 + i, column 2c.
Value packPairs(OpBuilder &b, Location loc, Value t, Value buf, Value kb,
                Value c, const PackedShape &s) {
  SmallVector<int64_t> interleave;
  for (int64_t j = 0; j < s.lanes; ++j)
    interleave.append({j, s.lanes + j});
  auto pairType = VectorType::get({2 * s.lanes}, b.getBF16Type());
  Value half = arith::DivUIOp::create(b, loc, kb, index(b, loc, 2));
  Value col = arith::MulIOp::create(b, loc, c, index(b, loc, 2));
  for (int64_t i = 0; i < s.lanes / 2; ++i) {
    Value even = vector::ExtractOp::create(b, loc, t, 2 * i);
    Value odd = vector::ExtractOp::create(b, loc, t, 2 * i + 1);
    Value pairs = arith::TruncFOp::create(
        b, loc, pairType,
        vector::ShuffleOp::create(b, loc, even, odd, interleave));
    Value row = arith::AddIOp::create(b, loc, half, index(b, loc, i));
    buf = vector::TransferWriteOp::create(
              b, loc, pairs, buf, ValueRange{row, col}, SmallVector<bool>{true})
              .getResult();
  }
  return buf;
}

Value quantizeCodes(OpBuilder &b, Location loc, Value v, Value amax) {
  auto vecType = dyn_cast<VectorType>(v.getType());
  // `c` as v's type: a scalar, or splat over v's lanes.
  auto like = [&](Value c) -> Value {
    return vecType ? vector::BroadcastOp::create(b, loc, vecType, c) : c;
  };
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  Value top = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(127.0));
  Value inv = arith::SelectOp::create(
      b, loc,
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, amax, zero),
      arith::DivFOp::create(b, loc, top, amax), zero);
  Value q = math::RoundEvenOp::create(
      b, loc, arith::MulFOp::create(b, loc, v, like(inv)));
  // A code is at most 127 by construction, but a NaN or an infinite x (or
  // an amax so small that 127 / amax overflows) would give one fptosi
  // cannot convert: NaN becomes 0 and the rest is clamped, the scale
  // carrying the non-finite value.
  Value lim = like(top);
  q = arith::SelectOp::create(
      b, loc, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, q, q),
      like(zero), q);
  q = arith::MinNumFOp::create(
      b, loc,
      arith::MaxNumFOp::create(b, loc, q, arith::NegFOp::create(b, loc, lim)),
      lim);
  Type i8 = b.getI8Type();
  return arith::FPToSIOp::create(
      b, loc, vecType ? Type(VectorType::get(vecType.getShape(), i8)) : i8, q);
}

/// x's first `rows` rows (times `gain` along k when given) quantized per
/// block of 32 as q8_0 is: an i32 tensor (rows, k / 4 + 2 k / 32) of the
/// codes as quads, then each block's scale (f32 bits), then the sum of its
/// codes (which removes the + 128 of W's unsigned bytes).
Value quantizeRows(OpBuilder &b, Location loc, Value x, Value rows, Value gain,
                   int64_t k) {
  int64_t blocks = k / kQuantBlock;
  auto f32x32 = VectorType::get({kQuantBlock}, b.getF32Type());
  Value init = tensor::EmptyOp::create(
      b, loc, ArrayRef<OpFoldResult>{rows, b.getIndexAttr(k / 4 + 2 * blocks)},
      b.getI32Type());
  Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  Value top = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(127.0));
  SmallVector<bool> inBounds{true};
  auto rowLoop = scf::ForOp::create(
      b, loc, index(b, loc, 0), rows, index(b, loc, 1), ValueRange{init},
      [&](OpBuilder &rb, Location rl, Value r, ValueRange outer) {
        auto blockLoop = scf::ForOp::create(
            rb, rl, index(rb, rl, 0), index(rb, rl, blocks), index(rb, rl, 1),
            ValueRange{outer[0]},
            [&](OpBuilder &nb, Location nl, Value blk, ValueRange it) {
              Value k0 = arith::MulIOp::create(nb, nl, blk,
                                               index(nb, nl, kQuantBlock));
              Value v = vector::TransferReadOp::create(
                  nb, nl, f32x32, x, ValueRange{r, k0}, pad, inBounds);
              if (gain)
                v = arith::MulFOp::create(
                    nb, nl, v,
                    vector::TransferReadOp::create(
                        nb, nl, f32x32, gain, ValueRange{k0}, pad, inBounds));
              // MAXIMUMF keeps a NaN: the block's scale is then NaN, and so
              // is every sum it reaches, as f32 compute's would be.
              Value amax = vector::ReductionOp::create(
                  nb, nl, vector::CombiningKind::MAXIMUMF,
                  math::AbsFOp::create(nb, nl, v));
              Value scale = arith::DivFOp::create(nb, nl, amax, top);
              Value codes = quantizeCodes(nb, nl, v, amax);
              Value sum = vector::ReductionOp::create(
                  nb, nl, vector::CombiningKind::ADD,
                  arith::ExtSIOp::create(
                      nb, nl, VectorType::get({kQuantBlock}, nb.getI32Type()),
                      codes));
              Value quads = vector::BitCastOp::create(
                  nb, nl, VectorType::get({kQuantBlock / 4}, nb.getI32Type()),
                  codes);
              Value out = vector::TransferWriteOp::create(
                              nb, nl, quads, it[0],
                              ValueRange{r, arith::MulIOp::create(
                                                nb, nl, blk, index(nb, nl, 8))},
                              inBounds)
                              .getResult();
              Value scaleAt =
                  arith::AddIOp::create(nb, nl, blk, index(nb, nl, k / 4));
              out = tensor::InsertOp::create(
                  nb, nl,
                  arith::BitcastOp::create(nb, nl, nb.getI32Type(), scale), out,
                  ValueRange{r, scaleAt});
              Value sumAt = arith::AddIOp::create(
                  nb, nl, blk, index(nb, nl, k / 4 + blocks));
              out = tensor::InsertOp::create(nb, nl, sum, out,
                                             ValueRange{r, sumAt});
              scf::YieldOp::create(nb, nl, out);
            });
        scf::YieldOp::create(rb, rl, blockLoop.getResult(0));
      });
  return rowLoop.getResult(0);
}

/// The quads of `lanes` columns x 64 of k, transposed (16 x lanes: a row
/// per 4 of k), from `row` of q8_0 codes at k = kb: each code + 128 (a sign
/// flip), as vpdpbusd's unsigned bytes.
static Value q8Quads(OpBuilder &b, Location loc, Value codes, Value row,
                     Value kb, int64_t lanes) {
  auto bytes = VectorType::get({lanes, 64}, b.getI8Type());
  Value pad = arith::ConstantOp::create(b, loc, b.getI8IntegerAttr(0));
  Value flip = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(bytes, b.getI8IntegerAttr(-128)));
  Value v =
      vector::TransferReadOp::create(b, loc, bytes, codes, ValueRange{row, kb},
                                     pad, SmallVector<bool>{true, true});
  Value quads = vector::BitCastOp::create(
      b, loc, VectorType::get({lanes, 16}, b.getI32Type()),
      arith::XOrIOp::create(b, loc, v, flip));
  return vector::TransposeOp::create(b, loc, quads, ArrayRef<int64_t>{1, 0});
}

/// The same from q4_0's packed nibbles (2 blocks, 32 bytes a column): each
/// nibble c as c - 8 + 128 = c + 120, so that the kernel's correction for
/// q8_0's + 128 serves both. A block's 16 bytes hold its first 16 weights
/// in the low nibbles and the last 16 in the high ones: 4 quads each.
static Value q4Quads(OpBuilder &b, Location loc, Value codes, Value row,
                     Value kb, int64_t lanes) {
  // Both blocks' 32 bytes a column at once: the low nibbles give quads
  // 0-3 (block A's first 16 weights) and 8-11 (B's), the high ones 4-7
  // and 12-15.
  auto bytes = VectorType::get({lanes, 32}, b.getI8Type());
  auto quads = VectorType::get({lanes, 8}, b.getI32Type());
  Value pad = arith::ConstantOp::create(b, loc, b.getI8IntegerAttr(0));
  auto splat = [&](int8_t v) {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(bytes, b.getI8IntegerAttr(v)));
  };
  Value v = vector::TransferReadOp::create(
      b, loc, bytes, codes,
      ValueRange{row, arith::DivUIOp::create(b, loc, kb, index(b, loc, 2))},
      pad, SmallVector<bool>{true, true});
  Value bias = splat(120);
  auto transposed = [&](Value nibbles) -> Value {
    Value q = vector::BitCastOp::create(
        b, loc, quads, arith::AddIOp::create(b, loc, nibbles, bias));
    return vector::TransposeOp::create(b, loc, q, ArrayRef<int64_t>{1, 0});
  };
  Value lo = transposed(arith::AndIOp::create(b, loc, v, splat(0x0f)));
  Value hi = transposed(arith::ShRUIOp::create(b, loc, v, splat(4)));
  // Rows in k order (vector.shuffle picks along the leading dim).
  return vector::ShuffleOp::create(
      b, loc, lo, hi,
      ArrayRef<int64_t>{0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15});
}

/// int8's pack: the panel's codes (q8_0, or q4_0's nibbles), 16 columns x
/// 64 of k at a time, as unsigned bytes (code + 128) seen as a 16 x 16 i32
/// matrix whose transpose gives one row of quads per 4 of k; then each
/// block's 16 scales (a column of the scales) as f32 bits.
Value packCodes(OpBuilder &b, Location loc, const PanelRows &rowsOf, Value buf,
                int64_t k, const PackedShape &s) {
  auto lanesF32 = VectorType::get({s.lanes}, b.getF32Type());
  auto lanesI32 = VectorType::get({s.lanes}, b.getI32Type());
  Value c0 = index(b, loc, 0);
  Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  MLIRContext *ctx = b.getContext();
  auto cols = scf::ForOp::create(
      b, loc, c0, index(b, loc, s.cols), index(b, loc, s.lanes),
      ValueRange{buf},
      [&](OpBuilder &cb, Location cl, Value c, ValueRange outer) {
        std::pair<Value, Value> rows = rowsOf(cb, cl, c);
        std::optional<std::pair<tlm::Dequantized, Value>> q =
            tlm::quantizedRows(cb, cl, rows.first);
        assert(q && "packedMismatch checked the codes");
        Value row = arith::AddIOp::create(cb, cl, rows.second, q->second);
        auto ks = scf::ForOp::create(
            cb, cl, c0, index(cb, cl, k), index(cb, cl, 64),
            ValueRange{outer[0]},
            [&](OpBuilder &nb, Location nl, Value kb, ValueRange it) {
              Value t =
                  q->first.bits == 8
                      ? q8Quads(nb, nl, q->first.values, row, kb, s.lanes)
                      : q4Quads(nb, nl, q->first.values, row, kb, s.lanes);
              Value quad0 =
                  arith::DivUIOp::create(nb, nl, kb, index(nb, nl, 4));
              Value out = it[0];
              for (int64_t i = 0; i < 16; ++i)
                out = vector::TransferWriteOp::create(
                          nb, nl, vector::ExtractOp::create(nb, nl, t, i), out,
                          ValueRange{arith::AddIOp::create(nb, nl, quad0,
                                                           index(nb, nl, i)),
                                     c},
                          SmallVector<bool>{true})
                          .getResult();
              Value blk0 = arith::DivUIOp::create(nb, nl, kb,
                                                  index(nb, nl, kQuantBlock));
              for (int64_t i = 0; i < 2; ++i) {
                Value blk =
                    arith::AddIOp::create(nb, nl, blk0, index(nb, nl, i));
                Value column = vector::TransferReadOp::create(
                    nb, nl, lanesF32, q->first.scales, ValueRange{row, blk},
                    pad, AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx),
                    ArrayRef<bool>{true});
                out = vector::TransferWriteOp::create(
                          nb, nl,
                          vector::BitCastOp::create(nb, nl, lanesI32, column),
                          out,
                          ValueRange{arith::AddIOp::create(
                                         nb, nl, blk, index(nb, nl, k / 4)),
                                     c},
                          SmallVector<bool>{true})
                          .getResult();
              }
              scf::YieldOp::create(nb, nl, out);
            });
        scf::YieldOp::create(cb, cl, ks.getResult(0));
      });
  return cols.getResult(0);
}

/// The int8 kernel's loop over blocks of 32 of k: per block, eight quads
/// of k, each row's quad of x codes broadcast as one i32 against the packed
/// quads, one vpdpbusd (tlm.dot_u8s8) per i32 accumulator; then the block's
/// sums less 128 times the row's code sum (W's bytes were code + 128),
/// converted and scaled by W's scales and the row's into the f32 sums.
scf::ForOp int8Loop(OpBuilder &b, Location loc, Value x, Value buf,
                    ArrayRef<Value> rowIdx, ValueRange init, int64_t k,
                    const PackedShape &s) {
  int64_t blocks = k / kQuantBlock, perRow = s.cols / s.lanes;
  auto vecType = VectorType::get({s.lanes}, b.getF32Type());
  auto lanesI32 = VectorType::get({s.lanes}, b.getI32Type());
  auto lanesI8 = VectorType::get({4 * s.lanes}, b.getI8Type());
  Value pad = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
  Value zeros = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(lanesI32, b.getI32IntegerAttr(0)));
  SmallVector<bool> inBounds{true};
  return scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, blocks), index(b, loc, 1), init,
      [&](OpBuilder &nb, Location nl, Value blk, ValueRange acc) {
        Value quad0 = arith::MulIOp::create(nb, nl, blk, index(nb, nl, 8));
        Value scaleRow =
            arith::AddIOp::create(nb, nl, blk, index(nb, nl, k / 4));
        Value sumCol =
            arith::AddIOp::create(nb, nl, blk, index(nb, nl, k / 4 + blocks));
        // Row `row` of the packed buffer, column vector `c`, as `type`.
        auto packedRow = [&](Value row, int64_t c, VectorType type) -> Value {
          return vector::BitCastOp::create(
              nb, nl, type,
              vector::TransferReadOp::create(
                  nb, nl, lanesI32, buf,
                  ValueRange{row, index(nb, nl, c * s.lanes)}, pad, inBounds));
        };
        SmallVector<Value> sums(s.rows * perRow, zeros);
        for (int64_t q = 0; q < 8; ++q) {
          Value quad = arith::AddIOp::create(nb, nl, quad0, index(nb, nl, q));
          SmallVector<Value> w;
          for (int64_t c = 0; c < perRow; ++c)
            w.push_back(packedRow(quad, c, lanesI8));
          for (int64_t r = 0; r < s.rows; ++r) {
            Value codes = tensor::ExtractOp::create(
                nb, nl, x, ValueRange{rowIdx[r], quad});
            Value xv = vector::BitCastOp::create(
                nb, nl, lanesI8,
                vector::BroadcastOp::create(nb, nl, lanesI32, codes));
            for (int64_t c = 0; c < perRow; ++c)
              sums[r * perRow + c] = tlm::DotU8S8Op::create(
                  nb, nl, lanesI32, sums[r * perRow + c], w[c], xv);
          }
        }
        SmallVector<Value> wScale;
        for (int64_t c = 0; c < perRow; ++c)
          wScale.push_back(packedRow(scaleRow, c, vecType));
        SmallVector<Value> next;
        for (int64_t r = 0; r < s.rows; ++r) {
          Value xScale = arith::BitcastOp::create(
              nb, nl, nb.getF32Type(),
              tensor::ExtractOp::create(nb, nl, x,
                                        ValueRange{rowIdx[r], scaleRow}));
          Value offset = arith::MulIOp::create(
              nb, nl,
              tensor::ExtractOp::create(nb, nl, x,
                                        ValueRange{rowIdx[r], sumCol}),
              arith::ConstantOp::create(nb, nl, nb.getI32IntegerAttr(128)));
          Value offsetV = vector::BroadcastOp::create(nb, nl, lanesI32, offset);
          Value xScaleV = vector::BroadcastOp::create(nb, nl, vecType, xScale);
          for (int64_t c = 0; c < perRow; ++c) {
            Value dot = arith::SIToFPOp::create(
                nb, nl, vecType,
                arith::SubIOp::create(nb, nl, sums[r * perRow + c], offsetV));
            Value scale = arith::MulFOp::create(nb, nl, wScale[c], xScaleV);
            next.push_back(
                vector::FMAOp::create(nb, nl, dot, scale, acc[r * perRow + c]));
          }
        }
        scf::YieldOp::create(nb, nl, next);
      });
}

/// The bf16 kernel's loop over pairs of k: each row's pair (x[r, 2p],
/// x[r, 2p + 1]) broadcast as one 32-bit lane against the packed pairs of
/// `cols / lanes` vectors, one vdpbf16ps per accumulator.
scf::ForOp bf16Loop(OpBuilder &b, Location loc, Value x, Value buf,
                    ArrayRef<Value> rowIdx, ValueRange init, int64_t k,
                    const PackedShape &s) {
  auto vecType = VectorType::get({s.lanes}, b.getF32Type());
  auto wType = VectorType::get({2 * s.lanes}, b.getBF16Type());
  auto pairType = VectorType::get({2}, b.getBF16Type());
  auto lanesI32 = VectorType::get({s.lanes}, b.getI32Type());
  Value pad = arith::ConstantOp::create(b, loc, b.getBF16Type(),
                                        b.getFloatAttr(b.getBF16Type(), 0.0));
  SmallVector<bool> inBounds{true};
  int64_t perRow = s.cols / s.lanes;
  return scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, k / 2), index(b, loc, 1), init,
      [&](OpBuilder &nb, Location nl, Value kp, ValueRange acc) {
        SmallVector<Value> w;
        for (int64_t c = 0; c < perRow; ++c)
          w.push_back(vector::TransferReadOp::create(
              nb, nl, wType, buf,
              ValueRange{kp, index(nb, nl, c * 2 * s.lanes)}, pad, inBounds));
        Value k2 = arith::MulIOp::create(nb, nl, kp, index(nb, nl, 2));
        SmallVector<Value> next;
        for (int64_t r = 0; r < s.rows; ++r) {
          Value pair = vector::TransferReadOp::create(
              nb, nl, pairType, x, ValueRange{rowIdx[r], k2}, pad, inBounds);
          Value bits = vector::ExtractOp::create(
              nb, nl,
              vector::BitCastOp::create(
                  nb, nl, VectorType::get({1}, nb.getI32Type()), pair),
              0);
          Value xv = vector::BitCastOp::create(
              nb, nl, wType,
              vector::BroadcastOp::create(nb, nl, lanesI32, bits));
          for (int64_t c = 0; c < perRow; ++c)
            next.push_back(x86vector::DotBF16Op::create(
                nb, nl, vecType, acc[r * perRow + c], xv, w[c]));
        }
        scf::YieldOp::create(nb, nl, next);
      });
}

} // namespace mlir::tlm::packed
