// RUN: tlm-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(tlm-gpu-block-reductions{block-size=256}),canonicalize)' | FileCheck %s
// Options out of range are one diagnostic, not a crash.
// RUN: not tlm-opt %s --split-input-file --tlm-gpu-block-reductions=block-size=0 2>&1 | FileCheck %s --check-prefix=BADOPT
// BADOPT: error: tlm-gpu-block-reductions: block-size must be >= 1, got 0

#in = affine_map<(b, s, d) -> (b, s, d)>
#out = affine_map<(b, s, d) -> (b, s)>

// RMSNorm's sum of squares over 768: one block of 256 threads per row, each
// thread striding over the row, the partials combined with gpu.all_reduce,
// thread 0 adding the total to the output.
// CHECK-LABEL: func.func @sum_of_squares
// CHECK-NOT:     linalg.generic
// CHECK:         gpu.launch blocks({{.*}}) in ({{.*}} = %{{.*}}, {{.*}} = %c1, {{.*}} = %c1) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1)
// CHECK:           %[[P:.*]] = scf.for %{{.*}} = %[[T]] to %c768 step %c256 iter_args
// CHECK:             memref.load
// CHECK:             arith.mulf
// CHECK:             arith.addf
// CHECK:           %[[TOTAL:.*]] = gpu.all_reduce add %[[P]] uniform
// CHECK:           arith.cmpi eq, %[[T]], %c0
// CHECK:           scf.if
// CHECK:             arith.addf %[[TOTAL]]
// CHECK:             memref.store
func.func @sum_of_squares(%x: memref<?x?x768xf32>, %ss: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<?x?x768xf32>) outs(%ss : memref<?x?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %s = arith.addf %sq, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#sc = affine_map<(b, h, i, j) -> (b, h, i, j)>
#mx = affine_map<(b, h, i, j) -> (b, h, i)>

// Softmax's running max over a dynamic number of keys: maximumf, identity
// -inf, a full block of 256 threads.
// CHECK-LABEL: func.func @row_max
// CHECK:         %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK:         gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c256,
// CHECK:           scf.for {{.*}} iter_args(%{{.*}} = %[[NEGINF]])
// CHECK:             arith.maximumf
// CHECK:           gpu.all_reduce maximumf
func.func @row_max(%s: memref<?x4x?x?xf32>, %m: memref<?x4x?xf32>) {
  linalg.generic {indexing_maps = [#sc, #mx], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%s : memref<?x4x?x?xf32>) outs(%m : memref<?x4x?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %acc, %a : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A reduction over 16 elements (one head's dot product) is shorter than a
// warp: left to the per-thread loops.
// CHECK-LABEL: func.func @short
// CHECK:         linalg.generic
// CHECK-NOT:     gpu.launch
func.func @short(%x: memref<?x16xf32>, %y: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, d) -> (i, d)>, affine_map<(i, d) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x16xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A product is not one of the combiners handled: left alone.
// CHECK-LABEL: func.func @product
// CHECK:         linalg.generic
// CHECK-NOT:     gpu.launch
func.func @product(%x: memref<?x64xf32>, %y: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, d) -> (i, d)>, affine_map<(i, d) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x64xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.mulf %a, %acc : f32
    linalg.yield %s : f32
  }
  return
}
