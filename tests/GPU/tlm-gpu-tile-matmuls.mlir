// RUN: tlm-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(tlm-gpu-tile-matmuls{tile=16}),canonicalize)' | FileCheck %s
// Options out of range are one diagnostic, not a crash.
// RUN: not tlm-opt %s --split-input-file --tlm-gpu-tile-matmuls=tile=0 2>&1 | FileCheck %s --check-prefix=BADOPT
// BADOPT: error: tlm-gpu-tile-matmuls: tile must be >= 1, got 0

#x = affine_map<(b, s, n, k) -> (b, s, k)>
#w = affine_map<(b, s, n, k) -> (n, k)>
#y = affine_map<(b, s, n, k) -> (b, s, n)>

// A projection (40 columns, K = 64): ceil(40/16) = 3 column tiles, rows
// (b x s) in tiles of 16; x and w tiles in workgroup memory (w's padded),
// barriers around the dot products, every edge guarded, the result added
// to the output.
// CHECK-LABEL: func.func @projection
// CHECK-NOT:     linalg.generic
// CHECK:         %[[M:.*]] = arith.muli
// CHECK:         gpu.launch blocks({{.*}}) in ({{.*}} = %{{.*}}, {{.*}} = %c3, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c16, {{.*}} = %c16, {{.*}} = %c1)
// CHECK-SAME:      workgroup(%[[XS:.*]] : memref<16x16xf32, #gpu.address_space<workgroup>>, %[[WS:.*]] : memref<16x17xf32, #gpu.address_space<workgroup>>)
// CHECK:           scf.for %{{.*}} = %c0 to %c64 step %c16
// CHECK:             scf.if
// CHECK:               memref.load %{{.*}} : memref<?x?x64xf32>
// CHECK:             memref.store %{{.*}}, %[[XS]]
// CHECK:             scf.if
// CHECK:               memref.load %{{.*}} : memref<40x64xf32>
// CHECK:             memref.store %{{.*}}, %[[WS]]
// CHECK:             gpu.barrier
// CHECK:             scf.for
// CHECK:               math.fma
// CHECK:             gpu.barrier
// CHECK:           scf.if
// CHECK:             arith.addf
// CHECK:             memref.store %{{.*}} : memref<?x?x40xf32>
func.func @projection(%x: memref<?x?x64xf32>, %w: memref<40x64xf32>, %y: memref<?x?x40xf32>) {
  linalg.generic {indexing_maps = [#x, #w, #y],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x?x64xf32>, memref<40x64xf32>) outs(%y : memref<?x?x40xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#q = affine_map<(b, h, i, j, d) -> (b, i, h, d)>
#k = affine_map<(b, h, i, j, d) -> (b, j, h, d)>
#s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>

// Attention's scores (a batched contraction, no weight matrix) are not a
// projection: left to the generic mapping.
// CHECK-LABEL: func.func @scores
// CHECK:         linalg.generic
// CHECK-NOT:     gpu.launch
func.func @scores(%q: memref<?x?x4x16xf32>, %k: memref<?x?x4x16xf32>, %out: memref<?x4x?x?xf32>) {
  linalg.generic {indexing_maps = [#q, #k, #s],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<?x?x4x16xf32>, memref<?x?x4x16xf32>) outs(%out : memref<?x4x?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %t = arith.addf %acc, %p : f32
    linalg.yield %t : f32
  }
  return
}
