//===- Quantized.cpp - q8_0 / q4_0 weights in the passes ------------------===//

#include "passes/common/Quantized.h"

#include "dialect/TlmDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace mlir::tlm;

static_assert(kQuantBlock == DequantizeOp::kBlock, "one block size");

namespace {
constexpr StringLiteral kTag = "tlm.dequantize";
} // namespace

std::optional<Dequantized> tlm::matchDequantized(Value w) {
  if (auto op = w.getDefiningOp<DequantizeOp>())
    return Dequantized{op.getValues(), op.getScales(),
                       static_cast<int64_t>(op.getBits())};
  auto generic = w.getDefiningOp<linalg::GenericOp>();
  auto bits = generic ? generic->getAttrOfType<IntegerAttr>(kTag) : nullptr;
  if (!bits || generic.getNumDpsInputs() != 2)
    return std::nullopt;
  return Dequantized{generic.getDpsInputs()[0], generic.getDpsInputs()[1],
                     bits.getInt()};
}

Value tlm::codesToF32(OpBuilder &b, Location loc, Value codes, int64_t bits,
                      bool high, bool centred) {
  Type f32 = b.getF32Type();
  if (auto vec = dyn_cast<VectorType>(codes.getType()))
    f32 = vec.clone(f32);
  if (bits == 4) {
    Type type = codes.getType();
    auto splat = [&](int64_t v) -> Value {
      TypedAttr attr = b.getIntegerAttr(b.getI8Type(), v);
      if (auto vec = dyn_cast<VectorType>(type))
        attr = DenseElementsAttr::get(vec, attr);
      return arith::ConstantOp::create(b, loc, type, attr);
    };
    // The nibble as an unsigned 4-bit code, then re-centred.
    codes = high ? arith::ShRUIOp::create(b, loc, codes, splat(4)).getResult()
                 : arith::AndIOp::create(b, loc, codes, splat(15)).getResult();
    if (!centred)
      return arith::UIToFPOp::create(b, loc, f32, codes);
    codes = arith::SubIOp::create(b, loc, codes, splat(8));
  }
  return arith::SIToFPOp::create(b, loc, f32, codes);
}

Value tlm::dequantizeAt(OpBuilder &b, Location loc, const Dequantized &d,
                        Value row, Value col) {
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  Value block = arith::DivUIOp::create(b, loc, col, c(kQuantBlock));
  Value scale =
      tensor::ExtractOp::create(b, loc, d.scales, ValueRange{row, block});
  Value code;
  if (d.bits == 8) {
    code = codesToF32(
        b, loc,
        tensor::ExtractOp::create(b, loc, d.values, ValueRange{row, col}), 8,
        false);
  } else {
    // Byte (col / 32) · 16 + col % 16; the high nibble for the second half.
    constexpr int64_t half = kQuantBlock / 2;
    Value inBlock = arith::RemUIOp::create(b, loc, col, c(kQuantBlock));
    Value byte = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, block, c(half)),
        arith::RemUIOp::create(b, loc, inBlock, c(half)));
    Value v =
        tensor::ExtractOp::create(b, loc, d.values, ValueRange{row, byte});
    Value high = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                       inBlock, c(half));
    code = arith::SelectOp::create(b, loc, high, codesToF32(b, loc, v, 4, true),
                                   codesToF32(b, loc, v, 4, false));
  }
  return arith::MulFOp::create(b, loc, code, scale);
}

Value tlm::buildDequantize(OpBuilder &b, Location loc, const Dequantized &d,
                           RankedTensorType type) {
  // The maps say which code and scale each weight (n, k) reads.
  MLIRContext *ctx = b.getContext();
  AffineExpr n = getAffineDimExpr(0, ctx), k = getAffineDimExpr(1, ctx);
  constexpr int64_t half = kQuantBlock / 2;
  AffineExpr byte = d.bits == 8 ? k : k.floorDiv(kQuantBlock) * half + k % half;
  SmallVector<AffineMap> maps{
      AffineMap::get(2, 0, {n, byte}, ctx),
      AffineMap::get(2, 0, {n, k.floorDiv(kQuantBlock)}, ctx),
      b.getMultiDimIdentityMap(2)};
  // n may be dynamic (a choice between the parts of a concatenation).
  SmallVector<OpFoldResult> sizes{tensor::getMixedSize(b, loc, d.values, 0),
                                  b.getIndexAttr(type.getDimSize(1))};
  Value init = tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
  SmallVector<utils::IteratorType> iters(2, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{d.values, d.scales}, ValueRange{init},
      maps, iters, [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value code;
        if (d.bits == 8) {
          code = codesToF32(nb, nl, a[0], 8, false);
        } else {
          auto c = [&](int64_t v) {
            return arith::ConstantIndexOp::create(nb, nl, v);
          };
          Value col = linalg::IndexOp::create(nb, nl, 1);
          Value high = arith::CmpIOp::create(
              nb, nl, arith::CmpIPredicate::uge,
              arith::RemUIOp::create(nb, nl, col, c(kQuantBlock)), c(half));
          code = arith::SelectOp::create(nb, nl, high,
                                         codesToF32(nb, nl, a[0], 4, true),
                                         codesToF32(nb, nl, a[0], 4, false));
        }
        linalg::YieldOp::create(
            nb, nl, ValueRange{arith::MulFOp::create(nb, nl, code, a[1])});
      });
  generic->setAttr(kTag, b.getI64IntegerAttr(d.bits));
  return generic.getResult(0);
}

std::optional<tlm::QuantizedRows> tlm::matchQuantizedRows(Value w) {
  SmallVector<OpFoldResult> offsets;
  while (true) {
    if (auto cast = w.getDefiningOp<tensor::CastOp>()) {
      w = cast.getSource();
      continue;
    }
    auto slice = w.getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice)
      break;
    RankedTensorType source = slice.getSourceType(), type = slice.getType();
    if (!slice.hasUnitStride() || source.getRank() != 2 ||
        type.getRank() != 2 ||
        !isConstantIntValue(slice.getMixedOffsets()[1], 0) ||
        type.isDynamicDim(1) || type.getDimSize(1) != source.getDimSize(1))
      return std::nullopt;
    offsets.push_back(slice.getMixedOffsets()[0]);
    w = slice.getSource();
  }
  std::optional<Dequantized> d = matchDequantized(w);
  if (!d)
    return std::nullopt;
  return QuantizedRows{*d, offsets};
}

std::optional<std::pair<Dequantized, Value>>
tlm::quantizedRows(OpBuilder &b, Location loc, Value w) {
  std::optional<QuantizedRows> rows = matchQuantizedRows(w);
  if (!rows)
    return std::nullopt;
  Value row = arith::ConstantIndexOp::create(b, loc, 0);
  for (OpFoldResult offset : rows->rowOffsets)
    row = arith::AddIOp::create(
        b, loc, row, getValueOrCreateConstantIndexOp(b, loc, offset));
  return std::make_pair(rows->codes, row);
}

Value tlm::selectWeight(OpBuilder &b, Location loc, Value cond, Value a,
                        Value c) {
  std::optional<Dequantized> da = matchDequantized(a), dc = matchDequantized(c);
  if (!da || !dc || da->bits != dc->bits ||
      da->values.getType() != dc->values.getType() ||
      a.getType() != c.getType())
    return arith::SelectOp::create(b, loc, cond, a, c);
  Value values = arith::SelectOp::create(b, loc, cond, da->values, dc->values);
  Value scales = arith::SelectOp::create(b, loc, cond, da->scales, dc->scales);
  return buildDequantize(b, loc, Dequantized{values, scales, da->bits},
                         cast<RankedTensorType>(a.getType()));
}
