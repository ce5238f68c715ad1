//===- Quantize.cpp - q8_0 and q4_0 block quantization --------------------===//

#include "lib/model/Quantize.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>

namespace tlm::model {

int64_t quantizedRowBytes(WeightDtype format, int64_t k) {
  assert(isQuantized(format) && "a quantized format");
  return format == WeightDtype::Q4_0 ? k / 2 : k;
}

namespace {

/// The nearest integer to `v` in [lo, hi] (ties to even).
int clampedRound(float v, int lo, int hi) {
  return std::clamp(static_cast<int>(std::nearbyint(v)), lo, hi);
}

void quantizeBlockQ8(const float *w, int8_t *q, float &scale) {
  float amax = 0;
  for (int64_t i = 0; i < kQuantBlock; ++i)
    amax = std::max(amax, std::fabs(w[i]));
  scale = amax / 127;
  for (int64_t i = 0; i < kQuantBlock; ++i)
    q[i] = static_cast<int8_t>(
        scale == 0 ? 0 : clampedRound(w[i] / scale, -127, 127));
}

void quantizeBlockQ4(const float *w, uint8_t *q, float &scale) {
  float m = 0;
  for (int64_t i = 0; i < kQuantBlock; ++i)
    if (std::fabs(w[i]) > std::fabs(m))
      m = w[i];
  scale = m / -8;
  auto code = [&](int64_t i) {
    return static_cast<uint8_t>(
        scale == 0 ? 8 : clampedRound(w[i] / scale, -8, 7) + 8);
  };
  constexpr int64_t half = kQuantBlock / 2;
  for (int64_t j = 0; j < half; ++j)
    q[j] = static_cast<uint8_t>(code(j) | code(j + half) << 4);
}

} // namespace

void quantizeRow(WeightDtype format, const float *row, int64_t k, void *values,
                 float *scales) {
  assert(k % kQuantBlock == 0 && "whole blocks");
  for (int64_t b = 0; b < k / kQuantBlock; ++b) {
    const float *w = row + b * kQuantBlock;
    if (format == WeightDtype::Q8_0)
      quantizeBlockQ8(w, static_cast<int8_t *>(values) + b * kQuantBlock,
                      scales[b]);
    else
      quantizeBlockQ4(w, static_cast<uint8_t *>(values) + b * kQuantBlock / 2,
                      scales[b]);
  }
}

void dequantizeRow(WeightDtype format, const void *values, const float *scales,
                   int64_t k, float *row) {
  assert(k % kQuantBlock == 0 && "whole blocks");
  constexpr int64_t half = kQuantBlock / 2;
  for (int64_t b = 0; b < k / kQuantBlock; ++b) {
    float *w = row + b * kQuantBlock;
    float d = scales[b];
    if (format == WeightDtype::Q8_0) {
      const int8_t *q = static_cast<const int8_t *>(values) + b * kQuantBlock;
      for (int64_t i = 0; i < kQuantBlock; ++i)
        w[i] = static_cast<float>(q[i]) * d;
    } else {
      const uint8_t *q = static_cast<const uint8_t *>(values) + b * half;
      for (int64_t j = 0; j < half; ++j) {
        w[j] = static_cast<float>((q[j] & 15) - 8) * d;
        w[j + half] = static_cast<float>((q[j] >> 4) - 8) * d;
      }
    }
  }
}

} // namespace tlm::model
