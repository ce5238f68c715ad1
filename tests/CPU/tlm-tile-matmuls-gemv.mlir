// The one-row remainder of the packed form (every decode step) in blocks
// of gemv-columns output columns.
// RUN: tlm-opt %s --tlm-tile-matmuls --canonicalize --cse | FileCheck %s
// RUN: tlm-opt %s --tlm-tile-matmuls="gemv-columns=1" --canonicalize --cse | FileCheck %s --check-prefix=STREAM
// RUN: tlm-opt %s --tlm-tile-matmuls="gemv-columns=1 fma-chains=1" --canonicalize --cse | FileCheck %s --check-prefix=CHAIN1
// RUN: tlm-opt %s --tlm-tile-matmuls="gemv-columns=1 fma-chains=2" --canonicalize --cse | FileCheck %s --check-prefix=CHAIN2
// Options out of range are one diagnostic, not a crash.
// RUN: not tlm-opt %s --split-input-file --tlm-tile-matmuls=gemv-columns=0 2>&1 | FileCheck %s --check-prefix=BADOPT
// BADOPT: error: tlm-tile-matmuls: gemv-columns must be >= 1, got 0
// (tlm-tile-matmuls' other options are checked the same way.)
// RUN: not tlm-opt %s --tlm-tile-matmuls=fma-chains=0 2>&1 | FileCheck %s --check-prefix=BADCHAINS
// BADCHAINS: error: tlm-tile-matmuls: fma-chains must be >= 1, got 0
// RUN: not tlm-opt %s --tlm-tile-matmuls=x-tile-bytes=0 2>&1 | FileCheck %s --check-prefix=BADXTILE
// BADXTILE: error: tlm-tile-matmuls: x-tile-bytes must be >= 1, got 0
// RUN: not tlm-opt %s --tlm-tile-matmuls="lanes=16 pack-cols=24" 2>&1 | FileCheck %s --check-prefix=PACKCOLS
// PACKCOLS: error: tlm-tile-matmuls: pack-cols (24) must be a multiple of lanes (16)

#xk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>

// By default 8 columns per block: each vector of x serves 8 rows of W,
// read side by side (8 streams through W).
// CHECK-LABEL: func.func @gemv_rows
// CHECK:         scf.for %{{.*}} = %c0 to %c32 step %c8
// CHECK:           scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args(%{{.*}}) -> (vector<1x8x16xf32>)
// CHECK:           vector.multi_reduction <add>, %{{.*}}, %{{.*}} [2] : vector<1x8x16xf32> to vector<1x8xf32>
// With gemv-columns=1 W's rows are read one after another: one row of W
// per block, one sum per column. One accumulator would make every FMA wait
// for the previous one, so consecutive k steps get their own: 8 chains are
// wanted (fma-chains), k = 64 has 4 steps of 16 lanes, and all 4 are summed
// apart (the k loop of one step folds away).
// STREAM-LABEL: func.func @gemv_rows
// STREAM:         scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args(%{{.*}}) -> (tensor<1x32xf32>)
// STREAM:           tensor.extract_slice %{{.*}}[%{{.*}}, 0] [1, 64] [1, 1] : tensor<32x64xf32> to tensor<1x64xf32>
// STREAM:           arith.mulf {{.*}} fastmath<contract> : vector<1x1x1x4x16xf32>
// STREAM:           arith.addf {{.*}} fastmath<contract> : vector<1x1x4x16xf32>
// STREAM:           vector.multi_reduction <add>, %{{.*}}, %{{.*}} [2, 3] : vector<1x1x4x16xf32> to vector<1x1xf32>
// STREAM:           vector.transfer_write %{{.*}} : vector<1x1xf32>, tensor<1x32xf32>
// STREAM-NOT:       vector<1x8x16xf32>
// STREAM:       return
// fma-chains=1: one FMA chain along k.
// CHAIN1-LABEL: func.func @gemv_rows
// CHAIN1:         scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args(%{{.*}}) -> (tensor<1x32xf32>)
// CHAIN1:           scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args(%{{.*}}) -> (vector<1x1x16xf32>)
// CHAIN1:             arith.mulf {{.*}} fastmath<contract> : vector<1x1x1x16xf32>
// CHAIN1:           vector.multi_reduction <add>, %{{.*}}, %{{.*}} [2] : vector<1x1x16xf32> to vector<1x1xf32>
// fma-chains=2: two k steps per iteration, each its own accumulator.
// CHAIN2-LABEL: func.func @gemv_rows
// CHAIN2:           scf.for %{{.*}} = %c0 to %c2 step %c1 iter_args(%{{.*}}) -> (vector<1x1x2x16xf32>)
// CHAIN2:             arith.mulf {{.*}} fastmath<contract> : vector<1x1x1x2x16xf32>
// CHAIN2:           vector.multi_reduction <add>, %{{.*}}, %{{.*}} [2, 3] : vector<1x1x2x16xf32> to vector<1x1xf32>
func.func @gemv_rows(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>)
    -> tensor<?x128xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %x, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%m) : tensor<?x128xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?x128xf32>) -> tensor<?x128xf32>
  %y = linalg.matmul indexing_maps = [#xk, #nk, #mn]
         ins(%x, %w : tensor<?x64xf32>, tensor<128x64xf32>)
         outs(%z : tensor<?x128xf32>) -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}
