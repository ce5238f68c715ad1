// RUN: tlm-opt %s --tlm-lower-to-linalg="attention-by-heads attention-block=8" --canonicalize --cse | FileCheck %s
// RUN: tlm-opt %s --tlm-lower-to-linalg="attention-by-heads" --canonicalize --cse | FileCheck %s --check-prefix=TILE

// Training's attention (static T = 24) in FlashAttention-2 blocks of 8
// queries and keys: loops over (batch, head), then blocks; the only score
// tiles are 8x8, never 24x24. Without a block (attention-block=0) each head
// keeps one 24x24 tile.

// The forward: per query block i, the key blocks 0..i (the causal upper
// triangle is never visited), with the running max, sum and output carried
// in place.
// CHECK-LABEL: func @attention_lse_blocks
// CHECK-NOT: tensor<24x24xf32>
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for %[[I:.*]] = %c0 to %c3 step %c1 iter_args({{.*}}) -> (tensor<24x4xf32>, tensor<24xf32>)
// CHECK: %[[UPTO:.*]] = arith.addi %[[I]], %c1
// CHECK: scf.for %{{.*}} = %c0 to %[[UPTO]] step %c1 iter_args({{.*}}) -> (tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>)
// CHECK: linalg.matmul {{.*}}tlm.tile_in_loop{{.*}} -> tensor<8x8xf32>
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: linalg.matmul {{.*}}tlm.tile_in_loop{{.*}} -> tensor<8x4xf32>
// CHECK: scf.yield {{.*}} : tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>
// CHECK: math.log
// CHECK-NOT: tensor<24x24xf32>
// CHECK-LABEL: func @attention_grad_blocks
// TILE-LABEL: func @attention_lse_blocks
// TILE: linalg.matmul {{.*}} -> tensor<24x24xf32>
func.func @attention_lse_blocks(%q: tensor<2x24x16xf32>, %k: tensor<2x24x8xf32>, %v: tensor<2x24x8xf32>) -> (tensor<2x24x16xf32>, tensor<2x4x24xf32>) {
  %o, %lse = tlm.attention_lse %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x24x16xf32>, tensor<2x24x8xf32>, tensor<2x24x8xf32>) -> (tensor<2x24x16xf32>, tensor<2x4x24xf32>)
  return %o, %lse : tensor<2x24x16xf32>, tensor<2x4x24xf32>
}

// The backward: per key block j, the query blocks j..2, on transposed tiles
// (keys as rows): P from the saved logsumexps (no max, no sum), dV and dK
// accumulated in the block, dQ in the head's rows, dK and dV of the kv
// head added in once per key block.
// CHECK-NOT: tensor<24x24xf32>
// CHECK-NOT: arith.maximumf
// CHECK: scf.for %[[J:.*]] = %c0 to %c3 step %c1 iter_args({{.*}}) -> (tensor<24x4xf32>, tensor<2x24x2x4xf32>, tensor<2x24x2x4xf32>)
// CHECK: scf.for %{{.*}} = %[[J]] to %c3 step %c1 iter_args({{.*}}) -> (tensor<24x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>)
// CHECK: linalg.matmul {{.*}}tlm.tile_in_loop{{.*}} -> tensor<8x8xf32>
// CHECK: math.exp
// CHECK: linalg.transpose {{.*}} : tensor<8x8xf32>) outs({{.*}} : tensor<8x8xf32>)
// CHECK: scf.yield {{.*}} : tensor<24x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
// CHECK: arith.addf
// CHECK: tensor.insert_slice {{.*}} into tensor<2x24x2x4xf32>
// CHECK-NOT: tensor<24x24xf32>
// TILE-LABEL: func @attention_grad_blocks
// TILE: linalg.matmul {{.*}} -> tensor<24x24xf32>
func.func @attention_grad_blocks(%do: tensor<2x24x16xf32>, %q: tensor<2x24x16xf32>, %k: tensor<2x24x8xf32>, %v: tensor<2x24x8xf32>, %o: tensor<2x24x16xf32>, %lse: tensor<2x4x24xf32>) -> (tensor<2x24x16xf32>, tensor<2x24x8xf32>, tensor<2x24x8xf32>) {
  %dq, %dk, %dv = tlm.attention_grad %do, %q, %k, %v, %o, %lse {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<2x24x16xf32>, tensor<2x24x16xf32>, tensor<2x24x8xf32>, tensor<2x24x8xf32>, tensor<2x24x16xf32>, tensor<2x4x24xf32>) -> (tensor<2x24x16xf32>, tensor<2x24x8xf32>, tensor<2x24x8xf32>)
  return %dq, %dk, %dv : tensor<2x24x16xf32>, tensor<2x24x8xf32>, tensor<2x24x8xf32>
}

// A sequence with no divisor from 8 to the block (T = 11, prime) keeps one
// tile a head.
// CHECK-LABEL: func @attention_prime_length
// CHECK: linalg.matmul {{.*}} -> tensor<11x11xf32>
func.func @attention_prime_length(%q: tensor<1x11x8xf32>, %k: tensor<1x11x8xf32>, %v: tensor<1x11x8xf32>) -> (tensor<1x11x8xf32>, tensor<1x2x11xf32>) {
  %o, %lse = tlm.attention_lse %q, %k, %v {num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x11x8xf32>, tensor<1x11x8xf32>, tensor<1x11x8xf32>) -> (tensor<1x11x8xf32>, tensor<1x2x11xf32>)
  return %o, %lse : tensor<1x11x8xf32>, tensor<1x2x11xf32>
}
