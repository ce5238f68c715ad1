// int8-dot's GEMV (decode, and the rows past the last full tile): x's row
// quantized per block of 32 once, laid out in W's byte order with each
// step's lane offsets (-128 or -8 times the codes a lane multiplies) and
// block scales; each column then reads 64 bytes of its codes a step, one
// tlm.dot_u8s8 (q8_0, flipped to unsigned) or two (q4_0's low and high
// nibbles) starting from the offsets, converted and scaled in one FMA.
// RUN: tlm-opt %s --tlm-lower-to-linalg --tlm-tile-matmuls="lanes=16 int8-dot=true" --canonicalize --cse | FileCheck %s
// Without int8-dot, the same GEMV is f32's split-k form.
// RUN: tlm-opt %s --tlm-lower-to-linalg --tlm-tile-matmuls="lanes=16" --canonicalize --cse | FileCheck %s --check-prefix=F32
// F32-LABEL: func @q8_0
// F32-NOT: tlm.dot_u8s8
// F32-LABEL: func @q4_0
// F32-NOT: tlm.dot_u8s8
// RUN: tlm-opt %s --tlm-lower-to-linalg --tlm-tile-matmuls="lanes=16 int8-dot=true threads=2" --canonicalize --cse | FileCheck %s --check-prefix=THREADS
// THREADS-LABEL: func @q8_0
// THREADS: scf.forall
// THREADS: tlm.dot_u8s8

// CHECK-DAG: #[[Q8_X:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 * 64 + d3)>
// CHECK-DAG: #[[Q4_X:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 * 128 + (d3 floordiv 16) * 32 + d2 * 16 + d3 mod 16)>
// CHECK-DAG: #[[Q8_SCALE:.*]] = affine_map<(d0, d1, d2) -> (d0, d1 * 2 + d2 floordiv 8)>
// CHECK-DAG: #[[Q4_SCALE:.*]] = affine_map<(d0, d1, d2) -> (d0, d1 * 4 + d2 floordiv 4)>

// CHECK-LABEL: func @q8_0
// x's side, once: each block's max |x|, the codes in W's order, the
// lanes' offsets, the lanes' scales.
// CHECK: arith.maximumf
// CHECK: linalg.generic {indexing_maps = [#[[Q8_X]], {{.*}}]
// CHECK: math.roundeven
// CHECK: arith.fptosi {{.*}} : f32 to i8
// CHECK: %[[T128:.*]] = arith.muli {{.*}}, %c128_i32 : i32
// CHECK: arith.subi %{{.*}}, %[[T128]] : i32
// CHECK: linalg.generic {indexing_maps = [#[[Q8_SCALE]],
// One column a block, two steps an iteration into two sums.
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[Z:.*]], %{{.*}} = %[[Z]]) -> (vector<16xf32>, vector<16xf32>)
// CHECK: %[[W:.*]] = vector.transfer_read %arg1{{.*}} : tensor<64x256xi8>, vector<64xi8>
// CHECK: %[[OFF:.*]] = vector.transfer_read {{.*}} : tensor<1x64xi32>, vector<16xi32>
// CHECK: %[[XC:.*]] = vector.transfer_read {{.*}} : tensor<1x256xi8>, vector<64xi8>
// CHECK: %[[U:.*]] = arith.xori %[[W]]
// CHECK: %[[DOT:.*]] = tlm.dot_u8s8 %[[OFF]], %[[U]], %[[XC]]
// CHECK: vector.shuffle {{.*}} [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1] : vector<2xf32>
// CHECK: arith.sitofp %[[DOT]]
// CHECK: math.fma
// CHECK: vector.reduction <add>
func.func @q8_0(%x: tensor<1x256xf32>, %q: tensor<64x256xi8>, %s: tensor<64x8xf32>) -> tensor<1x64xf32> {
  %w = tlm.dequantize %q, %s {bits = 8 : i64} : tensor<64x256xi8>, tensor<64x8xf32> -> tensor<64x256xf32>
  %y = tlm.linear %x, %w : tensor<1x256xf32>, tensor<64x256xf32> -> tensor<1x64xf32>
  return %y : tensor<1x64xf32>
}

// CHECK-LABEL: func @q4_0
// CHECK: linalg.generic {indexing_maps = [#[[Q4_X]], {{.*}}]
// CHECK: %[[T8:.*]] = arith.muli {{.*}}, %c8_i32 : i32
// CHECK: arith.subi %{{.*}}, %[[T8]] : i32
// CHECK: linalg.generic {indexing_maps = [#[[Q4_SCALE]],
// CHECK: %[[W:.*]] = vector.transfer_read %arg1{{.*}} : tensor<64x128xi8>, vector<64xi8>
// CHECK: %[[OFF:.*]] = vector.transfer_read {{.*}} : tensor<1x32xi32>, vector<16xi32>
// CHECK: %[[LO:.*]] = arith.andi %[[W]]
// CHECK: %[[HI:.*]] = arith.shrui %[[W]]
// CHECK: %[[XLO:.*]] = vector.transfer_read %[[XC:.*]][%c0, %c0], {{.*}} : tensor<1x256xi8>, vector<64xi8>
// CHECK: %[[XHI:.*]] = vector.transfer_read %[[XC]][%c0, %c64], {{.*}} : tensor<1x256xi8>, vector<64xi8>
// CHECK: %[[D0:.*]] = tlm.dot_u8s8 %[[OFF]], %[[LO]], %[[XLO]]
// CHECK: tlm.dot_u8s8 %[[D0]], %[[HI]], %[[XHI]]
// CHECK: vector.shuffle {{.*}} [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3] : vector<4xf32>
func.func @q4_0(%x: tensor<1x256xf32>, %q: tensor<64x128xi8>, %s: tensor<64x8xf32>) -> tensor<1x64xf32> {
  %w = tlm.dequantize %q, %s {bits = 4 : i64} : tensor<64x128xi8>, tensor<64x8xf32> -> tensor<64x256xf32>
  %y = tlm.linear %x, %w : tensor<1x256xf32>, tensor<64x256xf32> -> tensor<1x64xf32>
  return %y : tensor<1x64xf32>
}

// k = 192: q8_0's steps cover it, q4_0's (128) do not: f32's GEMV.
// CHECK-LABEL: func @q4_0_k192
// CHECK-NOT: tlm.dot_u8s8
// CHECK: return
func.func @q4_0_k192(%x: tensor<1x192xf32>, %q: tensor<64x96xi8>, %s: tensor<64x6xf32>) -> tensor<1x64xf32> {
  %w = tlm.dequantize %q, %s {bits = 4 : i64} : tensor<64x96xi8>, tensor<64x6xf32> -> tensor<64x192xf32>
  %y = tlm.linear %x, %w : tensor<1x192xf32>, tensor<64x192xf32> -> tensor<1x64xf32>
  return %y : tensor<1x64xf32>
}
