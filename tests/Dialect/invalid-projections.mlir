// RUN: tlm-opt %s -split-input-file -verify-diagnostics
// The verifiers of tlm.linear, tlm.dequantize, tlm.embedding and tlm.lookup:
// one case per rule; each message names what was expected and found.

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

// -----

func.func @dot_u8s8_width(%acc: vector<8xi32>, %w: vector<32xi8>, %x: vector<32xi8>) {
  // expected-error @+1 {{operand #0 must be vector of 32-bit signless integer values of length 16}}
  %s = tlm.dot_u8s8 %acc, %w, %x : vector<8xi32>, vector<32xi8>
  return
}

