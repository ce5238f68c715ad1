//===- RopeRotation.h - RoPE's pair rotation as vector code -----*- C++ -*-===//
//
// tlm-vectorize-elementwise's form for the rotation tlm-lower-to-linalg
// builds for RoPE (see RopeRotation.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_CPU_ROPEROTATION_H
#define TLM_PASSES_CPU_ROPEROTATION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

#include <string>

namespace mlir::tlm {

/// Why `op` is not RoPE's rotation of interleaved pairs, or an empty string:
/// loops (..., i, c) with c of size 2, inputs (x[..., i, 0], x[..., i, 1],
/// cos[..., i], sin[..., i]), an identity output, and the payload
/// `c == 0 ? x0·cos − x1·sin : x0·sin + x1·cos` on f32; the pairs must split
/// into blocks of `lanes / 2`.
std::string ropeRotationMismatch(linalg::GenericOp op, int64_t lanes);

/// Rewrites `block`, a matched rotation with static loop ranges (one tile
/// of the rotation; its loops before (i, c) become scf.for loops unless of
/// size 1), into vector code: per `lanes`
/// elements one load of x, its pairs swapped by a shuffle, the tables'
/// values duplicated per pair (sin negated in the even lanes), and
/// `x·cos' + swapped·sin'`, bit for bit the payload's result. Returns the
/// new value of the block's result.
Value vectorizeRopeRotation(RewriterBase &rewriter, linalg::GenericOp block,
                            int64_t lanes);

} // namespace mlir::tlm

#endif // TLM_PASSES_CPU_ROPEROTATION_H
