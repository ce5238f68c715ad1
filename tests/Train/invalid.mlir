// RUN: tlm-opt %s --split-input-file --tlm-build-train-step --verify-diagnostics
// What tlm-build-train-step refuses, each with one message.

// expected-error @+1 {{no function @loss to differentiate}}
module {
  func.func @other() { return }
}

// -----

// expected-error @+1 {{expected one result, the loss, of type tensor<f32>; found '(tensor<4xf32>) -> tensor<4xf32>'}}
func.func @loss(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

func.func @loss(%x: tensor<4x5xf32>, %t: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+1 {{'tlm.softmax' op has no gradient rule in tlm-build-train-step}}
  %p = tlm.softmax %x : tensor<4x5xf32>
  %l = tlm.cross_entropy %p, %t : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @loss(%q: tensor<1x4x16xf32>, %k: tensor<1x4x16xf32>, %v: tensor<1x4x16xf32>, %p: tensor<4xi64>, %t: tensor<1x4xi64>) -> tensor<f32> {
  // expected-error @+1 {{'tlm.attention' op has explicit positions, which training does not take: its sequences start at position 0}}
  %o = tlm.attention %q, %k, %v positions %p {num_heads = 4 : i64, num_kv_heads = 4 : i64, rope_theta = 1.0e+04 : f64}
      : (tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<4xi64>) -> tensor<1x4x16xf32>
  %l = tlm.cross_entropy %o, %t : (tensor<1x4x16xf32>, tensor<1x4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{@train_step exists already}}
module {
  func.func @loss(%x: tensor<4x5xf32>, %t: tensor<4xi64>) -> tensor<f32> {
    %l = tlm.cross_entropy %x, %t : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
    return %l : tensor<f32>
  }
  func.func @train_step() { return }
}
