// RUN: tlm-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(tlm-gpu-block-reductions{block-size=256}),canonicalize)' | FileCheck %s
// Options out of range are one diagnostic, not a crash.
// RUN: not tlm-opt %s --split-input-file --tlm-gpu-block-reductions=block-size=0 2>&1 | FileCheck %s --check-prefix=BADOPT
// BADOPT: error: tlm-gpu-block-reductions: block-size must be >= 1, got 0
// RUN: not tlm-opt %s --split-input-file --tlm-gpu-block-reductions=thread-rows=-1 2>&1 | FileCheck %s --check-prefix=BADROWS
// BADROWS: error: tlm-gpu-block-reductions: thread-rows must be >= 0, got -1
// RUN: tlm-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(tlm-gpu-block-reductions{thread-rows=0}),canonicalize)' | FileCheck %s --check-prefix=BLOCKS

#in = affine_map<(b, s, d) -> (b, s, d)>
#out = affine_map<(b, s, d) -> (b, s)>

// RMSNorm's sum of squares over 768: one block of 256 threads per row, each
// thread striding over the row, the partials combined with gpu.all_reduce,
// thread 0 adding the total to the output. The rows are dynamic: from
// thread-rows (131072) of them, one thread per row fills the GPU instead,
// so that form is kept as parallel loops beside the launch, and the row
// count empties one of the two (the block grid, or the loops' first
// bound).
// CHECK-LABEL: func.func @sum_of_squares
// CHECK-NOT:     linalg.generic
// CHECK:         %[[ROWS:.*]] = arith.muli
// CHECK:         %[[FEW:.*]] = arith.cmpi ult, %[[ROWS]], %c131072
// CHECK:         %[[GRID:.*]] = arith.select %[[FEW]], %[[ROWS]], %c0
// CHECK:         gpu.launch blocks({{.*}}) in ({{.*}} = %[[GRID]], {{.*}} = %c1, {{.*}} = %c1) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1)
// CHECK:           %[[P:.*]] = scf.for %{{.*}} = %[[T]] to %c768 step %c256 iter_args
// CHECK:             memref.load
// CHECK:             arith.mulf
// CHECK:             arith.addf
// CHECK:           %[[TOTAL:.*]] = gpu.all_reduce add %[[P]] uniform
// CHECK:           arith.cmpi eq, %[[T]], %c0
// CHECK:           scf.if
// CHECK:             arith.addf %[[TOTAL]]
// CHECK:             memref.store
// CHECK:         %[[UPPER:.*]] = arith.select %[[FEW]], %c0, %{{.*}}
// CHECK:         scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%[[UPPER]], %{{.*}})
// CHECK:           scf.for %{{.*}} = %c0 to %c768 step %c1
// thread-rows=0: blocks at any row count, nothing else.
// BLOCKS-LABEL: func.func @sum_of_squares
// BLOCKS-NOT:     arith.select
// BLOCKS:         gpu.launch
// BLOCKS-NOT:     scf.parallel
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

// -----

#p = affine_map<(b, h, i, e, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, e, j) -> (j, b, h floordiv 2, e)>
#acc = affine_map<(b, h, i, e, j) -> (b, i, h, e)>

// Attention's P·V over the cached positions j: its output (b, i, h, e)
// holds the outer loops in another order. A decode step has few outputs
// and many positions, which one thread per output would walk one after
// another: a block per output instead, each thread striding over j; the
// total goes to the output at its own indices (b, i, h, e).
// CHECK-LABEL: func.func @weighted_sum
// CHECK:         gpu.launch blocks(%[[BLOCK:[^,]*]], {{.*}}) in ({{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %c256,
// CHECK:           %[[E:.*]] = arith.remui %[[BLOCK]], %c16
// CHECK:           %[[R1:.*]] = arith.divui %[[BLOCK]], %c16
// CHECK:           %[[I:.*]] = arith.remui %[[R1]], %{{.*}}
// CHECK:           %[[R2:.*]] = arith.divui %[[R1]], %{{.*}}
// CHECK:           %[[H:.*]] = arith.remui %[[R2]], %c4
// CHECK:           %[[B:.*]] = arith.divui %[[R2]], %c4
// CHECK:           scf.for %[[J:.*]] = %[[T]] to %{{.*}} step %c256
// CHECK:             memref.load %{{.*}}[%[[B]], %[[H]], %[[I]], %[[J]]] : memref<?x4x?x?xf32>
// CHECK:           gpu.all_reduce add
// CHECK:           scf.if
// CHECK:             %[[OLD:.*]] = memref.load %{{.*}}[%[[B]], %[[I]], %[[H]], %[[E]]] : memref<?x?x4x16xf32>
// CHECK:             memref.store %{{.*}}, %{{.*}}[%[[B]], %[[I]], %[[H]], %[[E]]] : memref<?x?x4x16xf32>
// CHECK:         scf.parallel
func.func @weighted_sum(%p: memref<?x4x?x?xf32>, %v: memref<?x?x2x16xf32>, %o: memref<?x?x4x16xf32>) {
  linalg.generic {indexing_maps = [#p, #v, #acc],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : memref<?x4x?x?xf32>, memref<?x?x2x16xf32>) outs(%o : memref<?x?x4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Prefill's scores, one per (head, query, key) over a 64-long dot product:
// 8 x 256 x 256 = 524288 outputs, static, are at least thread-rows, so one
// thread per score (the parallel loops) rather than half a million blocks.
// CHECK-LABEL: func.func @many_rows
// CHECK:         linalg.generic
// CHECK-NOT:     gpu.launch
// BLOCKS-LABEL: func.func @many_rows
// BLOCKS:        gpu.launch
func.func @many_rows(%q: memref<8x256x64xf32>, %k: memref<8x256x64xf32>, %s: memref<8x256x256xf32>) {
  linalg.generic {indexing_maps = [affine_map<(h, i, j, d) -> (h, i, d)>,
                                   affine_map<(h, i, j, d) -> (h, j, d)>,
                                   affine_map<(h, i, j, d) -> (h, i, j)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : memref<8x256x64xf32>, memref<8x256x64xf32>) outs(%s : memref<8x256x256xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %t = arith.addf %acc, %m : f32
    linalg.yield %t : f32
  }
  return
}

// -----

// An output that drops an outer loop (a sum over two loops) is not one row
// per block: left alone.
// CHECK-LABEL: func.func @drops_a_loop
// CHECK:         linalg.generic
// CHECK-NOT:     gpu.launch
func.func @drops_a_loop(%x: memref<?x?x64xf32>, %y: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(a, b, d) -> (a, b, d)>, affine_map<(a, b, d) -> (a)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<?x?x64xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }
  return
}
