//===- Tolerances.h - the numeric tolerances of the JIT tests ---*- C++ -*-===//
//
// The one place that says how close JIT f32 results must be to the
// reference (tests/unit/Reference.h, which accumulates in double). Each op
// family gets a named tolerance sized to its f32 rounding, so loosening one
// is a visible, reviewed change rather than a literal edited in a test.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_TESTS_UNIT_TOLERANCES_H
#define TLM_TESTS_UNIT_TOLERANCES_H

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <iomanip>
#include <limits>
#include <sstream>
#include <vector>

namespace tlm::test {

/// numpy.allclose's rule: |actual − expected| <= atol + rtol · |expected|.
struct Tolerance {
  double atol, rtol;
};

namespace tol {
/// Gathers copy values (embedding): any difference is a bug.
inline constexpr Tolerance kExact{0.0, 0.0};
/// One f32 expression per element (SiLU, RoPE's rotation; angles are f64):
/// a few ulp.
inline constexpr Tolerance kElementwise{1e-6, 1e-5};
/// Row reductions then an elementwise use (RMSNorm, softmax): an f32 sum of
/// up to ~100 terms adds about d·ε/2 of relative error.
inline constexpr Tolerance kRowwise{1e-6, 3e-5};
/// Dot products of up to ~100 terms in f32 (linear, SwiGLU, FFN-SiLU).
inline constexpr Tolerance kMatmul{1e-5, 1e-4};
/// Scores, softmax and the weighted sum of V (sdpa, attention).
inline constexpr Tolerance kAttention{1e-5, 1e-4};
/// A scalar mean of per-row logsumexps (cross-entropy).
inline constexpr Tolerance kLoss{1e-5, 1e-5};
/// A whole block or LM: the errors of every op above, compounded.
inline constexpr Tolerance kBlock{1e-4, 1e-4};
/// 1000 AdamW steps of a small weight against PyTorch's f32 run (CS336's
/// own test allows 1e-4; a faithful implementation lands within 1e-7).
inline constexpr Tolerance kOptimizer{1e-6, 0.0};
/// Gradients scaled by the clipping factor (CS336's test: atol 1e-6).
inline constexpr Tolerance kClip{1e-6, 0.0};
/// A gradient op against the f64 central differences of its forward: atol
/// is relative to the tensor's largest |g| (f32 accumulation over a few
/// dozen terms; the differences themselves are accurate to ~1e-9).
inline constexpr Tolerance kGradient{1e-5, 0.0};
/// The cross-entropy's gradient on CS336's cases, their ×1000 overflow case
/// included (the bound; f32 softmax lands within ~1e-8).
inline constexpr Tolerance kLossGradient{1e-4, 0.0};
/// A learning rate of the schedule (numpy's default rtol, as CS336's test).
inline constexpr Tolerance kSchedule{0.0, 1e-7};
/// --compute bf16 (x and W rounded to bf16, f32 sums) against f32: the
/// relative L2 distance of the whole logits tensor, as an element-wise
/// bound would be set by the smallest logits. Each rounding is at most
/// 2^-9 relative; measured 0.2-0.7% on the example configs.
inline constexpr double kBf16ComputeRelL2 = 1e-2;
/// --compute int8 (x quantized per block of 32 to 8 bits, against q8_0 or
/// q4_0 codes) against f32 compute on the same weights: each code of x is
/// within 1/254 of its block's max; measured 0.9-1.6% on the example
/// configs.
inline constexpr double kInt8ComputeRelL2 = 2e-2;
/// ...and either at least this far: f32 lands within ~1e-6 of the
/// reference, so a "bf16" or "int8" result this close never ran narrow.
inline constexpr double kNarrowComputeMinRelL2 = 1e-4;
} // namespace tol

/// ||actual - expected|| / ||expected||, and that it lies in [low, high]:
/// a reduced-precision result is close, and not as close as f32 (which
/// would mean the reduced precision never ran).
inline ::testing::AssertionResult relativeL2Within(
    const float *actual, const std::vector<float> &expected, double low,
    double high) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    double d = double(actual[i]) - expected[i];
    diff += d * d;
    norm += double(expected[i]) * expected[i];
  }
  double rel = std::sqrt(diff) / std::sqrt(norm);
  if (rel >= low && rel <= high)
    return ::testing::AssertionSuccess() << "relative L2 " << rel;
  return ::testing::AssertionFailure() << "relative L2 " << rel
                                       << " is outside [" << low << ", "
                                       << high << "]";
}

/// Checks actual[i] against expected[i] for every i with `tol`. A NaN
/// expected value must be NaN in `actual` (and vice versa); infinities must
/// match exactly. On failure, reports how many elements differ, the first
/// bad index with both values, and the largest absolute error.
inline ::testing::AssertionResult allClose(const float *actual,
                                           const std::vector<float> &expected,
                                           Tolerance tol) {
  size_t bad = 0, first = 0;
  double maxAbs = 0.0;
  for (size_t i = 0; i < expected.size(); ++i) {
    double a = actual[i], e = expected[i];
    bool ok;
    double err;
    if (std::isnan(e) || std::isnan(a)) {
      ok = std::isnan(e) && std::isnan(a);
      err = ok ? 0.0 : std::numeric_limits<double>::infinity();
    } else if (std::isinf(e) || std::isinf(a)) {
      ok = a == e;
      err = ok ? 0.0 : std::numeric_limits<double>::infinity();
    } else {
      err = std::fabs(a - e);
      ok = err <= tol.atol + tol.rtol * std::fabs(e);
    }
    maxAbs = std::fmax(maxAbs, err);
    if (!ok && bad++ == 0)
      first = i;
  }
  if (bad == 0)
    return ::testing::AssertionSuccess();
  double a = actual[first], e = expected[first];
  std::ostringstream os;
  os << std::setprecision(9) << bad << " of " << expected.size()
     << " elements differ (atol " << tol.atol << ", rtol " << tol.rtol
     << "); first at index " << first << ": actual " << a << ", expected " << e
     << " (|diff| " << std::fabs(a - e) << " > allowed "
     << tol.atol + tol.rtol * std::fabs(e) << "); max abs error " << maxAbs;
  return ::testing::AssertionFailure() << os.str();
}

/// allClose for a whole vector, which must also have the expected size.
inline ::testing::AssertionResult allClose(const std::vector<float> &actual,
                                           const std::vector<float> &expected,
                                           Tolerance tol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "size " << actual.size() << ", expected " << expected.size();
  return allClose(actual.data(), expected, tol);
}

} // namespace tlm::test

#endif // TLM_TESTS_UNIT_TOLERANCES_H
