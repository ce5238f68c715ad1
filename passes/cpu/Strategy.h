//===- Strategy.h - every heuristic of the CPU codegen ----------*- C++ -*-===//
//
// The CPU pipeline's decisions in one place: what the target is (vector
// width and register count, last-level cache), how large the projections'
// register blocks are, how many output columns decode's GEMV blocks take,
// and how the work splits across threads. The passes take the results as
// options (or call the chunk rules below); lib/compiler/HostTarget.cpp only
// asks the host. The reasoning and the measurements behind each rule are in
// docs/cpu-codegen.md.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_CPU_STRATEGY_H
#define TLM_PASSES_CPU_STRATEGY_H

#include <cstdint>

namespace mlir::tlm {

/// What the CPU code is blocked for. The default is the reference target of
/// tlm-opt and the lit tests (AVX-512); the JIT fills it from the host.
struct CpuTarget {
  /// f32 lanes of the widest vector register (16: AVX-512, 8: AVX2, 4:
  /// SSE/NEON).
  int64_t lanes = 16;
  /// Vector registers of that width.
  int64_t vectorRegisters = 32;
  /// Bytes of the last-level cache.
  uint64_t lastLevelCacheBytes = uint64_t(32) << 20;
  /// Whether the code may name AVX-512 instructions directly (x86 with
  /// avx512f): whatever the lanes, LLVM can split any width, but not an
  /// intrinsic the CPU lacks.
  bool avx512 = true;
  /// Whether it has AVX512-BF16's vdpbf16ps (--compute bf16).
  bool avx512bf16 = false;
  /// Whether it has AVX512-VNNI's vpdpbusd (--compute int8).
  bool avx512vnni = false;
};

/// `host` blocked for `lanes` (0: the host's own width). Another width than
/// the host's still runs (LLVM splits or widens the vectors), with the
/// registers an x86 host of that width has: 32 of 16 lanes, 16 of 8 or 4.
CpuTarget withLanes(CpuTarget host, int64_t lanes);

/// The projections' register blocks for vectors of `lanes` f32 and
/// `vectorRegisters` of them (docs/cpu-codegen.md#register-blocks).
struct RegisterBlocks {
  int64_t packRows; ///< rows per packed tile (pack-rows x 2 accumulators)
  int64_t packCols; ///< columns per packed panel: two vectors
  int64_t rowTile;  ///< rows per split-k block
};
RegisterBlocks registerBlocks(int64_t lanes, int64_t vectorRegisters);

/// Output columns per block of decode's one-row GEMV
/// (docs/cpu-codegen.md#gemv-columns): `requested` when not 0; otherwise 1
/// (one sequential stream through W) when the weights do not fit in the
/// last-level cache, so every step reads them from memory, and 8 (each load
/// of x serves 8 rows of W) when they do or when `weightBytes` is 0
/// (unknown).
int64_t gemvColumns(const CpuTarget &target, uint64_t weightBytes,
                    int64_t requested = 0);

/// Columns per thread chunk of a projection with `n` output columns in
/// blocks of `cols` (docs/cpu-codegen.md#thread-chunks): whole blocks that
/// divide `n`, as few chunks as keep the busiest thread within 1/16 of an
/// even share; without such a divisor, `n` split `threads` ways with a
/// ragged last chunk. `n` may be dynamic (ShapedType::kDynamic).
int64_t threadChunk(int64_t n, int64_t cols, int64_t threads);

/// Heads per chunk of fused attention's one-row form: the largest divisor
/// of `heads` up to an even share of `threads` (12 heads: 12 on one thread,
/// 6 on two).
int64_t headChunk(int64_t heads, int64_t threads);

/// The multiply-adds of one step that pay for one more thread: a fork and
/// a join per parallel loop, and on a loaded machine a wait for a worker
/// the kernel has not scheduled yet, cost more than the share of less
/// work saves (docs/tlm-run.md#threads).
/// Measured on 2 cores (decode tok/s, 2 threads against 1, medians of 3):
/// stories260K (0.26M) 0.75x, cs336-ts (0.76M) 1.5x.
constexpr uint64_t kStepWorkPerThread = 320 * 1024;

/// --threads' default for a model whose typical step does `work`
/// multiply-adds on a machine with `cores` cores: one thread per
/// kStepWorkPerThread, at least 1 and at most `cores`.
int64_t defaultThreads(uint64_t work, int64_t cores);

} // namespace mlir::tlm

#endif // TLM_PASSES_CPU_STRATEGY_H
