// bf16 / f16 weights: the blocks read W in its own type and widen it in
// registers (GEMV, split-k), or once per panel while packing it (the packed
// form's kernel then reads f32); x, the sums and the output stay f32.
// RUN: tlm-opt %s --split-input-file --tlm-tile-matmuls="lanes=16" --canonicalize --cse | FileCheck %s
// RUN: tlm-opt %s --split-input-file --tlm-tile-matmuls="lanes=16 pack-projections=false" --canonicalize --cse | FileCheck %s --check-prefix=SPLITK

#x = affine_map<(d0, d1, d2) -> (d0, d2)>
#w = affine_map<(d0, d1, d2) -> (d1, d2)>
#o = affine_map<(d0, d1, d2) -> (d0, d1)>

// CHECK-LABEL: func @bf16_weights
// The pack: 16 x 16 blocks of W read as bf16, widened, transposed.
// CHECK: %[[BLOCK:.*]] = vector.transfer_read %[[W:arg1]]{{.*}} : tensor<64x256xbf16>, vector<16x16xbf16>
// CHECK: arith.extf %[[BLOCK]] : vector<16x16xbf16> to vector<16x16xf32>
// The rows after the last full tile (all of decode's): GEMV blocks on bf16.
// CHECK: vector.transfer_read {{.*}} : tensor<{{.*}}xbf16>, vector<{{.*}}x16xbf16>
// CHECK: arith.extf {{.*}}xbf16> to vector<{{.*}}x16xf32>
// CHECK-NOT: tensor<64x256xbf16>, vector<{{[0-9x]*}}xf32>
// SPLITK-LABEL: func @bf16_weights
// SPLITK-NOT: tensor.empty{{.*}}bf16
// SPLITK: vector.transfer_read {{.*}} : tensor<{{.*}}xbf16>, vector<{{.*}}x16xbf16>
// SPLITK: arith.extf {{.*}}xbf16> to vector<{{.*}}x16xf32>
// SPLITK: arith.mulf {{.*}} fastmath<contract> : vector<{{.*}}x16xf32>
func.func @bf16_weights(%x: tensor<?x256xf32>, %w: tensor<64x256xbf16>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x256xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%m) : tensor<?x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  %y = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x256xf32>, tensor<64x256xbf16>) outs(%init : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %bw = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

#x = affine_map<(d0, d1, d2) -> (d0, d2)>
#w = affine_map<(d0, d1, d2) -> (d1, d2)>
#o = affine_map<(d0, d1, d2) -> (d0, d1)>

// CHECK-LABEL: func @f16_weights
// CHECK: vector.transfer_read {{.*}} : tensor<64x256xf16>, vector<16x16xf16>
// CHECK: arith.extf {{.*}} : vector<16x16xf16> to vector<16x16xf32>
func.func @f16_weights(%x: tensor<?x256xf32>, %w: tensor<64x256xf16>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x256xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%m) : tensor<?x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  %y = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x256xf32>, tensor<64x256xf16>) outs(%init : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: f16, %acc: f32):
    %bw = arith.extf %b : f16 to f32
    %p = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
