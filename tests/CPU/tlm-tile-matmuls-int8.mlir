// int8-dot: a q8_0 or q4_0 projection's packed tiles in int8 (--compute int8). The
// full tiles' rows of x are quantized per block of 32 once per call into
// one i32 tensor (k / 4 quads of codes, then 8 scales and 8 code sums for
// k = 256: 80 columns); each panel packs W's codes flipped to unsigned
// (xor 0x80), seen as 16 x 16 i32 and transposed, then the block scales
// ((k / 4 + k / 32) x 32 = 72 x 32); tiles are 4 rows (the i32 sums and the
// f32 sums both live in registers), multiplied by tlm.dot_u8s8.
// RUN: tlm-opt %s --tlm-lower-to-linalg --tlm-tile-matmuls="lanes=16 int8-dot=true" --canonicalize --cse | FileCheck %s
// A thread's chunk of W is a slice of the dequantization: int8 still.
// RUN: tlm-opt %s --tlm-lower-to-linalg --tlm-tile-matmuls="lanes=16 int8-dot=true threads=2" --canonicalize --cse | FileCheck %s --check-prefix=THREADS
// THREADS-LABEL: func @q8_0
// THREADS: scf.forall
// THREADS: tlm.dot_u8s8
// RUN: not tlm-opt %s --tlm-tile-matmuls="lanes=8 pack-cols=16 int8-dot=true" 2>&1 | FileCheck %s --check-prefix=LANES
// LANES: error: tlm-tile-matmuls: int8-dot needs lanes=16 (AVX512-VNNI's vpdpbusd) and not bf16-dot

// CHECK-LABEL: func @q8_0
// x's rows: per row and block, |x|'s max, codes rounded to even, their sum.
// CHECK: tensor.empty() : tensor<72x32xi32>
// CHECK: tensor.empty(%{{.*}}) : tensor<?x80xi32>
// CHECK: vector.reduction <maximumf>, {{.*}} : vector<32xf32> into f32
// CHECK: math.roundeven {{.*}} : vector<32xf32>
// CHECK: arith.fptosi {{.*}} : vector<32xf32> to vector<32xi8>
// CHECK: vector.reduction <add>, {{.*}} : vector<32xi32> into i32
// CHECK: vector.bitcast {{.*}} : vector<32xi8> to vector<8xi32>
// The pack, 64 of k at a time.
// CHECK: scf.for %{{.*}} = %c0 to %c256 step %c64
// CHECK: %[[FLIP:.*]] = arith.xori {{.*}} : vector<16x64xi8>
// CHECK: %[[QUADS:.*]] = vector.bitcast %[[FLIP]] : vector<16x64xi8> to vector<16x16xi32>
// CHECK: vector.transpose %[[QUADS]], [1, 0] : vector<16x16xi32> to vector<16x16xi32>
// The tiles: 4 rows a tile, 8 blocks, each two vectors of quads against a
// row's broadcast quad.
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c4
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c1 iter_args
// CHECK: tlm.dot_u8s8 {{.*}} : vector<16xi32>, vector<64xi8>
// After a block: its sums less 128 x the row's code sum, scaled.
// CHECK: arith.subi {{.*}} : vector<16xi32>
// CHECK: arith.sitofp {{.*}} : vector<16xi32> to vector<16xf32>
// CHECK: vector.fma
func.func @q8_0(%x: tensor<?x256xf32>, %q: tensor<64x256xi8>, %s: tensor<64x8xf32>) -> tensor<?x64xf32> {
  %w = tlm.dequantize %q, %s {bits = 8 : i64} : tensor<64x256xi8>, tensor<64x8xf32> -> tensor<64x256xf32>
  %y = tlm.linear %x, %w : tensor<?x256xf32>, tensor<64x256xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// q4_0: the same tiles; the pack reads both blocks' 32 bytes a column,
// takes the low nibbles (each block's first 16 weights) and the high ones
// (its last 16) plus 120 (c - 8 + 128), so the kernel's correction for
// q8_0's + 128 holds as it is, and interleaves their transposed quads in k
// order.
// CHECK-LABEL: func @q4_0
// CHECK-DAG: %[[BIAS:.*]] = arith.constant dense<120> : vector<16x32xi8>
// CHECK: scf.for %{{.*}} = %c0 to %c256 step %c64
// CHECK: %[[LO:.*]] = arith.andi {{.*}} : vector<16x32xi8>
// CHECK: %[[LOB:.*]] = arith.addi %[[LO]], %[[BIAS]] : vector<16x32xi8>
// CHECK: %[[LOQ:.*]] = vector.bitcast %[[LOB]] : vector<16x32xi8> to vector<16x8xi32>
// CHECK: %[[LOT:.*]] = vector.transpose %[[LOQ]], [1, 0] : vector<16x8xi32> to vector<8x16xi32>
// CHECK: %[[HI:.*]] = arith.shrui {{.*}} : vector<16x32xi8>
// CHECK: %[[HIB:.*]] = arith.addi %[[HI]], %[[BIAS]] : vector<16x32xi8>
// CHECK: %[[HIQ:.*]] = vector.bitcast %[[HIB]] : vector<16x32xi8> to vector<16x8xi32>
// CHECK: %[[HIT:.*]] = vector.transpose %[[HIQ]], [1, 0] : vector<16x8xi32> to vector<8x16xi32>
// CHECK: vector.shuffle %[[LOT]], %[[HIT]] [0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15] : vector<8x16xi32>, vector<8x16xi32>
// CHECK: tlm.dot_u8s8 {{.*}} : vector<16xi32>, vector<64xi8>
func.func @q4_0(%x: tensor<?x256xf32>, %q: tensor<64x128xi8>, %s: tensor<64x8xf32>) -> tensor<?x64xf32> {
  %w = tlm.dequantize %q, %s {bits = 4 : i64} : tensor<64x128xi8>, tensor<64x8xf32> -> tensor<64x256xf32>
  %y = tlm.linear %x, %w : tensor<?x256xf32>, tensor<64x256xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// A concatenated W of a q8_0 and a q4_0 part packs from a select of f32
// parts, which has no codes: f32 tiles (this crashed in packCodes once).
// CHECK-LABEL: func @mixed_parts
// CHECK-NOT: tlm.dot_u8s8
// CHECK: return
func.func @mixed_parts(%x: tensor<?x256xf32>, %q8: tensor<64x256xi8>, %s8: tensor<64x8xf32>, %q4: tensor<64x128xi8>, %s4: tensor<64x8xf32>) -> tensor<?x128xf32> {
  %a = tlm.dequantize %q8, %s8 {bits = 8 : i64} : tensor<64x256xi8>, tensor<64x8xf32> -> tensor<64x256xf32>
  %b = tlm.dequantize %q4, %s4 {bits = 4 : i64} : tensor<64x128xi8>, tensor<64x8xf32> -> tensor<64x256xf32>
  %w = tensor.concat dim(0) %a, %b : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<128x256xf32>
  %y = tlm.linear %x, %w : tensor<?x256xf32>, tensor<128x256xf32> -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}
