// q8_0 / q4_0 weights (tlm.dequantize): the blocks read the int8 codes and
// the f32 scales in place and widen them in registers (GEMV, split-k), or
// once per panel while packing it; the f32 matrix tlm.dequantize stands for
// is never built (its lowering, tagged tlm.dequantize, is left unused).
// RUN: tlm-opt %s --split-input-file --tlm-lower-to-linalg --tlm-tile-matmuls="lanes=16" --canonicalize --cse | FileCheck %s
// RUN: tlm-opt %s --split-input-file --tlm-lower-to-linalg --tlm-tile-matmuls="lanes=8 pack-projections=false" --canonicalize --cse | FileCheck %s --check-prefix=SPLITK
// RUN: tlm-opt %s --split-input-file --tlm-lower-to-linalg --tlm-tile-matmuls="lanes=16 vectorize=false" --canonicalize --cse | FileCheck %s --check-prefix=SCALAR
// RUN: tlm-opt %s --split-input-file --tlm-lower-to-linalg --tlm-tile-matmuls="lanes=16 gemv-columns=1" --canonicalize --cse | FileCheck %s --check-prefix=STREAM --implicit-check-not=memref.prefetch
// RUN: tlm-opt %s --split-input-file --tlm-lower-to-linalg --tlm-tile-matmuls="lanes=16 gemv-columns=1 prefetch-codes=1 prefetch-distance=8192" --canonicalize --cse | FileCheck %s --check-prefix=PREFETCH
// RUN: tlm-opt %s --split-input-file --tlm-lower-to-linalg --tlm-tile-matmuls="lanes=16 gemv-columns=1 prefetch-codes=1 prefetch-distance=100" --canonicalize --cse | FileCheck %s --check-prefix=NEAR
// RUN: tlm-opt %s --split-input-file --tlm-lower-to-linalg --tlm-tile-matmuls="lanes=16 gemv-columns=1 lookup-nibbles=1" --canonicalize --cse | FileCheck %s --check-prefix=LOOKUP
// RUN: tlm-opt %s --split-input-file --tlm-lower-to-linalg --tlm-tile-matmuls="lanes=16 gemv-columns=8 lookup-nibbles=1" --canonicalize --cse | FileCheck %s --check-prefix=LOOKUP8
// The lookup blocks take one column whatever gemv-columns, and prefetch
// with prefetch-codes; q8_0's 8-column split-k blocks do not.
// RUN: tlm-opt %s --split-input-file --tlm-lower-to-linalg --tlm-tile-matmuls="lanes=16 gemv-columns=8 lookup-nibbles=1 prefetch-codes=1" --canonicalize --cse | FileCheck %s --check-prefix=LOOKUPPF
// LOOKUPPF-LABEL: func @q8_0
// LOOKUPPF-NOT:   memref.prefetch
// LOOKUPPF-LABEL: func @q4_0
// LOOKUPPF:       memref.prefetch
// LOOKUPPF:       tlm.lookup
// RUN: not tlm-opt %s --split-input-file --tlm-tile-matmuls="prefetch-distance=0" 2>&1 | FileCheck %s --check-prefix=BADPF
// BADPF: error: tlm-tile-matmuls: prefetch-distance must be >= 1, got 0
// Without prefetch-codes no block prefetches (--implicit-check-not).
// Nor do the split-k row tiles with it: only the one-row GEMV streams W.
// RUN: tlm-opt %s --split-input-file --tlm-lower-to-linalg --tlm-tile-matmuls="lanes=16 gemv-columns=1 pack-projections=false prefetch-codes=1" --canonicalize --cse | FileCheck %s --check-prefix=TILES
// TILES-LABEL: func @q8_0
// TILES:       scf.for %{{.*}} = %c0 to %c64 step %c{{[0-9]+}} iter_args(%{{.*}}) -> (tensor<8x64xf32>)
// TILES-NOT:   memref.prefetch
// TILES:       bufferization.to_buffer
// TILES-NEXT:  arith.addi %{{.*}}, %c32

// CHECK-LABEL: func @q8_0
// CHECK-NOT: tlm.dequantize
// The pack: 16 x 16 blocks of codes, widened, times each row's scale.
// CHECK: %[[CODES:.*]] = vector.transfer_read %arg1{{.*}} : tensor<64x256xi8>, vector<16x16xi8>
// CHECK: arith.sitofp %[[CODES]] : vector<16x16xi8> to vector<16x16xf32>
// CHECK: vector.transfer_read %arg2{{.*}} : tensor<64x8xf32>, vector<16xf32>
// The rows after the last full tile (all of decode's): GEMV blocks on the
// codes, 16 a step, the block's scale broadcast.
// CHECK: vector.transfer_read {{.*}} : tensor<{{.*}}xi8>, vector<{{.*}}x16xi8>
// CHECK: arith.sitofp {{.*}}xi8> to vector<{{.*}}x16xf32>
// CHECK-NOT: tlm.dequantize
// SPLITK-LABEL: func @q8_0
// SPLITK-NOT: tlm.dequantize
// SPLITK: vector.transfer_read {{.*}} : tensor<{{.*}}xi8>, vector<{{.*}}x8xi8>
// SPLITK: arith.sitofp {{.*}}xi8> to vector<{{.*}}x8xf32>
// SPLITK: arith.mulf {{.*}} fastmath<contract> : vector<{{.*}}x8xf32>
// SPLITK-NOT: tlm.dequantize
// Unvectorized, the fallback: the f32 matrix, then the f32 projection.
// SCALAR-LABEL: func @q8_0
// SCALAR: linalg.generic {{.*}} ins(%arg1, %arg2 : tensor<64x256xi8>, tensor<64x8xf32>) outs({{.*}} : tensor<64x256xf32>) attrs = {tlm.dequantize = 8 : i64}
// SCALAR: arith.sitofp {{.*}} : i8 to f32
// prefetch-codes: each one-column block of the GEMV first prefetches the
// codes of the row 8192 bytes ahead (32 rows of 256 bytes; the last row,
// 63, once that passes the end), a prefetch per 64-byte line, through a
// read-only to_buffer of the codes (which bufferization folds away). The
// pack (prefill) prefetches nothing.
// PREFETCH-LABEL: func @q8_0
// PREFETCH-NOT: memref.prefetch
// PREFETCH: scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args
// PREFETCH: %[[CODES:.*]] = bufferization.to_buffer %arg1 read_only : tensor<64x256xi8> to memref<64x256xi8, strided<[?, ?], offset: ?>>
// PREFETCH: %[[AHEAD:.*]] = arith.addi %{{.*}}, %c32 : index
// PREFETCH: %[[ROW:.*]] = arith.minui %[[AHEAD]], %c63 : index
// PREFETCH: memref.prefetch %[[CODES]][%[[ROW]], %c0], read, locality<3>, data
// PREFETCH: memref.prefetch %[[CODES]][%[[ROW]], %c64], read, locality<3>, data
// PREFETCH: memref.prefetch %[[CODES]][%[[ROW]], %c128], read, locality<3>, data
// PREFETCH: memref.prefetch %[[CODES]][%[[ROW]], %c192], read, locality<3>, data
// PREFETCH-NOT: memref.prefetch
// PREFETCH-LABEL: func @q4_0
// A distance shorter than a row is one row ahead.
// NEAR-LABEL: func @q8_0
// NEAR: bufferization.to_buffer
// NEAR-NEXT: %[[AHEAD:.*]] = arith.addi %{{.*}}, %c1 : index
// NEAR-NEXT: arith.minui %[[AHEAD]], %c63 : index
func.func @q8_0(%x: tensor<?x256xf32>, %q: tensor<64x256xi8>, %s: tensor<64x8xf32>) -> tensor<?x64xf32> {
  %w = tlm.dequantize %q, %s {bits = 8 : i64} : tensor<64x256xi8>, tensor<64x8xf32> -> tensor<64x256xf32>
  %y = tlm.linear %x, %w : tensor<?x256xf32>, tensor<64x256xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// CHECK-LABEL: func @q4_0
// CHECK-NOT: tlm.dequantize
// The pack reads 16 bytes of each row, their low or high nibbles.
// CHECK: vector.transfer_read %arg1{{.*}} : tensor<64x128xi8>, vector<16x16xi8>
// CHECK-DAG: arith.shrui {{.*}} : vector<16x16xi8>
// CHECK-DAG: arith.andi {{.*}} : vector<16x16xi8>
// CHECK: vector.transfer_read {{.*}} : tensor<{{.*}}xi8>, vector<{{.*}}x16xi8>
// CHECK-NOT: tlm.dequantize
// SPLITK-LABEL: func @q4_0
// SPLITK-NOT: tlm.dequantize
// Each byte's two nibbles multiply x's two halves of the block.
// SPLITK: vector.transfer_read {{.*}} : tensor<{{.*}}xi8>, vector<{{.*}}x8xi8>
// SPLITK-DAG: arith.andi {{.*}}x8xi8>
// SPLITK-DAG: arith.shrui {{.*}}x8xi8>
// SPLITK-NOT: tlm.dequantize
// One-column GEMV (gemv-columns=1): a step takes 4 consecutive blocks of
// a row, each its own accumulator (fma-chains 8, counting a block's two
// 16-lane products). x's offsets -8·(x_lo + x_hi), one per lane of each
// block's halves, are made once for the rows, before the panel loop; then
// each block is x_lo · lo + offset + x_hi · hi on the nibbles as they are
// (no subtraction of 8), and only that sum is multiplied by the block's
// scale.
// q4_0 rows are 128 bytes of codes: two prefetches, 64 rows ahead.
// PREFETCH: %[[Q4:.*]] = bufferization.to_buffer %arg1 read_only : tensor<64x128xi8>
// PREFETCH: %[[AHEAD4:.*]] = arith.addi %{{.*}}, %c64 : index
// PREFETCH: %[[ROW4:.*]] = arith.minui %[[AHEAD4]], %c63 : index
// PREFETCH: memref.prefetch %[[Q4]][%[[ROW4]], %c0]
// PREFETCH: memref.prefetch %[[Q4]][%[[ROW4]], %c64]
// PREFETCH-NOT: memref.prefetch
// lookup-nibbles: x is permuted once for the rows, outside the column
// loop: vector m of 16 lanes l of each 128-weight chunk c holds the weight
// whose nibble is at bit 4m of dword l of the chunk's 64 bytes of codes.
// Each one-column block then reads 64 bytes as 16 dwords, looks each
// nibble up in the centred values -8..7 (shifts by 4m, no mask), sums the
// products of m and m + 4 together, and applies the scales once per chunk
// (lane l's block is l / 4). The output started at zero is written, not
// read; no x offsets are made.
// LOOKUP-DAG: #[[LANES:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 * 128 + (d3 floordiv 4) * 32 + (d2 mod 2) * 16 + (d3 mod 4) * 4 + d2 floordiv 2)>
// LOOKUP-LABEL: func @q4_0
// LOOKUP-DAG: %[[SH4:.*]] = arith.constant dense<4> : vector<16xi32>
// LOOKUP-DAG: %[[SH28:.*]] = arith.constant dense<28> : vector<16xi32>
// LOOKUP-DAG: %[[TABLE:.*]] = arith.constant dense<[-8.000000e+00, -7.000000e+00, {{.*}}, 6.000000e+00, 7.000000e+00]> : vector<16xf32>
// LOOKUP: %[[XL:.*]] = linalg.generic {indexing_maps = [#[[LANES]], #{{.*}}]{{.*}} outs(%{{.*}} : tensor<?x2x8x16xf32>)
// LOOKUP: %[[X:.*]] = tensor.collapse_shape %[[XL]] {{\[\[}}0], [1, 2, 3]] : tensor<?x2x8x16xf32> into tensor<?x256xf32>
// LOOKUP: scf.for
// LOOKUP: %[[SUMS:.*]]:2 = scf.for %[[C:.*]] = %c0 to %c2 step %c1 iter_args(%[[A0:.*]] = %{{.*}}, %[[A1:.*]] = %{{.*}}) -> (vector<16xf32>, vector<16xf32>)
// LOOKUP:   %[[BYTES:.*]] = vector.transfer_read %arg1[%{{.*}}, %{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<64x128xi8>, vector<64xi8>
// LOOKUP:   %[[DW:.*]] = vector.bitcast %[[BYTES]] : vector<64xi8> to vector<16xi32>
// LOOKUP:   %[[XB:.*]] = arith.muli %[[C]], %c128
// Nibble m (shift 4m) multiplies x's vector m (offset 16m) of the chunk.
// LOOKUP:   %[[W0:.*]] = tlm.lookup %[[TABLE]][%[[DW]]] : vector<16xf32>, vector<16xi32>
// LOOKUP:   %[[X0:.*]] = vector.transfer_read %[[X]][%{{.*}}, %[[XB]]]
// LOOKUP:   arith.mulf %[[X0]], %[[W0]]
// LOOKUP:   %[[D1:.*]] = arith.shrui %[[DW]], %[[SH4]] : vector<16xi32>
// LOOKUP:   %[[W1:.*]] = tlm.lookup %[[TABLE]][%[[D1]]]
// LOOKUP:   %[[O1:.*]] = arith.addi %[[XB]], %c16
// LOOKUP:   %[[X1:.*]] = vector.transfer_read %[[X]][%{{.*}}, %[[O1]]]
// LOOKUP:   arith.mulf %[[X1]], %[[W1]]
// LOOKUP-COUNT-5: tlm.lookup %[[TABLE]]
// LOOKUP:   %[[D7:.*]] = arith.shrui %[[DW]], %[[SH28]] : vector<16xi32>
// LOOKUP:   %[[W7:.*]] = tlm.lookup %[[TABLE]][%[[D7]]]
// LOOKUP:   %[[O7:.*]] = arith.addi %[[XB]], %c112
// LOOKUP:   %[[X7:.*]] = vector.transfer_read %[[X]][%{{.*}}, %[[O7]]]
// LOOKUP:   math.fma %[[X7]], %[[W7]]
// LOOKUP:   %[[S4:.*]] = vector.transfer_read %arg2[%{{.*}}, %{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<64x8xf32>, vector<4xf32>
// LOOKUP:   %[[S:.*]] = vector.shuffle %[[S4]], %[[S4]] [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]
// LOOKUP:   math.fma %{{.*}}, %[[S]], %[[A0]] : vector<16xf32>
// LOOKUP:   math.fma %{{.*}}, %[[S]], %[[A1]] : vector<16xf32>
// LOOKUP: %[[T:.*]] = vector.reduction <add>, %{{.*}} : vector<16xf32> into f32
// LOOKUP-NEXT: tensor.insert %[[T]] into %{{.*}}[%c0, %c0] : tensor<1x1xf32>
// LOOKUP-NOT: tlm.lookup
// Lookup blocks take one column each even where the GEMV's blocks would
// take 8 (weights in cache: measured faster).
// LOOKUP8-LABEL: func @q4_0
// LOOKUP8: scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args
// LOOKUP8: tlm.lookup
// STREAM-LABEL: func @q4_0
// STREAM: arith.addf %{{.*}}, %{{.*}} : f32
// STREAM: arith.mulf %{{.*}}, %{{.*}} : f32
// STREAM: %[[OFFSETS:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2]] : tensor<?x8x16xf32> into tensor<?x128xf32>
// STREAM: scf.for
// STREAM: tensor.extract_slice %[[OFFSETS]]
// STREAM: scf.for %{{.*}} = %c0 to %c2 step %c1 iter_args(%{{.*}}) -> (vector<1x1x4x16xf32>)
// STREAM: arith.andi
// STREAM-NOT: arith.subi
// STREAM: %[[LOW:.*]] = arith.uitofp %{{.*}} : vector<1x1x1x4x16xi8> to vector<1x1x1x4x16xf32>
// STREAM: %[[LO:.*]] = arith.mulf %{{.*}}, %[[LOW]] fastmath<contract> : vector<1x1x1x4x16xf32>
// STREAM: %[[SHIFTED:.*]] = arith.addf %[[LO]], %{{.*}} fastmath<contract> : vector<1x1x1x4x16xf32>
// STREAM: arith.shrui
// STREAM-NOT: arith.subi
// STREAM: %[[HIGH:.*]] = arith.uitofp
// STREAM: %[[HI:.*]] = arith.mulf %{{.*}}, %[[HIGH]] fastmath<contract> : vector<1x1x1x4x16xf32>
// STREAM: %[[SUM:.*]] = arith.addf %[[SHIFTED]], %[[HI]] fastmath<contract> : vector<1x1x1x4x16xf32>
// STREAM: arith.mulf %[[SUM]], %{{.*}} fastmath<contract> : vector<1x1x1x4x16xf32>
// STREAM: vector.multi_reduction <add>, %{{.*}}, %{{.*}} [2, 3] : vector<1x1x4x16xf32> to vector<1x1xf32>
func.func @q4_0(%x: tensor<?x256xf32>, %q: tensor<64x128xi8>, %s: tensor<64x8xf32>) -> tensor<?x64xf32> {
  %w = tlm.dequantize %q, %s {bits = 4 : i64} : tensor<64x128xi8>, tensor<64x8xf32> -> tensor<64x256xf32>
  %y = tlm.linear %x, %w : tensor<?x256xf32>, tensor<64x256xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// k = 96 is not whole 128-weight chunks: no lookup, the split-k form.
// PREFETCH-LABEL: func @q4_0_k96
// LOOKUP-LABEL: func @q4_0_k96
// LOOKUP-NOT: tlm.lookup
// LOOKUP: arith.shrui {{.*}}xi8>
func.func @q4_0_k96(%x: tensor<?x96xf32>, %q: tensor<64x48xi8>, %s: tensor<64x3xf32>) -> tensor<?x64xf32> {
  %w = tlm.dequantize %q, %s {bits = 4 : i64} : tensor<64x48xi8>, tensor<64x3xf32> -> tensor<64x96xf32>
  %y = tlm.linear %x, %w : tensor<?x96xf32>, tensor<64x96xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// A projection that adds into its output (not a zero fill): the lookup
// block reads the output and adds its total.
// PREFETCH-LABEL: func @q4_0_accumulate
// LOOKUP-LABEL: func @q4_0_accumulate
// LOOKUP: tlm.lookup
// LOOKUP: %[[T:.*]] = vector.reduction <add>
// LOOKUP-NEXT: %[[OLD:.*]] = tensor.extract %{{.*}}[%c0, %c0] : tensor<1x1xf32>
// LOOKUP-NEXT: %[[NEW:.*]] = arith.addf %[[OLD]], %[[T]] : f32
// LOOKUP-NEXT: tensor.insert %[[NEW]]
func.func @q4_0_accumulate(%x: tensor<1x256xf32>, %q: tensor<64x128xi8>, %s: tensor<64x8xf32>, %y: tensor<1x64xf32>) -> tensor<1x64xf32> {
  %w = tlm.dequantize %q, %s {bits = 4 : i64} : tensor<64x128xi8>, tensor<64x8xf32> -> tensor<64x256xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<1x256xf32>, tensor<64x256xf32>) outs(%y : tensor<1x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %t = arith.addf %acc, %p : f32
    linalg.yield %t : f32
  } -> tensor<1x64xf32>
  return %r : tensor<1x64xf32>
}
