//===- GemvKernel.h - decode's projection as a warp-per-column GEMV -*- C++ -*-===//
//
// A decode step multiplies one row (or a few: a batch) by every weight
// matrix. A tile kernel would keep 1 of its 16 thread rows busy; this
// kernel gives each output column to one warp instead, whose 32 lanes read
// the weight row in 128-bit pieces side by side (coalesced), keep one
// accumulator per input row, and sum across lanes with shuffles.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_GPU_GEMVKERNEL_H
#define TLM_PASSES_GPU_GEMVKERNEL_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::tlm {

/// A projection `out[rows..., n] += x[rows..., k] · w[n, k]` on buffers
/// (`=` with `overwrite`).
struct GpuProjection {
  Value x, w, out;
  SmallVector<Value> rowSizes; ///< x's leading (row) dims
  Value rows;                  ///< their product, m
  int64_t n, k;
  /// `out` starts at zero (its fill folded into the kernels): the sums are
  /// stored rather than added to it.
  bool overwrite = false;
};

/// Whether the projection kernels take these operands: x and out f32
/// buffers, w f32 or a 16-bit float (bf16, f16) that they widen to f32 as
/// they load it.
bool projectionKernelsApply(Value x, Value w, Value out);

/// Whether the GEMV kernel can take `p`: projectionKernelsApply, static n
/// and k.
bool gemvApplies(const GpuProjection &p);

/// How many ways the GEMV splits k for an `n` x `k` projection read `vec`
/// values a lane at a time, so that at least `minWarps` warps run (a power
/// of two dividing `warps`, each split with at least one step of the warp,
/// 32·vec values).
int64_t gemvSplits(int64_t n, int64_t k, int64_t vec, int64_t warps,
                   int64_t minWarps);

/// The GEMV's launch for `p`: `blocks` blocks of `warps` warps, each warp
/// one output column and one of `splits` slices of k (`cols` columns a
/// block); `vec` weights per load (16 bytes of them: 4 f32 or 8 bf16/f16,
/// when k is a multiple of that and x and w are unstrided buffers, so every
/// row starts 16-byte aligned; else 1); `partials` the workgroup buffer the
/// split sums meet in (null when k is not split).
struct GemvShape {
  int64_t warps, splits, cols, blocks, vec;
  MemRefType partials;
};
GemvShape gemvShape(MLIRContext *ctx, const GpuProjection &p,
                    int64_t maxRows, int64_t warps, int64_t minWarps);

/// One of several projections of the same x that one GEMV launch computes
/// (Q, K and V; W1 and W3): the launch's columns `offset` .. are its
/// columns 0 .., of `w` and `out`. Every segment's w has one type, and
/// every out one (the caller casts them), so a warp selects its segment's
/// buffers by its column.
struct GemvSegment {
  Value w, out;
  int64_t offset;
};

/// The GEMV kernel's body at `b`'s insertion point inside a launch of
/// `shape` with 32 x warps threads a block (the caller keeps m <=
/// `maxRows`): `block` the block's index, `lane` and `warp` the thread's,
/// `partials` the buffer of shape.partials. `maxRows` accumulators per
/// lane, guarded by m. With `segments`, `p` is their union (p.n columns in
/// all, p.w and p.out of the first segment's types).
void buildGemvBody(OpBuilder &b, Location loc, const GpuProjection &p,
                   const GemvShape &shape, int64_t maxRows, Value block,
                   Value lane, Value warp, Value partials,
                   ArrayRef<GemvSegment> segments = {});

} // namespace mlir::tlm

#endif // TLM_PASSES_GPU_GEMVKERNEL_H
