// RUN: tlm-opt %s --split-input-file --tlm-build-train-step | FileCheck %s
// RUN: tlm-opt %s --split-input-file --tlm-build-train-step --tlm-lower-to-linalg | FileCheck %s --check-prefix=NOTLM
// RUN: tlm-opt %s --split-input-file --tlm-build-train-step=recompute=false | FileCheck %s --check-prefix=KEEP

// The backward lowers like the forward: no tlm op is left.
// NOTLM-NOT: = tlm.

// The loss function stays; the step returns the loss, then the gradient of
// each f32 argument in order (none for the integer targets), seeded with 1.
// CHECK-LABEL: func.func @loss(
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32>, %[[W:[^:]*]]: tensor<5x8xf32>, %[[T:[^:]*]]: tensor<4xi64>) -> (tensor<f32>, tensor<4x8xf32>, tensor<5x8xf32>)
// CHECK: %[[Y:.*]] = tlm.linear %[[X]], %[[W]]
// CHECK: %[[L:.*]] = tlm.cross_entropy %[[Y]], %[[T]]
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DY:.*]] = tlm.cross_entropy_grad %[[ONE]], %[[Y]], %[[T]]
// CHECK: %[[DX:.*]], %[[DW:.*]] = tlm.linear_grad %[[DY]], %[[X]], %[[W]]
// CHECK: return %[[L]], %[[DX]], %[[DW]]
func.func @loss(%x: tensor<4x8xf32>, %w: tensor<5x8xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  %y = tlm.linear %x, %w : tensor<4x8xf32>, tensor<5x8xf32> -> tensor<4x5xf32>
  %l = tlm.cross_entropy %y, %t : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A value read twice (the residual stream, a tied table) gets the sum of
// its readers' gradients; the residual add hands its gradient to both
// sides.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[IDS:[^:]*]]: tensor<2x3xi64>, %[[T:[^:]*]]: tensor<2x3xi64>, %[[E:[^:]*]]: tensor<10x8xf32>, %[[G:[^:]*]]: tensor<8xf32>)
// CHECK: %[[X:.*]] = tlm.embedding %[[IDS]], %[[E]]
// CHECK: %[[N:.*]] = tlm.rmsnorm %[[X]], %[[G]]
// CHECK: %[[H:.*]] = arith.addf %[[X]], %[[N]]
// CHECK: %[[Z:.*]] = tlm.linear %[[H]], %[[E]]
// CHECK: %[[DZ:.*]] = tlm.cross_entropy_grad %{{.*}}, %[[Z]], %[[T]]
// CHECK: %[[DH:.*]], %[[DE_HEAD:.*]] = tlm.linear_grad %[[DZ]], %[[H]], %[[E]]
// CHECK: %[[DX_NORM:.*]], %[[DG:.*]] = tlm.rmsnorm_grad %[[DH]], %[[X]], %[[G]] :
// CHECK: %[[DX:.*]] = arith.addf %[[DH]], %[[DX_NORM]]
// CHECK: %[[DE_TABLE:.*]] = tlm.embedding_grad %[[DX]], %[[IDS]]
// CHECK: %[[DE:.*]] = arith.addf %[[DE_HEAD]], %[[DE_TABLE]]
// CHECK: return %{{.*}}, %[[DE]], %[[DG]]
func.func @loss(%ids: tensor<2x3xi64>, %t: tensor<2x3xi64>, %e: tensor<10x8xf32>, %g: tensor<8xf32>) -> tensor<f32> {
  %x = tlm.embedding %ids, %e : tensor<2x3xi64>, tensor<10x8xf32> -> tensor<2x3x8xf32>
  %n = tlm.rmsnorm %x, %g {eps = 1.0e-05 : f64} : tensor<2x3x8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>
  %h = arith.addf %x, %n : tensor<2x3x8xf32>
  %z = tlm.linear %h, %e : tensor<2x3x8xf32>, tensor<10x8xf32> -> tensor<2x3x10xf32>
  %l = tlm.cross_entropy %z, %t : (tensor<2x3x10xf32>, tensor<2x3xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The block's ops: attention (GQA, RoPE) and SwiGLU give their gradient op
// the forward op's own operands and attributes; in the step, attention
// also returns its row logsumexps (tlm.attention_lse), which its gradient
// reads with its output. A cast passes the gradient back in its source's
// type. An f32 argument the loss does not read gets zeros.
// CHECK-LABEL: func.func @loss(
// CHECK: tlm.attention %
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: tlm.attention %
// CHECK: %[[Q:.*]] = tlm.linear
// CHECK: %[[O:.*]], %[[LSE:.*]] = tlm.attention_lse %[[Q]], %[[K:.*]], %[[V:.*]] {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.000000e+04 : f64} : ({{.*}}) -> (tensor<?x?x16xf32>, tensor<?x4x?xf32>)
// CHECK: %[[F:.*]] = tlm.swiglu %[[O]], %[[W1:.*]], %[[W2:.*]], %[[W3:[^ ]*]] :
// CHECK: %[[C:.*]] = tensor.cast %[[F]] : tensor<?x?x16xf32> to tensor<1x4x16xf32>
// CHECK: %[[DC:.*]] = tlm.cross_entropy_grad
// CHECK: %[[DF:.*]] = tensor.cast %{{.*}} : tensor<1x4x16xf32> to tensor<?x?x16xf32>
// CHECK: %[[DO:.*]], %{{.*}}, %{{.*}}, %{{.*}} = tlm.swiglu_grad %[[DF]], %[[O]], %[[W1]], %[[W2]], %[[W3]]
// CHECK: tlm.attention_grad %[[DO]], %[[Q]], %[[K]], %[[V]], %[[O]], %[[LSE]] {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.000000e+04 : f64, tlm.recompute}
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: return {{.*}}, %[[ZERO]] :
func.func @loss(%x: tensor<?x?x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>,
                %w1: tensor<32x16xf32>, %w2: tensor<16x32xf32>, %w3: tensor<32x16xf32>, %unused: tensor<3xf32>,
                %t: tensor<1x4xi64>) -> tensor<f32> {
  %q = tlm.linear %x, %wq : tensor<?x?x16xf32>, tensor<16x16xf32> -> tensor<?x?x16xf32>
  %k = tlm.linear %x, %wk : tensor<?x?x16xf32>, tensor<8x16xf32> -> tensor<?x?x8xf32>
  %v = tlm.linear %x, %wv : tensor<?x?x16xf32>, tensor<8x16xf32> -> tensor<?x?x8xf32>
  %o = tlm.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64}
      : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x16xf32>
  %f = tlm.swiglu %o, %w1, %w2, %w3 : (tensor<?x?x16xf32>, tensor<32x16xf32>, tensor<16x32xf32>, tensor<32x16xf32>) -> tensor<?x?x16xf32>
  %c = tensor.cast %f : tensor<?x?x16xf32> to tensor<1x4x16xf32>
  %l = tlm.cross_entropy %c, %t : (tensor<1x4x16xf32>, tensor<1x4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Recomputation: the RMSNorm output the LM head's gradient reads is a copy
// of the norm in the backward (marked tlm.recompute, so CSE keeps it apart),
// next to that reader; the forward's is read by the forward only. The FFN
// and attention gradients are marked for their lowering to recompute the
// gate product and the rotated Q and K. With recompute=false the backward
// reads the forward's values.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[N:.*]] = tlm.rmsnorm %[[X:[^,]*]], %[[G:[^ ]*]] :
// CHECK-NOT: tlm.recompute
// CHECK: %[[Z:.*]] = tlm.linear %[[N]]
// CHECK: %[[DZ:.*]] = tlm.cross_entropy_grad
// CHECK: %[[N2:.*]] = tlm.rmsnorm %[[X]], %[[G]] {tlm.recompute}
// CHECK: tlm.linear_grad %[[DZ]], %[[N2]], %{{.*}}
// CHECK: tlm.rmsnorm_grad %{{.*}}, %[[X]], %[[G]]
// KEEP-LABEL: func.func @train_step(%arg0: tensor<2x3x8xf32>
// KEEP-NOT: tlm.recompute
// KEEP: %[[N:.*]] = tlm.rmsnorm
// KEEP: tlm.linear_grad %{{.*}}, %[[N]], %{{.*}}
// KEEP-NOT: tlm.recompute
func.func @loss(%x: tensor<2x3x8xf32>, %g: tensor<8xf32>, %w: tensor<10x8xf32>, %t: tensor<2x3xi64>) -> tensor<f32> {
  %n = tlm.rmsnorm %x, %g {eps = 1.0e-05 : f64} : tensor<2x3x8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>
  %z = tlm.linear %n, %w : tensor<2x3x8xf32>, tensor<10x8xf32> -> tensor<2x3x10xf32>
  %l = tlm.cross_entropy %z, %t : (tensor<2x3x10xf32>, tensor<2x3xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
