//===- MmaKernel.h - prefill's projections on tensor cores -----*- C++ -*-===//
//
// The tile kernel's work with warp-level `mma.sync` on TF32 or BF16: each
// block computes a 64 x 64 patch of the output with 4 warps, each warp a
// 32 x 32 patch as 2 x 4 fragments of 16 x 8, from x and w tiles staged in
// workgroup memory already rounded to the inputs' type. The sums stay f32.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_GPU_MMAKERNEL_H
#define TLM_PASSES_GPU_MMAKERNEL_H

#include "passes/gpu/GemvKernel.h"

namespace mlir::tlm {

/// What the tensor cores multiply: TF32 (mma.sync.m16n8k8 on values
/// rounded to TF32) or BF16 (m16n8k16 on values rounded to bf16; bf16
/// weights as they are). The sums are f32 either way.
enum class MmaInputs { Tf32, Bf16 };

/// Threads of an MMA kernel's block (4 warps).
constexpr int64_t kMmaThreads = 128;

/// Whether the MMA kernel can take `p` as it is: x and out must be
/// collapsible to (m, k) and (m, n) (identity layouts), since the kernel
/// indexes rows as one flat number.
bool mmaApplies(const GpuProjection &p);

/// The MMA kernel's launch for `p`: `rowBlocks` x `colBlocks` blocks of
/// kMmaThreads threads; `xs` and `ws` its workgroup buffers.
struct MmaShape {
  Value rowBlocks; ///< dynamic: the row count is
  int64_t colBlocks;
  MemRefType xs, ws;
};
MmaShape mmaShape(OpBuilder &b, Location loc, const GpuProjection &p,
                  MmaInputs inputs);

/// The MMA kernel's body at `b`'s insertion point inside a launch of
/// mmaShape(...) with kMmaThreads threads along x: `blockX`, `blockY` the
/// block's indices, `thread` the thread's, `xs`, `ws` the buffers; `x2`
/// and `out2` are p.x and p.out as 2-D views (collapseRows, made before the
/// launch).
void buildMmaBody(OpBuilder &b, Location loc, const GpuProjection &p, Value x2,
                  Value out2, Value blockX, Value blockY, Value thread,
                  Value xs, Value ws, MmaInputs inputs);

/// `v` (rank >= 2, identity layout) as a 2-D view: its leading dims
/// folded into one.
Value collapseRows(OpBuilder &b, Location loc, Value v);

} // namespace mlir::tlm

#endif // TLM_PASSES_GPU_MMAKERNEL_H
