//===- Verify.h - shape checks the tlm op verifiers share -------*- C++ -*-===//
//
// Private to dialect/: the checks behind the forward ops' verifiers
// (TlmOps.cpp) and the gradient ops' (TlmGradOps.cpp), so both word their
// messages alike: what was expected, then what was found.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_DIALECT_VERIFY_H
#define TLM_DIALECT_VERIFY_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLExtras.h"

#include <optional>
#include <string>

namespace mlir::tlm::verify {
inline std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
}

inline std::string shapeStr(RankedTensorType t) {
  std::string s = "(";
  llvm::interleave(
      t.getShape(), [&](int64_t d) { s += dimStr(d); }, [&] { s += ", "; });
  return s + ")";
}

inline bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

inline RankedTensorType ty(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Checks `a` and `b` have the same element type.
inline LogicalResult sameElementType(Operation *op, StringRef aName, Value a,
                              StringRef bName, Value b) {
  Type ea = ty(a).getElementType(), eb = ty(b).getElementType();
  if (ea == eb)
    return success();
  return op->emitOpError() << "expected " << bName << " element type " << ea
                           << " to match " << aName << ", found " << eb;
}

/// Checks the element type of a weight (or embedding table) `w` against the
/// activations' `act`: the same, or bf16 / f16 stored for f32 activations
/// (widened where the weight is read).
inline LogicalResult weightElementType(Operation *op, StringRef name, Value w,
                                Type act) {
  Type ew = ty(w).getElementType();
  if (ew == act || (act.isF32() && (ew.isBF16() || ew.isF16())))
    return success();
  return op->emitOpError() << "expected " << name << " element type " << act
                           << (act.isF32() ? ", bf16 or f16" : "")
                           << " (the activations' " << act << "), found " << ew;
}

/// Checks dim `i` of `t` (called `name`) is compatible with `expected`.
inline LogicalResult expectDim(Operation *op, StringRef name, RankedTensorType t,
                        unsigned i, int64_t expected, StringRef what) {
  int64_t d = t.getDimSize(i);
  if (compatible(d, expected))
    return success();
  return op->emitOpError() << "expected " << name << " dim " << i << " ("
                           << what << ") to be " << dimStr(expected)
                           << ", found " << dimStr(d) << " in shape "
                           << shapeStr(t);
}

inline LogicalResult expectRank(Operation *op, StringRef name, RankedTensorType t,
                         int64_t rank) {
  if (t.getRank() == rank)
    return success();
  return op->emitOpError() << "expected " << name << " of rank " << rank
                           << ", found rank " << t.getRank() << " "
                           << shapeStr(t);
}

/// Checks a `(d_out, d_in)` projection weight against the input feature size.
inline LogicalResult verifyProjection(Operation *op, StringRef name, Value weight,
                               int64_t dIn, int64_t dOut, StringRef outWhat) {
  RankedTensorType w = ty(weight);
  if (failed(expectRank(op, name, w, 2)) ||
      failed(expectDim(op, name, w, 1, dIn, "d_in")) ||
      failed(expectDim(op, name, w, 0, dOut, outWhat)))
    return failure();
  return success();
}

/// `rows` (an embedding's result, or its gradient) of ids' shape followed
/// by `d`, which `dWhat` says the source of.
inline LogicalResult expectIdsRows(Operation *op, StringRef name,
                                   RankedTensorType rows, RankedTensorType ids,
                                   int64_t d, StringRef dWhat) {
  if (failed(expectRank(op, name, rows, ids.getRank() + 1)))
    return failure();
  for (int64_t i = 0; i < ids.getRank(); ++i)
    if (failed(expectDim(op, name, rows, i, ids.getDimSize(i), "dim of ids")))
      return failure();
  return expectDim(op, name, rows, ids.getRank(), d, dWhat);
}

/// RMSNorm's input (rank >= 1) and eps (> 0).
inline LogicalResult verifyNormInput(Operation *op, RankedTensorType in,
                                     double eps) {
  if (in.getRank() < 1)
    return op->emitOpError("expected input of rank >= 1, found a 0-d tensor");
  if (!(eps > 0.0))
    return op->emitOpError() << "expected eps > 0, found " << eps;
  return success();
}

/// RMSNorm's gain `g`: one value per element of the input's last dim.
inline LogicalResult expectGain(Operation *op, RankedTensorType g,
                                RankedTensorType in) {
  if (failed(expectRank(op, "weight", g, 1)))
    return failure();
  return expectDim(op, "weight", g, 0, in.getDimSize(in.getRank() - 1),
                   "d_model, the input's last dim");
}

/// `rope_theta` as a double, or nullopt when RoPE is off.
inline std::optional<double> thetaValue(std::optional<APFloat> theta) {
  if (theta)
    return theta->convertToDouble();
  return std::nullopt;
}

/// `q (B, S, H·d_k)`, `k`, `v (B, S, KV·d_k)`: ranks, element types, head
/// counts, and an even head dim with RoPE (TlmOps.cpp).
LogicalResult verifyQKV(Operation *op, Value qv, Value kv, Value vv,
                        int64_t heads, int64_t kvHeads,
                        std::optional<double> theta);

} // namespace mlir::tlm::verify

#endif // TLM_DIALECT_VERIFY_H
