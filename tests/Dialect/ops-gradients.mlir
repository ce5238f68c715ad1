// RUN: tlm-opt %s | tlm-opt | FileCheck %s
// RUN: tlm-opt %s --mlir-print-op-generic | tlm-opt | FileCheck %s
// The gradient ops (dialect/TlmGradOps.td) print and parse back.

// CHECK-LABEL: func @linear_grad
// CHECK: %{{.*}}, %{{.*}} = tlm.linear_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x128xf32>, tensor<?x?x64xf32>, tensor<128x64xf32>) -> (tensor<?x?x64xf32>, tensor<128x64xf32>)
func.func @linear_grad(%dy: tensor<?x?x128xf32>, %x: tensor<?x?x64xf32>, %w: tensor<128x64xf32>) -> (tensor<?x?x64xf32>, tensor<128x64xf32>) {
  %dx, %dw = tlm.linear_grad %dy, %x, %w : (tensor<?x?x128xf32>, tensor<?x?x64xf32>, tensor<128x64xf32>) -> (tensor<?x?x64xf32>, tensor<128x64xf32>)
  return %dx, %dw : tensor<?x?x64xf32>, tensor<128x64xf32>
}

// CHECK-LABEL: func @embedding_grad
// CHECK: tlm.embedding_grad %{{.*}}, %{{.*}} : (tensor<?x?x64xf32>, tensor<?x?xi64>) -> tensor<1000x64xf32>
func.func @embedding_grad(%dy: tensor<?x?x64xf32>, %ids: tensor<?x?xi64>) -> tensor<1000x64xf32> {
  %de = tlm.embedding_grad %dy, %ids : (tensor<?x?x64xf32>, tensor<?x?xi64>) -> tensor<1000x64xf32>
  return %de : tensor<1000x64xf32>
}

// CHECK-LABEL: func @rmsnorm_grad
// CHECK: tlm.rmsnorm_grad %{{.*}}, %{{.*}}, %{{.*}} {eps = 9.9999999999999995E-7 : f64} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<64xf32>)
func.func @rmsnorm_grad(%dy: tensor<?x?x64xf32>, %x: tensor<?x?x64xf32>, %g: tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<64xf32>) {
  %dx, %dg = tlm.rmsnorm_grad %dy, %x, %g {eps = 1.0e-06 : f64} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>) -> (tensor<?x?x64xf32>, tensor<64xf32>)
  return %dx, %dg : tensor<?x?x64xf32>, tensor<64xf32>
}

// CHECK-LABEL: func @swiglu_grad
// CHECK: tlm.swiglu_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<128x64xf32>)
func.func @swiglu_grad(%dy: tensor<?x?x64xf32>, %x: tensor<?x?x64xf32>, %w1: tensor<128x64xf32>, %w2: tensor<64x128xf32>, %w3: tensor<128x64xf32>) -> tensor<?x?x64xf32> {
  %dx, %d1, %d2, %d3 = tlm.swiglu_grad %dy, %x, %w1, %w2, %w3 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<128x64xf32>)
  return %dx : tensor<?x?x64xf32>
}

// CHECK-LABEL: func @silu_ffn_grad
// CHECK: tlm.silu_ffn_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>)
func.func @silu_ffn_grad(%dy: tensor<?x?x64xf32>, %x: tensor<?x?x64xf32>, %w1: tensor<128x64xf32>, %w2: tensor<64x128xf32>) -> tensor<?x?x64xf32> {
  %dx, %d1, %d2 = tlm.silu_ffn_grad %dy, %x, %w1, %w2 : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>)
  return %dx : tensor<?x?x64xf32>
}

// CHECK-LABEL: func @attention_lse_and_grad
// CHECK: %[[O:.*]], %[[L:.*]] = tlm.attention_lse %{{.*}}, %{{.*}}, %{{.*}} {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.000000e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> (tensor<?x?x64xf32>, tensor<?x4x?xf32>)
// CHECK: tlm.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[O]], %[[L]] {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.000000e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x64xf32>, tensor<?x4x?xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
func.func @attention_lse_and_grad(%do: tensor<?x?x64xf32>, %q: tensor<?x?x64xf32>, %k: tensor<?x?x32xf32>, %v: tensor<?x?x32xf32>) -> tensor<?x?x64xf32> {
  %o, %lse = tlm.attention_lse %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> (tensor<?x?x64xf32>, tensor<?x4x?xf32>)
  %dq, %dk, %dv = tlm.attention_grad %do, %q, %k, %v, %o, %lse {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x64xf32>, tensor<?x4x?xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %dq : tensor<?x?x64xf32>
}

// CHECK-LABEL: func @cross_entropy_grad
// CHECK: tlm.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<8x5xf32>, tensor<8xi64>) -> tensor<8x5xf32>
func.func @cross_entropy_grad(%dl: tensor<f32>, %z: tensor<8x5xf32>, %t: tensor<8xi64>) -> tensor<8x5xf32> {
  %dz = tlm.cross_entropy_grad %dl, %z, %t : (tensor<f32>, tensor<8x5xf32>, tensor<8xi64>) -> tensor<8x5xf32>
  return %dz : tensor<8x5xf32>
}
