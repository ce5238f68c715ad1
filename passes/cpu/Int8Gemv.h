//===- Int8Gemv.h - q8_0 / q4_0 GEMV blocks on int8 x -----------*- C++ -*-===//
//
// --compute int8's decode (docs/cpu-codegen.md#int8-decode): the one-row
// GEMV of a q8_0 or q4_0 projection with x quantized per block of 32 as the
// int8 prefill tiles quantize it, once per row, and W's codes multiplied as
// they lie in memory by vpdpbusd (tlm.dot_u8s8). A step reads 64 bytes of a
// row of codes: q8_0's 64 weights flipped to unsigned (xor 0x80), or q4_0's
// 128 as their low and high nibbles (unsigned as they are, 0 .. 15). The
// i32 lanes start at minus the offset those add (128 or 8 times the sum of
// the x codes a lane multiplies), so no correction follows; each lane's sum
// then belongs to one block and takes its two scales in one FMA. Where the
// f32 forms spend a conversion and an FMA per 16 weights (QuantizedSplitK)
// or a shift, a lookup and an FMA (NibbleLookup), a step spends one or two
// vpdpbusd, a conversion and an FMA per 64 or 128.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_CPU_INT8GEMV_H
#define TLM_PASSES_CPU_INT8GEMV_H

#include "passes/common/Projection.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::tlm {

/// The code bits (8 or 4) of `op`'s W when the int8 GEMV can run it: q8_0
/// or q4_0 codes and a static k that whole steps cover; 0 otherwise.
int64_t int8GemvBits(linalg::LinalgOp op, const ProjectionDims &p);

/// x's side of the int8 GEMV for W of `bits`, each (r.., length) as x is
/// (r.., k), so that tiling::sliceRowsLike slices them with x:
///   codes:   x's int8 codes in the order of W's bytes, 64 per vpdpbusd
///            (q4_0: per 128 weights the codes the low nibbles multiply,
///            then those the high ones do);
///   offsets: per step, 16 i32 lanes: -128 (q8_0) or -8 (q4_0) times the
///            sum of the codes the lane multiplies;
///   scales:  per step, 16 f32 lanes: the scale of the lane's block.
struct Int8GemvX {
  Value codes, offsets, scales;
};
Int8GemvX int8GemvInput(OpBuilder &b, Location loc, Value x, int64_t bits);

/// Whether `op`, one row and one column of a projection, can be an int8
/// GEMV block on x made for `bits`.
bool int8GemvApplies(linalg::LinalgOp op, const ProjectionDims &p,
                     int64_t bits);

/// Replaces that block by the int8 loop on `x` (int8GemvInput sliced to its
/// row). With `overwrite` the output is not read; with `prefetchBytes` > 0
/// the codes that far ahead are prefetched first (as lookupBlock does).
LogicalResult int8GemvBlock(RewriterBase &rewriter, linalg::LinalgOp op,
                            const ProjectionDims &p, const Int8GemvX &x,
                            int64_t bits, bool overwrite,
                            int64_t prefetchBytes);

} // namespace mlir::tlm

#endif // TLM_PASSES_CPU_INT8GEMV_H
