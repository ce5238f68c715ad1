// RUN: tlm-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(tlm-gpu-tile-matmuls{tile=16}),canonicalize)' | FileCheck %s
// Options out of range are one diagnostic, not a crash.
// RUN: tlm-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(tlm-gpu-tile-matmuls{tile=16}),canonicalize)' | FileCheck %s --check-prefix=GEMV
// RUN: tlm-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(tlm-gpu-tile-matmuls{tile=16 gemv-rows=0}),canonicalize)' | FileCheck %s --check-prefix=TILES
// RUN: tlm-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(tlm-gpu-tile-matmuls{tile=16 thread-tile=1 gemv-rows=0}),canonicalize)' | FileCheck %s --check-prefix=ONE
// RUN: not tlm-opt %s --split-input-file --tlm-gpu-tile-matmuls=thread-tile=0 2>&1 | FileCheck %s --check-prefix=BADTHREAD
// BADTHREAD: error: tlm-gpu-tile-matmuls: thread-tile must be >= 1, got 0
// RUN: not tlm-opt %s --split-input-file --tlm-gpu-tile-matmuls=tile=0 2>&1 | FileCheck %s --check-prefix=BADOPT
// BADOPT: error: tlm-gpu-tile-matmuls: tile must be >= 1, got 0

#x = affine_map<(b, s, n, k) -> (b, s, k)>
#w = affine_map<(b, s, n, k) -> (n, k)>
#y = affine_map<(b, s, n, k) -> (b, s, n)>

// A projection (40 columns, K = 64) is two launches, a GEMV and tiles; the row count m gives one of them an empty grid at each
// call (the runtime launches nothing for it), so the host needs no branch,
// which gpu-async-region would wait at.
//
// More than gemv-rows (4) rows: register-blocked tiles. Each of 16 x 16
// threads (tx, ty) computes 4 x 4 outputs (thread-tile), so a block covers
// 64 rows (b x s, flattened) and 64 columns, ceil(40/64) = 1 column block.
// x's and w's 64 x 16 pieces for each step of k go to workgroup memory
// (w's padded), 4 of each per thread; between barriers every thread does
// 16 FMAs per step of its 16 k, into 16 sums it keeps in registers; every
// edge is guarded and each sum is added to its output.
// CHECK-LABEL: func.func @projection
// CHECK-NOT:     linalg.generic
// CHECK:         %[[M:.*]] = arith.muli
// CHECK:         %[[FEW:.*]] = arith.cmpi ule, %[[M]], %c4
// CHECK:         %[[GEMVGRID:.*]] = arith.select %[[FEW]], %c5, %c0 : index
// CHECK:         gpu.launch blocks({{.*}}) in ({{.*}} = %[[GEMVGRID]], {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c32, {{.*}} = %c8, {{.*}} = %c1)
// CHECK:         %[[ROWBLOCKS:.*]] = arith.divui %{{.*}}, %c64
// CHECK:         %[[TILEGRID:.*]] = arith.select %[[FEW]], %c0, %[[ROWBLOCKS]] : index
// CHECK:         gpu.launch blocks({{.*}}) in ({{.*}} = %[[TILEGRID]], {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c16, {{.*}} = %c16, {{.*}} = %c1)
// CHECK-SAME:      workgroup(%[[XS:.*]] : memref<64x16xf32, #gpu.address_space<workgroup>>, %[[WS:.*]] : memref<64x17xf32, #gpu.address_space<workgroup>>)
// CHECK:           scf.for %{{.*}} = %c0 to %c64 step %c16 iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-4:     memref.store %{{.*}}, %[[XS]]
// CHECK:             gpu.barrier
// CHECK:             scf.for
// CHECK-COUNT-16:      math.fma
// CHECK:             gpu.barrier
// CHECK-COUNT-16:  memref.store %{{.*}} : memref<?x?x40xf32>
// thread-tile=1: one output per thread, 16 x 16 per block, ceil(40/16) = 3
// column blocks.
// ONE-LABEL: func.func @projection
// ONE:         gpu.launch blocks({{.*}}) in ({{.*}} = %{{.*}}, {{.*}} = %c3, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c16, {{.*}} = %c16, {{.*}} = %c1)
// ONE-SAME:      workgroup(%{{.*}} : memref<16x16xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<16x17xf32, #gpu.address_space<workgroup>>)
// ONE:           scf.for %{{.*}} = %c0 to %c64 step %c16 iter_args(%{{.*}} = %{{.*}}) -> (f32)
// Up to gemv-rows (4) rows, decode's GEMV, one warp per column, 8 warps a
// block (as many threads as the tiles'), so ceil(40/8) = 5 blocks. Each
// lane reads w's row 4 floats at a time (k = lane·4, step 128), one
// accumulator per row, the x loads guarded by the row count; then the 4
// lanes of a vector and the 32 lanes of the warp are summed (xor shuffles
// 16 .. 1) and lane 0 adds the total to the output.
// GEMV-LABEL: func.func @projection
// GEMV:         gpu.launch blocks({{.*}}) threads(%[[LANE:[^,]*]], {{.*}}) in ({{.*}} = %c32, {{.*}} = %c8, {{.*}} = %c1) {
// GEMV:           %[[START:.*]] = arith.muli %[[LANE]], %c4
// GEMV:           scf.for %{{.*}} = %[[START]] to %c64 step %c128 iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>)
// GEMV:             vector.load %{{.*}} {alignment = 16 : i64} : memref<40x64xf32>, vector<4xf32>
// GEMV-COUNT-4:     vector.load %{{.*}} {alignment = 16 : i64} : memref<?x?x64xf32>, vector<4xf32>
// GEMV:           vector.reduction <add>
// GEMV:           gpu.shuffle  xor %{{.*}}, %c16_i32, %c32_i32
// GEMV:           gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32
// GEMV:           arith.addf
// GEMV:           memref.store %{{.*}} : memref<?x?x40xf32>
// GEMV:         gpu.launch
// gemv-rows=0: the tiles only.
// TILES-LABEL: func.func @projection
// TILES-NOT:     arith.select
// TILES:         gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c16, {{.*}} = %c16, {{.*}} = %c1)
// TILES-NOT:     gpu.shuffle
// TILES-LABEL: func.func @scores
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

// -----

// k = 30 is not a multiple of 4, so a row of w need not start 16-byte
// aligned: the GEMV reads one float per lane and step.
// CHECK-LABEL: func.func @odd_k
// GEMV-LABEL: func.func @odd_k
// GEMV:         scf.for %{{.*}} = %{{.*}} to %c30 step %c32 iter_args({{.*}}) -> (f32, f32, f32, f32)
// GEMV-NOT:       vector.load
// GEMV:           memref.load %{{.*}} : memref<8x30xf32>
// GEMV:         gpu.shuffle  xor
#xo = affine_map<(m, n, k) -> (m, k)>
#wo = affine_map<(m, n, k) -> (n, k)>
#yo = affine_map<(m, n, k) -> (m, n)>
func.func @odd_k(%x: memref<?x30xf32>, %w: memref<8x30xf32>, %y: memref<?x8xf32>) {
  linalg.generic {indexing_maps = [#xo, #wo, #yo],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x30xf32>, memref<8x30xf32>) outs(%y : memref<?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// 16 columns would be 16 warps: far too few to keep a GPU's memory busy.
// k = 1024 is split 8 ways instead (gemv-min-warps), the block's 8 warps
// on one column taking turns at the 128-float steps (warp s starts at
// s·128 and strides 1024); lane 0 of each leaves its sums in workgroup
// memory and, after the barrier, split 0 adds them in order.
// CHECK-LABEL: func.func @long_k
// GEMV-LABEL: func.func @long_k
// GEMV:         %[[GRID:.*]] = arith.select %{{.*}}, %c16, %c0 : index
// GEMV:         gpu.launch blocks({{.*}}) in ({{.*}} = %[[GRID]], {{.*}}) threads(%[[LANE:[^,]*]], %[[WARP:[^,]*]], {{.*}}) in ({{.*}} = %c32, {{.*}} = %c8, {{.*}} = %c1) workgroup(%[[PARTS:.*]] : memref<8x1x4xf32, #gpu.address_space<workgroup>>)
// GEMV:           %[[W32:.*]] = arith.muli %[[WARP]], %c32
// GEMV:           %[[FIRST:.*]] = arith.addi %[[W32]], %[[LANE]]
// GEMV:           %[[BEGIN:.*]] = arith.muli %[[FIRST]], %c4
// GEMV:           scf.for %{{.*}} = %[[BEGIN]] to %c1024 step %c1024
// GEMV:           gpu.shuffle  xor
// GEMV-COUNT-4:   memref.store %{{.*}}, %[[PARTS]]
// GEMV:           gpu.barrier
// GEMV-COUNT-8:   memref.load %[[PARTS]]
// GEMV:           memref.store %{{.*}} : memref<?x16xf32>
// A column count that fills the GPU alone is not split.
// RUN: tlm-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(tlm-gpu-tile-matmuls{gemv-min-warps=16}),canonicalize)' | FileCheck %s --check-prefix=NOSPLIT
// NOSPLIT-LABEL: func.func @long_k
// NOSPLIT:       arith.select %{{.*}}, %c2, %c0 : index
// NOSPLIT:       gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c32, {{.*}} = %c8, {{.*}} = %c1) {
// NOSPLIT-NOT:     gpu.barrier
// NOSPLIT:       gpu.launch
#xl = affine_map<(m, n, k) -> (m, k)>
#wl = affine_map<(m, n, k) -> (n, k)>
#yl = affine_map<(m, n, k) -> (m, n)>
func.func @long_k(%x: memref<?x1024xf32>, %w: memref<16x1024xf32>, %y: memref<?x16xf32>) {
  linalg.generic {indexing_maps = [#xl, #wl, #yl],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x1024xf32>, memref<16x1024xf32>) outs(%y : memref<?x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// bf16 weights widen to f32 as they are loaded. The GEMV's lane reads 8 of
// them at a time (16 bytes; a warp step is 256 of k, and 40 columns split
// k two ways, so the step is 512), widens them in registers and multiplies
// them with two 16-byte loads of x, into accumulators of 4 floats (so 4
// rows still take 16 registers). The tiles
// stage w widened: their workgroup memory and FMAs are f32 as for f32
// weights.
// CHECK-LABEL: func.func @bf16_weights
// CHECK:         gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c16, {{.*}} = %c16, {{.*}} = %c1)
// CHECK-SAME:      workgroup(%{{.*}} : memref<64x16xf32, #gpu.address_space<workgroup>>, %[[WS:.*]] : memref<64x17xf32, #gpu.address_space<workgroup>>)
// CHECK:           %[[W:.*]] = memref.load %{{.*}} : memref<40x512xbf16>
// CHECK:           arith.extf %[[W]] : bf16 to f32
// CHECK:           memref.store %{{.*}}, %[[WS]]
// CHECK-COUNT-16:  math.fma %{{.*}} : f32
// GEMV-LABEL: func.func @bf16_weights
// GEMV:         gpu.launch blocks({{.*}}) threads(%[[LANE:[^,]*]], {{.*}}) in ({{.*}} = %c32, {{.*}} = %c8, {{.*}} = %c1) workgroup(%{{.*}} : memref<2x4x4xf32, #gpu.address_space<workgroup>>)
// GEMV:           %[[FIRST:.*]] = arith.addi %{{.*}}, %[[LANE]]
// GEMV:           %[[START:.*]] = arith.muli %[[FIRST]], %c8
// GEMV:           scf.for %[[K:.*]] = %[[START]] to %c512 step %c512 iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>)
// GEMV:             %[[W8:.*]] = vector.load %{{.*}}[%{{.*}}, %[[K]]] {alignment = 16 : i64} : memref<40x512xbf16>, vector<8xbf16>
// GEMV:             %[[F8:.*]] = arith.extf %[[W8]] : vector<8xbf16> to vector<8xf32>
// GEMV:             %[[LO:.*]] = vector.shuffle %[[F8]], %[[F8]] [0, 1, 2, 3]
// GEMV:             %[[HI:.*]] = vector.shuffle %[[F8]], %[[F8]] [4, 5, 6, 7]
// GEMV:             %[[X0:.*]] = vector.load %{{.*}}[%{{.*}}, %[[K]]] {alignment = 16 : i64} : memref<?x512xf32>, vector<4xf32>
// GEMV:             %[[S0:.*]] = math.fma %[[X0]], %[[LO]], %{{.*}} : vector<4xf32>
// GEMV:             %[[K4:.*]] = arith.addi %[[K]], %c4
// GEMV:             %[[X1:.*]] = vector.load %{{.*}}[%{{.*}}, %[[K4]]] {alignment = 16 : i64} : memref<?x512xf32>, vector<4xf32>
// GEMV:             math.fma %[[X1]], %[[HI]], %[[S0]] : vector<4xf32>
// GEMV:           gpu.shuffle  xor
#xb = affine_map<(m, n, k) -> (m, k)>
#wb = affine_map<(m, n, k) -> (n, k)>
#yb = affine_map<(m, n, k) -> (m, n)>
func.func @bf16_weights(%x: memref<?x512xf32>, %w: memref<40x512xbf16>, %y: memref<?x40xf32>) {
  linalg.generic {indexing_maps = [#xb, #wb, #yb],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x512xf32>, memref<40x512xbf16>) outs(%y : memref<?x40xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %e = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %e : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// f16 weights, k = 36: a multiple of 4 but not of 8, so 8 of them need not
// start 16-byte aligned; the GEMV reads one a lane and step, widened.
// GEMV-LABEL: func.func @f16_weights_odd_k
// GEMV:         scf.for %{{.*}} = %{{.*}} to %c36 step %c32 iter_args({{.*}}) -> (f32, f32, f32, f32)
// GEMV-NOT:       vector.load
// GEMV:           %[[W:.*]] = memref.load %{{.*}} : memref<8x36xf16>
// GEMV:           arith.extf %[[W]] : f16 to f32
#xh = affine_map<(m, n, k) -> (m, k)>
#wh = affine_map<(m, n, k) -> (n, k)>
#yh = affine_map<(m, n, k) -> (m, n)>
func.func @f16_weights_odd_k(%x: memref<?x36xf32>, %w: memref<8x36xf16>, %y: memref<?x8xf32>) {
  linalg.generic {indexing_maps = [#xh, #wh, #yh],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x36xf32>, memref<8x36xf16>) outs(%y : memref<?x8xf32>) {
  ^bb0(%a: f32, %b: f16, %acc: f32):
    %e = arith.extf %b : f16 to f32
    %p = arith.mulf %a, %e : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// f64 weights are none the kernels widen: the contraction is left to the
// parallel loops.
// CHECK-LABEL: func.func @f64_weights
// CHECK:         linalg.generic
// CHECK-NOT:     gpu.launch
#xd = affine_map<(m, n, k) -> (m, k)>
#wd = affine_map<(m, n, k) -> (n, k)>
#yd = affine_map<(m, n, k) -> (m, n)>
func.func @f64_weights(%x: memref<?x32xf32>, %w: memref<8x32xf64>, %y: memref<?x8xf32>) {
  linalg.generic {indexing_maps = [#xd, #wd, #yd],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x32xf32>, memref<8x32xf64>) outs(%y : memref<?x8xf32>) {
  ^bb0(%a: f32, %b: f64, %acc: f32):
    %t = arith.truncf %b : f64 to f32
    %p = arith.mulf %a, %t : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
