//===- Quantized.h - q8_0 / q4_0 weights in the passes ----------*- C++ -*-===//
//
// tlm.dequantize lowers to a generic over the f32 weight (n, k), tagged
// `tlm.dequantize`, that every consumer may read as it is: correct on any
// path, but it writes the whole f32 matrix at every call. The CPU forms
// that stream W (the split-k GEMV, the panel packing, the embedding rows)
// instead find it with matchDequantized and read its codes and scales in
// place, widening them in registers (lib/model/Quantize.h is the math).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_COMMON_QUANTIZED_H
#define TLM_PASSES_COMMON_QUANTIZED_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace mlir::tlm {

/// Weights that share a scale, along k (DequantizeOp::kBlock).
constexpr int64_t kQuantBlock = 32;

/// The codes and scales an f32 weight stands for.
struct Dequantized {
  Value values; ///< (n, k) i8 codes (bits 8) or (n, k / 2) bytes (bits 4)
  Value scales; ///< (n, k / kQuantBlock) f32
  int64_t bits;
};

/// `w`'s codes when it is a tlm.dequantize or its lowering.
std::optional<Dequantized> matchDequantized(Value w);

/// The lowering of tlm.dequantize: the f32 weight of `type` (n, k).
Value buildDequantize(OpBuilder &b, Location loc, const Dequantized &d,
                      RankedTensorType type);

/// Codes (i8 scalars or vectors) as f32: q for bits 8; for bits 4 the low
/// (`high` false) or high nibble of each byte, minus 8 (or, with `centred`
/// false, the nibble as it is, 0..15).
Value codesToF32(OpBuilder &b, Location loc, Value codes, int64_t bits,
                 bool high, bool centred = true);

/// The f32 weight w[row, col] (index scalars), read from the codes.
Value dequantizeAt(OpBuilder &b, Location loc, const Dequantized &d, Value row,
                   Value col);

/// `w` as rows of a dequantized weight, through row slices and casts: the
/// codes, and the row offsets of the slices (their sum is w's first row).
struct QuantizedRows {
  Dequantized codes;
  SmallVector<OpFoldResult> rowOffsets;
};
std::optional<QuantizedRows> matchQuantizedRows(Value w);

/// matchQuantizedRows with the first row built: the codes and w's first row
/// in them.
std::optional<std::pair<Dequantized, Value>>
quantizedRows(OpBuilder &b, Location loc, Value w);

/// `cond ? a : c` for two weights of one type; when both are dequantized,
/// the dequantization of the chosen codes (so the readers still find them).
Value selectWeight(OpBuilder &b, Location loc, Value cond, Value a, Value c);

} // namespace mlir::tlm

#endif // TLM_PASSES_COMMON_QUANTIZED_H
