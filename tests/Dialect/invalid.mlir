// RUN: tlm-opt %s -split-input-file -verify-diagnostics
// One case per verifier rule; each message names what was expected and found.

func.func @case0(%x: tensor<f32>, %w: tensor<4x4xf32>) {
  // expected-error @+1 {{expected input of rank >= 1, found a 0-d tensor}}
  %y = tlm.linear %x, %w : tensor<f32>, tensor<4x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @case1(%x: tensor<2x4xf32>, %w: tensor<8x4xf64>) {
  // expected-error @+1 {{expected weight element type 'f32', bf16 or f16 (the activations' 'f32'), found 'f64'}}
  %y = tlm.linear %x, %w : tensor<2x4xf32>, tensor<8x4xf64> -> tensor<2x8xf32>
  return
}

// -----

// Narrow weights are for f32 activations only.
func.func @case1_narrow(%x: tensor<2x4xf16>, %w: tensor<8x4xbf16>) {
  // expected-error @+1 {{expected weight element type 'f16' (the activations' 'f16'), found 'bf16'}}
  %y = tlm.linear %x, %w : tensor<2x4xf16>, tensor<8x4xbf16> -> tensor<2x8xf16>
  return
}

// -----

func.func @case2(%x: tensor<2x4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{expected result element type 'f32' to match input, found 'f16'}}
  %y = tlm.linear %x, %w : tensor<2x4xf32>, tensor<8x4xf32> -> tensor<2x8xf16>
  return
}

// -----

func.func @case3(%x: tensor<2x4xf32>, %w: tensor<8x4x1xf32>) {
  // expected-error @+1 {{expected weight of rank 2, found rank 3 (8, 4, 1)}}
  %y = tlm.linear %x, %w : tensor<2x4xf32>, tensor<8x4x1xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @case4(%x: tensor<2x4xf32>, %w: tensor<8x5xf32>) {
  // expected-error @+1 {{expected weight dim 1 (d_in, the input's last dim) to be 4, found 5 in shape (8, 5)}}
  %y = tlm.linear %x, %w : tensor<2x4xf32>, tensor<8x5xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @case5(%x: tensor<2x4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{expected result of rank 2, found rank 3 (1, 2, 8)}}
  %y = tlm.linear %x, %w : tensor<2x4xf32>, tensor<8x4xf32> -> tensor<1x2x8xf32>
  return
}

// -----

func.func @case6(%x: tensor<2x4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{expected result dim 0 (batch dim of the input) to be 2, found 3 in shape (3, 8)}}
  %y = tlm.linear %x, %w : tensor<2x4xf32>, tensor<8x4xf32> -> tensor<3x8xf32>
  return
}

// -----

func.func @case7(%x: tensor<2x4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{expected result dim 1 (d_out, the weight's dim 0) to be 8, found 7 in shape (2, 7)}}
  %y = tlm.linear %x, %w : tensor<2x4xf32>, tensor<8x4xf32> -> tensor<2x7xf32>
  return
}

// -----

func.func @case8(%i: tensor<3xi64>, %t: tensor<10xf32>) {
  // expected-error @+1 {{expected table of rank 2, found rank 1 (10)}}
  %y = tlm.embedding %i, %t : tensor<3xi64>, tensor<10xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @case9(%i: tensor<3xi64>, %t: tensor<10x4xf32>) {
  // expected-error @+1 {{expected table element type 'f16' (the activations' 'f16'), found 'f32'}}
  %y = tlm.embedding %i, %t : tensor<3xi64>, tensor<10x4xf32> -> tensor<3x4xf16>
  return
}

// -----

func.func @case10(%i: tensor<3xi64>, %t: tensor<10x4xf32>) {
  // expected-error @+1 {{expected result of rank 2, found rank 1 (4)}}
  %y = tlm.embedding %i, %t : tensor<3xi64>, tensor<10x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @case11(%i: tensor<3xi64>, %t: tensor<10x4xf32>) {
  // expected-error @+1 {{expected result dim 0 (dim of ids) to be 3, found 2}}
  %y = tlm.embedding %i, %t : tensor<3xi64>, tensor<10x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @case12(%i: tensor<3xi64>, %t: tensor<10x4xf32>) {
  // expected-error @+1 {{expected result dim 1 (d_model, the table's dim 1) to be 4, found 5}}
  %y = tlm.embedding %i, %t : tensor<3xi64>, tensor<10x4xf32> -> tensor<3x5xf32>
  return
}

// -----

func.func @case13(%i: tensor<3xf32>, %t: tensor<10x4xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %y = tlm.embedding %i, %t : tensor<3xf32>, tensor<10x4xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @case14(%x: tensor<f32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{expected input of rank >= 1, found a 0-d tensor}}
  %y = tlm.rmsnorm %x, %g : tensor<f32>, tensor<4xf32> -> tensor<f32>
  return
}

// -----

func.func @case15(%x: tensor<2x4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{expected eps > 0, found 0}}
  %y = tlm.rmsnorm %x, %g {eps = 0.0 : f64} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @case16(%x: tensor<2x4xf32>, %g: tensor<4xf16>) {
  // expected-error @+1 {{expected weight element type 'f32' to match input, found 'f16'}}
  %y = tlm.rmsnorm %x, %g : tensor<2x4xf32>, tensor<4xf16> -> tensor<2x4xf32>
  return
}

// -----

func.func @case17(%x: tensor<2x4xf32>, %g: tensor<1x4xf32>) {
  // expected-error @+1 {{expected weight of rank 1, found rank 2 (1, 4)}}
  %y = tlm.rmsnorm %x, %g : tensor<2x4xf32>, tensor<1x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @case18(%x: tensor<2x4xf32>, %g: tensor<5xf32>) {
  // expected-error @+1 {{expected weight dim 0 (d_model, the input's last dim) to be 4, found 5}}
  %y = tlm.rmsnorm %x, %g : tensor<2x4xf32>, tensor<5xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @case19(%x: tensor<2x4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{failed to verify that all of {input, result} have same type}}
  %y = tlm.rmsnorm %x, %g : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x5xf32>
  return
}

// -----

func.func @case20(%x: tensor<f32>, %w1: tensor<8x4xf32>, %w2: tensor<4x8xf32>) {
  // expected-error @+1 {{expected input of rank >= 1, found a 0-d tensor}}
  %y = tlm.silu_ffn %x, %w1, %w2 : (tensor<f32>, tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<f32>
  return
}

// -----

func.func @case21(%x: tensor<2x4xf32>, %w1: tensor<8x4xf64>, %w2: tensor<4x8xf32>) {
  // expected-error @+1 {{expected w1 element type 'f32', bf16 or f16 (the activations' 'f32'), found 'f64'}}
  %y = tlm.silu_ffn %x, %w1, %w2 : (tensor<2x4xf32>, tensor<8x4xf64>, tensor<4x8xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case22(%x: tensor<2x4xf32>, %w1: tensor<8xf32>, %w2: tensor<4x8xf32>) {
  // expected-error @+1 {{expected w1 of rank 2, found rank 1 (8)}}
  %y = tlm.silu_ffn %x, %w1, %w2 : (tensor<2x4xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case23(%x: tensor<2x4xf32>, %w1: tensor<8x5xf32>, %w2: tensor<4x8xf32>) {
  // expected-error @+1 {{expected w1 dim 1 (d_in) to be 4, found 5}}
  %y = tlm.silu_ffn %x, %w1, %w2 : (tensor<2x4xf32>, tensor<8x5xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case24(%x: tensor<2x4xf32>, %w1: tensor<8x4xf32>, %w2: tensor<4x7xf32>) {
  // expected-error @+1 {{expected w2 dim 1 (d_in) to be 8, found 7}}
  %y = tlm.silu_ffn %x, %w1, %w2 : (tensor<2x4xf32>, tensor<8x4xf32>, tensor<4x7xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case25(%x: tensor<2x4xf32>, %w1: tensor<8x4xf32>, %w2: tensor<3x8xf32>) {
  // expected-error @+1 {{expected w2 dim 0 (d_model) to be 4, found 3}}
  %y = tlm.silu_ffn %x, %w1, %w2 : (tensor<2x4xf32>, tensor<8x4xf32>, tensor<3x8xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case26(%x: tensor<2x4xf32>, %w1: tensor<8x4xf32>, %w2: tensor<4x8xf32>, %w3: tensor<9x4xf32>) {
  // expected-error @+1 {{expected w3 dim 0 (d_ff, as in w1) to be 8, found 9}}
  %y = tlm.swiglu %x, %w1, %w2, %w3 : (tensor<2x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<9x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case27(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected input of rank >= 2 (..., seq, d), found rank 1}}
  %y = tlm.rope %x {theta = 1.0e+04 : f64} : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @case28(%x: tensor<2x5xf32>) {
  // expected-error @+1 {{expected a static, even last dim (rotated pairs), found 5}}
  %y = tlm.rope %x {theta = 1.0e+04 : f64} : tensor<2x5xf32> -> tensor<2x5xf32>
  return
}

// -----

func.func @case29(%x: tensor<2x?xf32>) {
  // expected-error @+1 {{expected a static, even last dim (rotated pairs), found ?}}
  %y = tlm.rope %x {theta = 1.0e+04 : f64} : tensor<2x?xf32> -> tensor<2x?xf32>
  return
}

// -----

func.func @case30(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{expected theta > 0, found -1}}
  %y = tlm.rope %x {theta = -1.0 : f64} : tensor<2x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @case31(%x: tensor<2x4xf32>, %p: tensor<1x2xi64>) {
  // expected-error @+1 {{expected positions of rank 1 to 1, found rank 2 (1, 2)}}
  %y = tlm.rope %x positions %p {theta = 1.0e+04 : f64} : tensor<2x4xf32>, tensor<1x2xi64> -> tensor<2x4xf32>
  return
}

// -----

func.func @case32(%x: tensor<3x2x4xf32>, %p: tensor<2x2xi64>) {
  // expected-error @+1 {{expected positions dim 0 to be 1 or 3 (input dim 0), found 2}}
  %y = tlm.rope %x positions %p {theta = 1.0e+04 : f64} : tensor<3x2x4xf32>, tensor<2x2xi64> -> tensor<3x2x4xf32>
  return
}

// -----

func.func @case33(%q: tensor<2x8xf32>) {
  // expected-error @+1 {{expected q of rank 3, found rank 2 (2, 8)}}
  %y = tlm.attention %q, %q, %q {num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @case34(%q: tensor<1x2x8xf32>, %k: tensor<1x2x8xf16>) {
  // expected-error @+1 {{expected k element type 'f32' to match q, found 'f16'}}
  %y = tlm.attention %q, %k, %k {num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf16>, tensor<1x2x8xf16>) -> tensor<1x2x8xf32>
  return
}

// -----

func.func @case35(%q: tensor<1x2x8xf32>) {
  // expected-error @+1 {{attribute 'num_heads' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %y = tlm.attention %q, %q, %q {num_heads = 0 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return
}

// -----

func.func @case36(%q: tensor<1x2x8xf32>) {
  // expected-error @+1 {{expected num_heads (4) to be divisible by num_kv_heads (3)}}
  %y = tlm.attention %q, %q, %q {num_heads = 4 : i64, num_kv_heads = 3 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return
}

// -----

func.func @case37(%q: tensor<1x2x?xf32>) {
  // expected-error @+1 {{expected a static feature dim in q}}
  %y = tlm.attention %q, %q, %q {num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x?xf32>, tensor<1x2x?xf32>, tensor<1x2x?xf32>) -> tensor<1x2x?xf32>
  return
}

// -----

func.func @case38(%q: tensor<1x2x10xf32>) {
  // expected-error @+1 {{expected q's feature dim (10) to be divisible by num_heads (4)}}
  %y = tlm.attention %q, %q, %q {num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x10xf32>, tensor<1x2x10xf32>, tensor<1x2x10xf32>) -> tensor<1x2x10xf32>
  return
}

// -----

func.func @case39(%q: tensor<1x2x8xf32>, %k: tensor<2x2x8xf32>) {
  // expected-error @+1 {{expected k dim 0 (batch) to be 1, found 2}}
  %y = tlm.attention %q, %k, %k {num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<1x2x8xf32>
  return
}

// -----

func.func @case40(%q: tensor<1x2x8xf32>, %k: tensor<1x3x8xf32>) {
  // expected-error @+1 {{expected k dim 1 (seq) to be 2, found 3}}
  %y = tlm.attention %q, %k, %k {num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x3x8xf32>, tensor<1x3x8xf32>) -> tensor<1x2x8xf32>
  return
}

// -----

func.func @case41(%q: tensor<1x2x8xf32>, %k: tensor<1x2x8xf32>) {
  // expected-error @+1 {{expected k dim 2 (num_kv_heads * d_k) to be 4, found 8}}
  %y = tlm.attention %q, %k, %k {num_heads = 2 : i64, num_kv_heads = 1 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return
}

// -----

func.func @case42(%q: tensor<1x2x8xf32>, %v: tensor<1x2x4xf32>) {
  // expected-error @+1 {{expected v dim 2 (num_kv_heads * d_k) to be 8, found 4}}
  %y = tlm.attention %q, %q, %v {num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x4xf32>) -> tensor<1x2x8xf32>
  return
}

// -----

func.func @case43(%q: tensor<1x2x8xf32>) {
  // expected-error @+1 {{expected rope_theta > 0, found 0}}
  %y = tlm.attention %q, %q, %q {num_heads = 2 : i64, num_kv_heads = 2 : i64, rope_theta = 0.0 : f64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
  return
}

// -----

func.func @case44(%q: tensor<1x2x6xf32>) {
  // expected-error @+1 {{expected an even head dim with RoPE, found d_k 3 (6 / 2)}}
  %y = tlm.attention %q, %q, %q {num_heads = 2 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<1x2x6xf32>, tensor<1x2x6xf32>, tensor<1x2x6xf32>) -> tensor<1x2x6xf32>
  return
}

// -----

func.func @case45(%q: tensor<1x2x8xf32>, %p: tensor<2xi64>) {
  // expected-error @+1 {{has positions but no rope_theta: positions are only used by RoPE}}
  %y = tlm.attention %q, %q, %q positions %p {num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<2xi64>) -> tensor<1x2x8xf32>
  return
}

// -----

func.func @case46(%q: tensor<1x2x8xf32>, %p: tensor<3xi64>) {
  // expected-error @+1 {{expected positions dim 0 to be 1 or 2 (input dim 1), found 3}}
  %y = tlm.attention %q, %q, %q positions %p {num_heads = 2 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
  return
}

// -----

func.func @case47(%q: tensor<4xf32>) {
  // expected-error @+1 {{expected q of rank >= 2 (..., seq, d_k), found rank 1}}
  %y = tlm.sdpa %q, %q, %q : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @case48(%q: tensor<2x4xf32>, %k: tensor<1x2x4xf32>) {
  // expected-error @+1 {{expected k of rank 2, found rank 3 (1, 2, 4)}}
  %y = tlm.sdpa %q, %k, %q : (tensor<2x4xf32>, tensor<1x2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case49(%q: tensor<2x4xf32>, %k: tensor<2x4xf16>) {
  // expected-error @+1 {{expected k element type 'f32' to match q, found 'f16'}}
  %y = tlm.sdpa %q, %k, %q : (tensor<2x4xf32>, tensor<2x4xf16>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case50(%q: tensor<3x2x4xf32>, %k: tensor<2x2x4xf32>) {
  // expected-error @+1 {{expected k dim 0 (batch) to be 3, found 2}}
  %y = tlm.sdpa %q, %k, %k : (tensor<3x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> tensor<3x2x4xf32>
  return
}

// -----

func.func @case51(%q: tensor<2x4xf32>, %k: tensor<2x5xf32>) {
  // expected-error @+1 {{expected k dim 1 (d_k, as in q) to be 4, found 5}}
  %y = tlm.sdpa %q, %k, %q : (tensor<2x4xf32>, tensor<2x5xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case52(%q: tensor<2x4xf32>, %v: tensor<3x4xf32>) {
  // expected-error @+1 {{expected v dim 0 (keys, as in k) to be 2, found 3}}
  %y = tlm.sdpa %q, %q, %v : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case53(%q: tensor<2x4xf32>) {
  // expected-error @+1 {{expected result dim 0 (queries) to be 2, found 3}}
  %y = tlm.sdpa %q, %q, %q : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @case54(%q: tensor<2x4xf32>) {
  // expected-error @+1 {{expected result dim 1 (d_v, as in v) to be 4, found 5}}
  %y = tlm.sdpa %q, %q, %q : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @case55(%q: tensor<2x4xf32>, %m: tensor<2x2xi1>) {
  // expected-error @+1 {{expected either a mask or causal, found both}}
  %y = tlm.sdpa %q, %q, %q mask %m {causal} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x2xi1>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case56(%q: tensor<2x4xf32>, %m: tensor<2xi1>) {
  // expected-error @+1 {{expected mask of rank 2, found rank 1 (2)}}
  %y = tlm.sdpa %q, %q, %q mask %m : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2xi1>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case57(%q: tensor<3x2x4xf32>, %m: tensor<1x2x2xi1>) {
  // expected-error @+1 {{expected mask dim 0 (batch) to be 3, found 1}}
  %y = tlm.sdpa %q, %q, %q mask %m : (tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<1x2x2xi1>) -> tensor<3x2x4xf32>
  return
}

// -----

func.func @case58(%q: tensor<2x4xf32>, %m: tensor<3x2xi1>) {
  // expected-error @+1 {{expected mask dim 0 (queries) to be 2, found 3}}
  %y = tlm.sdpa %q, %q, %q mask %m : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<3x2xi1>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case59(%q: tensor<2x4xf32>, %m: tensor<2x3xi1>) {
  // expected-error @+1 {{expected mask dim 1 (keys) to be 2, found 3}}
  %y = tlm.sdpa %q, %q, %q mask %m : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x3xi1>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case60(%x: tensor<f32>) {
  // expected-error @+1 {{expected input of rank >= 1, found a 0-d tensor}}
  %y = tlm.softmax %x : tensor<f32>
  return
}

// -----

func.func @case61(%x: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{expected logits of rank >= 1 (..., vocab), found a 0-d tensor}}
  %y = tlm.cross_entropy %x, %t : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @case62(%x: tensor<8x5xf32>, %t: tensor<8x1xi64>) {
  // expected-error @+1 {{expected targets of rank 1, found rank 2 (8, 1)}}
  %y = tlm.cross_entropy %x, %t : (tensor<8x5xf32>, tensor<8x1xi64>) -> tensor<f32>
  return
}

// -----

func.func @case63(%x: tensor<8x5xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{expected result of rank 0, found rank 1 (1)}}
  %y = tlm.cross_entropy %x, %t : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<1xf32>
  return
}

// -----

func.func @case64(%x: tensor<8x5xf32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{expected result element type 'f32' to match logits, found 'f16'}}
  %y = tlm.cross_entropy %x, %t : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<f16>
  return
}

// -----

func.func @case65(%x: tensor<8x5xf32>, %t: tensor<7xi64>) {
  // expected-error @+1 {{expected targets dim 0 (position dim of logits) to be 8, found 7}}
  %y = tlm.cross_entropy %x, %t : (tensor<8x5xf32>, tensor<7xi64>) -> tensor<f32>
  return
}

// -----

func.func @cached0(%q: tensor<1x2x8xf32>, %p: tensor<3x1x8xf32>) {
  // expected-error @+1 {{expected num_heads (4) to be divisible by num_kv_heads (3)}}
  %o:3 = tlm.cached_attention %q, %q, %q, %p, %p {num_heads = 4 : i64, num_kv_heads = 3 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<3x1x8xf32>, tensor<3x1x8xf32>) -> (tensor<1x2x8xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>)
  return
}

// -----

func.func @cached1(%q: tensor<1x2x8xf32>, %p: tensor<3x1x8xf32>) {
  // expected-error @+1 {{expected q's feature dim (8) to be divisible by num_heads (3)}}
  %o:3 = tlm.cached_attention %q, %q, %q, %p, %p {num_heads = 3 : i64, num_kv_heads = 3 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<3x1x8xf32>, tensor<3x1x8xf32>) -> (tensor<1x2x8xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>)
  return
}

// -----

func.func @cached2(%q: tensor<2x8xf32>, %p: tensor<3x1x8xf32>) {
  // expected-error @+1 {{expected q of rank 3, found rank 2 (2, 8)}}
  %o:3 = tlm.cached_attention %q, %q, %q, %p, %p {num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<3x1x8xf32>, tensor<3x1x8xf32>) -> (tensor<2x8xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>)
  return
}

// -----

func.func @cached3(%q: tensor<1x2x8xf32>, %p: tensor<3x2x8xf32>) {
  // expected-error @+1 {{expected k_past dim 1 (batch) to be 1, found 2}}
  %o:3 = tlm.cached_attention %q, %q, %q, %p, %p {num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<3x2x8xf32>, tensor<3x2x8xf32>) -> (tensor<1x2x8xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>)
  return
}

// -----

func.func @cached4(%q: tensor<1x2x8xf32>, %p: tensor<3x1x8xf32>, %v: tensor<4x1x8xf32>) {
  // expected-error @+1 {{expected v_past dim 0 (past length, as in k_past) to be 3, found 4}}
  %o:3 = tlm.cached_attention %q, %q, %q, %p, %v {num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<3x1x8xf32>, tensor<4x1x8xf32>) -> (tensor<1x2x8xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>)
  return
}

// -----

func.func @cached5(%q: tensor<1x2x8xf32>, %p: tensor<3x1x4xf32>) {
  // expected-error @+1 {{expected k_past dim 2 (num_kv_heads * d_k) to be 8, found 4}}
  %o:3 = tlm.cached_attention %q, %q, %q, %p, %p {num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<3x1x4xf32>, tensor<3x1x4xf32>) -> (tensor<1x2x8xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>)
  return
}

// -----

func.func @cached6(%q: tensor<1x2x8xf32>, %p: tensor<3x1x8xf32>) {
  // expected-error @+1 {{expected k_new dim 0 (seq) to be 2, found 1}}
  %o:3 = tlm.cached_attention %q, %q, %q, %p, %p {num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<3x1x8xf32>, tensor<3x1x8xf32>) -> (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<2x1x8xf32>)
  return
}

// -----

func.func @cached7(%q: tensor<1x2x8xf32>, %p: tensor<3x1x8xf32>) {
  // expected-error @+1 {{expected the result to have the type of q}}
  %o:3 = tlm.cached_attention %q, %q, %q, %p, %p {num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<3x1x8xf32>, tensor<3x1x8xf32>) -> (tensor<1x2x4xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>)
  return
}

// -----

func.func @cached_lengths_batch(%q: tensor<1x2x8xf32>, %p: tensor<3x1x8xf32>, %len: tensor<2xi64>) {
  // expected-error @+1 {{expected lengths dim 0 (batch) to be 1, found 2}}
  %o:3 = tlm.cached_attention %q, %q, %q, %p, %p, %len {num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<3x1x8xf32>, tensor<3x1x8xf32>, tensor<2xi64>) -> (tensor<1x2x8xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>)
  return
}

// -----

func.func @cached_lengths_rank(%q: tensor<1x2x8xf32>, %p: tensor<3x1x8xf32>, %len: tensor<1x1xi64>) {
  // expected-error @+1 {{expected lengths of rank 1, found rank 2}}
  %o:3 = tlm.cached_attention %q, %q, %q, %p, %p, %len {num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<3x1x8xf32>, tensor<3x1x8xf32>, tensor<1x1xi64>) -> (tensor<1x2x8xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>)
  return
}

// -----

func.func @cached_lengths_float(%q: tensor<1x2x8xf32>, %p: tensor<3x1x8xf32>, %len: tensor<1xf32>) {
  // expected-error @+1 {{operand #5 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %o:3 = tlm.cached_attention %q, %q, %q, %p, %p, %len {num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<3x1x8xf32>, tensor<3x1x8xf32>, tensor<1xf32>) -> (tensor<1x2x8xf32>, tensor<2x1x8xf32>, tensor<2x1x8xf32>)
  return
}

// -----

func.func @cached8(%q: tensor<1x2x12xf32>, %p: tensor<3x1x12xf32>) {
  // expected-error @+1 {{expected an even head dim with RoPE, found d_k 3}}
  %o:3 = tlm.cached_attention %q, %q, %q, %p, %p {num_heads = 4 : i64, num_kv_heads = 4 : i64, rope_theta = 1.0e+04 : f64} : (tensor<1x2x12xf32>, tensor<1x2x12xf32>, tensor<1x2x12xf32>, tensor<3x1x12xf32>, tensor<3x1x12xf32>) -> (tensor<1x2x12xf32>, tensor<2x1x12xf32>, tensor<2x1x12xf32>)
  return
}

// -----

func.func @dequantize_bits(%q: tensor<8x64xi8>, %s: tensor<8x2xf32>) {
  // expected-error @+1 {{expected bits 8 (q8_0) or 4 (q4_0), found 2}}
  %w = tlm.dequantize %q, %s {bits = 2 : i64} : tensor<8x64xi8>, tensor<8x2xf32> -> tensor<8x64xf32>
  return
}

// -----

func.func @dequantize_block(%q: tensor<8x48xi8>, %s: tensor<8x2xf32>) {
  // expected-error @+1 {{expected result dim 1 (k) to be a multiple of 32 (the block), found 48}}
  %w = tlm.dequantize %q, %s {bits = 8 : i64} : tensor<8x48xi8>, tensor<8x2xf32> -> tensor<8x48xf32>
  return
}

// -----

func.func @dequantize_q8_codes(%q: tensor<8x32xi8>, %s: tensor<8x2xf32>) {
  // expected-error @+1 {{expected values dim 1 (k, one code a weight) to be 64, found 32 in shape (8, 32)}}
  %w = tlm.dequantize %q, %s {bits = 8 : i64} : tensor<8x32xi8>, tensor<8x2xf32> -> tensor<8x64xf32>
  return
}

// -----

func.func @dequantize_q4_codes(%q: tensor<8x64xi8>, %s: tensor<8x2xf32>) {
  // expected-error @+1 {{expected values dim 1 (k / 2, two codes a byte) to be 32, found 64 in shape (8, 64)}}
  %w = tlm.dequantize %q, %s {bits = 4 : i64} : tensor<8x64xi8>, tensor<8x2xf32> -> tensor<8x64xf32>
  return
}

// -----

func.func @dequantize_rows(%q: tensor<4x64xi8>, %s: tensor<8x2xf32>) {
  // expected-error @+1 {{expected values dim 0 (n, the result's dim 0) to be 8, found 4 in shape (4, 64)}}
  %w = tlm.dequantize %q, %s {bits = 8 : i64} : tensor<4x64xi8>, tensor<8x2xf32> -> tensor<8x64xf32>
  return
}

// -----

func.func @dequantize_scales(%q: tensor<8x64xi8>, %s: tensor<8x4xf32>) {
  // expected-error @+1 {{expected scales dim 1 (k / 32, one scale a block) to be 2, found 4 in shape (8, 4)}}
  %w = tlm.dequantize %q, %s {bits = 8 : i64} : tensor<8x64xi8>, tensor<8x4xf32> -> tensor<8x64xf32>
  return
}

// -----

func.func @dequantize_scale_rows(%q: tensor<8x64xi8>, %s: tensor<4x2xf32>) {
  // expected-error @+1 {{expected scales dim 0 (n, the result's dim 0) to be 8, found 4 in shape (4, 2)}}
  %w = tlm.dequantize %q, %s {bits = 8 : i64} : tensor<8x64xi8>, tensor<4x2xf32> -> tensor<8x64xf32>
  return
}

// -----

func.func @dequantize_scale_type(%q: tensor<8x64xi8>, %s: tensor<8x2xf16>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit float values}}
  %w = tlm.dequantize %q, %s {bits = 8 : i64} : tensor<8x64xi8>, tensor<8x2xf16> -> tensor<8x64xf32>
  return
}

// -----

func.func @dequantize_dynamic(%q: tensor<?x64xi8>, %s: tensor<?x2xf32>) {
  // expected-error @+1 {{expected a static result shape, found (?, 64)}}
  %w = tlm.dequantize %q, %s {bits = 8 : i64} : tensor<?x64xi8>, tensor<?x2xf32> -> tensor<?x64xf32>
  return
}

// -----

// No tlm op takes an empty tensor (Tlm_NonEmptyShapes): the CPU pipeline
// crashed on this one.
func.func @zero_dim(%x: tensor<4x0xf32>, %w: tensor<8x0xf32>) {
  // expected-error @+1 {{expected no dimension of size 0 in operand #0, found shape (4, 0) (the lowering needs at least one element)}}
  %y = tlm.linear %x, %w : tensor<4x0xf32>, tensor<8x0xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @zero_dim_result(%ids: tensor<0xi64>, %t: tensor<100x64xf32>) {
  // expected-error @+1 {{expected no dimension of size 0 in operand #0, found shape (0)}}
  %e = tlm.embedding %ids, %t : tensor<0xi64>, tensor<100x64xf32> -> tensor<0x64xf32>
  return
}

// -----

// Ids are i32 or i64.
func.func @ids_i1(%ids: tensor<3xi1>, %t: tensor<100x64xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %e = tlm.embedding %ids, %t : tensor<3xi1>, tensor<100x64xf32> -> tensor<3x64xf32>
  return
}

// -----

func.func @lookup_lanes(%table: vector<8xf32>, %dwords: vector<8xi32>) {
  // expected-error @+1 {{operand #0 must be vector of 32-bit float values of length 16}}
  %w = tlm.lookup %table[%dwords] : vector<8xf32>, vector<8xi32>
  return
}
