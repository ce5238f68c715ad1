//===- Builders.h - IR builders shared by the passes ------------*- C++ -*-===//
//
// Small builders for the idioms the conversion and the codegen passes share:
// index constants, empty and filled tensors sized like a value (dynamic dims
// included), elementwise and last-dim reduction generics, and the x·Wᵀ
// projection.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_PASSES_COMMON_BUILDERS_H
#define TLM_PASSES_COMMON_BUILDERS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::tlm {

using BodyBuilder =
    llvm::function_ref<Value(OpBuilder &b, Location loc, ValueRange args)>;

/// The index constant `v`.
Value index(OpBuilder &b, Location loc, int64_t v);

/// `tensor.empty` with the given static/dynamic sizes.
Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                  Type elementType);
/// `tensor.empty` + `linalg.fill` with `value`.
Value filledTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                   Type elementType, double value);
/// Sizes of `v` (static ones as attributes, dynamic ones via tensor.dim).
SmallVector<OpFoldResult> sizesOf(OpBuilder &b, Location loc, Value v);

/// A parallel generic over the shape of `inputs[0]`; every input has that
/// shape (identity maps). `body` receives the input scalars and returns the
/// result scalar of type `resultType`.
Value elementwise(OpBuilder &b, Location loc, ValueRange inputs,
                  Type resultType, BodyBuilder body);

/// Reduces the last dim of `input` into a tensor of the leading dims,
/// starting from `init`; `body` receives (element, accumulator).
Value reduceLastDim(OpBuilder &b, Location loc, Value input, Type accType,
                    double init, BodyBuilder body);

/// A generic with one result, `init`'s, over loops of the given iterator
/// types; `maps` are the inputs' then the result's. `body` receives the
/// input scalars then the result's current value, and returns its new one.
Value genericOp(OpBuilder &b, Location loc, ValueRange inputs, Value init,
                ArrayRef<AffineMap> maps,
                ArrayRef<utils::IteratorType> iterators, BodyBuilder body);

/// `acc + Σ a·b` (f32) over the loops of `maps` (a's, b's, then acc's),
/// the loops missing from acc's map being the reduction ones: the
/// contractions of the backward (dx = dy·W, dW = dyᵀ·x, attention's).
Value contraction(OpBuilder &b, Location loc, Value a, Value bv, Value acc,
                  ArrayRef<AffineMap> maps);

/// `x · Wᵀ` for `x (..., d_in)` and `W (d_out, d_in)`: `linalg.matmul` with
/// the transposed-B maps for a matrix, a contraction generic otherwise.
Value projection(OpBuilder &b, Location loc, Value x, Value w);

/// `v` (a float scalar or vector, e.g. a bf16 / f16 weight) widened to f32;
/// `v` itself when it is f32.
Value widenToF32(OpBuilder &b, Location loc, Value v);

/// Converts `v` (any float or integer scalar) to f32 / f64 / index.
Value castFloat(OpBuilder &b, Location loc, Value v, Type to);

/// `v` as `type` (a `tensor.cast` when the static info differs), so a
/// lowering can replace an op whose result type is more or less static.
Value castTo(OpBuilder &b, Location loc, Value v, Type type);

/// Size of dim `dim` of tensor `v` as a scalar of float type `type`.
Value dimAsFloat(OpBuilder &b, Location loc, Value v, int64_t dim, Type type);

/// Scalar `a` converted to the float type of `like`.
Value floatConst(OpBuilder &b, Location loc, Type type, double value);

/// Numerically stable softmax over the last dim of a float tensor.
Value softmaxLastDim(OpBuilder &b, Location loc, Value x);

/// SiLU(z) = z · sigmoid(z) = z / (1 + exp(-z)).
Value siluScalar(OpBuilder &b, Location loc, Value z);

} // namespace mlir::tlm

#endif // TLM_PASSES_COMMON_BUILDERS_H
