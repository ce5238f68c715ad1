// RUN: tlm-opt %s --tlm-lower-to-linalg --canonicalize --cse | FileCheck %s
// The gradient ops' lowering (passes/conversion/*Lowering.cpp).

// CHECK-DAG: #[[P_X:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[P_W:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[P_Y:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[MM_A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[MM_B:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[MM_C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>

// Both are the forward's projection form, so the CPU's tiled matmuls take
// them: dx = dy·W is dy projected by Wᵀ; dW = Σ_rows dyᵀ·x is dyᵀ (n, R)
// projected by xᵀ (k, R) over the collapsed rows R.
// CHECK-LABEL: func @linear_grad
// CHECK-SAME: (%[[DY:[^:]*]]: {{[^,]*}}, %[[X:[^:]*]]: {{[^,]*}}, %[[W:[^:]*]]: tensor<8x4xf32>)
// CHECK: %[[WT:.*]] = linalg.transpose ins(%[[W]] : tensor<8x4xf32>) outs(%{{.*}} : tensor<4x8xf32>) permutation = [1, 0]
// CHECK: linalg.generic {indexing_maps = [#[[P_X]], #[[P_W]], #[[P_Y]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[DY]], %[[WT]] :
// CHECK: %[[DY_ROWS:.*]] = tensor.collapse_shape %[[DY]] {{\[\[}}0, 1], [2]]
// CHECK: %[[DYT:.*]] = linalg.transpose ins(%[[DY_ROWS]] : tensor<?x8xf32>) outs(%{{.*}} : tensor<8x?xf32>)
// CHECK: %[[X_ROWS:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]]
// CHECK: %[[XT:.*]] = linalg.transpose ins(%[[X_ROWS]] : tensor<?x4xf32>) outs(%{{.*}} : tensor<4x?xf32>)
// CHECK: linalg.matmul indexing_maps = [#[[MM_A]], #[[MM_B]], #[[MM_C]]] ins(%[[DYT]], %[[XT]] : tensor<8x?xf32>, tensor<4x?xf32>) outs(%{{.*}} : tensor<8x4xf32>)
func.func @linear_grad(%dy: tensor<?x?x8xf32>, %x: tensor<?x?x4xf32>, %w: tensor<8x4xf32>) -> (tensor<?x?x4xf32>, tensor<8x4xf32>) {
  %dx, %dw = tlm.linear_grad %dy, %x, %w : (tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<8x4xf32>) -> (tensor<?x?x4xf32>, tensor<8x4xf32>)
  return %dx, %dw : tensor<?x?x4xf32>, tensor<8x4xf32>
}

// The scatter-add is a loop over the positions in order, each adding its
// row into a slice of the table it carries: deterministic, in place.
// CHECK-LABEL: func @embedding_grad
// CHECK: %[[IDS:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<?x?xi64> into tensor<?xi64>
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<?x?x8xf32> into tensor<?x8xf32>
// CHECK: %[[ZERO:.*]] = linalg.fill {{.*}} -> tensor<10x8xf32>
// CHECK: scf.for %[[N:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[T:.*]] = %[[ZERO]])
// CHECK: %[[ID:.*]] = tensor.extract %[[IDS]][%[[N]]]
// CHECK: %[[I:.*]] = arith.index_cast %[[ID]] : i64 to index
// CHECK: %[[ROW:.*]] = tensor.extract_slice %[[T]][%[[I]], 0] [1, 8] [1, 1] : tensor<10x8xf32> to tensor<8xf32>
// CHECK: %[[G:.*]] = tensor.extract_slice %[[ROWS]][%[[N]], 0] [1, 8] [1, 1]
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[G]] : tensor<8xf32>) outs(%[[ROW]] : tensor<8xf32>)
// CHECK: tensor.insert_slice %[[SUM]] into %[[T]][%[[I]], 0] [1, 8] [1, 1]
func.func @embedding_grad(%dy: tensor<?x?x8xf32>, %ids: tensor<?x?xi64>) -> tensor<10x8xf32> {
  %de = tlm.embedding_grad %dy, %ids : (tensor<?x?x8xf32>, tensor<?x?xi64>) -> tensor<10x8xf32>
  return %de : tensor<10x8xf32>
}

// The backward rebuilds the forward's rms with the same ops: after CSE one
// sum of squares and one sqrt serve both.
// CHECK-LABEL: func @rmsnorm_shares_rms
// CHECK-COUNT-1: math.sqrt
// CHECK-NOT: math.sqrt
func.func @rmsnorm_shares_rms(%dy: tensor<?x8xf32>, %x: tensor<?x8xf32>, %g: tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %y = tlm.rmsnorm %x, %g : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xf32>
  %dx, %dg = tlm.rmsnorm_grad %dy, %x, %g : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<8xf32>) -> (tensor<?x8xf32>, tensor<8xf32>)
  return %y, %dx : tensor<?x8xf32>, tensor<?x8xf32>
}

// Likewise the loss's row max and exp-sum serve its gradient.
// CHECK-LABEL: func @cross_entropy_shares_lse
// CHECK-COUNT-1: arith.maximumf
// CHECK-NOT: arith.maximumf
func.func @cross_entropy_shares_lse(%z: tensor<8x5xf32>, %t: tensor<8xi64>) -> (tensor<f32>, tensor<8x5xf32>) {
  %l = tlm.cross_entropy %z, %t : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %dz = tlm.cross_entropy_grad %one, %z, %t : (tensor<f32>, tensor<8x5xf32>, tensor<8xi64>) -> tensor<8x5xf32>
  return %l, %dz : tensor<f32>, tensor<8x5xf32>
}

// GQA: the query heads are viewed as (kv, group) so that dK and dV sum the
// group in a loop of its own; the probabilities are exp(S − lse), with no
// max or sum of their own; the rotated gradients are rotated back.
// CHECK-LABEL: func @attention_grad
// CHECK-NOT: arith.maximumf
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2], [3], [4]] {{.*}} : tensor<?x4x?x?xf32> into tensor<?x2x2x?x?xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1], [2, 3], [4]] {{.*}} : tensor<?x?x4x4xf32> into tensor<?x?x2x2x4xf32>
// CHECK: arith.negf
func.func @attention_grad(%do: tensor<?x?x16xf32>, %q: tensor<?x?x16xf32>, %k: tensor<?x?x8xf32>, %v: tensor<?x?x8xf32>, %o: tensor<?x?x16xf32>, %lse: tensor<?x4x?xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %dq, %dk, %dv = tlm.attention_grad %do, %q, %k, %v, %o, %lse {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x16xf32>, tensor<?x4x?xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>)
  return %dq, %dk, %dv : tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>
}
