//===- Float16.h - bf16 and f16 to and from f32, in plain C++ ---*- C++ -*-===//
//
// The runtime stores weights as bf16 or f16 (lib/model/Weights.h) and
// builds without a compiler that knows those types, so the conversions are
// written on the bits. Narrowing rounds to nearest, ties to even, as
// PyTorch's `.to(torch.bfloat16)` / `.half()` do; an f32 too large for f16
// becomes infinity, a NaN stays a (quiet) NaN. Widening is exact.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_SUPPORT_FLOAT16_H
#define TLM_SUPPORT_FLOAT16_H

#include <cstdint>
#include <cstring>

namespace tlm {

inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// bf16 is f32's upper half: widening is a shift.
inline float bf16ToF32(uint16_t h) { return floatOf(uint32_t(h) << 16); }

inline uint16_t f32ToBF16(float f) {
  uint32_t u = bitsOf(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: keep the sign, make it quiet
    return uint16_t((u >> 16) | 0x0040u);
  // Round to nearest even on the 16 bits dropped; a carry into the
  // exponent is the right rounding (up to infinity included).
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float f16ToF32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) // infinity or NaN
    return floatOf(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0)
      return floatOf(sign);
    // A subnormal: mantissa · 2^-24, exact in f32.
    float magnitude = float(mantissa) * (1.0f / 16777216.0f);
    return sign ? -magnitude : magnitude;
  }
  return floatOf(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline uint16_t f32ToF16(float f) {
  uint32_t u = bitsOf(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) // NaN
    return uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) // rounds to 65520 or more: infinity
    return uint16_t(sign | 0x7c00u);
  if (a < 0x38800000u) {
    // Below f16's smallest normal (2^-14): a subnormal multiple of 2^-24,
    // rounded to nearest even on the bits shifted out.
    if (a < 0x33000000u) // below half of 2^-24: zero
      return sign;
    uint32_t exponent = a >> 23, mantissa = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exponent; // 14 + (113 - exponent) - 1
    uint32_t q = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (q & 1u)))
      ++q;
    return uint16_t(sign | q);
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits.
  uint32_t r = a - 0x38000000u; // exponent 127 - 15 = 112 << 23
  r += 0xfffu + ((r >> 13) & 1u);
  return uint16_t(sign | (r >> 13));
}

} // namespace tlm

#endif // TLM_SUPPORT_FLOAT16_H
