// RUN: tlm-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(tlm-gpu-map-parallel-loops{block-size=128}))' | FileCheck %s
// RUN: tlm-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(tlm-gpu-map-parallel-loops{block-size=128},convert-parallel-loops-to-gpu),canonicalize)' | FileCheck %s --check-prefix=LAUNCH
// Options out of range are one diagnostic, not a crash.
// RUN: not tlm-opt %s --split-input-file --tlm-gpu-map-parallel-loops=block-size=0 2>&1 | FileCheck %s --check-prefix=BADOPT
// BADOPT: error: tlm-gpu-map-parallel-loops: block-size must be >= 1, got 0

// (rows, 256): rows on block_x, the last dim tiled by 128 onto block_y and
// thread_x; the tail guard comes from the tiling.
// CHECK-LABEL: func.func @rows_by_256
// CHECK:         %[[TILE:.*]] = arith.muli %c1, %c128
// CHECK:         scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%{{.*}}, %c256) step (%{{.*}}, %[[TILE]])
// CHECK:           scf.parallel (%{{.*}}, %{{.*}}) = (%{{.*}}, %{{.*}}) to (%{{.*}}, %[[TILE]]) step (%c1, %c1)
// CHECK:             scf.if
// CHECK:           } {mapping = [#gpu.loop_dim_map<processor = sequential, {{.*}}>, #gpu.loop_dim_map<processor = thread_x, {{.*}}>]}
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x, {{.*}}>, #gpu.loop_dim_map<processor = block_y, {{.*}}>]}
// LAUNCH-LABEL: func.func @rows_by_256
// 256 / 128 = 2 blocks along y, one block per row along x:
// LAUNCH:         gpu.launch blocks({{.*}}) in ({{.*}} = %dim, {{.*}} = %c2, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c128, {{.*}} = %c1, {{.*}} = %c1)
func.func @rows_by_256(%a: memref<?x256xf32>, %out: memref<?x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %n = memref.dim %a, %c0 : memref<?x256xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c256) step (%c1, %c1) {
    %v = memref.load %a[%i, %j] : memref<?x256xf32>
    memref.store %v, %out[%i, %j] : memref<?x256xf32>
  }
  return
}

// -----

// Three dims: the first two are collapsed into block_x; a static last dim
// of 16 is one tile of 16 threads, not 128.
// LAUNCH-LABEL: func.func @three_dims
// LAUNCH:         %[[ROWS:.*]] = arith.muli %dim, %c4
// LAUNCH:         gpu.launch blocks({{.*}}) in ({{.*}} = %[[ROWS]], {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c16, {{.*}} = %c1, {{.*}} = %c1)
func.func @three_dims(%a: memref<?x4x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %cst = arith.constant 0.0 : f32
  %n = memref.dim %a, %c0 : memref<?x4x16xf32>
  scf.parallel (%i, %h, %d) = (%c0, %c0, %c0) to (%n, %c4, %c16) step (%c1, %c1, %c1) {
    memref.store %cst, %a[%i, %h, %d] : memref<?x4x16xf32>
  }
  return
}

// -----

// No parallel loop, no memory access: nothing to map.
// CHECK-LABEL: func.func @scalar_only
// CHECK-NOT:     mapping
func.func @scalar_only(%x: f32) -> f32 {
  %y = arith.addf %x, %x : f32
  return %y : f32
}

// -----

// A store outside every parallel loop would run on the host against device
// memory: refused.
func.func @host_store(%a: memref<4xf32>, %x: f32) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{accesses memory outside every parallel loop}}
  memref.store %x, %a[%c0] : memref<4xf32>
  return
}
