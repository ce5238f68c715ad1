// The split-k blocks (pack-projections=false):
// RUN: tlm-opt %s --split-input-file --tlm-tile-matmuls="pack-projections=false row-tile=6 col-tile=4 col-panel=0" --canonicalize --cse | FileCheck %s
// RUN: tlm-opt %s --split-input-file --tlm-tile-matmuls="pack-projections=false threads=2 row-tile=6" --canonicalize | FileCheck %s --check-prefix=THREADS
// RUN: tlm-opt %s --split-input-file --tlm-tile-matmuls=vectorize=false | FileCheck %s --check-prefix=NOVEC
// RUN: tlm-opt %s --split-input-file --tlm-tile-matmuls="pack-projections=false row-tile=4 col-tile=4 col-panel=64" --canonicalize --cse | FileCheck %s --check-prefix=PANEL
// RUN: tlm-opt %s --split-input-file --tlm-tile-matmuls=pack-projections=false --canonicalize --cse | FileCheck %s --check-prefix=DEFAULT
// RUN: tlm-opt %s --split-input-file --tlm-tile-matmuls="pack-projections=false x-tile-bytes=1024" --canonicalize --cse | FileCheck %s --check-prefix=XTILE
// The packed form (the default):
// RUN: tlm-opt %s --split-input-file --tlm-tile-matmuls --canonicalize --cse | FileCheck %s --check-prefix=PACK
// RUN: tlm-opt %s --split-input-file --tlm-tile-matmuls="threads=2 pack-rows=4" --canonicalize --cse | FileCheck %s --check-prefix=PACKTHR
// RUN: tlm-opt %s --split-input-file --tlm-tile-matmuls="lanes=4 pack-cols=8 pack-rows=6" --canonicalize --cse | FileCheck %s --check-prefix=PACK4

#xk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>

// A projection with dynamic rows: full 6-row tiles of 4-column split-k
// blocks (k = 64 viewed as 4 x 16 lanes, FMA chains on vector<6x4x16>),
// then the peeled remainder one row at a time in 8-column blocks.
// CHECK:       #[[FLOOR6:.*]] = affine_map<()[s0] -> ((s0 floordiv 6) * 6)>
// CHECK-LABEL: func.func @projection
// CHECK:         %[[ALIGNED:.*]] = affine.apply #[[FLOOR6]]()
// CHECK:         scf.for %{{.*}} = %c0 to %[[ALIGNED]] step %c6
// CHECK:           scf.for %{{.*}} = %c0 to %c128 step %c4
// CHECK:             tensor.expand_shape {{.*}} into tensor<6x4x16xf32>
// CHECK:             scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<6x4x16xf32>)
// CHECK:               arith.mulf {{.*}} fastmath<contract> : vector<6x4x1x16xf32>
// CHECK:               arith.addf {{.*}} fastmath<contract> : vector<6x4x16xf32>
// CHECK:             vector.multi_reduction <add>, {{.*}} [2] : vector<6x4x16xf32> to vector<6x4xf32>
// CHECK:         scf.for %{{.*}} = %[[ALIGNED]] to %{{.*}} step %c6
// CHECK:           scf.for
// CHECK:             scf.for %{{.*}} = %c0 to %c128 step %c8
// CHECK:               -> (vector<1x8x16xf32>)
// CHECK:             vector.multi_reduction <add>, {{.*}} [2] : vector<1x8x16xf32> to vector<1x8xf32>
// NOVEC-LABEL: func.func @projection
// NOVEC-NOT:     vector.
// NOVEC:         linalg.matmul
// With 4 x 4 blocks and 64-column panels, the panel loop is outermost and
// the peeled row loops run inside each panel.
// PANEL-LABEL: func.func @projection
// PANEL:         scf.for %{{.*}} = %c0 to %c128 step %c64
// PANEL:           scf.for %{{.*}} step %c4
// PANEL:             scf.for %{{.*}} = %c0 to %c64 step %c4
// PANEL:               -> (vector<4x4x16xf32>)
// The defaults: 8 x 2 blocks (8 rows share each w load), 128-column panels
// (here all of n, so no panel loop), the one-row remainder in 1 x 8 blocks.
// DEFAULT-LABEL: func.func @projection
// DEFAULT-NOT:     step %c128
// DEFAULT:         scf.for %{{.*}} step %c8
// DEFAULT:           scf.for %{{.*}} = %c0 to %c128 step %c2
// DEFAULT:             -> (vector<8x2x16xf32>)
// DEFAULT:         vector.multi_reduction <add>, {{.*}} [2] : vector<8x2x16xf32> to vector<8x2xf32>
// DEFAULT:         scf.for %{{.*}} step %c8
// DEFAULT:           -> (vector<1x8x16xf32>)
// When 8 rows of x (8 x 64 floats, 2 KiB) exceed x-tile-bytes, the block
// becomes 4 x 4: half the rows, twice the columns, as many accumulators.
// XTILE-LABEL: func.func @projection
// XTILE:         scf.for %{{.*}} step %c4
// XTILE:           scf.for %{{.*}} = %c0 to %c128 step %c4
// XTILE:             -> (vector<4x4x16xf32>)
// THREADS-LABEL: func.func @projection
// THREADS:         scf.forall (%{{.*}}) = (0) to (128) step (64)
// Packed: for each 32-column panel of W, when there is a full 8-row tile,
// the panel is transposed (16 x 16 blocks) into a 64 x 32 buffer carried
// across panels; each 8-row tile then keeps 8 x 2 accumulator vectors over
// k, broadcasting one x value per row against the buffer's two vectors per
// k. The remaining rows run the split-k GEMV blocks against W itself.
// PACK-LABEL: func.func @projection
// PACK:         %[[FULL:.*]] = arith.muli %{{.*}}, %c8 : index
// PACK:         %[[HAS:.*]] = arith.cmpi sgt, %[[FULL]], %c0 : index
// PACK:         %[[BUF:.*]] = tensor.empty() : tensor<64x32xf32>
// PACK:         scf.for %[[COL:.*]] = %c0 to %c128 step %c32 iter_args(%{{.*}} = %{{.*}}, %[[B:.*]] = %[[BUF]])
// PACK:           scf.if %[[HAS]] -> (tensor<?x128xf32>, tensor<64x32xf32>)
// PACK:             scf.for %[[C:.*]] = %c0 to %c32 step %c16 iter_args(%{{.*}} = %[[B]])
// PACK:               %[[ROW:.*]] = arith.addi %[[COL]], %[[C]] : index
// PACK:               scf.for %[[KB:.*]] = %c0 to %c64 step %c16
// PACK:                 vector.transfer_read %{{.*}}[%[[ROW]], %[[KB]]]{{.*}} : tensor<128x64xf32>, vector<16x16xf32>
// PACK:                 vector.transpose %{{.*}}, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
// PACK:                 vector.transfer_write %{{.*}}[%[[KB]], %[[C]]] {{.*}} : vector<16x16xf32>, tensor<64x32xf32>
// PACK:             scf.for %{{.*}} = %c0 to %[[FULL]] step %c8
// PACK-COUNT-16:      vector.transfer_read %{{.*}} : tensor<?x128xf32>, vector<16xf32>
// PACK:               scf.for %[[K:.*]] = %c0 to %c64 step %c1 iter_args({{.*}}) -> (vector<16xf32>, {{.*}})
// PACK-COUNT-2:         vector.transfer_read %{{.*}}[%[[K]], %{{.*}}]{{.*}} : tensor<64x32xf32>, vector<16xf32>
// PACK:                 %[[X:.*]] = tensor.extract %{{.*}}[%{{.*}}, %[[K]]] : tensor<?x64xf32>
// PACK:                 %[[XV:.*]] = vector.broadcast %[[X]] : f32 to vector<16xf32>
// PACK:                 vector.fma %[[XV]], %{{.*}}, %{{.*}} : vector<16xf32>
// PACK:                 vector.fma %[[XV]], %{{.*}}, %{{.*}} : vector<16xf32>
// PACK-COUNT-16:      vector.transfer_write %{{.*}} : vector<16xf32>, tensor<?x128xf32>
// PACK:           } else {
// PACK:           scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// PACK:             scf.for %{{.*}} = %c0 to %c32 step %c8
// PACK:               -> (vector<1x8x16xf32>)
// With threads, each thread's chunk of columns is made of whole panels.
// PACKTHR-LABEL: func.func @projection
// PACKTHR:         scf.forall (%{{.*}}) = (0) to (128) step (64)
// PACKTHR:           tensor.empty() : tensor<64x32xf32>
// PACKTHR:           scf.for %{{.*}} = %c0 to %c64 step %c32
// PACKTHR:               scf.for %{{.*}} step %c4
// PACKTHR-COUNT-8:         vector.fma
func.func @projection(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>,
                      %acc: tensor<?x128xf32>) -> tensor<?x128xf32> {
  %y = linalg.matmul indexing_maps = [#xk, #nk, #mn]
         ins(%x, %w : tensor<?x64xf32>, tensor<128x64xf32>)
         outs(%acc : tensor<?x128xf32>) -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}

// -----

#xk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>

// 160 columns are 5 panels: on two threads 80 + 80 would cut a panel and
// 96 + 64 leaves a ragged chunk (formerly scalar, not packed); five chunks
// of one panel keep every block packed (3 + 2 panels per thread).
// PACKTHR-LABEL: func.func @odd_panels
// PACKTHR:         scf.forall (%{{.*}}) = (0) to (160) step (32)
// PACKTHR-COUNT-8:   vector.fma
func.func @odd_panels(%x: tensor<?x64xf32>, %w: tensor<160x64xf32>,
                      %acc: tensor<?x160xf32>) -> tensor<?x160xf32> {
  %y = linalg.matmul indexing_maps = [#xk, #nk, #mn]
         ins(%x, %w : tensor<?x64xf32>, tensor<160x64xf32>)
         outs(%acc : tensor<?x160xf32>) -> tensor<?x160xf32>
  return %y : tensor<?x160xf32>
}

// -----

#xk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>

// k = 24 does not split into 16 lanes: the blocks are vectorized as they
// are (a reduction over k per block), still without masks. Nor does it
// pack (n = 8 is not a whole panel either): split-k blocks.
// PACK-LABEL: func.func @ragged_k
// PACK-NOT:     vector.transpose
// PACK:         vector.multi_reduction
// CHECK-LABEL: func.func @ragged_k
// CHECK-NOT:     tensor.expand_shape
// CHECK:         vector.multi_reduction <add>, {{.*}} [2] : vector<6x4x24xf32> to vector<6x4xf32>
func.func @ragged_k(%x: tensor<?x24xf32>, %w: tensor<8x24xf32>,
                    %acc: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %y = linalg.matmul indexing_maps = [#xk, #nk, #mn]
         ins(%x, %w : tensor<?x24xf32>, tensor<8x24xf32>)
         outs(%acc : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// Not a projection: W is (k, n) here, not tlm.linear's (n, k) layout; a
// dynamic k; a non-f32 element type. All stay untouched.
// CHECK-LABEL: func.func @not_projections
// CHECK-NOT:     scf.for
// CHECK-COUNT-3: linalg.matmul
// CHECK-NOT:     scf.for
func.func @not_projections(%x: tensor<?x64xf32>, %wkn: tensor<64x128xf32>,
                           %acc: tensor<?x128xf32>, %xd: tensor<?x?xf32>,
                           %wd: tensor<128x?xf32>, %xh: tensor<?x64xf16>,
                           %wh: tensor<128x64xf16>, %acch: tensor<?x128xf16>)
    -> (tensor<?x128xf32>, tensor<?x128xf32>, tensor<?x128xf16>) {
  %a = linalg.matmul ins(%x, %wkn : tensor<?x64xf32>, tensor<64x128xf32>)
         outs(%acc : tensor<?x128xf32>) -> tensor<?x128xf32>
  %b = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
         ins(%xd, %wd : tensor<?x?xf32>, tensor<128x?xf32>)
         outs(%acc : tensor<?x128xf32>) -> tensor<?x128xf32>
  %c = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
         ins(%xh, %wh : tensor<?x64xf16>, tensor<128x64xf16>)
         outs(%acch : tensor<?x128xf16>) -> tensor<?x128xf16>
  return %a, %b, %c : tensor<?x128xf32>, tensor<?x128xf32>, tensor<?x128xf16>
}

// -----

// The batched form tlm.linear lowers to (rows = batch, sequence): batch
// rows one at a time, sequence rows in tiles of 6.
// CHECK-LABEL: func.func @batched
// CHECK:         scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// CHECK:           scf.for %{{.*}} step %c6
// CHECK:             -> (vector<1x6x4x16xf32>)
func.func @batched(%x: tensor<?x?x32xf32>, %w: tensor<16x32xf32>,
                   %acc: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
  %y = linalg.generic {
      indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>,
                       affine_map<(b, s, n, k) -> (n, k)>,
                       affine_map<(b, s, n, k) -> (b, s, n)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x?x32xf32>, tensor<16x32xf32>)
      outs(%acc : tensor<?x?x16xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %c, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

#xk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>

// An output that starts at zero (linalg.fill 0 of tensor.empty) is never
// filled nor read: each block sums into zeros and writes its outputs. An
// output given by the caller (@projection above) is read and added to.
// CHECK-LABEL: func.func @from_zero
// CHECK-NOT:     linalg.fill
// CHECK:         %[[OUT:.*]] = tensor.empty(%{{.*}}) : tensor<?x128xf32>
// CHECK-NOT:     vector.transfer_read %{{.*}} : tensor<6x128xf32>, vector<6x4xf32>
// CHECK:         vector.multi_reduction <add>, %{{.*}}, %cst{{.*}} [2] : vector<6x4x16xf32> to vector<6x4xf32>
// CHECK:         vector.multi_reduction <add>, %{{.*}}, %cst{{.*}} [2] : vector<1x8x16xf32> to vector<1x8xf32>
// Packed, the tiles' accumulators start at zero and the output is only
// written.
// PACK-LABEL: func.func @from_zero
// PACK-NOT:     linalg.fill
// PACK:         %[[Z:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// PACK:         tensor.empty(%{{.*}}) : tensor<?x128xf32>
// PACK-NOT:     vector.transfer_read %{{.*}} : tensor<?x128xf32>, vector<16xf32>
// PACK:         scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}} = %[[Z]], %{{.*}} = %[[Z]],
// PACK-COUNT-16: vector.transfer_write %{{.*}} : vector<16xf32>, tensor<?x128xf32>
func.func @from_zero(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>)
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

// -----

// W as tlm-fuse-projections leaves it: the concatenation of Q's, K's and V's
// weights. Packed, each panel reads the part that holds it (a select on the
// panel's first row) and the concatenation is never built; on two threads
// the chunk offset joins the panel's row. Without packing, the projection
// is split back into one per part, each with its own output.
// PACK-LABEL: func.func @fused
// PACK-SAME:    (%{{.*}}: tensor<?x64xf32>, %[[WQ:.*]]: tensor<64x64xf32>, %[[WK:.*]]: tensor<32x64xf32>, %[[WV:.*]]: tensor<32x64xf32>)
// PACK-NOT:     tensor.concat
// PACK:         scf.for %[[COL:.*]] = %c0 to %c128 step %c32
// PACK-DAG:       %[[Q:.*]] = tensor.cast %[[WQ]] : tensor<64x64xf32> to tensor<?x64xf32>
// PACK-DAG:       %[[K:.*]] = tensor.cast %[[WK]] : tensor<32x64xf32> to tensor<?x64xf32>
// PACK-DAG:       %[[V:.*]] = tensor.cast %[[WV]] : tensor<32x64xf32> to tensor<?x64xf32>
// PACK-DAG:       %[[INK:.*]] = arith.cmpi uge, %[[COL]], %c64 : index
// PACK-DAG:       %[[QK:.*]] = arith.select %[[INK]], %[[K]], %[[Q]] : tensor<?x64xf32>
// PACK-DAG:       %[[INV:.*]] = arith.cmpi uge, %[[COL]], %c96 : index
// PACK:           %[[W:.*]] = arith.select %[[INV]], %[[V]], %[[QK]] : tensor<?x64xf32>
// PACK:           %[[START:.*]] = arith.select %[[INV]], %c96, %{{.*}} : index
// PACK:           %[[ROW0:.*]] = arith.subi %[[COL]], %[[START]] : index
// PACK:           scf.if
// PACK:               %[[ROW:.*]] = arith.addi %[[ROW0]], %{{.*}} : index
// PACK:                 vector.transfer_read %[[W]][%[[ROW]], %{{.*}}]{{.*}} : tensor<?x64xf32>, vector<16x16xf32>
// PACK:           tensor.extract_slice %[[W]][%[[ROW0]], 0] [32, 64] [1, 1] : tensor<?x64xf32> to tensor<32x64xf32>

// PACKTHR-LABEL: func.func @fused
// PACKTHR-NOT:     tensor.concat
// PACKTHR:         scf.forall (%[[CHUNK:.*]]) = (0) to (128) step (64)
// PACKTHR:           scf.for %[[COL:.*]] = %c0 to %c64 step %c32
// PACKTHR:             %[[ROW:.*]] = arith.addi %[[COL]], %[[CHUNK]] : index
// PACKTHR:             arith.cmpi uge, %[[ROW]], %c64 : index

// CHECK-LABEL: func.func @fused
// CHECK-NOT:     tensor.concat
// Each part computes in its slice of the output (in place once bufferized).
// CHECK:         %[[ALL:.*]] = tensor.empty(%{{.*}}) : tensor<?x128xf32>
// CHECK:         %[[QS:.*]] = tensor.extract_slice %[[ALL]][0, 0] [%{{.*}}, 64] [1, 1]
// CHECK:         linalg.fill {{.*}} outs(%[[QS]] : tensor<?x64xf32>)
// CHECK:         %[[QI:.*]] = tensor.insert_slice %{{.*}} into %[[ALL]][0, 0] [%{{.*}}, 64] [1, 1]
// CHECK:         %[[KS:.*]] = tensor.extract_slice %[[QI]][0, 64] [%{{.*}}, 32] [1, 1]
// CHECK:         linalg.fill {{.*}} outs(%[[KS]] : tensor<?x32xf32>)
// CHECK:         %[[KI:.*]] = tensor.insert_slice %{{.*}} into %[[QI]][0, 64] [%{{.*}}, 32] [1, 1]
// CHECK:         %[[VI:.*]] = tensor.insert_slice %{{.*}} into %[[KI]][0, 96] [%{{.*}}, 32] [1, 1]
// CHECK:         return %[[VI]]
#x = affine_map<(m, n, k) -> (m, k)>
#w = affine_map<(m, n, k) -> (n, k)>
#o = affine_map<(m, n, k) -> (m, n)>
func.func @fused(%x: tensor<?x64xf32>, %wq: tensor<64x64xf32>,
                 %wk: tensor<32x64xf32>, %wv: tensor<32x64xf32>)
    -> tensor<?x128xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %x, %c0 : tensor<?x64xf32>
  %w = tensor.concat dim(0) %wq, %wk, %wv
      : (tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<128x64xf32>
  %e = tensor.empty(%m) : tensor<?x128xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?x128xf32>) -> tensor<?x128xf32>
  %y = linalg.generic {indexing_maps = [#x, #w, #o],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x64xf32>, tensor<128x64xf32>)
      outs(%z : tensor<?x128xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}

// -----

// x is an RMSNorm's scaling (x0 / rms · g) that only the projection reads:
// packed, the norm is folded. The rows after the full tiles are normalized
// once, before the panels; each panel is packed times the gain; each full
// tile reads x0 itself and divides its sums by its rows' rms. Without
// packing (CHECK) the norm stays as it is.
// PACK-LABEL: func.func @norm_fold
// PACK-SAME:    (%[[X0:.*]]: tensor<?x64xf32>, %[[RMS:.*]]: tensor<?xf32>, %[[G:.*]]: tensor<64xf32>, %{{.*}}: tensor<64x64xf32>)
// PACK:         %[[XREST:.*]] = tensor.extract_slice %[[X0]]
// PACK:         %[[RREST:.*]] = tensor.extract_slice %[[RMS]]
// PACK:         %[[YREST:.*]] = linalg.generic {{.*}} ins(%[[XREST]], %[[RREST]], %[[G]] : tensor<?x64xf32>, tensor<?xf32>, tensor<64xf32>)
// PACK:           arith.divf
// PACK:           arith.mulf
// PACK:         scf.for %{{.*}} = %c0 to %c64 step %c32
// PACK:           scf.if
// PACK:                 %[[BLK:.*]] = vector.transfer_read {{.*}} : tensor<64x64xf32>, vector<16x16xf32>
// PACK:                 %[[GV:.*]] = vector.transfer_read %[[G]]{{.*}} : tensor<64xf32>, vector<16xf32>
// PACK:                 %[[GB:.*]] = vector.broadcast %[[GV]] : vector<16xf32> to vector<16x16xf32>
// PACK:                 %[[SCALED:.*]] = arith.mulf %[[BLK]], %[[GB]] : vector<16x16xf32>
// PACK:                 vector.transpose %[[SCALED]], [1, 0]
// PACK:               tensor.extract %[[X0]]
// PACK:             %[[R:.*]] = tensor.extract %[[RMS]]
// PACK:             %[[INV:.*]] = arith.divf %{{.*}}, %[[R]] : f32
// PACK:             %[[RV:.*]] = vector.broadcast %[[INV]] : f32 to vector<16xf32>
// PACK:             arith.mulf %{{.*}}, %[[RV]] : vector<16xf32>
// PACK:           tensor.extract_slice %[[YREST]][%{{.*}}, 0] [1, 64]
// CHECK-LABEL: func.func @norm_fold
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK:           arith.divf %{{.*}}, %{{.*}} : f32
#id = affine_map<(r, k) -> (r, k)>
#row = affine_map<(r, k) -> (r)>
#col = affine_map<(r, k) -> (k)>
#x = affine_map<(m, n, k) -> (m, k)>
#w = affine_map<(m, n, k) -> (n, k)>
#o = affine_map<(m, n, k) -> (m, n)>
func.func @norm_fold(%x0: tensor<?x64xf32>, %rms: tensor<?xf32>,
                     %g: tensor<64xf32>, %w: tensor<64x64xf32>)
    -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %x0, %c0 : tensor<?x64xf32>
  %ey = tensor.empty(%m) : tensor<?x64xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x0, %rms, %g : tensor<?x64xf32>, tensor<?xf32>, tensor<64xf32>)
      outs(%ey : tensor<?x64xf32>) {
  ^bb0(%a: f32, %r: f32, %s: f32, %out: f32):
    %n = arith.divf %a, %r : f32
    %v = arith.mulf %n, %s : f32
    linalg.yield %v : f32
  } -> tensor<?x64xf32>
  %e = tensor.empty(%m) : tensor<?x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  %p = linalg.generic {indexing_maps = [#x, #w, #o],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%y, %w : tensor<?x64xf32>, tensor<64x64xf32>)
      outs(%z : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %q = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %q : f32
    linalg.yield %r : f32
  } -> tensor<?x64xf32>
  return %p : tensor<?x64xf32>
}

// -----

// Must not fold: the normalized x is also returned, so it is computed
// anyway and the projection reads it as it is.
// PACK-LABEL: func.func @norm_read_twice
// PACK:         %[[Y:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// PACK-NOT:     vector<16xf32> to vector<16x16xf32>
// PACK:         tensor.extract %[[Y]]
// PACK-NOT:     arith.divf
// PACK-NOT:     arith.mulf {{.*}} : vector<16xf32>
// PACK:         return
#id = affine_map<(r, k) -> (r, k)>
#row = affine_map<(r, k) -> (r)>
#col = affine_map<(r, k) -> (k)>
#x = affine_map<(m, n, k) -> (m, k)>
#w = affine_map<(m, n, k) -> (n, k)>
#o = affine_map<(m, n, k) -> (m, n)>
func.func @norm_read_twice(%x0: tensor<?x64xf32>, %rms: tensor<?xf32>,
                           %g: tensor<64xf32>, %w: tensor<64x64xf32>)
    -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %x0, %c0 : tensor<?x64xf32>
  %ey = tensor.empty(%m) : tensor<?x64xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x0, %rms, %g : tensor<?x64xf32>, tensor<?xf32>, tensor<64xf32>)
      outs(%ey : tensor<?x64xf32>) {
  ^bb0(%a: f32, %r: f32, %s: f32, %out: f32):
    %n = arith.divf %a, %r : f32
    %v = arith.mulf %n, %s : f32
    linalg.yield %v : f32
  } -> tensor<?x64xf32>
  %e = tensor.empty(%m) : tensor<?x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  %p = linalg.generic {indexing_maps = [#x, #w, #o],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%y, %w : tensor<?x64xf32>, tensor<64x64xf32>)
      outs(%z : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %q = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %q : f32
    linalg.yield %r : f32
  } -> tensor<?x64xf32>
  return %p, %y : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// W1/W3 as tlm-fuse-projections leaves them (one projection over their
// concatenation, from zero) with SwiGLU's silu(a)·b the only reader of the
// two halves: one loop nest producing silu(a)·b. Each panel packs 16 rows
// of W1 then the same 16 rows of W3 (a select on the panel's column
// block); each tile's two sum vectors per row go through the payload as
// vector ops and one vector per row is stored in the 64-column result.
// The rows after the last full tile: two GEMV projections per panel, then
// the payload row by row. No 128-column output, no slices, no generic.
// PACK-LABEL: func.func @swiglu
// PACK-SAME:    (%{{.*}}: tensor<?x64xf32>, %[[W1:.*]]: tensor<64x64xf32>, %[[W3:.*]]: tensor<64x64xf32>)
// PACK-NOT:     tensor.concat
// PACK-NOT:     tensor<?x128xf32>
// PACK:         %[[Y:.*]] = tensor.empty(%{{.*}}) : tensor<?x64xf32>
// PACK:         scf.if
// PACK:           scf.for %[[COL:.*]] = %c0 to %c64 step %c16
// PACK:             scf.for %[[C:.*]] = %c0 to %c32 step %c16
// PACK:               %[[FIRST:.*]] = arith.cmpi eq, %[[C]], %c0 : index
// PACK:               %[[W:.*]] = arith.select %[[FIRST]], %[[W1]], %[[W3]] : tensor<64x64xf32>
// PACK:                 vector.transfer_read %[[W]][%[[COL]], %{{.*}}]{{.*}} : tensor<64x64xf32>, vector<16x16xf32>
// PACK:             scf.for %{{.*}} = %c0 to %{{.*}} step %c8
// PACK:               scf.for {{.*}} -> (vector<16xf32>, {{.*}})
// PACK-COUNT-16:        vector.fma
// PACK:               %[[NEG:.*]] = arith.negf %{{.*}} : vector<16xf32>
// PACK:               %[[E:.*]] = math.exp %[[NEG]] : vector<16xf32>
// PACK:               %[[D:.*]] = arith.addf %[[E]], %{{.*}} : vector<16xf32>
// PACK:               %[[S:.*]] = arith.divf %{{.*}}, %[[D]] : vector<16xf32>
// PACK:               %[[G:.*]] = arith.mulf %[[S]], %{{.*}} : vector<16xf32>
// PACK:               vector.transfer_write %[[G]], %{{.*}}[%{{.*}}, %[[COL]]] {{.*}} : vector<16xf32>, tensor<?x64xf32>
// PACK-COUNT-7:       arith.mulf {{.*}} : vector<16xf32>
// PACK:         scf.for %[[COL2:.*]] = %c0 to %c64 step %c16
// PACK:           tensor.extract_slice %[[W1]][%[[COL2]], 0] [16, 64] [1, 1]
// PACK:           -> (vector<1x8x16xf32>)
// PACK:           tensor.extract_slice %[[W3]][%[[COL2]], 0] [16, 64] [1, 1]
// PACK:           -> (vector<1x8x16xf32>)
// PACK:           scf.for
// PACK:             math.exp {{.*}} : vector<16xf32>
// PACK:             vector.transfer_write {{.*}}[%{{.*}}, %[[COL2]]] {{.*}} : vector<16xf32>, tensor<?x64xf32>
// PACK-NOT:     linalg.generic
// With threads, each thread owns 32 of the 64 result columns (two half
// panels of each part).
// PACKTHR-LABEL: func.func @swiglu
// PACKTHR:         scf.forall (%[[BASE:.*]]) = (0) to (64) step (32)
// PACKTHR:           scf.for %[[COL:.*]] = %c0 to %c32 step %c16
// PACKTHR:             arith.addi %[[BASE]], %[[COL]] : index
// With 4 lanes a half panel is 4 columns, and so is each rest block: split
// k like the others (a block wider than the half would stay scalar and add
// to sums nothing initialized); its 4 accumulators take 2 k steps apart
// (8 FMA chains, fma-chains).
// PACK4-LABEL: func.func @swiglu
// PACK4:         scf.for {{.*}} -> (vector<4xf32>, {{.*}})
// PACK4-COUNT-12:  vector.fma
// PACK4:         scf.for %[[COL:.*]] = %c0 to %c64 step %c4
// PACK4:           tensor.extract_slice %{{.*}}[%[[COL]], 0] [4, 64] [1, 1]
// PACK4:             -> (vector<1x4x2x4xf32>)
// PACK4:           tensor.extract_slice %{{.*}}[%[[COL]], 0] [4, 64] [1, 1]
// PACK4:             -> (vector<1x4x2x4xf32>)
// PACK4-NOT:     linalg.generic
// Without packing the projection is split back per part and the generic
// stays.
// CHECK-LABEL: func.func @swiglu
// CHECK:         linalg.generic
// CHECK:           math.exp
#x = affine_map<(m, n, k) -> (m, k)>
#w = affine_map<(m, n, k) -> (n, k)>
#o = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
func.func @swiglu(%x: tensor<?x64xf32>, %w1: tensor<64x64xf32>,
                  %w3: tensor<64x64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %m = tensor.dim %x, %c0 : tensor<?x64xf32>
  %w = tensor.concat dim(0) %w1, %w3
         : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<128x64xf32>
  %e = tensor.empty(%m) : tensor<?x128xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?x128xf32>) -> tensor<?x128xf32>
  %p = linalg.generic {indexing_maps = [#x, #w, #o],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x64xf32>, tensor<128x64xf32>)
      outs(%z : tensor<?x128xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %mul = arith.mulf %a, %b fastmath<contract> : f32
    %sum = arith.addf %acc, %mul fastmath<contract> : f32
    linalg.yield %sum : f32
  } -> tensor<?x128xf32>
  %h1 = tensor.extract_slice %p[0, 0] [%m, 64] [1, 1] : tensor<?x128xf32> to tensor<?x64xf32>
  %h3 = tensor.extract_slice %p[0, 64] [%m, 64] [1, 1] : tensor<?x128xf32> to tensor<?x64xf32>
  %ye = tensor.empty(%m) : tensor<?x64xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h1, %h3 : tensor<?x64xf32>, tensor<?x64xf32>)
      outs(%ye : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %n = arith.negf %a : f32
    %ex = math.exp %n : f32
    %d = arith.addf %ex, %one : f32
    %s = arith.divf %a, %d : f32
    %r = arith.mulf %s, %b : f32
    linalg.yield %r : f32
  } -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// The halves read by something else too (here the first half is also
// returned): the projection stays one over the concatenation, written, and
// the generic stays.
// PACK-LABEL: func.func @swiglu_half_escapes
// PACK4-LABEL: func.func @swiglu_half_escapes
// PACK:         linalg.generic
// PACK:           math.exp
#x = affine_map<(m, n, k) -> (m, k)>
#w = affine_map<(m, n, k) -> (n, k)>
#o = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
func.func @swiglu_half_escapes(%x: tensor<?x64xf32>, %w1: tensor<64x64xf32>,
                               %w3: tensor<64x64xf32>)
    -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %m = tensor.dim %x, %c0 : tensor<?x64xf32>
  %w = tensor.concat dim(0) %w1, %w3
         : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<128x64xf32>
  %e = tensor.empty(%m) : tensor<?x128xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?x128xf32>) -> tensor<?x128xf32>
  %p = linalg.generic {indexing_maps = [#x, #w, #o],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x64xf32>, tensor<128x64xf32>)
      outs(%z : tensor<?x128xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %mul = arith.mulf %a, %b fastmath<contract> : f32
    %sum = arith.addf %acc, %mul fastmath<contract> : f32
    linalg.yield %sum : f32
  } -> tensor<?x128xf32>
  %h1 = tensor.extract_slice %p[0, 0] [%m, 64] [1, 1] : tensor<?x128xf32> to tensor<?x64xf32>
  %h3 = tensor.extract_slice %p[0, 64] [%m, 64] [1, 1] : tensor<?x128xf32> to tensor<?x64xf32>
  %ye = tensor.empty(%m) : tensor<?x64xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h1, %h3 : tensor<?x64xf32>, tensor<?x64xf32>)
      outs(%ye : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %n = arith.negf %a : f32
    %ex = math.exp %n : f32
    %d = arith.addf %ex, %one : f32
    %s = arith.divf %a, %d : f32
    %r = arith.mulf %s, %b : f32
    linalg.yield %r : f32
  } -> tensor<?x64xf32>
  return %y, %h1 : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

#xk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>

// 40 columns are not whole 32-column panels: W's rows split into the first
// 32 (packed) and the last 8 (one GEMV block), each writing its columns of
// the output; formerly every block of the op stayed scalar.
// PACK-LABEL: func.func @ragged_columns
// PACK-DAG:     tensor.extract_slice %{{.*}}[0, 0] [32, 64] [1, 1] : tensor<40x64xf32> to tensor<32x64xf32>
// PACK-DAG:     tensor.extract_slice %{{.*}}[32, 0] [8, 64] [1, 1] : tensor<40x64xf32> to tensor<8x64xf32>
// PACK:         vector.transpose
// PACK:         vector.fma
// PACK:         tensor.insert_slice %{{.*}}[0, 32] [%{{.*}}, 8] [1, 1]
func.func @ragged_columns(%x: tensor<?x64xf32>, %w: tensor<40x64xf32>,
                          %acc: tensor<?x40xf32>) -> tensor<?x40xf32> {
  %y = linalg.matmul indexing_maps = [#xk, #nk, #mn]
         ins(%x, %w : tensor<?x64xf32>, tensor<40x64xf32>)
         outs(%acc : tensor<?x40xf32>) -> tensor<?x40xf32>
  return %y : tensor<?x40xf32>
}
