//===- TlmOps.td - tlm operations --------------------------*- tablegen -*-===//
#ifndef TLM_OPS_TD
#define TLM_OPS_TD

include "dialect/TlmDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Tlm_FloatTensor : RankedTensorOf<[AnyFloat]>;
// Token ids and positions: the integer types the lowering converts to index
// (an i1 or i128 id has no meaning there).
def Tlm_IndexTensor : RankedTensorOf<[I32, I64]>;
// An attention mask: nonzero where a query may see a key, any width.
def Tlm_MaskTensor : RankedTensorOf<[AnySignlessInteger]>;

//===----------------------------------------------------------------------===//
// Layers with weights
//===----------------------------------------------------------------------===//

def Tlm_LinearOp : Tlm_Op<"linear", [Pure]> {
  let summary = "linear projection without bias: y = x · Wᵀ";
  let description = [{
    Multiplies the last dimension of `input` (`d_in`) by the transpose of
    `weight`, stored PyTorch-style as `(d_out, d_in)`. Leading dimensions are
    batch-like and may be dynamic. With f32 activations the weight may be
    stored as bf16 or f16: it is widened to f32 where it is read, and the
    products accumulate in f32.

    ```mlir
    %y = tlm.linear %x, %w : tensor<?x?x64xf32>, tensor<128x64xf32> -> tensor<?x?x128xf32>
    %z = tlm.linear %x, %h : tensor<?x?x64xf32>, tensor<128x64xbf16> -> tensor<?x?x128xf32>
    ```
  }];
  let arguments = (ins Tlm_FloatTensor:$input, Tlm_FloatTensor:$weight);
  let results = (outs Tlm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tlm_EmbeddingOp : Tlm_Op<"embedding", [Pure]> {
  let summary = "token embedding lookup: y = E[ids]";
  let description = [{
    Gathers rows of `table` `(vocab_size, d_model)` at the integer `ids`.
    The result has the shape of `ids` followed by `d_model`. Ids outside
    `[0, vocab_size)` are undefined behaviour at this level: the driver
    rejects them before running. A bf16 or f16 table with an f32 result is
    widened row by row.

    ```mlir
    %e = tlm.embedding %ids, %table : tensor<?x?xi64>, tensor<10000x64xf32> -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Tlm_IndexTensor:$ids, Tlm_FloatTensor:$table);
  let results = (outs Tlm_FloatTensor:$result);
  let assemblyFormat = [{
    $ids `,` $table attr-dict `:` type($ids) `,` type($table) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tlm_DequantizeOp : Tlm_Op<"dequantize", [Pure]> {
  let summary = "block-quantized weights as f32: w[n, k] = d[n, k / 32] · q[n, k]";
  let description = [{
    The f32 matrix `(n, k)` that q8_0 or q4_0 weights stand for: `values`
    holds one code per weight (`bits = 8`: `(n, k)` int8 codes, w = d · q)
    or two (`bits = 4`: `(n, k / 2)` bytes, w = d · (q - 8), byte j of each
    block of 32 weights holding weight j in its low nibble and weight j + 16
    in its high one), and `scales` `(n, k / 32)` one f32 scale d per block
    of 32 weights along k. Its result is a weight like any other (of
    `tlm.linear`, `tlm.embedding`, the FFNs); the CPU passes read the codes
    in place instead of materializing it (docs/cpu-codegen.md).

    ```mlir
    %w = tlm.dequantize %q, %d {bits = 8 : i64} : tensor<128x64xi8>, tensor<128x2xf32> -> tensor<128x64xf32>
    %v = tlm.dequantize %p, %e {bits = 4 : i64} : tensor<128x32xi8>, tensor<128x2xf32> -> tensor<128x64xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I8]>:$values,
                       RankedTensorOf<[F32]>:$scales, I64Attr:$bits);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $values `,` $scales attr-dict `:` type($values) `,` type($scales) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// Weights that share one scale, along k.
    static constexpr int64_t kBlock = 32;
  }];
  let hasVerifier = 1;
}

def Tlm_LookupOp : Tlm_Op<"lookup", [Pure, AllTypesMatch<["table", "result"]>]> {
  let summary = "each lane's value from a register of 16: result[i] = table[indices[i] mod 16]";
  let description = [{
    A table lookup inside a vector register: lane `i` of the result is the
    lane of `table` that the low 4 bits of `indices[i]` name (the higher
    bits are ignored). Made by `tlm-tile-matmuls{lookup-nibbles}`, whose
    q4_0 GEMV looks nibbles up in a register of their centred values, and
    lowered by `tlm-lower-lookup` to AVX-512's `vpermps`
    (`llvm.x86.avx512.permvar.sf.512`), so it appears only where the
    target has AVX-512.

    ```mlir
    %w = tlm.lookup %table[%dwords] : vector<16xf32>, vector<16xi32>
    ```
  }];
  let arguments = (ins VectorOfLengthAndType<[16], [F32]>:$table,
                       VectorOfLengthAndType<[16], [I32]>:$indices);
  let results = (outs VectorOfLengthAndType<[16], [F32]>:$result);
  let assemblyFormat = [{
    $table `[` $indices `]` attr-dict `:` type($table) `,` type($indices)
  }];
}

def Tlm_DotU8S8Op : Tlm_Op<"dot_u8s8", [Pure,
    AllTypesMatch<["acc", "result"]>, AllTypesMatch<["a", "b"]>]> {
  let summary = "four-byte dot products into i32 lanes: result[i] = acc[i] + sum_t a[4i+t] * b[4i+t], a unsigned, b signed";
  let description = [{
    Lane `i` of the result is lane `i` of `acc` plus the sum of the four
    products of bytes `4i .. 4i + 3` of `a`, read as unsigned, and of `b`,
    read as signed (the sum wraps as i32 would, which four products of at
    most 255 · 128 never reach). AVX512-VNNI's `vpdpbusd`: 64
    multiply-adds of int8 in one instruction, lowered by `tlm-lower-lookup`
    to `llvm.x86.avx512.vpdpbusd.512` after buffer deallocation, as
    `tlm.lookup` is (x86vector's int8 dot is AVX-VNNI-INT8's, signed by
    signed, at 256 bits). For int8 compute of q8_0 and q4_0 weights
    (`tlm-tile-matmuls{int8-dot}`: the packed tiles and the GEMV).

    ```mlir
    %s = tlm.dot_u8s8 %acc, %w, %x : vector<16xi32>, vector<64xi8>
    ```
  }];
  let arguments = (ins VectorOfLengthAndType<[16], [I32]>:$acc,
                       VectorOfLengthAndType<[64], [I8]>:$a,
                       VectorOfLengthAndType<[64], [I8]>:$b);
  let results = (outs VectorOfLengthAndType<[16], [I32]>:$result);
  let assemblyFormat = [{
    $acc `,` $a `,` $b attr-dict `:` type($acc) `,` type($a)
  }];
}

def Tlm_RMSNormOp : Tlm_Op<"rmsnorm", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "RMS normalisation over the last dimension, accumulated in f32";
  let description = [{
    `y = x / sqrt(mean(x²) + eps) · g` over the last dimension. The mean is
    accumulated in f32 whatever the element type; the result is cast back.

    ```mlir
    %y = tlm.rmsnorm %x, %g {eps = 1.0e-05 : f64} : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Tlm_FloatTensor:$input, Tlm_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1e-5">:$eps);
  let results = (outs Tlm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tlm_SwiGLUOp : Tlm_Op<"swiglu", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "SwiGLU feed-forward: y = W2 · (SiLU(W1 x) ⊙ W3 x)";
  let description = [{
    The gated feed-forward network of the model. `w1` and `w3` are
    `(d_ff, d_model)`, `w2` is `(d_model, d_ff)`; `d_model` is the last
    dimension of `input`. Weights may be bf16 or f16 for f32 activations,
    as in `tlm.linear`.

    ```mlir
    %y = tlm.swiglu %x, %w1, %w2, %w3 : (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Tlm_FloatTensor:$input, Tlm_FloatTensor:$w1,
                       Tlm_FloatTensor:$w2, Tlm_FloatTensor:$w3);
  let results = (outs Tlm_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tlm_SiLUFFNOp : Tlm_Op<"silu_ffn", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "feed-forward without gate (use_swiglu = false): y = W2 · SiLU(W1 x)";
  let description = [{
    The ablation of SwiGLU without `W3`. `w1` is `(d_ff, d_model)`, `w2` is
    `(d_model, d_ff)`.

    ```mlir
    %y = tlm.silu_ffn %x, %w1, %w2 : (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Tlm_FloatTensor:$input, Tlm_FloatTensor:$w1,
                       Tlm_FloatTensor:$w2);
  let results = (outs Tlm_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Position encoding and attention
//===----------------------------------------------------------------------===//

def Tlm_RoPEOp : Tlm_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary position embedding on interleaved pairs";
  let description = [{
    Rotates each pair of dims `(2i, 2i+1)` of a `(..., seq, d)` tensor by the
    angle `pos · theta^(-2i/d)`: `[a, b] -> [a·cos − b·sin, a·sin + b·cos]`.
    Positions default to `0..seq-1`. An explicit integer `positions` tensor
    of shape `(..., seq)` is right-aligned with the dims of `input` before
    `d`; each of its dims equals the input's or is 1 (broadcast).

    ```mlir
    %y = tlm.rope %x {theta = 1.0e+04 : f64} : tensor<4x12x64xf32> -> tensor<4x12x64xf32>
    %z = tlm.rope %x positions %p {theta = 1.0e+04 : f64} : tensor<4x12x64xf32>, tensor<12xi64> -> tensor<4x12x64xf32>
    ```
  }];
  let arguments = (ins Tlm_FloatTensor:$input,
                       Optional<Tlm_IndexTensor>:$positions,
                       F64Attr:$theta);
  let results = (outs Tlm_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`positions` $positions^)? attr-dict `:` type($input)
    (`,` type($positions)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tlm_AttentionOp : Tlm_Op<"attention", [Pure, AllTypesMatch<["q", "result"]>]> {
  let summary = "causal multi-head self-attention on projected Q, K, V";
  let description = [{
    Takes the projections `q = x·W_qᵀ` `(batch, seq, num_heads·d_k)` and
    `k`, `v` `(batch, seq, num_kv_heads·d_k)`, splits them into heads,
    applies RoPE to Q and K when `rope_theta` is set (positions `0..seq-1`
    unless a `(batch|1, seq)` or `(seq)` `positions` tensor is given), and
    computes `softmax(Q Kᵀ / sqrt(d_k) + causal mask) V` per head, where
    query head `h` reads kv head `h / (num_heads / num_kv_heads)` (GQA).
    The heads are merged back to `(batch, seq, num_heads·d_k)`; the output
    projection is a separate `tlm.linear`.

    ```mlir
    %o = tlm.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64}
        : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Tlm_FloatTensor:$q, Tlm_FloatTensor:$k,
                       Tlm_FloatTensor:$v,
                       Optional<Tlm_IndexTensor>:$positions,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_kv_heads,
                       OptionalAttr<F64Attr>:$rope_theta);
  let results = (outs Tlm_FloatTensor:$result);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`positions` $positions^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Size of one head: the feature size of `q` over `num_heads`.
    int64_t getHeadDim();
    /// `rope_theta` as a double, or nullopt when RoPE is off.
    std::optional<double> getRopeThetaValue();
  }];
}

def Tlm_CachedAttentionOp : Tlm_Op<"cached_attention", [Pure]> {
  let summary = "causal multi-head attention of new tokens over a KV cache";
  let description = [{
    The incremental form of `tlm.attention` used by prefill and decode.
    `q (batch, S, num_heads·d_k)`, `k`, `v (batch, S, num_kv_heads·d_k)` are
    this step's projections for positions `T..T+S-1`, where `T` is the
    length of `k_past`, `v_past (T, batch, num_kv_heads·d_k)`: the keys
    (already rotated) and values of earlier steps, position-major so that a
    prefix of a preallocated cache is a contiguous buffer. New query `i`
    attends to every past key and to new keys `0..i`.

    With `lengths (batch)`, each sequence has a length of its own: sequence
    `b` has cached positions `0..lengths[b]-1` (each at most `T`; the cache
    rows past it are not read), and its new tokens are at positions
    `lengths[b]..lengths[b]+S-1`. So sequences of different lengths decode
    together in one batch; without it, every sequence has `T`.

    Besides the attention output `(batch, S, num_heads·d_k)` the op returns
    this step's rotated keys and its values in cache layout
    `(S, batch, num_kv_heads·d_k)`, for the runtime to append.

    ```mlir
    %o, %kn, %vn = tlm.cached_attention %q, %k, %v, %kp, %vp {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64}
        : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
        -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
    ```
  }];
  let arguments = (ins Tlm_FloatTensor:$q, Tlm_FloatTensor:$k,
                       Tlm_FloatTensor:$v, Tlm_FloatTensor:$k_past,
                       Tlm_FloatTensor:$v_past,
                       Optional<Tlm_IndexTensor>:$lengths,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_kv_heads,
                       OptionalAttr<F64Attr>:$rope_theta);
  let results = (outs Tlm_FloatTensor:$result, Tlm_FloatTensor:$k_new,
                      Tlm_FloatTensor:$v_new);
  let assemblyFormat = [{
    operands attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getHeadDim();
    std::optional<double> getRopeThetaValue();
  }];
}

def Tlm_SDPAOp : Tlm_Op<"sdpa", [Pure]> {
  let summary = "scaled dot-product attention on split heads";
  let description = [{
    `softmax(Q Kᵀ / sqrt(d_k) masked) V` with `q (..., Sq, d_k)`,
    `k (..., Sk, d_k)`, `v (..., Sk, d_v)` and the result `(..., Sq, d_v)`.
    An optional integer `mask (..., Sq, Sk)` lets query `i` see key `j`
    where it is nonzero; `causal` instead lets query `i` see keys
    `j <= i + Sk - Sq` (the last query sees every key). The row maximum is
    subtracted before `exp`.

    ```mlir
    %o = tlm.sdpa %q, %k, %v mask %m : (tensor<4x12x64xf32>, tensor<4x16x64xf32>, tensor<4x16x64xf32>, tensor<4x12x16xi64>) -> tensor<4x12x64xf32>
    %c = tlm.sdpa %q, %k, %v {causal} : (tensor<4x12x64xf32>, tensor<4x12x64xf32>, tensor<4x12x64xf32>) -> tensor<4x12x64xf32>
    ```
  }];
  let arguments = (ins Tlm_FloatTensor:$q, Tlm_FloatTensor:$k,
                       Tlm_FloatTensor:$v, Optional<Tlm_MaskTensor>:$mask,
                       UnitAttr:$causal);
  let results = (outs Tlm_FloatTensor:$result);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`mask` $mask^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Helpers used by the lowerings and the conformance cases
//===----------------------------------------------------------------------===//

def Tlm_SiLUOp : Tlm_Op<"silu", [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise SiLU: x · sigmoid(x)";
  let description = [{
    ```mlir
    %y = tlm.silu %x : tensor<2x5xf32>
    ```
  }];
  let arguments = (ins Tlm_FloatTensor:$input);
  let results = (outs Tlm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Tlm_SoftmaxOp : Tlm_Op<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "softmax over the last dimension, row max subtracted";
  let description = [{
    `exp(x - max) / sum(exp(x - max))` along the last dimension, so large
    inputs do not overflow.

    ```mlir
    %y = tlm.softmax %x : tensor<3x5xf32>
    ```
  }];
  let arguments = (ins Tlm_FloatTensor:$input);
  let results = (outs Tlm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Tlm_CrossEntropyOp : Tlm_Op<"cross_entropy", [Pure]> {
  let summary = "mean next-token cross-entropy of logits against targets";
  let description = [{
    `mean(logsumexp(logits[..., :]) - logits[..., target])` over every
    position: `logits (..., vocab)`, integer `targets (...)`, a 0-d result.

    ```mlir
    %l = tlm.cross_entropy %logits, %t : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Tlm_FloatTensor:$logits, Tlm_IndexTensor:$targets);
  let results = (outs Tlm_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

include "dialect/TlmGradOps.td"

#endif // TLM_OPS_TD
