//===- PackedKernel.h - pieces of the packed projection forms ---*- C++ -*-===//
//
// Shared by PackedProjection.cpp (projections over packed panels of W) and
// PairedProjection.cpp (W1/W3 with SwiGLU in the epilogue): the pack, the
// outer-product kernel and the plain projection generic the rest rows use.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_CPU_PACKEDKERNEL_H
#define TLM_PASSES_CPU_PACKEDKERNEL_H

#include "passes/common/Builders.h"
#include "passes/cpu/PackedProjection.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <functional>

namespace mlir::tlm::packed {

/// The rows of W that column block `c` (a multiple of lanes) of a panel
/// packs: a tensor and the first of its rows.
using PanelRows =
    std::function<std::pair<Value, Value>(OpBuilder &, Location, Value c)>;

/// The buffer a panel is packed into, once per call: k x cols f32, or for
/// `s.bf16` (k / 2) x (2 cols) bf16, each 32-bit lane a pair (W[c, 2p],
/// W[c, 2p + 1]) as vdpbf16ps multiplies them.
Value packBuffer(OpBuilder &b, Location loc, int64_t k, const PackedShape &s);

/// The x the kernel reads: x itself; for `s.bf16` its first `rows` rows
/// (those of the full tiles: none in decode) rounded to bf16; for `s.int8`
/// those rows times `gain` (a folded norm's, when given) quantized per
/// block of 32 (codes as i32 quads, the blocks' scales, their code sums).
/// Once per call rather than once per panel.
Value kernelInput(OpBuilder &b, Location loc, Value x, Value rows,
                  Value gain, const PackedShape &s);

/// Transposes the panel's rows (`rowsOf` each block of `lanes` columns),
/// all of k, into `buf` (packBuffer's), times `gain` along k when given.
Value pack(OpBuilder &b, Location loc, const PanelRows &rowsOf, Value buf,
           int64_t k, const PackedShape &s, Value gain);

/// An elementwise op applied to a row's sums before they are stored:
/// `payload`'s inputs are the row's `inputs.size()` sum vectors in the order
/// `inputs` gives (each an index into the row's cols / lanes vectors); its
/// one result is stored at the tile's first column.
struct Epilogue {
  linalg::GenericOp payload;
  SmallVector<int64_t> inputs;
};

/// `op`'s payload (elementwise ops on f32 scalars) on vectors: `args` for
/// its inputs, outer scalars broadcast.
Value applyPayload(OpBuilder &b, Location loc, linalg::GenericOp op,
                   ValueRange args);

/// out[row0 : row0 + rows, col0 : col0 + cols] (+)= x[row0.., :] · buf
/// (times each row's 1 / rms when `rms` is given), or with `epilogue` its
/// result on the sums at out[row0.., col0].
Value kernel(OpBuilder &b, Location loc, Value x, Value buf, Value out,
             Value row0, Value col0, int64_t k, const PackedShape &s,
             bool overwrite, Value rms, const Epilogue *epilogue = nullptr);

/// out[rows, n] += x[rows, k] · w[n, k] as a generic the rest of
/// tlm-tile-matmuls recognizes (tlm::matchProjection).
linalg::GenericOp projection(OpBuilder &b, Location loc, Value x, Value w,
                             Value out);

/// x's (m x k) rows split at the last full tile of `tileRows` rows: `full`
/// rows in tiles (`hasFull` when any), and the `restRows` after them as
/// `xRest`, normalized once by `rms` and `gain` when given (a folded norm).
struct RowSplit {
  Value tileRows, full, hasFull, restRows, xRest;
};
RowSplit splitRows(OpBuilder &b, Location loc, Value x, Value rms, Value gain,
                   int64_t tileRows);

/// y[r, k] = x[r, k] / rms[r] · gain[k]: the payload tlm::matchNormScale
/// matches, on the (rows, k) rows given.
Value normalizeRows(OpBuilder &b, Location loc, Value x, Value rms, Value gain);

// The bf16 and int8 forms (PackedNarrow.cpp).

/// bf16: the transposed lanes x lanes block `t` written as rounded pairs at
/// rows kb / 2 .. of `buf`, column 2c.
Value packPairs(OpBuilder &b, Location loc, Value t, Value buf, Value kb,
                Value c, const PackedShape &s);

/// bf16: the kernel's loop over pairs of k (vdpbf16ps).
scf::ForOp bf16Loop(OpBuilder &b, Location loc, Value x, Value buf,
                    ArrayRef<Value> rowIdx, ValueRange init, int64_t k,
                    const PackedShape &s);

/// int8: the codes of `v` (f32, or a vector of them) in a block of max |x|
/// `amax` (f32), as q8_0 rounds them: v · 127 / amax to even, NaN as 0,
/// clamped to ±127 (an i8 or a vector of them). quantizeRows' and the int8
/// GEMV's (Int8Gemv.cpp), so a decode step and the prefill agree.
Value quantizeCodes(OpBuilder &b, Location loc, Value v, Value amax);

/// int8: x's first `rows` rows (times `gain`) quantized per block of 32
/// into one i32 tensor: code quads, block scales, block code sums.
Value quantizeRows(OpBuilder &b, Location loc, Value x, Value rows,
                   Value gain, int64_t k);

/// int8: the panel's q8_0 codes (+ 128) as i32 quads, then its scales.
Value packCodes(OpBuilder &b, Location loc, const PanelRows &rowsOf,
                Value buf, int64_t k, const PackedShape &s);

/// int8: the kernel's loop over blocks of 32 (vpdpbusd).
scf::ForOp int8Loop(OpBuilder &b, Location loc, Value x, Value buf,
                    ArrayRef<Value> rowIdx, ValueRange init, int64_t k,
                    const PackedShape &s);

} // namespace mlir::tlm::packed

#endif // TLM_PASSES_CPU_PACKEDKERNEL_H
