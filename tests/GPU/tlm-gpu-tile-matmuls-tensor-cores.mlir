// RUN: tlm-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(tlm-gpu-tile-matmuls{tensor-cores=tf32 gemv-rows=0}),canonicalize,cse)' | FileCheck %s
// RUN: tlm-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(tlm-gpu-tile-matmuls{tensor-cores=bf16 gemv-rows=0}),canonicalize,cse)' | FileCheck %s --check-prefix=BF16
// RUN: not tlm-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tlm-gpu-tile-matmuls{tensor-cores=fp8}))' 2>&1 | FileCheck %s --check-prefix=BADCORES
// BADCORES: error: tlm-gpu-tile-matmuls: tensor-cores must be none, tf32 or bf16, got 'fp8'

// tlm-gpu-tile-matmuls{tensor-cores=tf32}: the tiles on TF32 tensor cores. The
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
// CHECK: %[[M:.*]] = arith.muli %{{.*}}, %{{.*}} : index
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
// CHECK: %[[SUMS:.*]]:8 = scf.for %[[K0:.*]] = %c0 to %c64 step %c32 iter_args(%[[ACC0:[^ ]+]] = %cst, %[[ACC1:[^ ]+]] = %cst, %[[ACC2:[^ ]+]] = %cst, %[[ACC3:[^ ]+]] = %cst, %[[ACC4:[^ ]+]] = %cst, %[[ACC5:[^ ]+]] = %cst, %[[ACC6:[^ ]+]] = %cst, %[[ACC7:[^ ]+]] = %cst) -> (vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>, vector<2x2xf32>)
// Staging, guarded by k < 64, x's row < m and w's row (a column) < 40.
// CHECK: %[[KX:.*]] = arith.addi %[[K0]], %[[LANE]]
// CHECK: %[[KOK:.*]] = arith.cmpi ult, %[[KX]], %c64
// CHECK: %[[XROW:.*]] = arith.addi %[[ROW0]], %[[WARP]]
// CHECK: %[[XROK:.*]] = arith.cmpi ult, %[[XROW]], %[[M]]
// CHECK: %[[XOK:.*]] = arith.andi %[[XROK]], %[[KOK]]
// CHECK: scf.if %[[XOK]]
// CHECK: memref.load %[[X2]][%[[XROW]], %[[KX]]] : memref<?x64xf32>
// CHECK: %[[XT:.*]] = nvvm.convert.float.to.tf32 %{{.*}} {rnd = #nvvm.fp_rnd_mode<rna>}
// CHECK: %[[XF:.*]] = arith.bitcast %[[XT]] : i32 to f32
// CHECK: memref.store %[[XF]], %[[XS]][%[[WARP]], %[[LANE]]]
// CHECK: %[[WROK:.*]] = arith.cmpi ult, %[[WARP]], %c40
// CHECK: %[[WOK:.*]] = arith.andi %[[WROK]], %[[KOK]]
// CHECK: scf.if %[[WOK]]
// CHECK: memref.load %arg1[%[[WARP]], %[[KX]]] : memref<40x64xf32>
// CHECK: nvvm.convert.float.to.tf32
// CHECK: memref.store %{{.*}}, %[[WS]][%[[WARP]], %[[LANE]]]
// CHECK: %[[WARP4:.*]] = arith.addi %[[WARP]], %c4
// CHECK: memref.store %{{.*}}, %[[XS]][%[[WARP4]], %[[LANE]]]
// CHECK: memref.store %{{.*}}, %[[WS]][%[[WARP4]], %[[LANE]]]
// CHECK-COUNT-28: nvvm.convert.float.to.tf32
// CHECK: gpu.barrier
// The first k8 slice: A of fragment rows 0 and 1 (rows +0, +16), B of
// fragment columns 0..3 (rows of w +0, +8, +16, +24), the 8 products,
// fragment (i, j) into accumulator 4i + j.
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
// CHECK: %[[FA0:.*]] = vector.from_elements %[[A0]], %[[A1]], %[[A2]], %[[A3]] : vector<4x1xf32>
// CHECK: %[[AROW16:.*]] = arith.addi %[[AROW]], %c16
// CHECK: %[[AROW24:.*]] = arith.addi %[[AROW]], %c24
// CHECK: %[[A10:.*]] = memref.load %[[XS]][%[[AROW16]], %[[T]]]
// CHECK: %[[A11:.*]] = memref.load %[[XS]][%[[AROW24]], %[[T]]]
// CHECK: %[[A12:.*]] = memref.load %[[XS]][%[[AROW16]], %[[T4]]]
// CHECK: %[[A13:.*]] = memref.load %[[XS]][%[[AROW24]], %[[T4]]]
// CHECK: %[[FA1:.*]] = vector.from_elements %[[A10]], %[[A11]], %[[A12]], %[[A13]] : vector<4x1xf32>
// CHECK: %[[B00:.*]] = memref.load %[[WS]][%[[BROW]], %[[T]]]
// CHECK: %[[B01:.*]] = memref.load %[[WS]][%[[BROW]], %[[T4]]]
// CHECK: %[[FB0:.*]] = vector.from_elements %[[B00]], %[[B01]] : vector<2x1xf32>
// CHECK: %[[BROW8:.*]] = arith.addi %[[BROW]], %c8
// CHECK: %[[B10:.*]] = memref.load %[[WS]][%[[BROW8]], %[[T]]]
// CHECK: %[[B11:.*]] = memref.load %[[WS]][%[[BROW8]], %[[T4]]]
// CHECK: %[[FB1:.*]] = vector.from_elements %[[B10]], %[[B11]] : vector<2x1xf32>
// CHECK: %[[BROW16:.*]] = arith.addi %[[BROW]], %c16
// CHECK: %[[B20:.*]] = memref.load %[[WS]][%[[BROW16]], %[[T]]]
// CHECK: %[[B21:.*]] = memref.load %[[WS]][%[[BROW16]], %[[T4]]]
// CHECK: %[[FB2:.*]] = vector.from_elements %[[B20]], %[[B21]] : vector<2x1xf32>
// CHECK: %[[BROW24:.*]] = arith.addi %[[BROW]], %c24
// CHECK: %[[B30:.*]] = memref.load %[[WS]][%[[BROW24]], %[[T]]]
// CHECK: %[[B31:.*]] = memref.load %[[WS]][%[[BROW24]], %[[T4]]]
// CHECK: %[[FB3:.*]] = vector.from_elements %[[B30]], %[[B31]] : vector<2x1xf32>
// CHECK: %[[P0_0:.*]] = nvgpu.mma.sync(%[[FA0]], %[[FB0]], %[[ACC0]]) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: %[[P0_1:.*]] = nvgpu.mma.sync(%[[FA0]], %[[FB1]], %[[ACC1]]) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: %[[P0_2:.*]] = nvgpu.mma.sync(%[[FA0]], %[[FB2]], %[[ACC2]]) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: %[[P0_3:.*]] = nvgpu.mma.sync(%[[FA0]], %[[FB3]], %[[ACC3]]) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: %[[P0_4:.*]] = nvgpu.mma.sync(%[[FA1]], %[[FB0]], %[[ACC4]]) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: %[[P0_5:.*]] = nvgpu.mma.sync(%[[FA1]], %[[FB1]], %[[ACC5]]) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: %[[P0_6:.*]] = nvgpu.mma.sync(%[[FA1]], %[[FB2]], %[[ACC6]]) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: %[[P0_7:.*]] = nvgpu.mma.sync(%[[FA1]], %[[FB3]], %[[ACC7]]) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
// The next slices at columns t + 8, t + 12, then + 16, + 20 and + 24,
// + 28, each product into the slot the last one left.
// CHECK: %[[TA1:.*]] = arith.addi %[[T]], %c8
// CHECK: %[[TB1:.*]] = arith.addi %[[T]], %c12
// CHECK: memref.load %[[XS]][%[[AROW]], %[[TA1]]]
// CHECK: memref.load %[[XS]][%[[AROW8]], %[[TA1]]]
// CHECK: memref.load %[[XS]][%[[AROW]], %[[TB1]]]
// CHECK: %[[P1_0:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P0_0]])
// CHECK: %[[P1_1:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P0_1]])
// CHECK: %[[P1_2:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P0_2]])
// CHECK: %[[P1_3:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P0_3]])
// CHECK: %[[P1_4:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P0_4]])
// CHECK: %[[P1_5:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P0_5]])
// CHECK: %[[P1_6:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P0_6]])
// CHECK: %[[P1_7:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P0_7]])
// CHECK: %[[TA2:.*]] = arith.addi %[[T]], %c16
// CHECK: %[[TB2:.*]] = arith.addi %[[T]], %c20
// CHECK: memref.load %[[XS]][%[[AROW]], %[[TA2]]]
// CHECK: memref.load %[[XS]][%[[AROW8]], %[[TA2]]]
// CHECK: memref.load %[[XS]][%[[AROW]], %[[TB2]]]
// CHECK: %[[P2_0:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P1_0]])
// CHECK: %[[P2_1:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P1_1]])
// CHECK: %[[P2_2:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P1_2]])
// CHECK: %[[P2_3:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P1_3]])
// CHECK: %[[P2_4:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P1_4]])
// CHECK: %[[P2_5:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P1_5]])
// CHECK: %[[P2_6:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P1_6]])
// CHECK: %[[P2_7:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P1_7]])
// CHECK: %[[TA3:.*]] = arith.addi %[[T]], %c24
// CHECK: %[[TB3:.*]] = arith.addi %[[T]], %c28
// CHECK: memref.load %[[XS]][%[[AROW]], %[[TA3]]]
// CHECK: memref.load %[[XS]][%[[AROW8]], %[[TA3]]]
// CHECK: memref.load %[[XS]][%[[AROW]], %[[TB3]]]
// CHECK: %[[P3_0:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P2_0]])
// CHECK: %[[P3_1:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P2_1]])
// CHECK: %[[P3_2:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P2_2]])
// CHECK: %[[P3_3:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P2_3]])
// CHECK: %[[P3_4:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P2_4]])
// CHECK: %[[P3_5:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P2_5]])
// CHECK: %[[P3_6:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P2_6]])
// CHECK: %[[P3_7:.*]] = nvgpu.mma.sync(%{{.*}}, %{{.*}}, %[[P2_7]])
// CHECK-NOT: nvgpu.mma.sync
// CHECK: gpu.barrier
// CHECK-NEXT: scf.yield %[[P3_0]], %[[P3_1]], %[[P3_2]], %[[P3_3]], %[[P3_4]], %[[P3_5]], %[[P3_6]], %[[P3_7]]
// Output (row g, column 2t) of fragment (0, 0) is y[row0 + 32wm + g,
// 32wn + 2t] (one column block: its index folds to 0), guarded by m and
// 40 and added to y; the next register is column 2t + 1, fragment
// (0, 1) 8 columns on, row g + 8 the second row of the same registers.
// CHECK: %[[OWM:.*]] = arith.muli %[[WM]], %c32
// CHECK: %[[OWMG:.*]] = arith.addi %[[OWM]], %[[G]]
// CHECK: %[[OR:.*]] = arith.addi %[[ROW0]], %[[OWMG]]
// CHECK: %[[OWN:.*]] = arith.muli %[[WN]], %c32
// CHECK: %[[T2:.*]] = arith.muli %[[T]], %c2
// CHECK: %[[OC:.*]] = arith.addi %[[OWN]], %[[T2]]
// CHECK: %[[ROK:.*]] = arith.cmpi ult, %[[OR]], %[[M]]
// CHECK: %[[COK:.*]] = arith.cmpi ult, %[[OC]], %c40
// CHECK: %[[OK:.*]] = arith.andi %[[ROK]], %[[COK]]
// CHECK: scf.if %[[OK]]
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
// CHECK: %[[OR8:.*]] = arith.addi %[[OR]], %c8
// CHECK: vector.extract %[[SUMS]]#0[1, 0]
// CHECK: memref.store %{{.*}}, %[[Y2]][%[[OR8]], %[[OC]]]
// Fragment row 1 (rows + 16) holds accumulators 4 .. 7.
// CHECK: %[[OR16:.*]] = arith.addi %[[OR]], %c16
// CHECK: vector.extract %[[SUMS]]#4[0, 0]
// CHECK: memref.store %{{.*}}, %[[Y2]][%[[OR16]], %[[OC]]]
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

// -----

// tensor-cores=bf16: the same blocks and warps, tiles of bf16 (rows of 40:
// lane (g, t)'s pair at row g, columns 2t, 2t + 1 falls on bank 20g + t),
// x rounded to bf16 as it is staged, bf16 weights staged as they are, and
// NVVM's mma.sync.m16n8k16 (nvgpu's lowering takes no bf16) on pairs of
// neighbouring k packed in i32: A's registers (g, 2t), (g+8, 2t), (g,
// 2t+8), (g+8, 2t+8); B's w row g at columns 2t and 2t+8. Two slices of 16
// a step; the sums and their stores are the TF32 form's.
// BF16-LABEL: func.func @bf16_cores
// BF16: gpu.launch {{.*}} threads(%[[TID:[^,]*]], {{.*}}) in ({{.*}} = %c128, {{.*}}) workgroup(%[[XS:.*]] : memref<64x40xbf16, #gpu.address_space<workgroup>>, %[[WS:.*]] : memref<64x40xbf16, #gpu.address_space<workgroup>>)
// BF16: %[[LANE:.*]] = arith.remui %[[TID]], %c32
// BF16: %[[WARP:.*]] = arith.divui %[[TID]], %c32
// BF16: %[[WM:.*]] = arith.remui %[[WARP]], %c2
// BF16: %[[WN:.*]] = arith.divui %[[WARP]], %c2
// BF16: %[[G:.*]] = arith.divui %[[LANE]], %c4
// BF16: %[[T:.*]] = arith.remui %[[LANE]], %c4
// BF16: scf.for %{{.*}} = %c0 to %c64 step %c32 iter_args(%[[ACC0:[^ ]+]] = %cst, %[[ACC1:[^ ]+]] = %cst, %[[ACC2:[^ ]+]] = %cst, %[[ACC3:[^ ]+]] = %cst, %[[ACC4:[^ ]+]] = %cst, %[[ACC5:[^ ]+]] = %cst, %[[ACC6:[^ ]+]] = %cst, %[[ACC7:[^ ]+]] = %cst)
// BF16: memref.load %arg0[{{.*}}] : memref<?x64xf32>
// BF16: %[[XB:.*]] = arith.truncf %{{.*}} : f32 to bf16
// BF16: memref.store %[[XB]], %[[XS]][%[[WARP]], %[[LANE]]]
// BF16: %[[WB:.*]] = scf.if %{{.*}} -> (bf16)
// BF16-NEXT: memref.load %arg1[{{.*}}] : memref<40x64xbf16>
// BF16-NOT: arith.extf
// BF16: memref.store %[[WB]], %[[WS]][%[[WARP]], %[[LANE]]]
// BF16-NOT: nvvm.convert.float.to.tf32
// BF16: gpu.barrier
// BF16: %[[WM32:.*]] = arith.muli %[[WM]], %c32
// BF16: %[[AROW:.*]] = arith.addi %[[WM32]], %[[G]]
// BF16: %[[WN32:.*]] = arith.muli %[[WN]], %c32
// BF16: %[[BROW:.*]] = arith.addi %[[WN32]], %[[G]]
// BF16: %[[T2:.*]] = arith.muli %[[T]], %c2
// BF16: %[[T28:.*]] = arith.addi %[[T2]], %c8
// BF16: %[[AROW8:.*]] = arith.addi %[[AROW]], %c8
// BF16: %[[A0V:.*]] = vector.load %[[XS]][%[[AROW]], %[[T2]]] : memref<64x40xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// BF16: %[[A0B:.*]] = vector.bitcast %[[A0V]] : vector<2xbf16> to vector<1xi32>
// BF16: %[[A0:.*]] = vector.extract %[[A0B]][0] : i32 from vector<1xi32>
// BF16: %[[A1V:.*]] = vector.load %[[XS]][%[[AROW8]], %[[T2]]] : memref<64x40xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// BF16: %[[A1B:.*]] = vector.bitcast %[[A1V]] : vector<2xbf16> to vector<1xi32>
// BF16: %[[A1:.*]] = vector.extract %[[A1B]][0] : i32 from vector<1xi32>
// BF16: %[[A2V:.*]] = vector.load %[[XS]][%[[AROW]], %[[T28]]] : memref<64x40xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// BF16: %[[A2B:.*]] = vector.bitcast %[[A2V]] : vector<2xbf16> to vector<1xi32>
// BF16: %[[A2:.*]] = vector.extract %[[A2B]][0] : i32 from vector<1xi32>
// BF16: %[[A3V:.*]] = vector.load %[[XS]][%[[AROW8]], %[[T28]]] : memref<64x40xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// BF16: %[[A3B:.*]] = vector.bitcast %[[A3V]] : vector<2xbf16> to vector<1xi32>
// BF16: %[[A3:.*]] = vector.extract %[[A3B]][0] : i32 from vector<1xi32>
// BF16: %[[AROW16:.*]] = arith.addi %[[AROW]], %c16
// BF16: %[[AROW24:.*]] = arith.addi %[[AROW]], %c24
// BF16: %[[A10V:.*]] = vector.load %[[XS]][%[[AROW16]], %[[T2]]] : memref<64x40xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// BF16: %[[A10B:.*]] = vector.bitcast %[[A10V]] : vector<2xbf16> to vector<1xi32>
// BF16: %[[A10:.*]] = vector.extract %[[A10B]][0] : i32 from vector<1xi32>
// BF16: %[[A11V:.*]] = vector.load %[[XS]][%[[AROW24]], %[[T2]]] : memref<64x40xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// BF16: %[[A11B:.*]] = vector.bitcast %[[A11V]] : vector<2xbf16> to vector<1xi32>
// BF16: %[[A11:.*]] = vector.extract %[[A11B]][0] : i32 from vector<1xi32>
// BF16: %[[A12V:.*]] = vector.load %[[XS]][%[[AROW16]], %[[T28]]] : memref<64x40xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// BF16: %[[A12B:.*]] = vector.bitcast %[[A12V]] : vector<2xbf16> to vector<1xi32>
// BF16: %[[A12:.*]] = vector.extract %[[A12B]][0] : i32 from vector<1xi32>
// BF16: %[[A13V:.*]] = vector.load %[[XS]][%[[AROW24]], %[[T28]]] : memref<64x40xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// BF16: %[[A13B:.*]] = vector.bitcast %[[A13V]] : vector<2xbf16> to vector<1xi32>
// BF16: %[[A13:.*]] = vector.extract %[[A13B]][0] : i32 from vector<1xi32>
// BF16: %[[B0V:.*]] = vector.load %[[WS]][%[[BROW]], %[[T2]]] : memref<64x40xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// BF16: %[[B0B:.*]] = vector.bitcast %[[B0V]] : vector<2xbf16> to vector<1xi32>
// BF16: %[[B0:.*]] = vector.extract %[[B0B]][0] : i32 from vector<1xi32>
// BF16: %[[B1V:.*]] = vector.load %[[WS]][%[[BROW]], %[[T28]]] : memref<64x40xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// BF16: %[[B1B:.*]] = vector.bitcast %[[B1V]] : vector<2xbf16> to vector<1xi32>
// BF16: %[[B1:.*]] = vector.extract %[[B1B]][0] : i32 from vector<1xi32>
// BF16: %[[BROW8:.*]] = arith.addi %[[BROW]], %c8
// BF16: %[[B10V:.*]] = vector.load %[[WS]][%[[BROW8]], %[[T2]]] : memref<64x40xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// BF16: %[[B10B:.*]] = vector.bitcast %[[B10V]] : vector<2xbf16> to vector<1xi32>
// BF16: %[[B10:.*]] = vector.extract %[[B10B]][0] : i32 from vector<1xi32>
// BF16: %[[B11V:.*]] = vector.load %[[WS]][%[[BROW8]], %[[T28]]] : memref<64x40xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// BF16: %[[B11B:.*]] = vector.bitcast %[[B11V]] : vector<2xbf16> to vector<1xi32>
// BF16: %[[B11:.*]] = vector.extract %[[B11B]][0] : i32 from vector<1xi32>
// BF16: %[[C00:.*]] = vector.extract %[[ACC0]][0, 0]
// BF16: %[[C01:.*]] = vector.extract %[[ACC0]][0, 1]
// BF16: %[[C10:.*]] = vector.extract %[[ACC0]][1, 0]
// BF16: %[[C11:.*]] = vector.extract %[[ACC0]][1, 1]
// BF16: %[[D0:.*]] = nvvm.mma.sync A[%[[A0]], %[[A1]], %[[A2]], %[[A3]]]  B[%[[B0]], %[[B1]]]  C[%[[C00]], %[[C01]], %[[C10]], %[[C11]]]  {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// BF16: %[[D0R0:.*]] = llvm.extractvalue %[[D0]][0]
// BF16: %[[D0R1:.*]] = llvm.extractvalue %[[D0]][1]
// BF16: %[[D0R2:.*]] = llvm.extractvalue %[[D0]][2]
// BF16: %[[D0R3:.*]] = llvm.extractvalue %[[D0]][3]
// BF16: vector.extract %[[ACC1]][0, 0]
// BF16: nvvm.mma.sync A[%[[A0]], %[[A1]], %[[A2]], %[[A3]]]  B[%[[B10]], %[[B11]]]
// BF16: vector.extract %[[ACC4]][0, 0]
// BF16: nvvm.mma.sync A[%[[A10]], %[[A11]], %[[A12]], %[[A13]]]  B[%[[B0]], %[[B1]]]
// The second slice (k + 16) accumulates onto the first one's sums.
// BF16: %[[T216:.*]] = arith.addi %[[T2]], %c16
// BF16: %[[T224:.*]] = arith.addi %[[T2]], %c24
// BF16: vector.load %[[XS]][%[[AROW]], %[[T216]]]
// BF16: vector.load %[[XS]][%[[AROW]], %[[T224]]]
// BF16: nvvm.mma.sync A[{{.*}}]  B[{{.*}}]  C[%[[D0R0]], %[[D0R1]], %[[D0R2]], %[[D0R3]]]
// BF16-COUNT-7: nvvm.mma.sync
// BF16-NOT: nvvm.mma.sync
// BF16: gpu.barrier
// BF16: scf.yield
// BF16: vector.extract %{{.*}}#0[0, 0] : f32 from vector<2x2xf32>
func.func @bf16_cores(%x: memref<?x64xf32>, %w: memref<40x64xbf16>, %y: memref<?x40xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x64xf32>, memref<40x64xbf16>) outs(%y : memref<?x40xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %bw = arith.extf %b : bf16 to f32
    %p = arith.mulf %a, %bw : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
