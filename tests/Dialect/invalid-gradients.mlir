// RUN: tlm-opt %s -split-input-file -verify-diagnostics
// The verifiers of the gradient ops: one case per rule; each message names
// what was expected and found.

func.func @case0(%dy: tensor<2x8xf32>, %x: tensor<2x4xf32>, %w: tensor<8x4xbf16>) {
  // expected-error @+1 {{operand #2 must be ranked tensor of 32-bit float values}}
  %dx, %dw = tlm.linear_grad %dy, %x, %w : (tensor<2x8xf32>, tensor<2x4xf32>, tensor<8x4xbf16>) -> (tensor<2x4xf32>, tensor<8x4xf32>)
  return
}

// -----

func.func @case1(%dy: tensor<2x7xf32>, %x: tensor<2x4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{expected grad dim 1 (d_out, the weight's dim 0) to be 8, found 7 in shape (2, 7)}}
  %dx, %dw = tlm.linear_grad %dy, %x, %w : (tensor<2x7xf32>, tensor<2x4xf32>, tensor<8x4xf32>) -> (tensor<2x4xf32>, tensor<8x4xf32>)
  return
}

// -----

func.func @case2(%dy: tensor<2x8xf32>, %x: tensor<2x4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{expected weight_grad of the shape of weight (8, 4), found (4, 8)}}
  %dx, %dw = tlm.linear_grad %dy, %x, %w : (tensor<2x8xf32>, tensor<2x4xf32>, tensor<8x4xf32>) -> (tensor<2x4xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @case3(%dy: tensor<3x8xf32>, %ids: tensor<3xi64>) {
  // expected-error @+1 {{expected a static vocab_size (table_grad dim 0)}}
  %de = tlm.embedding_grad %dy, %ids : (tensor<3x8xf32>, tensor<3xi64>) -> tensor<?x8xf32>
  return
}

// -----

func.func @case4(%dy: tensor<3x8xf32>, %ids: tensor<4xi64>) {
  // expected-error @+1 {{expected grad dim 0 (dim of ids) to be 4, found 3 in shape (3, 8)}}
  %de = tlm.embedding_grad %dy, %ids : (tensor<3x8xf32>, tensor<4xi64>) -> tensor<10x8xf32>
  return
}

// -----

func.func @case5(%dy: tensor<3x8xf32>, %x: tensor<3x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{expected eps > 0, found 0}}
  %dx, %dg = tlm.rmsnorm_grad %dy, %x, %g {eps = 0.0 : f64} : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<8xf32>) -> (tensor<3x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @case6(%dy: tensor<3x8xf32>, %x: tensor<3x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{expected input_grad of the shape of input (3, 8), found (8, 3)}}
  %dx, %dg = tlm.rmsnorm_grad %dy, %x, %g : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<8xf32>) -> (tensor<8x3xf32>, tensor<8xf32>)
  return
}

// -----

func.func @case7(%dy: tensor<3x8xf32>, %x: tensor<3x8xf32>, %w1: tensor<16x8xf32>, %w2: tensor<8x16xf32>, %w3: tensor<16x4xf32>) {
  // expected-error @+1 {{expected w3 of the shape of w1 (16, 8), found (16, 4)}}
  %dx, %d1, %d2, %d3 = tlm.swiglu_grad %dy, %x, %w1, %w2, %w3 : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x4xf32>) -> (tensor<3x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x4xf32>)
  return
}

// -----

func.func @case8(%dy: tensor<3x8xf32>, %x: tensor<3x8xf32>, %w1: tensor<16x8xf32>, %w2: tensor<8x12xf32>) {
  // expected-error @+1 {{expected w2 dim 1 (d_ff, w1's dim 0) to be 16, found 12 in shape (8, 12)}}
  %dx, %d1, %d2 = tlm.silu_ffn_grad %dy, %x, %w1, %w2 : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<16x8xf32>, tensor<8x12xf32>) -> (tensor<3x8xf32>, tensor<16x8xf32>, tensor<8x12xf32>)
  return
}

// -----

func.func @case9(%do: tensor<1x4x16xf32>, %q: tensor<1x4x16xf32>, %k: tensor<1x4x8xf32>, %v: tensor<1x4x8xf32>, %o: tensor<1x4x16xf32>, %l: tensor<1x4x4xf32>) {
  // expected-error @+1 {{expected num_heads (4) to be divisible by num_kv_heads (3)}}
  %dq, %dk, %dv = tlm.attention_grad %do, %q, %k, %v, %o, %l {num_heads = 4 : i64, num_kv_heads = 3 : i64} : (tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x16xf32>, tensor<1x4x4xf32>) -> (tensor<1x4x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
  return
}

// -----

func.func @case10(%do: tensor<1x5x16xf32>, %q: tensor<1x4x16xf32>, %k: tensor<1x4x8xf32>, %v: tensor<1x4x8xf32>, %o: tensor<1x4x16xf32>, %l: tensor<1x4x4xf32>) {
  // expected-error @+1 {{expected grad of the shape of q (1, 4, 16), found (1, 5, 16)}}
  %dq, %dk, %dv = tlm.attention_grad %do, %q, %k, %v, %o, %l {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<1x5x16xf32>, tensor<1x4x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x16xf32>, tensor<1x4x4xf32>) -> (tensor<1x4x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
  return
}

// -----

func.func @case11(%do: tensor<1x4x16xf32>, %q: tensor<1x4x16xf32>, %k: tensor<1x4x8xf32>, %v: tensor<1x4x8xf32>, %o: tensor<1x4x16xf32>, %l: tensor<1x4x4xf32>) {
  // expected-error @+1 {{expected k_grad of the shape of k (1, 4, 8), found (1, 4, 16)}}
  %dq, %dk, %dv = tlm.attention_grad %do, %q, %k, %v, %o, %l {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x16xf32>, tensor<1x4x4xf32>) -> (tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x8xf32>)
  return
}

// -----

func.func @case11b(%do: tensor<1x4x16xf32>, %q: tensor<1x4x16xf32>, %k: tensor<1x4x8xf32>, %v: tensor<1x4x8xf32>, %o: tensor<1x4x16xf32>, %l: tensor<1x2x4xf32>) {
  // expected-error @+1 {{expected lse dim 1 (num_heads) to be 4, found 2 in shape (1, 2, 4)}}
  %dq, %dk, %dv = tlm.attention_grad %do, %q, %k, %v, %o, %l {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x16xf32>, tensor<1x2x4xf32>) -> (tensor<1x4x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
  return
}

// -----

func.func @case11c(%q: tensor<1x4x16xf32>, %k: tensor<1x4x8xf32>, %v: tensor<1x4x8xf32>) {
  // expected-error @+1 {{expected lse dim 2 (seq) to be 4, found 5 in shape (1, 4, 5)}}
  %o, %l = tlm.attention_lse %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<1x4x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> (tensor<1x4x16xf32>, tensor<1x4x5xf32>)
  return
}

// -----

func.func @case12(%dl: tensor<1xf32>, %z: tensor<8x5xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{expected grad of rank 0, found rank 1 (1)}}
  %dz = tlm.cross_entropy_grad %dl, %z, %t : (tensor<1xf32>, tensor<8x5xf32>, tensor<8xi64>) -> tensor<8x5xf32>
  return
}

// -----

func.func @case13(%dl: tensor<f32>, %z: tensor<8x5xf32>, %t: tensor<7xi64>) {
  // expected-error @+1 {{expected targets dim 0 (position dim of logits) to be 8, found 7 in shape (7)}}
  %dz = tlm.cross_entropy_grad %dl, %z, %t : (tensor<f32>, tensor<8x5xf32>, tensor<7xi64>) -> tensor<8x5xf32>
  return
}
