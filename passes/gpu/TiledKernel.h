//===- TiledKernel.h - projections as register-blocked tile kernels -*- C++ -*-===//
//
// Prefill's projections: each block computes a (tile·threadTile)² patch of
// the output, each thread threadTile² of its outputs in registers, from
// x and w tiles staged in workgroup memory. Every value staged is then used
// threadTile times from registers, where the one-output-per-thread kernel
// read two workgroup floats per multiply-add.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_GPU_TILEDKERNEL_H
#define TLM_PASSES_GPU_TILEDKERNEL_H

#include "passes/gpu/GemvKernel.h"

namespace mlir::tlm {

/// Builds, at `b`'s insertion point, the launch that computes `p` for any
/// row count: blocks of `tile` x `tile` threads, each thread `threadTile`
/// x `threadTile` outputs (rows ty + tile·i, columns tx + tile·j), k in
/// steps of `tile`; every edge guarded.
void buildTiledLaunch(OpBuilder &b, Location loc, const GpuProjection &p,
                      int64_t tile, int64_t threadTile);

} // namespace mlir::tlm

#endif // TLM_PASSES_GPU_TILEDKERNEL_H
