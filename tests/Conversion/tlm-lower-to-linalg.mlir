// RUN: tlm-opt %s --tlm-lower-to-linalg --canonicalize --cse | FileCheck %s
// RUN: tlm-opt %s --tlm-linalg-pipeline | FileCheck %s --check-prefix=NOTLM

// After the pass no tlm op is left (the tlm.dequantize attribute of the
// lowered tlm.dequantize is not one).
// NOTLM-NOT: = tlm.

// CHECK-DAG: #[[MM_A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[MM_B:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[MM_C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[BX:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[BW:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[BY:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[GQA_K:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1 floordiv 2, d4)>
// CHECK-DAG: #[[GQA_V:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d1 floordiv 2, d3)>
// CHECK-DAG: #[[Q4_BYTE:.*]] = affine_map<(d0, d1) -> (d0, (d1 floordiv 32) * 16 + d1 mod 16)>
// CHECK-DAG: #[[Q_SCALE:.*]] = affine_map<(d0, d1) -> (d0, d1 floordiv 32)>

// A matrix input is one linalg.matmul with the transposed-B maps.
// CHECK-LABEL: func @linear_2d
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x64xf32>, %[[W:[^:]*]]: tensor<128x64xf32>)
// CHECK: %[[ZERO:.*]] = linalg.fill
// CHECK: linalg.matmul indexing_maps = [#[[MM_A]], #[[MM_B]], #[[MM_C]]] ins(%[[X]], %[[W]] : {{.*}}) outs(%[[ZERO]]
func.func @linear_2d(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>) -> tensor<?x128xf32> {
  %y = tlm.linear %x, %w : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}

// Batched rows: one contraction generic, no reshapes.
// CHECK-LABEL: func @linear_3d
// CHECK-NOT: expand_shape
// CHECK: linalg.generic {indexing_maps = [#[[BX]], #[[BW]], #[[BY]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @linear_3d(%x: tensor<?x?x64xf32>, %w: tensor<128x64xf32>) -> tensor<?x?x128xf32> {
  %y = tlm.linear %x, %w : tensor<?x?x64xf32>, tensor<128x64xf32> -> tensor<?x?x128xf32>
  return %y : tensor<?x?x128xf32>
}

// CHECK-LABEL: func @embedding
// CHECK-SAME: (%[[IDS:[^:]*]]: tensor<?x?xi64>, %[[T:[^:]*]]: tensor<100x64xf32>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[IDS]] : tensor<?x?xi64>)
// CHECK: %[[ROW:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: %[[COL:.*]] = linalg.index 2
// CHECK: tensor.extract %[[T]][%[[ROW]], %[[COL]]]
func.func @embedding(%ids: tensor<?x?xi64>, %t: tensor<100x64xf32>) -> tensor<?x?x64xf32> {
  %e = tlm.embedding %ids, %t : tensor<?x?xi64>, tensor<100x64xf32> -> tensor<?x?x64xf32>
  return %e : tensor<?x?x64xf32>
}

// q4_0: each weight reads its byte (low nibble in a block's first half,
// high in its second) and its block's scale: w = (nibble - 8) · d.
// CHECK-LABEL: func @dequantize_q4
// CHECK: linalg.generic {indexing_maps = [#[[Q4_BYTE]], #[[Q_SCALE]], #{{.*}}], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: attrs = {tlm.dequantize = 4 : i64}
// CHECK: arith.shrui
// CHECK: arith.andi
// CHECK: arith.select
// CHECK: arith.mulf
func.func @dequantize_q4(%q: tensor<8x32xi8>, %s: tensor<8x2xf32>) -> tensor<8x64xf32> {
  %w = tlm.dequantize %q, %s {bits = 4 : i64} : tensor<8x32xi8>, tensor<8x2xf32> -> tensor<8x64xf32>
  return %w : tensor<8x64xf32>
}

// A quantized table: the lookup reads the row's codes and scales, so only
// the rows looked up are widened.
// CHECK-LABEL: func @embedding_q8
// CHECK-SAME: (%[[IDS:[^:]*]]: tensor<?x?xi64>, %[[Q:[^:]*]]: tensor<100x64xi8>, %[[S:[^:]*]]: tensor<100x2xf32>)
// CHECK-NOT: tlm.dequantize
// CHECK: tensor.extract %[[S]]
// CHECK: tensor.extract %[[Q]]
// CHECK: arith.sitofp
func.func @embedding_q8(%ids: tensor<?x?xi64>, %q: tensor<100x64xi8>, %s: tensor<100x2xf32>) -> tensor<?x?x64xf32> {
  %t = tlm.dequantize %q, %s {bits = 8 : i64} : tensor<100x64xi8>, tensor<100x2xf32> -> tensor<100x64xf32>
  %e = tlm.embedding %ids, %t : tensor<?x?xi64>, tensor<100x64xf32> -> tensor<?x?x64xf32>
  return %e : tensor<?x?x64xf32>
}

// Sum of squares reduced in f32, rms = sqrt(mean + eps) per row, then
// x / rms * g (the form tlm-tile-matmuls folds into a projection).
// CHECK-LABEL: func @rmsnorm
// CHECK-DAG: %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK-DAG: %[[D:.*]] = arith.constant 6.400000e+01 : f32
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[RMS:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: %[[MEAN:.*]] = arith.divf %{{.*}}, %[[D]]
// CHECK: %[[VAR:.*]] = arith.addf %[[MEAN]], %[[EPS]]
// CHECK: math.sqrt %[[VAR]]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-SAME: ins(%{{.*}}, %[[RMS]], %{{.*}} : tensor<?x?x64xf32>, tensor<?x?xf32>, tensor<64xf32>)
// CHECK: %[[N:.*]] = arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: arith.mulf %[[N]], %{{.*}} : f32
func.func @rmsnorm(%x: tensor<?x?x64xf32>, %g: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %y = tlm.rmsnorm %x, %g : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// Three projections and SiLU(a)·b in one elementwise generic.
// CHECK-LABEL: func @swiglu
// CHECK-COUNT-2: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: arith.mulf
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
func.func @swiglu(%x: tensor<?x?x64xf32>, %w1: tensor<128x64xf32>, %w2: tensor<64x128xf32>, %w3: tensor<128x64xf32>) -> tensor<?x?x64xf32> {
  %y = tlm.swiglu %x, %w1, %w2, %w3 : (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// Without W3: two projections only.
// CHECK-LABEL: func @silu_ffn
// CHECK-COUNT-1: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: math.exp
// CHECK-NOT: arith.mulf
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @silu_ffn(%x: tensor<?x?x64xf32>, %w1: tensor<128x64xf32>, %w2: tensor<64x128xf32>) -> tensor<?x?x64xf32> {
  %y = tlm.silu_ffn %x, %w1, %w2 : (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// RoPE: a (seq, d/2) cos/sin table computed in f64, then the rotation over
// the input viewed as (..., d/2, 2) pairs, read at constant indices 0 and 1.
// CHECK-LABEL: func @rope
// CHECK: %[[TAB:.*]]:2 = linalg.generic
// CHECK: math.cos %{{.*}} : f64
// CHECK: math.sin %{{.*}} : f64
// CHECK: %[[PAIRS:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1], [2, 3]] output_shape [4, 12, 32, 2]
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[PAIRS]], %[[PAIRS]], %[[TAB]]#0, %[[TAB]]#1
// CHECK: arith.select
// CHECK: tensor.collapse_shape
func.func @rope(%x: tensor<4x12x64xf32>) -> tensor<4x12x64xf32> {
  %y = tlm.rope %x {theta = 1.0e+04 : f64} : tensor<4x12x64xf32> -> tensor<4x12x64xf32>
  return %y : tensor<4x12x64xf32>
}

// Explicit positions feed the table generic.
// CHECK-LABEL: func @rope_positions
// CHECK-SAME: %[[P:[^:]*]]: tensor<12xi64>
// CHECK: linalg.generic {{.*}} ins(%[[P]] : tensor<12xi64>)
// CHECK: arith.sitofp %{{.*}} : i64 to f64
func.func @rope_positions(%x: tensor<4x12x64xf32>, %p: tensor<12xi64>) -> tensor<4x12x64xf32> {
  %y = tlm.rope %x positions %p {theta = 1.0e+04 : f64} : tensor<4x12x64xf32>, tensor<12xi64> -> tensor<4x12x64xf32>
  return %y : tensor<4x12x64xf32>
}

// GQA: 4 query heads read 2 kv heads through `h floordiv 2` in the maps;
// K and V are only reshaped, never copied. Without rope_theta there is no
// cos/sin table. The causal mask compares j <= i + (Sk - Sq).
// CHECK-LABEL: func @attention_gqa_norope
// CHECK-DAG: arith.constant 2.500000e-01
// CHECK-NOT: math.cos
// CHECK: %[[K:.*]] = tensor.expand_shape %{{.*}} output_shape [%{{.*}}, %{{.*}}, 2, 16]
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[GQA_K]], #{{.*}}]
// CHECK-SAME: ins(%{{.*}}, %[[K]] :
// CHECK: arith.cmpi sle
// CHECK: arith.select
// CHECK: math.exp
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[GQA_V]], #{{.*}}]
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : tensor<?x?x4x16xf32> into tensor<?x?x64xf32>
func.func @attention_gqa_norope(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>) -> tensor<?x?x64xf32> {
  %o = tlm.attention %q, %kv, %kv {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x64xf32>
  return %o : tensor<?x?x64xf32>
}

// With RoPE: Q and K are rotated before the scores, with one pair of
// cos/sin tables built for both.
// CHECK-LABEL: func @attention_rope
// CHECK: math.cos
// CHECK-NOT: math.cos
// CHECK: arith.cmpi sle
func.func @attention_rope(%q: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %o = tlm.attention %q, %q, %q {num_heads = 4 : i64, num_kv_heads = 4 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %o : tensor<?x?x64xf32>
}

// An explicit mask selects on `mask != 0` instead of the causal compare.
// CHECK-LABEL: func @sdpa_mask
// CHECK-SAME: %[[M:[^:]*]]: tensor<4x12x16xi64>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[M]] :
// CHECK: arith.cmpi ne
// CHECK-NOT: arith.cmpi sle
func.func @sdpa_mask(%q: tensor<4x12x64xf32>, %k: tensor<4x16x64xf32>, %v: tensor<4x16x64xf32>, %m: tensor<4x12x16xi64>) -> tensor<4x12x64xf32> {
  %o = tlm.sdpa %q, %k, %v mask %m : (tensor<4x12x64xf32>, tensor<4x16x64xf32>, tensor<4x16x64xf32>, tensor<4x12x16xi64>) -> tensor<4x12x64xf32>
  return %o : tensor<4x12x64xf32>
}

// Softmax: row max, sum of exp(x - max), normalise.
// CHECK-LABEL: func @softmax
// CHECK: arith.maximumf
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: arith.divf
func.func @softmax(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %y = tlm.softmax %x : tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// Cross-entropy: logsumexp - picked logit, summed into a 0-d tensor, / rows.
// CHECK-LABEL: func @cross_entropy
// CHECK-DAG: %[[ROWS:.*]] = arith.constant 8.000000e+00 : f32
// CHECK: tensor.extract
// CHECK: math.log
// CHECK: arith.divf %{{.*}}, %[[ROWS]]
// CHECK: -> tensor<f32>
func.func @cross_entropy(%x: tensor<8x5xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %l = tlm.cross_entropy %x, %t : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func @silu
// CHECK: arith.negf
// CHECK: math.exp
// CHECK: arith.divf
func.func @silu(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %y = tlm.silu %x : tensor<2x5xf32>
  return %y : tensor<2x5xf32>
}

// The incremental form: new keys rotated at positions T + i (T = rows of the
// past), one softmax over [past | new] scores (only the new part causal),
// two P·V sums, and this step's K/V transposed into the cache layout.
// CHECK-LABEL: func @cached_attention
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<?x?x64xf32>, %[[KV:[^:]*]]: tensor<?x?x32xf32>, %[[PAST:[^:]*]]: tensor<?x?x32xf32>)
// CHECK: %[[T:.*]] = tensor.dim %[[PAST]], %c0
// CHECK: linalg.index 0
// CHECK-NEXT: arith.addi %{{.*}}, %[[T]]
// One pair of cos/sin tables for Q and K (distinct tensors here).
// CHECK: math.cos
// CHECK-NOT: math.cos
// CHECK: linalg.transpose {{.*}} permutation = [1, 0, 2, 3]
// CHECK: arith.cmpi sle
// CHECK: tensor.concat dim(3)
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0, 0]
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0, %[[T]]]
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
func.func @cached_attention(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>, %past: tensor<?x?x32xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %o, %kn, %vn : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// With each sequence's length: the new tokens are rotated at lengths[b] + i
// (a (batch, seq) positions tensor feeds the tables), the past scores of
// keys j >= lengths[b] become -inf and those rows' values 0.
// CHECK-LABEL: func @cached_attention_lengths
// CHECK-SAME: %[[LEN:[^:]*]]: tensor<?xi64>)
// CHECK: %[[POS:.*]] = linalg.generic {{.*}} ins(%[[LEN]] : tensor<?xi64>) outs(%{{.*}} : tensor<?x?xi64>)
// CHECK: linalg.index 1
// CHECK: arith.addi
// CHECK: linalg.generic {{.*}} ins(%[[POS]] : tensor<?x?xi64>)
// CHECK: math.cos
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[LEN]] : tensor<?x4x?x?xf32>, tensor<?xi64>)
// CHECK: %[[J:.*]] = linalg.index 3
// CHECK: %[[N:.*]] = arith.index_cast
// CHECK: %[[SEEN:.*]] = arith.cmpi ult, %[[J]], %[[N]]
// CHECK: arith.select %[[SEEN]]
// CHECK: arith.cmpi sle
// CHECK: tensor.concat dim(3)
// The past values a sequence does not have are zeroed before P·V (never
// written, they could hold NaN, and 0 · NaN is NaN).
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[LEN]] : tensor<?x?x2x16xf32>, tensor<?xi64>)
// CHECK: %[[VJ:.*]] = linalg.index 0
// CHECK: arith.cmpi ult, %[[VJ]]
func.func @cached_attention_lengths(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>, %past: tensor<?x?x32xf32>, %len: tensor<?xi64>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past, %len {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?xi64>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %o, %kn, %vn : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// A bf16 weight is widened in the contraction's body, an f16 table in the
// gather's.
// CHECK-LABEL: func @narrow_weights
// CHECK: linalg.generic
// CHECK: ^bb0(%{{.*}}: f32, %[[W:.*]]: bf16, %{{.*}}: f32):
// CHECK: %[[WF:.*]] = arith.extf %[[W]] : bf16 to f32
// CHECK: arith.mulf %{{.*}}, %[[WF]] : f32
// CHECK: tensor.extract %{{.*}} : tensor<100x64xf16>
// CHECK: arith.extf %{{.*}} : f16 to f32
func.func @narrow_weights(%x: tensor<?x64xf32>, %w: tensor<32x64xbf16>, %ids: tensor<?xi64>, %t: tensor<100x64xf16>) -> (tensor<?x32xf32>, tensor<?x64xf32>) {
  %y = tlm.linear %x, %w : tensor<?x64xf32>, tensor<32x64xbf16> -> tensor<?x32xf32>
  %e = tlm.embedding %ids, %t : tensor<?xi64>, tensor<100x64xf16> -> tensor<?x64xf32>
  return %y, %e : tensor<?x32xf32>, tensor<?x64xf32>
}
