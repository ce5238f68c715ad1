// RUN: tlm-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(tlm-gpu-tile-matmuls{tile=16}),canonicalize)' | FileCheck %s
// Zero fills of a projection's output: dropped where the kernels can store
// their sums instead, kept where a reader or an alias could see them.

// A projection into a fresh device buffer zero-filled before it: the fill
// is dropped and both kernels store their sums instead of adding them to
// what the buffer held (one launch less a projection).
// CHECK-LABEL: func.func @filled
// CHECK:         %[[Y:.*]] = gpu.alloc
// CHECK-NOT:     linalg.fill
// CHECK:         gpu.launch
// CHECK-NOT:       memref.load %[[Y]]
// CHECK:           memref.store %{{.*}}, %[[Y]]
// CHECK:         gpu.launch
// CHECK-NOT:       memref.load %[[Y]]
// CHECK:           memref.store %{{.*}}, %[[Y]]
// CHECK:         gpu.dealloc %[[Y]]
#xf = affine_map<(m, n, k) -> (m, k)>
#wf = affine_map<(m, n, k) -> (n, k)>
#yf = affine_map<(m, n, k) -> (m, n)>
func.func @filled(%x: memref<?x64xf32>, %w: memref<8x64xf32>, %z: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = memref.dim %x, %c0 : memref<?x64xf32>
  %y = gpu.alloc (%m) : memref<?x8xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<?x8xf32>)
  linalg.generic {indexing_maps = [#xf, #wf, #yf],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x64xf32>, memref<8x64xf32>) outs(%y : memref<?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  memref.copy %y, %z : memref<?x8xf32> to memref<?x8xf32>
  gpu.dealloc %y : memref<?x8xf32>
  return
}

// -----

// Kept: a fill of -0.0 (the sums would lose its sign where they are +0.0),
// a fill read before the projection, and a fill of the caller's buffer
// (which a view of it could alias). The kernels then add to the buffer.
// CHECK-LABEL: func.func @fills_kept
// CHECK:         linalg.fill ins(%cst
// CHECK:         gpu.launch
// CHECK:           memref.load %{{.*}} : memref<?x8xf32>
// CHECK:         linalg.fill
// CHECK:         memref.copy
// CHECK:         gpu.launch
// CHECK:         linalg.fill
// CHECK:         gpu.launch
// CHECK:           memref.load %arg2
#xk = affine_map<(m, n, k) -> (m, k)>
#wk = affine_map<(m, n, k) -> (n, k)>
#yk = affine_map<(m, n, k) -> (m, n)>
func.func @fills_kept(%x: memref<?x64xf32>, %w: memref<8x64xf32>, %z: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %negzero = arith.constant -0.0 : f32
  %m = memref.dim %x, %c0 : memref<?x64xf32>
  %a = gpu.alloc (%m) : memref<?x8xf32>
  linalg.fill ins(%negzero : f32) outs(%a : memref<?x8xf32>)
  linalg.generic {indexing_maps = [#xk, #wk, #yk],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x64xf32>, memref<8x64xf32>) outs(%a : memref<?x8xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %t = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  }
  %b = gpu.alloc (%m) : memref<?x8xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<?x8xf32>)
  memref.copy %b, %a : memref<?x8xf32> to memref<?x8xf32>
  linalg.generic {indexing_maps = [#xk, #wk, #yk],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x64xf32>, memref<8x64xf32>) outs(%b : memref<?x8xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %t = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%z : memref<?x8xf32>)
  linalg.generic {indexing_maps = [#xk, #wk, #yk],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x64xf32>, memref<8x64xf32>) outs(%z : memref<?x8xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %t = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  }
  gpu.dealloc %a : memref<?x8xf32>
  gpu.dealloc %b : memref<?x8xf32>
  return
}

// -----

// Two projections into one zero-filled buffer: the first stores, the
// second (the fill no longer right before it) still adds. The first splits
// its k of 1024 across warps: split 0 stores the splits' sum.
// CHECK-LABEL: func.func @accumulated
// CHECK:         %[[Y:.*]] = gpu.alloc
// CHECK-NOT:     linalg.fill
// CHECK:         gpu.launch
// CHECK:           gpu.barrier
// CHECK-NOT:       memref.load %[[Y]]
// CHECK:           memref.store %{{.*}}, %[[Y]]
// CHECK:         gpu.launch
// CHECK-NOT:       memref.load %[[Y]]
// CHECK:           memref.store %{{.*}}, %[[Y]]
// CHECK:         gpu.launch
// CHECK:           memref.load %[[Y]]
// CHECK:           memref.store %{{.*}}, %[[Y]]
// CHECK:         gpu.launch
// CHECK:           memref.load %[[Y]]
// CHECK:           memref.store %{{.*}}, %[[Y]]
#xa = affine_map<(m, n, k) -> (m, k)>
#wa = affine_map<(m, n, k) -> (n, k)>
#ya = affine_map<(m, n, k) -> (m, n)>
func.func @accumulated(%x: memref<?x1024xf32>, %w: memref<8x1024xf32>, %v: memref<8x1024xf32>, %z: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = memref.dim %x, %c0 : memref<?x1024xf32>
  %y = gpu.alloc (%m) : memref<?x8xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<?x8xf32>)
  linalg.generic {indexing_maps = [#xa, #wa, #ya],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x1024xf32>, memref<8x1024xf32>) outs(%y : memref<?x8xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %t = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#xa, #wa, #ya],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %v : memref<?x1024xf32>, memref<8x1024xf32>) outs(%y : memref<?x8xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %t = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  }
  memref.copy %y, %z : memref<?x8xf32> to memref<?x8xf32>
  gpu.dealloc %y : memref<?x8xf32>
  return
}

// -----

// The buffer passed on before its fill (a select, through which a read
// would not show as a use of it): the fill stays, the kernels add.
// CHECK-LABEL: func.func @passed_on
// CHECK:         linalg.fill
// CHECK:         gpu.launch
// CHECK:           memref.load %[[Y:.*]][
// CHECK:           memref.store %{{.*}}, %[[Y]]
#xp = affine_map<(m, n, k) -> (m, k)>
#wp = affine_map<(m, n, k) -> (n, k)>
#yp = affine_map<(m, n, k) -> (m, n)>
func.func @passed_on(%x: memref<?x64xf32>, %w: memref<8x64xf32>, %z: memref<?x8xf32>, %c: i1) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = memref.dim %x, %c0 : memref<?x64xf32>
  %y = gpu.alloc (%m) : memref<?x8xf32>
  %r = arith.select %c, %y, %z : memref<?x8xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<?x8xf32>)
  linalg.copy ins(%r : memref<?x8xf32>) outs(%z : memref<?x8xf32>)
  linalg.generic {indexing_maps = [#xp, #wp, #yp],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x64xf32>, memref<8x64xf32>) outs(%y : memref<?x8xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %t = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  }
  gpu.dealloc %y : memref<?x8xf32>
  return
}
