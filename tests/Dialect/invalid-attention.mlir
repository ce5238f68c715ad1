// RUN: tlm-opt %s -split-input-file -verify-diagnostics
// The verifiers of tlm.attention, tlm.sdpa and tlm.cached_attention: one case
// per rule; each message names what was expected and found.

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
