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

/// The tile kernel's launch for `p`: `rowBlocks` x `colBlocks` blocks of
/// `tile` x `tile` threads, each thread `threadTile` x `threadTile`
/// outputs; `xs` and `ws` its workgroup buffers.
struct TiledShape {
  Value rowBlocks; ///< dynamic: the row count is
  int64_t colBlocks;
  MemRefType xs, ws;
};
TiledShape tiledShape(OpBuilder &b, Location loc, const GpuProjection &p,
                      int64_t tile, int64_t threadTile);

/// The tile kernel's body at `b`'s insertion point inside a launch of
/// tiledShape(...) with tile x tile threads a block: `blockX`, `blockY`
/// the block's indices, (`tx`, `ty`) the thread's, `xs`, `ws` the buffers.
/// Thread (tx, ty) owns rows ty + tile·i and columns tx + tile·j; k goes in
/// steps of `tile`; every edge is guarded.
void buildTiledBody(OpBuilder &b, Location loc, const GpuProjection &p,
                    int64_t tile, int64_t threadTile, Value blockX,
                    Value blockY, Value tx, Value ty, Value xs, Value ws);

} // namespace mlir::tlm

#endif // TLM_PASSES_GPU_TILEDKERNEL_H
