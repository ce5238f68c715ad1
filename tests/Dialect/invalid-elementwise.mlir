// RUN: tlm-opt %s -split-input-file -verify-diagnostics
// The verifiers of tlm.rmsnorm, tlm.rope, tlm.silu_ffn, tlm.swiglu, tlm.softmax
// and tlm.cross_entropy: one case per rule; each message names what was
// expected and found.

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
