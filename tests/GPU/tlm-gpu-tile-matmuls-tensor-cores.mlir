// RUN: tlm-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(tlm-gpu-tile-matmuls{tensor-cores gemv-rows=0}),canonicalize,cse)' | FileCheck %s

// tlm-gpu-tile-matmuls{tensor-cores}: the tiles on TF32 tensor cores. The
// numerics stand on the fragment layouts of PTX's mma.m16n8k8 .tf32, so
// this pins every index: with lane = 4g + t, A's registers hold x at rows
// (g, g+8, g, g+8), columns (t, t, t+4, t+4) of a 16 x 8 piece; B's hold w
// at row g (an output column), columns t and t+4; C's hold the outputs at
// rows g and g+8, columns 2t and 2t+1.
//
// x (b, s, 64) and y (b, s, 40) become 2-D views; a block is 4 warps (128
// threads) and 64 rows x 64 columns, warp (wm, wn) = (warp % 2, warp / 2)
// 32 x 32 of them. k goes in steps of 32: warp w stages rows w + 4i of x
// and w (16 each), lane l column l, rounded to TF32 (round to nearest,
// ties away), into tiles of 36 floats a row.
// CHECK-LABEL: func.func @projection
// CHECK-DAG: %[[X2:.*]] = memref.collapse_shape %arg0 {{\[}}[0, 1], [2]] : memref<?x?x64xf32> into memref<?x64xf32>
// CHECK-DAG: %[[Y2:.*]] = memref.collapse_shape %arg2 {{\[}}[0, 1], [2]] : memref<?x?x40xf32> into memref<?x40xf32>
// CHECK: gpu.launch blocks(%[[BX:[^,]*]], {{.*}}) in ({{.*}}, {{.*}} = %c1, {{.*}} = %c1) threads(%[[TID:[^,]*]], {{.*}}) in ({{.*}} = %c128, {{.*}} = %c1, {{.*}} = %c1) workgroup(%[[XS:.*]] : memref<64x36xf32, #gpu.address_space<workgroup>>, %[[WS:.*]] : memref<64x36xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[LANE:.*]] = arith.remui %[[TID]], %c32
// CHECK: %[[WARP:.*]] = arith.divui %[[TID]], %c32
// CHECK: %[[WM:.*]] = arith.remui %[[WARP]], %c2
// CHECK: %[[WN:.*]] = arith.divui %[[WARP]], %c2
// CHECK: %[[G:.*]] = arith.divui %[[LANE]], %c4
// CHECK: %[[T:.*]] = arith.remui %[[LANE]], %c4
// CHECK: %[[ROW0:.*]] = arith.muli %[[BX]], %c64
// CHECK: %[[SUMS:.*]]:8 = scf.for %[[K0:.*]] = %c0 to %c64 step %c32 iter_args({{.*}}) -> (vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>)
// CHECK: %[[KX:.*]] = arith.addi %[[K0]], %[[LANE]]
// CHECK: %[[XROW:.*]] = arith.addi %[[ROW0]], %[[WARP]]
// CHECK: memref.load %[[X2]][%[[XROW]], %[[KX]]] : memref<?x64xf32>
// CHECK: %[[XT:.*]] = nvvm.convert.float.to.tf32 %{{.*}} {rnd = #nvvm.fp_rnd_mode<rna>}
// CHECK: %[[XF:.*]] = arith.bitcast %[[XT]] : i32 to f32
// CHECK: memref.store %[[XF]], %[[XS]][%[[WARP]], %[[LANE]]]
// CHECK: memref.load %arg1[%[[WARP]], %[[KX]]] : memref<40x64xf32>
// CHECK: nvvm.convert.float.to.tf32
// CHECK: memref.store %{{.*}}, %[[WS]][%[[WARP]], %[[LANE]]]
// CHECK: %[[WARP4:.*]] = arith.addi %[[WARP]], %c4
// CHECK: memref.store %{{.*}}, %[[XS]][%[[WARP4]], %[[LANE]]]
// CHECK: memref.store %{{.*}}, %[[WS]][%[[WARP4]], %[[LANE]]]
// CHECK-COUNT-28: nvvm.convert.float.to.tf32
// CHECK: gpu.barrier
// The first k8 slice: A of fragment rows 0 and 1 (rows +0, +16), B of
// fragment columns 0..3 (columns +0, +8, +16, +24), the 8 products.
// CHECK: %[[WM32:.*]] = arith.muli %[[WM]], %c32
// CHECK: %[[AROW:.*]] = arith.addi %[[WM32]], %[[G]]
// CHECK: %[[WN32:.*]] = arith.muli %[[WN]], %c32
// CHECK: %[[BROW:.*]] = arith.addi %[[WN32]], %[[G]]
// CHECK: %[[T4:.*]] = arith.addi %[[T]], %c4
// CHECK: %[[AROW8:.*]] = arith.addi %[[AROW]], %c8
// CHECK: %[[A0:.*]] = memref.load %[[XS]][%[[AROW]], %[[T]]]
// CHECK: %[[A1:.*]] = memref.load %[[XS]][%[[AROW8]], %[[T]]]
// CHECK: %[[A2:.*]] = memref.load %[[XS]][%[[AROW]], %[[T4]]]
// CHECK: %[[A3:.*]] = memref.load %[[XS]][%[[AROW8]], %[[T4]]]
// CHECK: %[[A:.*]] = vector.from_elements %[[A0]], %[[A1]], %[[A2]], %[[A3]] : vector<4x1xf32>
// CHECK: %[[AROW16:.*]] = arith.addi %[[AROW]], %c16
// CHECK: %[[AROW24:.*]] = arith.addi %[[AROW]], %c24
// CHECK: %[[A10:.*]] = memref.load %[[XS]][%[[AROW16]], %[[T]]]
// CHECK: %[[A11:.*]] = memref.load %[[XS]][%[[AROW24]], %[[T]]]
// CHECK: %[[A12:.*]] = memref.load %[[XS]][%[[AROW16]], %[[T4]]]
// CHECK: %[[A13:.*]] = memref.load %[[XS]][%[[AROW24]], %[[T4]]]
// CHECK: %[[A1V:.*]] = vector.from_elements %[[A10]], %[[A11]], %[[A12]], %[[A13]] : vector<4x1xf32>
// CHECK: %[[B0:.*]] = memref.load %[[WS]][%[[BROW]], %[[T]]]
// CHECK: %[[B1:.*]] = memref.load %[[WS]][%[[BROW]], %[[T4]]]
// CHECK: %[[B:.*]] = vector.from_elements %[[B0]], %[[B1]] : vector<2x1xf32>
// CHECK: %[[BROW8:.*]] = arith.addi %[[BROW]], %c8
// CHECK: %[[B10:.*]] = memref.load %[[WS]][%[[BROW8]], %[[T]]]
// CHECK: %[[B11:.*]] = memref.load %[[WS]][%[[BROW8]], %[[T4]]]
// CHECK: %[[B1V:.*]] = vector.from_elements %[[B10]], %[[B11]] : vector<2x1xf32>
// CHECK: %[[BROW16:.*]] = arith.addi %[[BROW]], %c16
// CHECK: %[[BROW24:.*]] = arith.addi %[[BROW]], %c24
// CHECK: nvgpu.mma.sync(%[[A]], %[[B]], %{{.*}}) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: nvgpu.mma.sync(%[[A]], %[[B1V]],
// CHECK-COUNT-2: nvgpu.mma.sync(%[[A]],
// CHECK: nvgpu.mma.sync(%[[A1V]], %[[B]],
// CHECK-COUNT-3: nvgpu.mma.sync(%[[A1V]],
// The next slice at columns t + 8 and t + 12; 32 products a step.
// CHECK: %[[T8:.*]] = arith.addi %[[T]], %c8
// CHECK: %[[T12:.*]] = arith.addi %[[T]], %c12
// CHECK: memref.load %[[XS]][%[[AROW]], %[[T8]]]
// CHECK: memref.load %[[XS]][%[[AROW8]], %[[T8]]]
// CHECK: memref.load %[[XS]][%[[AROW]], %[[T12]]]
// CHECK-COUNT-24: nvgpu.mma.sync
// CHECK-NOT: nvgpu.mma.sync
// CHECK: gpu.barrier
// CHECK-NEXT: scf.yield
// Output (row g, column 2t) of fragment (0, 0) is y[row0 + 32wm + g,
// 32wn + 2t] (one column block: its index folds to 0), added to y; the
// next register is column 2t + 1, fragment (0, 1) 8 columns on.
// CHECK: %[[OR:.*]] = arith.addi %[[ROW0]], %{{.*}}
// CHECK: %[[OC:.*]] = arith.addi %{{.*}}, %{{.*}}
// CHECK: scf.if
// CHECK-NEXT: %[[C00:.*]] = vector.extract %[[SUMS]]#0[0, 0] : f32 from vector<2x2xf32>
// CHECK-NEXT: %[[OLD:.*]] = memref.load %[[Y2]][%[[OR]], %[[OC]]]
// CHECK-NEXT: %[[NEW:.*]] = arith.addf %[[OLD]], %[[C00]]
// CHECK-NEXT: memref.store %[[NEW]], %[[Y2]][%[[OR]], %[[OC]]]
// CHECK: %[[OC1:.*]] = arith.addi %[[OC]], %c1
// CHECK: vector.extract %[[SUMS]]#0[0, 1]
// CHECK: memref.store %{{.*}}, %[[Y2]][%[[OR]], %[[OC1]]]
// CHECK: %[[OC8:.*]] = arith.addi %[[OC]], %c8
// CHECK: vector.extract %[[SUMS]]#1[0, 0]
// CHECK: memref.store %{{.*}}, %[[Y2]][%[[OR]], %[[OC8]]]
// Row g + 8 is the second row of the same registers.
// CHECK: %[[OR8:.*]] = arith.addi %[[OR]], %c8
// CHECK: vector.extract %[[SUMS]]#0[1, 0]
// CHECK: memref.store %{{.*}}, %[[Y2]][%[[OR8]], %[[OC]]]
// CHECK-NOT: gpu.launch
// CHECK: return
#x = affine_map<(b, s, n, k) -> (b, s, k)>
#w = affine_map<(b, s, n, k) -> (n, k)>
#y = affine_map<(b, s, n, k) -> (b, s, n)>
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

// bf16 weights widen to f32 values that TF32 holds exactly: only x is
// rounded (16 of 32 staged values a step). The zero-filled fresh output
// is stored, not added to; 130 columns are 3 column blocks.
// CHECK-LABEL: func.func @bf16_filled
// CHECK-NOT: linalg.fill
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}, {{.*}} = %c3, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c128,
// CHECK: scf.for
// CHECK: memref.load %{{.*}} : memref<?x96xf32>
// CHECK-NEXT: scf.yield
// CHECK: nvvm.convert.float.to.tf32
// CHECK: memref.load %{{.*}} : memref<130x96xbf16>
// CHECK-NEXT: arith.extf
// CHECK-NOT: nvvm.convert.float.to.tf32
// CHECK: memref.store
// CHECK-COUNT-15: nvvm.convert.float.to.tf32
// CHECK-NOT: nvvm.convert.float.to.tf32
// CHECK: gpu.barrier
// CHECK-COUNT-32: nvgpu.mma.sync
// CHECK-NOT: nvgpu.mma.sync
// CHECK: vector.extract
// CHECK-NOT: memref.load
// CHECK: memref.store
// CHECK: gpu.dealloc
func.func @bf16_filled(%x: memref<?x96xf32>, %w: memref<130x96xbf16>, %z: memref<?x130xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = memref.dim %x, %c0 : memref<?x96xf32>
  %y = gpu.alloc (%m) : memref<?x130xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<?x130xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                   affine_map<(m, n, k) -> (n, k)>,
                                   affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x96xf32>, memref<130x96xbf16>) outs(%y : memref<?x130xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %bw = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  memref.copy %y, %z : memref<?x130xf32> to memref<?x130xf32>
  gpu.dealloc %y : memref<?x130xf32>
  return
}

// -----

// x a strided view: its rows cannot be one flat index, so the FMA tiles
// (16 x 16 threads) take it.
// CHECK-LABEL: func.func @strided
// CHECK-NOT: nvgpu.mma.sync
// CHECK: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c16, {{.*}} = %c16, {{.*}} = %c1)
// CHECK-NOT: nvgpu.mma.sync
// CHECK: return
func.func @strided(%x: memref<?x32xf32, strided<[64, 1]>>, %w: memref<8x32xf32>, %y: memref<?x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                   affine_map<(m, n, k) -> (n, k)>,
                                   affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x32xf32, strided<[64, 1]>>, memref<8x32xf32>) outs(%y : memref<?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
