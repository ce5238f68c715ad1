// RUN: tlm-opt %s | tlm-opt | FileCheck %s
// RUN: tlm-opt %s --mlir-print-op-generic | tlm-opt | FileCheck %s

// CHECK-LABEL: func @linear
// CHECK: tlm.linear %{{.*}}, %{{.*}} : tensor<?x?x64xf32>, tensor<128x64xf32> -> tensor<?x?x128xf32>
func.func @linear(%x: tensor<?x?x64xf32>, %w: tensor<128x64xf32>) -> tensor<?x?x128xf32> {
  %y = tlm.linear %x, %w : tensor<?x?x64xf32>, tensor<128x64xf32> -> tensor<?x?x128xf32>
  return %y : tensor<?x?x128xf32>
}

// CHECK-LABEL: func @linear_bf16
// CHECK: tlm.linear %{{.*}}, %{{.*}} : tensor<8x64xbf16>, tensor<32x64xbf16> -> tensor<8x32xbf16>
func.func @linear_bf16(%x: tensor<8x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<8x32xbf16> {
  %y = tlm.linear %x, %w : tensor<8x64xbf16>, tensor<32x64xbf16> -> tensor<8x32xbf16>
  return %y : tensor<8x32xbf16>
}

// f32 activations with weights stored narrower, widened where they are read.
// CHECK-LABEL: func @linear_narrow_weights
// CHECK: tlm.linear %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<32x64xbf16> -> tensor<?x32xf32>
// CHECK: tlm.linear %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<32x64xf16> -> tensor<?x32xf32>
// CHECK: tlm.embedding %{{.*}}, %{{.*}} : tensor<?xi64>, tensor<100x64xbf16> -> tensor<?x64xf32>
// CHECK: tlm.swiglu {{.*}} : (tensor<?x64xf32>, tensor<128x64xf16>, tensor<64x128xf16>, tensor<128x64xf16>) -> tensor<?x64xf32>
func.func @linear_narrow_weights(%x: tensor<?x64xf32>, %b: tensor<32x64xbf16>, %h: tensor<32x64xf16>, %ids: tensor<?xi64>, %t: tensor<100x64xbf16>, %w1: tensor<128x64xf16>, %w2: tensor<64x128xf16>, %w3: tensor<128x64xf16>) -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  %y = tlm.linear %x, %b : tensor<?x64xf32>, tensor<32x64xbf16> -> tensor<?x32xf32>
  %z = tlm.linear %x, %h : tensor<?x64xf32>, tensor<32x64xf16> -> tensor<?x32xf32>
  %e = tlm.embedding %ids, %t : tensor<?xi64>, tensor<100x64xbf16> -> tensor<?x64xf32>
  %f = tlm.swiglu %x, %w1, %w2, %w3 : (tensor<?x64xf32>, tensor<128x64xf16>, tensor<64x128xf16>, tensor<128x64xf16>) -> tensor<?x64xf32>
  return %y, %z, %e, %f : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}

// CHECK-LABEL: func @embedding
// CHECK: tlm.embedding %{{.*}}, %{{.*}} : tensor<?x?xi64>, tensor<100x64xf32> -> tensor<?x?x64xf32>
// CHECK: tlm.embedding %{{.*}}, %{{.*}} : tensor<3xi32>, tensor<100x64xf32> -> tensor<3x64xf32>
func.func @embedding(%ids: tensor<?x?xi64>, %ids32: tensor<3xi32>, %t: tensor<100x64xf32>) -> (tensor<?x?x64xf32>, tensor<3x64xf32>) {
  %e = tlm.embedding %ids, %t : tensor<?x?xi64>, tensor<100x64xf32> -> tensor<?x?x64xf32>
  %f = tlm.embedding %ids32, %t : tensor<3xi32>, tensor<100x64xf32> -> tensor<3x64xf32>
  return %e, %f : tensor<?x?x64xf32>, tensor<3x64xf32>
}

// CHECK-LABEL: func @rmsnorm
// CHECK: tlm.rmsnorm %{{.*}}, %{{.*}} : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
// CHECK: tlm.rmsnorm %{{.*}}, %{{.*}} {eps = 5.000000e-01 : f64} : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
func.func @rmsnorm(%x: tensor<?x?x64xf32>, %g: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %y = tlm.rmsnorm %x, %g : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
  %z = tlm.rmsnorm %y, %g {eps = 5.0e-01 : f64} : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
  return %z : tensor<?x?x64xf32>
}

// CHECK-LABEL: func @ffn
// CHECK: tlm.swiglu %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<?x?x64xf32>
// CHECK: tlm.silu_ffn %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<?x?x64xf32>
func.func @ffn(%x: tensor<?x?x64xf32>, %w1: tensor<128x64xf32>, %w2: tensor<64x128xf32>, %w3: tensor<128x64xf32>) -> tensor<?x?x64xf32> {
  %y = tlm.swiglu %x, %w1, %w2, %w3 : (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<?x?x64xf32>
  %z = tlm.silu_ffn %y, %w1, %w2 : (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<?x?x64xf32>
  return %z : tensor<?x?x64xf32>
}

// CHECK-LABEL: func @rope
// CHECK: tlm.rope %{{.*}} {theta = 1.000000e+04 : f64} : tensor<4x12x64xf32> -> tensor<4x12x64xf32>
// CHECK: tlm.rope %{{.*}} positions %{{.*}} {theta = 5.000000e+05 : f64} : tensor<4x12x64xf32>, tensor<12xi64> -> tensor<4x12x64xf32>
func.func @rope(%x: tensor<4x12x64xf32>, %p: tensor<12xi64>) -> tensor<4x12x64xf32> {
  %y = tlm.rope %x {theta = 1.0e+04 : f64} : tensor<4x12x64xf32> -> tensor<4x12x64xf32>
  %z = tlm.rope %y positions %p {theta = 5.0e+05 : f64} : tensor<4x12x64xf32>, tensor<12xi64> -> tensor<4x12x64xf32>
  return %z : tensor<4x12x64xf32>
}

// CHECK-LABEL: func @attention
// CHECK: tlm.attention %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.000000e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x64xf32>
// CHECK: tlm.attention %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 4 : i64, num_kv_heads = 4 : i64} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
// CHECK: tlm.attention %{{.*}}, %{{.*}}, %{{.*}} positions %{{.*}} {num_heads = 4 : i64, num_kv_heads = 4 : i64, rope_theta = 1.000000e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<1x?xi64>) -> tensor<?x?x64xf32>
func.func @attention(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>, %p: tensor<1x?xi64>) -> tensor<?x?x64xf32> {
  %o = tlm.attention %q, %kv, %kv {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x64xf32>
  %n = tlm.attention %o, %o, %o {num_heads = 4 : i64, num_kv_heads = 4 : i64} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %r = tlm.attention %n, %n, %n positions %p {num_heads = 4 : i64, num_kv_heads = 4 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<1x?xi64>) -> tensor<?x?x64xf32>
  return %r : tensor<?x?x64xf32>
}

// CHECK-LABEL: func @sdpa
// CHECK: tlm.sdpa %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} : (tensor<4x12x64xf32>, tensor<4x16x64xf32>, tensor<4x16x32xf32>, tensor<4x12x16xi64>) -> tensor<4x12x32xf32>
// CHECK: tlm.sdpa %{{.*}}, %{{.*}}, %{{.*}} {causal} : (tensor<4x12x64xf32>, tensor<4x16x64xf32>, tensor<4x16x32xf32>) -> tensor<4x12x32xf32>
func.func @sdpa(%q: tensor<4x12x64xf32>, %k: tensor<4x16x64xf32>, %v: tensor<4x16x32xf32>, %m: tensor<4x12x16xi64>) -> (tensor<4x12x32xf32>, tensor<4x12x32xf32>) {
  %o = tlm.sdpa %q, %k, %v mask %m : (tensor<4x12x64xf32>, tensor<4x16x64xf32>, tensor<4x16x32xf32>, tensor<4x12x16xi64>) -> tensor<4x12x32xf32>
  %c = tlm.sdpa %q, %k, %v {causal} : (tensor<4x12x64xf32>, tensor<4x16x64xf32>, tensor<4x16x32xf32>) -> tensor<4x12x32xf32>
  return %o, %c : tensor<4x12x32xf32>, tensor<4x12x32xf32>
}

// CHECK-LABEL: func @helpers
// CHECK: tlm.silu %{{.*}} : tensor<8x5xf32>
// CHECK: tlm.softmax %{{.*}} : tensor<8x5xf32>
// CHECK: tlm.cross_entropy %{{.*}}, %{{.*}} : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<f32>
func.func @helpers(%x: tensor<8x5xf32>, %t: tensor<8xi64>) -> tensor<f32> {
  %s = tlm.silu %x : tensor<8x5xf32>
  %p = tlm.softmax %s : tensor<8x5xf32>
  %l = tlm.cross_entropy %p, %t : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func @cached_attention
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = tlm.cached_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.000000e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
func.func @cached_attention(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>, %past: tensor<?x?x32xf32>) -> tensor<?x?x64xf32> {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %o : tensor<?x?x64xf32>
}

// Each sequence with its own cached length.
// CHECK-LABEL: func @cached_attention_lengths
// CHECK: tlm.cached_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?xi64>)
func.func @cached_attention_lengths(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>, %past: tensor<?x?x32xf32>, %len: tensor<?xi64>) -> tensor<?x?x64xf32> {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past, %len {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?xi64>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %o : tensor<?x?x64xf32>
}

// Block-quantized weights (q8_0: a code a weight; q4_0: two a byte) with a
// scale per 32 weights, read by any op that takes a weight.
// CHECK-LABEL: func @dequantize
// CHECK: tlm.dequantize %{{.*}}, %{{.*}} {bits = 8 : i64} : tensor<128x64xi8>, tensor<128x2xf32> -> tensor<128x64xf32>
// CHECK: tlm.dequantize %{{.*}}, %{{.*}} {bits = 4 : i64} : tensor<16x32xi8>, tensor<16x2xf32> -> tensor<16x64xf32>
// CHECK: tlm.linear
// CHECK: tlm.embedding
func.func @dequantize(%x: tensor<?x?x64xf32>, %ids: tensor<?x?xi64>,
                      %q: tensor<128x64xi8>, %s: tensor<128x2xf32>,
                      %p: tensor<16x32xi8>, %t: tensor<16x2xf32>)
    -> (tensor<?x?x128xf32>, tensor<?x?x64xf32>) {
  %w = tlm.dequantize %q, %s {bits = 8 : i64} : tensor<128x64xi8>, tensor<128x2xf32> -> tensor<128x64xf32>
  %e = tlm.dequantize %p, %t {bits = 4 : i64} : tensor<16x32xi8>, tensor<16x2xf32> -> tensor<16x64xf32>
  %y = tlm.linear %x, %w : tensor<?x?x64xf32>, tensor<128x64xf32> -> tensor<?x?x128xf32>
  %z = tlm.embedding %ids, %e : tensor<?x?xi64>, tensor<16x64xf32> -> tensor<?x?x64xf32>
  return %y, %z : tensor<?x?x128xf32>, tensor<?x?x64xf32>
}

// A lookup in a register of 16 values by the low 4 bits of each index
// (tlm-tile-matmuls{lookup-nibbles} makes it, for AVX-512).
// CHECK-LABEL: func @lookup
// CHECK: tlm.lookup %{{.*}}[%{{.*}}] : vector<16xf32>, vector<16xi32>
func.func @lookup(%table: vector<16xf32>, %dwords: vector<16xi32>) -> vector<16xf32> {
  %w = tlm.lookup %table[%dwords] : vector<16xf32>, vector<16xi32>
  return %w : vector<16xf32>
}

// Four-byte dot products into i32 lanes, unsigned by signed (AVX512-VNNI).
// CHECK-LABEL: func @dot_u8s8
// CHECK: tlm.dot_u8s8 %{{.*}}, %{{.*}}, %{{.*}} : vector<16xi32>, vector<64xi8>
func.func @dot_u8s8(%acc: vector<16xi32>, %w: vector<64xi8>, %x: vector<64xi8>) -> vector<16xi32> {
  %s = tlm.dot_u8s8 %acc, %w, %x : vector<16xi32>, vector<64xi8>
  return %s : vector<16xi32>
}
