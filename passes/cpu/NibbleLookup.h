//===- NibbleLookup.h - q4_0 GEMV blocks by table lookup --------*- C++ -*-===//
//
// Decode's one-column GEMV on q4_0 codes for AVX-512. The split-k form
// (QuantizedSplitK.cpp) widens each block's 16 bytes into two vectors of 16
// nibbles: a mask or a shift, a zero extension and a conversion per 16
// weights, and the block's scale once per block. Here 64 bytes of codes (4
// blocks) are read as 16 dwords, and the nibble at bit 4m of every dword is
// looked up in a register holding the 16 centred values -8 .. 7 (vpermps
// reads the low 4 bits of each index): a shift and a lookup per 16
// weights, and one scale multiply per 4 blocks. The lanes then hold the
// weights in another order than k; x is permuted to match, once per row,
// outside the column loop.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_CPU_NIBBLELOOKUP_H
#define TLM_PASSES_CPU_NIBBLELOOKUP_H

#include "passes/common/Projection.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::tlm {

/// Weights a lookup block covers along k: 64 bytes of q4_0 codes.
constexpr int64_t kLookupChunk = 128;

/// Whether `op` (a one-row, one-column static block of a projection) can be
/// a lookup block: q4_0 codes, k a multiple of kLookupChunk.
bool lookupApplies(linalg::LinalgOp op, const ProjectionDims &p);

/// x (r.., k) in the lanes' order: for each chunk of 128 weights, the 8
/// vectors m = 0..7 of 16 lanes l hold x at
///   chunk·128 + (l / 4)·32 + (m % 2)·16 + (l % 4)·4 + m / 2,
/// the weight whose nibble sits at bit 4m of dword l of the chunk's 64
/// bytes (byte j of a block holds weights j and j + 16, low nibble first).
/// The same for every column: made once per row.
Value lanePermutedX(OpBuilder &b, Location loc, Value x);

/// Replaces the block `op` (out[r.., c] += x[r.., k] · w[c, k], one row and
/// one column, w q4_0) by the lookup loop reading `xLanes` (lanePermutedX
/// of its row of x). With `overwrite` the output is not read (it is an
/// uninitialized tensor when the projection starts at zero: tlm-tile-
/// matmuls' overwrite). With `prefetchBytes` > 0 the codes that far ahead
/// are prefetched first, as quantizedPart does.
LogicalResult lookupBlock(RewriterBase &rewriter, linalg::LinalgOp op,
                          const ProjectionDims &p, Value xLanes, bool overwrite,
                          int64_t prefetchBytes);

} // namespace mlir::tlm

#endif // TLM_PASSES_CPU_NIBBLELOOKUP_H
