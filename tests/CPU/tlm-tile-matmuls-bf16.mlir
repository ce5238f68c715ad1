// bf16-dot: the packed tiles in bf16 (--compute bf16). x is rounded to bf16
// once per projection; each panel of W is packed as pairs along k (one
// 32-bit lane holds W[c, 2p] and W[c, 2p + 1], as vdpbf16ps multiplies
// them), rounded to bf16; the kernel broadcasts each row's pair of x as one
// 32-bit lane and accumulates f32 sums with x86vector.avx512.dot. The rows
// after the last full tile (all of decode's) keep the f32 GEMV blocks.
// RUN: tlm-opt %s --split-input-file --tlm-tile-matmuls="lanes=16 bf16-dot=true" --canonicalize --cse | FileCheck %s
// RUN: not tlm-opt %s --split-input-file --tlm-tile-matmuls="lanes=8 pack-cols=16 bf16-dot=true" 2>&1 | FileCheck %s --check-prefix=LANES
// LANES: error: tlm-tile-matmuls: bf16-dot needs lanes=16 (AVX-512's vdpbf16ps), found lanes=8

#x = affine_map<(d0, d1, d2) -> (d0, d2)>
#w = affine_map<(d0, d1, d2) -> (d1, d2)>
#o = affine_map<(d0, d1, d2) -> (d0, d1)>

// CHECK-LABEL: func @bf16_weights
// The rows of the full tiles of x (none in decode) rounded to bf16, once.
// CHECK: %[[FULL:.*]] = arith.muli {{.*}}, %c8 : index
// CHECK: %[[XFULL:.*]] = tensor.extract_slice %[[X:arg0]][0, 0] [%[[FULL]], 256] [1, 1]
// CHECK: %[[XB:.*]] = linalg.generic {{.*}} ins(%[[XFULL]] : tensor<?x256xf32>) outs({{.*}} : tensor<?x256xbf16>)
// CHECK: arith.truncf {{.*}} : f32 to bf16
// The pack: a 16 x 16 block of W widened and transposed, then rows 2i and
// 2i + 1 of it interleaved, rounded and written as one row of pairs of the
// (k / 2) x (2 cols) buffer.
// CHECK: scf.for %[[C:.*]] = %c0 to %c32 step %c16
// CHECK: scf.for %[[KB:.*]] = %c0 to %c256 step %c16 iter_args(%[[BUF:.*]] =
// CHECK: %[[BLOCK:.*]] = vector.transfer_read %[[W:arg1]]{{.*}} : tensor<64x256xbf16>, vector<16x16xbf16>
// CHECK: %[[T:.*]] = vector.transpose
// Row kb / 2 + i of the buffer, column 2c: pair i of the block.
// CHECK: %[[ROW0:.*]] = arith.divui %[[KB]], %c2 : index
// CHECK: %[[COL:.*]] = arith.muli %[[C]], %c2 : index
// CHECK: %[[EVEN:.*]] = vector.extract %[[T]][0] : vector<16xf32> from vector<16x16xf32>
// CHECK: %[[ODD:.*]] = vector.extract %[[T]][1] : vector<16xf32> from vector<16x16xf32>
// CHECK: %[[PAIRS:.*]] = vector.interleave %[[EVEN]], %[[ODD]] : vector<16xf32> -> vector<32xf32>
// CHECK: %[[ROUNDED:.*]] = arith.truncf %[[PAIRS]] : vector<32xf32> to vector<32xbf16>
// CHECK: %[[W0BUF:.*]] = vector.transfer_write %[[ROUNDED]], %[[BUF]][%[[ROW0]], %[[COL]]] {{.*}} : vector<32xbf16>, tensor<128x64xbf16>
// CHECK: vector.extract %[[T]][2]
// CHECK: vector.extract %[[T]][3]
// CHECK: %[[ROW1:.*]] = arith.addi %[[ROW0]], %c1 : index
// CHECK: vector.transfer_write {{.*}}, %[[W0BUF]][%[[ROW1]], %[[COL]]]
// The kernel: 128 pairs of k, two vectors of packed pairs, each row's pair
// of x broadcast as an i32.
// CHECK: scf.for %{{.*}} = %c0 to %c128 step %c1 iter_args({{.*}}) -> (vector<16xf32>
// CHECK: %[[W0:.*]] = vector.transfer_read {{.*}} : tensor<128x64xbf16>, vector<32xbf16>
// CHECK: %[[W1:.*]] = vector.transfer_read {{.*}} : tensor<128x64xbf16>, vector<32xbf16>
// CHECK: %[[XP:.*]] = vector.transfer_read %[[XB]]{{.*}} : tensor<?x256xbf16>, vector<2xbf16>
// CHECK: %[[BITS:.*]] = vector.bitcast %[[XP]] : vector<2xbf16> to vector<1xi32>
// CHECK: %[[LANE:.*]] = vector.extract %[[BITS]][0] : i32 from vector<1xi32>
// CHECK: %[[SPREAD:.*]] = vector.broadcast %[[LANE]] : i32 to vector<16xi32>
// CHECK: %[[XV:.*]] = vector.bitcast %[[SPREAD]] : vector<16xi32> to vector<32xbf16>
// CHECK: x86vector.avx512.dot %{{.*}}, %[[XV]], %[[W0]] : vector<32xbf16> -> vector<16xf32>
// CHECK: x86vector.avx512.dot %{{.*}}, %[[XV]], %[[W1]] : vector<32xbf16> -> vector<16xf32>
// The rest rows: GEMV blocks of W widened in registers, f32 FMAs.
// CHECK: vector.transfer_read {{.*}} : tensor<{{.*}}xbf16>, vector<{{.*}}x16xbf16>
// CHECK: arith.extf {{.*}}xbf16> to vector<{{.*}}x16xf32>
// CHECK-NOT: x86vector
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
