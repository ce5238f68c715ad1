// RUN: tlm-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(tlm-gpu-tile-matmuls{tile=16}),canonicalize)' | FileCheck %s
// Projections of one x in a row share one GEMV launch, unless something
// between them keeps them apart.

// Projections of one x in a row (Q, K, V) share one GEMV launch: 8 + 4 + 4
// columns, each warp selecting its projection's weight and output by its
// column (the buffers cast to one type); each keeps its own tiles. The
// zero fills fold into all three. A use of an output in between (@apart
// below) keeps them apart.
// CHECK-LABEL: func.func @siblings
// CHECK-NOT:     linalg.fill
// CHECK-DAG:     %[[WQ:.*]] = memref.cast %arg1 : memref<8x64xf32> to memref<?x64xf32>
// CHECK-DAG:     %[[WK:.*]] = memref.cast %arg2 : memref<4x64xf32> to memref<?x64xf32>
// CHECK-DAG:     %[[WV:.*]] = memref.cast %arg3 : memref<4x64xf32> to memref<?x64xf32>
// CHECK-DAG:     %[[OQ:.*]] = memref.cast %[[Q:.*]] : memref<?x8xf32> to memref<?x?xf32>
// CHECK-DAG:     %[[OK:.*]] = memref.cast %[[K:.*]] : memref<?x4xf32> to memref<?x?xf32>
// CHECK-DAG:     %[[OV:.*]] = memref.cast %[[V:.*]] : memref<?x4xf32> to memref<?x?xf32>
// CHECK:         gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c32, {{.*}} = %c8, {{.*}} = %c1)
// CHECK:           %[[COL:.*]] = arith.addi
// CHECK:           %[[INK:.*]] = arith.cmpi uge, %[[COL]], %c8
// CHECK:           %[[W1:.*]] = arith.select %[[INK]], %[[WK]], %[[WQ]]
// CHECK:           %[[O1:.*]] = arith.select %[[INK]], %[[OK]], %[[OQ]]
// CHECK:           %[[KCOL:.*]] = arith.subi %[[COL]], %c8
// CHECK:           %[[C1:.*]] = arith.select %[[INK]], %[[KCOL]], %[[COL]]
// CHECK:           %[[INV:.*]] = arith.cmpi uge, %[[COL]], %c12
// CHECK:           %[[W:.*]] = arith.select %[[INV]], %[[WV]], %[[W1]]
// CHECK:           %[[O:.*]] = arith.select %[[INV]], %[[OV]], %[[O1]]
// CHECK:           %[[VCOL:.*]] = arith.subi %[[COL]], %c12
// CHECK:           %[[C:.*]] = arith.select %[[INV]], %[[VCOL]], %[[C1]]
// CHECK:           vector.load %[[W]][%[[C]], %{{.*}}]
// CHECK-NOT:       memref.load %[[O]]
// CHECK:           memref.store %{{.*}}, %[[O]][%{{.*}}, %[[C]]]
// CHECK:         gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c16, {{.*}} = %c16, {{.*}} = %c1)
// CHECK:           memref.store %{{.*}}, %[[Q]]
// CHECK:         gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c16, {{.*}} = %c16, {{.*}} = %c1)
// CHECK:           memref.store %{{.*}}, %[[K]]
// CHECK:         gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c16, {{.*}} = %c16, {{.*}} = %c1)
// CHECK:           memref.store %{{.*}}, %[[V]]
// CHECK-NOT:     gpu.launch
// CHECK:         memref.copy
#xs = affine_map<(m, n, k) -> (m, k)>
#ws = affine_map<(m, n, k) -> (n, k)>
#ys = affine_map<(m, n, k) -> (m, n)>
func.func @siblings(%x: memref<?x64xf32>, %wq: memref<8x64xf32>, %wk: memref<4x64xf32>, %wv: memref<4x64xf32>, %zq: memref<?x8xf32>, %zk: memref<?x4xf32>, %zv: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = memref.dim %x, %c0 : memref<?x64xf32>
  %q = gpu.alloc (%m) : memref<?x8xf32>
  linalg.fill ins(%zero : f32) outs(%q : memref<?x8xf32>)
  linalg.generic {indexing_maps = [#xs, #ws, #ys], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wq : memref<?x64xf32>, memref<8x64xf32>) outs(%q : memref<?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %k = gpu.alloc (%m) : memref<?x4xf32>
  linalg.fill ins(%zero : f32) outs(%k : memref<?x4xf32>)
  %v = gpu.alloc (%m) : memref<?x4xf32>
  linalg.fill ins(%zero : f32) outs(%v : memref<?x4xf32>)
  linalg.generic {indexing_maps = [#xs, #ws, #ys], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wk : memref<?x64xf32>, memref<4x64xf32>) outs(%k : memref<?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#xs, #ws, #ys], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wv : memref<?x64xf32>, memref<4x64xf32>) outs(%v : memref<?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  memref.copy %q, %zq : memref<?x8xf32> to memref<?x8xf32>
  memref.copy %k, %zk : memref<?x4xf32> to memref<?x4xf32>
  memref.copy %v, %zv : memref<?x4xf32> to memref<?x4xf32>
  gpu.dealloc %q : memref<?x8xf32>
  gpu.dealloc %k : memref<?x4xf32>
  gpu.dealloc %v : memref<?x4xf32>
  return
}

// -----

// Q's output read between the two projections: its write cannot move past
// the read, so each keeps its own GEMV (no selects).
// CHECK-LABEL: func.func @apart
// CHECK:         gpu.launch {{.*}} in ({{.*}} = %c32, {{.*}} = %c8, {{.*}} = %c1)
// CHECK-NOT:       arith.select {{.*}} : memref
// CHECK:         memref.copy
// CHECK:         gpu.launch {{.*}} in ({{.*}} = %c32, {{.*}} = %c8, {{.*}} = %c1)
// CHECK-NOT:       arith.select {{.*}} : memref
// CHECK:         return
#xa = affine_map<(m, n, k) -> (m, k)>
#wa = affine_map<(m, n, k) -> (n, k)>
#ya = affine_map<(m, n, k) -> (m, n)>
func.func @apart(%x: memref<?x64xf32>, %wq: memref<8x64xf32>, %wk: memref<8x64xf32>, %zq: memref<?x8xf32>, %zk: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = memref.dim %x, %c0 : memref<?x64xf32>
  %q = gpu.alloc (%m) : memref<?x8xf32>
  %k = gpu.alloc (%m) : memref<?x8xf32>
  linalg.generic {indexing_maps = [#xa, #wa, #ya], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wq : memref<?x64xf32>, memref<8x64xf32>) outs(%q : memref<?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  memref.copy %q, %zq : memref<?x8xf32> to memref<?x8xf32>
  linalg.generic {indexing_maps = [#xa, #wa, #ya], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wk : memref<?x64xf32>, memref<8x64xf32>) outs(%k : memref<?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  memref.copy %k, %zk : memref<?x8xf32> to memref<?x8xf32>
  gpu.dealloc %q : memref<?x8xf32>
  gpu.dealloc %k : memref<?x8xf32>
  return
}

// -----

// A copy between two unrelated buffers sits between the projections: it
// has memory effects the check cannot see through, so each keeps its own
// GEMV.
// CHECK-LABEL: func.func @effects_between
// CHECK:         gpu.launch {{.*}} in ({{.*}} = %c32, {{.*}} = %c8, {{.*}} = %c1)
// CHECK-NOT:       arith.select {{.*}} : memref
// CHECK:         memref.copy %arg5, %arg6
// CHECK:         gpu.launch {{.*}} in ({{.*}} = %c32, {{.*}} = %c8, {{.*}} = %c1)
// CHECK-NOT:       arith.select {{.*}} : memref
// CHECK:         return
#xe = affine_map<(m, n, k) -> (m, k)>
#we = affine_map<(m, n, k) -> (n, k)>
#ye = affine_map<(m, n, k) -> (m, n)>
func.func @effects_between(%x: memref<?x64xf32>, %wq: memref<8x64xf32>, %wk: memref<8x64xf32>, %zq: memref<?x8xf32>, %zk: memref<?x8xf32>, %a: memref<4xf32>, %b: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %m = memref.dim %x, %c0 : memref<?x64xf32>
  %q = gpu.alloc (%m) : memref<?x8xf32>
  %k = gpu.alloc (%m) : memref<?x8xf32>
  linalg.generic {indexing_maps = [#xe, #we, #ye], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wq : memref<?x64xf32>, memref<8x64xf32>) outs(%q : memref<?x8xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  memref.copy %a, %b : memref<4xf32> to memref<4xf32>
  linalg.generic {indexing_maps = [#xe, #we, #ye], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wk : memref<?x64xf32>, memref<8x64xf32>) outs(%k : memref<?x8xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  memref.copy %q, %zq : memref<?x8xf32> to memref<?x8xf32>
  memref.copy %k, %zk : memref<?x8xf32> to memref<?x8xf32>
  gpu.dealloc %q : memref<?x8xf32>
  gpu.dealloc %k : memref<?x8xf32>
  return
}

// -----

// The second projection's weight is the first one's output: one launch
// would read it while writing it, so each keeps its own GEMV.
// CHECK-LABEL: func.func @dependent
// CHECK:         gpu.launch {{.*}} in ({{.*}} = %c32, {{.*}} = %c8, {{.*}} = %c1)
// CHECK-NOT:       arith.select {{.*}} : memref
// CHECK:         gpu.launch {{.*}} in ({{.*}} = %c16, {{.*}} = %c16, {{.*}} = %c1)
// CHECK:         gpu.launch {{.*}} in ({{.*}} = %c32, {{.*}} = %c8, {{.*}} = %c1)
// CHECK-NOT:       arith.select {{.*}} : memref
// CHECK:         return
#xd = affine_map<(m, n, k) -> (m, k)>
#wd = affine_map<(m, n, k) -> (n, k)>
#yd = affine_map<(m, n, k) -> (m, n)>
func.func @dependent(%x: memref<8x64xf32>, %w1: memref<64x64xf32>, %z: memref<8x8xf32>) {
  %h = gpu.alloc () : memref<8x64xf32>
  %o = gpu.alloc () : memref<8x8xf32>
  linalg.generic {indexing_maps = [#xd, #wd, #yd], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w1 : memref<8x64xf32>, memref<64x64xf32>) outs(%h : memref<8x64xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#xd, #wd, #yd], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %h : memref<8x64xf32>, memref<8x64xf32>) outs(%o : memref<8x8xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  memref.copy %o, %z : memref<8x8xf32> to memref<8x8xf32>
  gpu.dealloc %h : memref<8x64xf32>
  gpu.dealloc %o : memref<8x8xf32>
  return
}
