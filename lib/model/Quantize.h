//===- Quantize.h - q8_0 and q4_0 block quantization ------------*- C++ -*-===//
//
// The reference for the compiled code's dequantization (tlm.dequantize) and
// what `tlm-run quantize` writes. A row of k weights (k a multiple of
// kQuantBlock) is k / kQuantBlock blocks, each with one f32 scale d:
//   q8_0: w = d · q, q an int8 in [-127, 127], d = max|w| / 127;
//   q4_0: w = d · (q - 8), q a 4-bit code in [0, 15]; d = m / -8 where m is
//         the block's weight of largest magnitude, so m itself is exact.
// q4_0 stores two codes a byte: byte j of a block holds weight j in its low
// nibble and weight j + 16 in its high nibble, so that one 16-byte load
// gives the block's first half (low nibbles) and second half (high).
// docs/spec/config.md#quantized-weights is the user-facing spec.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_MODEL_QUANTIZE_H
#define TLM_MODEL_QUANTIZE_H

#include "lib/model/Config.h"

namespace tlm::model {

/// Bytes of `format`'s values for one row of `k` weights.
int64_t quantizedRowBytes(WeightDtype format, int64_t k);

/// Quantizes `row` (k finite floats) into `values` (quantizedRowBytes) and
/// `scales` (k / kQuantBlock).
void quantizeRow(WeightDtype format, const float *row, int64_t k, void *values,
                 float *scales);

/// The f32 weights `values` and `scales` stand for.
void dequantizeRow(WeightDtype format, const void *values, const float *scales,
                   int64_t k, float *row);

} // namespace tlm::model

#endif // TLM_MODEL_QUANTIZE_H
