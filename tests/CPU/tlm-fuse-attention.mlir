// RUN: tlm-opt %s --split-input-file --tlm-fuse-attention --canonicalize --cse | FileCheck %s
// RUN: tlm-opt %s --split-input-file --tlm-fuse-attention=lanes=8 --canonicalize --cse | FileCheck %s --check-prefix=LANES8
// RUN: tlm-opt %s --split-input-file --tlm-fuse-attention=threads=2 --canonicalize --cse | FileCheck %s --check-prefix=CHUNKS
// RUN: not tlm-opt %s --tlm-fuse-attention=lanes=0 2>&1 | FileCheck %s --check-prefix=NOLANES
// RUN: not tlm-opt %s --tlm-fuse-attention=threads=0 2>&1 | FileCheck %s --check-prefix=NOTHREADS
// NOTHREADS: error: tlm-fuse-attention: threads must be >= 1, got 0
// NOLANES: error: tlm-fuse-attention: lanes must be >= 1, got 0

// f32 cached attention as fused loop nests (the CPU pipeline runs this pass
// before tlm-lower-to-linalg).
// Whole blocks of 16 queries per (batch, head) pair,
// an scf.forall iteration owning its slice of the output (below); then the
// remaining queries one at a time, key-major over the heads (further
// below). GQA reads kv head h / 2; no scores tensor of the sequence, no
// concat.
// CHECK-LABEL: func @cached_attention
// CHECK-NOT:     tensor.concat
// The new keys and values position-major (S, B, kv heads, dk), as the cache.
// CHECK:         %[[KROWS:.*]] = linalg.transpose {{.*}} permutation = [1, 0, 2, 3]
// CHECK:         %[[VROWS:.*]] = linalg.transpose {{.*}} permutation = [1, 0, 2, 3]
// CHECK:         %[[FULL:.*]] = arith.muli %{{.*}}, %c16 : index
// With no whole block (every decode step) the forall is skipped: its empty
// iterations would still fork and join the threads.
// CHECK:         %[[ANY:.*]] = arith.cmpi ne, %[[FULL]], %c0 : index
// CHECK:         %[[BLOCKED:.*]] = scf.if %[[ANY]]
// CHECK:           %[[FORALL:.*]] = scf.forall (%[[B:.*]], %[[H:.*]]) in (%{{.*}}, 4) shared_outs(%[[OUT:.*]] = %[[INIT:[^)]*]])
// CHECK:           %[[KVH:.*]] = arith.divui %[[H]], %c2
// CHECK:           %[[ROWS:.*]] = tensor.extract_slice %[[OUT]][%[[B]], 0, %[[H]], 0] [1, %[[FULL]], 1, 16]
// Whole blocks of 16 query rows (head size 16): first the keys and values
// of every whole block gathered into rows of their own (the cache's whole
// blocks, unless no query block runs, then the new keys); per query block
// Qᵀ scaled, Oᵀ zeroed, then one loop over the gathered blocks of 16 keys
// (the cache's then the new keys' up to this block's own), masked causally
// by comparing (row - key) lanes with the block's offset (first new key -
// first row; -16 for the cache's: all visible); then the cache's last keys
// one at a time; Oᵀ / l transposed back.
// CHECK:           %[[QT:.*]] = bufferization.alloc_tensor() : tensor<16x16xf32>
// CHECK:           %[[OT:.*]] = bufferization.alloc_tensor() : tensor<16x16xf32>
// CHECK:           %[[PASTBLOCKS:.*]] = arith.divui %{{.*}}, %c16 : index
// CHECK:           %[[PASTFULL:.*]] = arith.muli %[[PASTBLOCKS]], %c16 : index
// CHECK:           %[[ANY:.*]] = arith.cmpi ugt, %[[FULL]], %c0 : index
// CHECK:           %[[PASTN:.*]] = arith.select %[[ANY]], %[[PASTFULL]], %c0 : index
// CHECK:           %[[ROWSN:.*]] = arith.addi %[[PASTN]], %[[FULL]] : index
// CHECK:           %[[KT:.*]] = bufferization.alloc_tensor(%[[ROWSN]]) : tensor<?x16xf32>
// CHECK:           %[[VT:.*]] = bufferization.alloc_tensor(%[[ROWSN]]) : tensor<?x16xf32>
// CHECK:           %[[GP:.*]]:2 = scf.for %[[J:.*]] = %c0 to %[[PASTN]] step %c1 iter_args(%{{.*}} = %[[KT]], %{{.*}} = %[[VT]])
// CHECK:             vector.transfer_read %{{.*}}[%[[J]], %[[B]], %[[KVH]], %c0]
// CHECK:             vector.transfer_write %{{.*}}[%[[J]], %c0]
// CHECK:           %[[G:.*]]:2 = scf.for %[[J:.*]] = %c0 to %[[FULL]] step %c1 iter_args(%{{.*}} = %[[GP]]#0, %{{.*}} = %[[GP]]#1)
// CHECK:             %[[AT:.*]] = arith.addi %[[PASTFULL]], %[[J]] : index
// CHECK:             vector.transfer_read %[[KROWS]][%[[J]], %[[B]], %[[KVH]], %c0]
// CHECK:             vector.transfer_write %{{.*}}[%[[AT]], %c0]
// CHECK:           %[[BLK:.*]]:3 = scf.for %[[I0:.*]] = %c0 to %[[FULL]] step %c16 iter_args(%{{.*}} = %[[ROWS]], %{{.*}} = %[[QT]], %{{.*}} = %[[OT]])
// CHECK:             tensor.extract_slice %{{.*}}[%[[B]], %[[I0]], %[[H]], 0] [1, 16, 1, 16] [1, 1, 1, 1] : tensor<?x?x4x16xf32> to tensor<16x16xf32>
// CHECK:             vector.transpose %{{.*}}, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
// CHECK:             arith.mulf %{{.*}} : vector<16x16xf32>
// CHECK:             %[[BEFORE:.*]] = arith.divui %[[I0]], %c16 : index
// CHECK:             %[[UPTO:.*]] = arith.addi %[[BEFORE]], %c1 : index
// CHECK:             %[[NBLK:.*]] = arith.addi %[[PASTBLOCKS]], %[[UPTO]] : index
// CHECK:             scf.for %[[KB:.*]] = %c0 to %[[NBLK]] {{.*}} -> (vector<16xf32>, vector<16xf32>, tensor<16x16xf32>)
// CHECK:               %[[ISPAST:.*]] = arith.cmpi ult, %[[KB]], %[[PASTBLOCKS]] : index
// CHECK:               %[[FIRST:.*]] = arith.muli %[[KB]], %c16 : index
// CHECK:               %[[NEWFIRST:.*]] = arith.subi %[[FIRST]], %[[PASTFULL]] : index
// CHECK:               %[[DIAG:.*]] = arith.subi %[[NEWFIRST]], %[[I0]] : index
// CHECK:               %[[OFF:.*]] = arith.select %[[ISPAST]], %c-16, %[[DIAG]] : index
// CHECK:               scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK:                 tensor.extract %[[G]]#0[%[[FIRST]], %{{.*}}] : tensor<?x16xf32>
// CHECK:                 vector.fma
// CHECK:               %[[OFF32:.*]] = arith.index_cast %[[OFF]] : index to i32
// CHECK:               %[[OFFV:.*]] = vector.broadcast %[[OFF32]] : i32 to vector<16xi32>
// CHECK:               %[[VIS:.*]] = arith.cmpi sle, %[[OFFV]], %{{.*}} : vector<16xi32>
// CHECK:               arith.select %[[VIS]], %{{.*}} : vector<16xi1>, vector<16xf32>
// CHECK:               math.exp {{.*}} : vector<16xf32>
// Oᵀ four rows (d) at a time: four independent chains of FMAs.
// CHECK:               scf.for %{{.*}} = %c0 to %c16 step %c4 {{.*}} -> (tensor<16x16xf32>)
// CHECK-COUNT-4:         arith.mulf {{.*}} : vector<16xf32>
// CHECK:                 tensor.extract %[[G]]#1[%[[FIRST]], %{{.*}}] : tensor<?x16xf32>
// CHECK:             scf.for %{{.*}} = %{{.*}} to %{{.*}} {{.*}} -> (vector<16xf32>, vector<16xf32>, tensor<16x16xf32>)
// CHECK:             arith.divf {{.*}} : vector<16xf32>
// CHECK:             vector.transpose
// CHECK:             tensor.insert_slice %{{.*}}[0, %[[I0]], 0, 0] [1, 16, 1, 16]
// With 8 lanes (AVX2) the blocks are 8 query rows (Qᵀ and Oᵀ 16 x 8),
// transposed 8 x 8 at a time, with 8 score vectors of 8 lanes per key block.
// LANES8-LABEL: func @cached_attention
// LANES8:         bufferization.alloc_tensor() : tensor<16x8xf32>
// LANES8:         scf.for %{{.*}} = %c0 to %{{.*}} step %c8 {{.*}} -> (tensor<1x?x1x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>)
// LANES8:           vector.transpose %{{.*}}, [1, 0] : vector<8x8xf32> to vector<8x8xf32>
// LANES8:           scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK:           scf.forall.in_parallel
// CHECK:             tensor.parallel_insert_slice %{{.*}} into %[[OUT]][%[[B]], 0, %[[H]], 0] [1, %[[FULL]], 1, 16]
// CHECK:           scf.yield %[[FORALL]]
// CHECK:         } else {
// CHECK-NEXT:      scf.yield %[[INIT]]
// The remaining rows one at a time, per batch and chunk of heads (all 4
// heads on one thread): S = scores of every head against each key (keys
// in position order: the cache's, then the new keys 0..i), padded to
// whole vectors of 16 with a finite "minus infinity"; per head the max,
// exp(scale·(s - max)) and the sum in vectors of 16; then the values key
// by key over the heads; out = acc / sum.
// CHECK:         %[[KEYS:.*]] = arith.addi %[[T:.*]], %[[S:.*]] : index
// CHECK:         %[[ROUND:.*]] = arith.addi %[[KEYS]], %c15 : index
// CHECK:         scf.forall (%[[B2:.*]]) in (%{{.*}}) shared_outs(%[[OUT2:.*]] = %[[BLOCKED]])
// CHECK:           %[[LEFT:.*]] = arith.subi %[[S]], %[[FULL]] : index
// CHECK:           tensor.extract_slice %[[OUT2]][%[[B2]], %[[FULL]], 0, 0] [1, %[[LEFT]], 4, 16]
// CHECK:           tensor.empty(%{{.*}}) : tensor<4x?xf32>
// CHECK:           tensor.empty() : tensor<4xf32>
// CHECK:           tensor.empty() : tensor<4x16xf32>
// CHECK:           scf.for %[[I:.*]] = %[[FULL]] to %[[S]] step %c1
// CHECK:             %[[SEEN:.*]] = arith.addi %[[I]], %c1 : index
// CHECK:             %[[N:.*]] = arith.addi %[[T]], %[[SEEN]] : index
// CHECK:             scf.for %[[J:.*]] = %c0 to %[[T]] step %c1
// CHECK:               scf.for %[[HH:.*]] = %c0 to %c4 step %c1
// CHECK:                 %[[KVH2:.*]] = arith.divui %[[HH]], %c2 : index
// CHECK:                 vector.transfer_read %{{.*}}[%[[B2]], %[[I]], %[[HH]], %c0]
// CHECK:                 vector.transfer_read %{{.*}}[%[[J]], %[[B2]], %[[KVH2]], %c0]
// CHECK:                 vector.reduction <add>
// CHECK:                 tensor.insert %{{.*}}[%[[HH]], %[[J]]] : tensor<4x?xf32>
// CHECK:             scf.for %[[J:.*]] = %c0 to %[[SEEN]] step %c1
// CHECK:               %[[COL:.*]] = arith.addi %[[T]], %[[J]] : index
// CHECK:               scf.for %[[HH:.*]] = %c0 to %c4 step %c1
// CHECK:                 vector.transfer_read %[[KROWS]][%[[J]], %[[B2]], %{{.*}}, %c0]
// CHECK:                 tensor.insert %{{.*}}[%[[HH]], %[[COL]]] : tensor<4x?xf32>
// CHECK:             scf.for %[[HH:.*]] = %c0 to %c4 step %c1
// CHECK:               scf.for %{{.*}} = %[[N]] to %{{.*}} step %c1
// CHECK:                 tensor.insert %cst{{.*}} : tensor<4x?xf32>
// CHECK:               scf.for {{.*}} step %c16 {{.*}} -> (vector<16xf32>)
// CHECK:                 arith.maximumf {{.*}} : vector<16xf32>
// CHECK:               vector.reduction <maximumf>
// CHECK:               scf.for {{.*}} step %c16 {{.*}} -> (tensor<4x?xf32>, vector<16xf32>)
// CHECK:                 arith.subf
// CHECK:                 arith.mulf
// CHECK:                 math.exp {{.*}} : vector<16xf32>
// CHECK:               vector.reduction <add>
// CHECK:               tensor.insert %{{.*}} : tensor<4xf32>
// CHECK:             scf.for %[[J:.*]] = %c0 to %[[T]] step %c1
// CHECK:               scf.for %[[HH:.*]] = %c0 to %c4 step %c1
// CHECK:                 tensor.extract %{{.*}}[%[[HH]], %[[J]]] : tensor<4x?xf32>
// CHECK:                 vector.fma
// CHECK:             scf.for %[[J:.*]] = %c0 to %[[SEEN]] step %c1
// CHECK:               scf.for %[[HH:.*]] = %c0 to %c4 step %c1
// CHECK:                 vector.transfer_read %[[VROWS]][%[[J]], %[[B2]], %{{.*}}, %c0]
// CHECK:                 vector.fma
// CHECK:             scf.for %[[HH:.*]] = %c0 to %c4 step %c1
// CHECK:               arith.divf {{.*}} : vector<16xf32>
// CHECK:               vector.transfer_write %{{.*}}[%c0, %{{.*}}, %[[HH]], %c0]
// CHECK:           scf.forall.in_parallel
// CHECK:             tensor.parallel_insert_slice %{{.*}} into %[[OUT2]][%[[B2]], %[[FULL]], 0, 0] [1, %[[LEFT]], 4, 16]
// CHECK-NOT:     tensor.concat
// For 2 threads the row form's 4 heads go in 2 chunks of 2 (the chunk is
// the largest divisor of the heads up to an even share).
// CHUNKS-LABEL: func @cached_attention
// CHUNKS:         scf.forall (%{{.*}}, %{{.*}}) in (%{{.*}}, 4)
// CHUNKS:         scf.forall (%[[B:.*]], %[[C:.*]]) in (%{{.*}}, 2)
// CHUNKS:           %[[H0:.*]] = arith.muli %[[C]], %c2 : index
// CHUNKS:           tensor.extract_slice %{{.*}}[%[[B]], %{{.*}}, %[[H0]], 0] [1, %{{.*}}, 2, 16]
// CHUNKS:           tensor.empty(%{{.*}}) : tensor<2x?xf32>
// CHUNKS:           scf.for
// CHUNKS:             scf.for %{{.*}} = %c0 to %c2 step %c1
// CHUNKS:               %[[H:.*]] = arith.addi %[[H0]], %{{.*}} : index
// CHUNKS:               vector.transfer_read %{{.*}}[%[[B]], %{{.*}}, %[[H]], %c0]
func.func @cached_attention(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>, %past: tensor<?x?x32xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %o, %kn, %vn : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// Other element types are left to tlm-lower-to-linalg.
// CHECK-LABEL: func @cached_attention_f16
// CHECK:         tlm.cached_attention
// CHECK-NOT:     scf.forall
func.func @cached_attention_f16(%q: tensor<?x?x64xf16>, %kv: tensor<?x?x32xf16>, %past: tensor<?x?x32xf16>) -> (tensor<?x?x64xf16>, tensor<?x?x32xf16>, tensor<?x?x32xf16>) {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x?x64xf16>, tensor<?x?x32xf16>, tensor<?x?x32xf16>, tensor<?x?x32xf16>, tensor<?x?x32xf16>) -> (tensor<?x?x64xf16>, tensor<?x?x32xf16>, tensor<?x?x32xf16>)
  return %o, %kn, %vn : tensor<?x?x64xf16>, tensor<?x?x32xf16>, tensor<?x?x32xf16>
}

// -----

// Each sequence with its own length: both foralls (the query blocks per
// (batch, head), the rows per batch) read their sequence's past-key count
// from lengths[b] rather than the cache's row count, so the keys past it
// are never read.
// CHECK-LABEL: func @cached_attention_lengths
// CHECK-SAME: %[[LEN:[^:]*]]: tensor<?xi64>)
// CHECK: scf.forall (%[[B:[^,]*]], %{{[^)]*}}) in
// CHECK: %[[N:.*]] = tensor.extract %[[LEN]][%[[B]]] : tensor<?xi64>
// CHECK: %[[PAST:.*]] = arith.index_cast %[[N]] : i64 to index
// CHECK: arith.divui %[[PAST]], %c16
// CHECK: scf.forall (%[[B2:[^)]*]]) in
// CHECK: tensor.extract %[[LEN]][%[[B2]]] : tensor<?xi64>
func.func @cached_attention_lengths(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>, %past: tensor<?x?x32xf32>, %len: tensor<?xi64>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past, %len {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?xi64>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %o, %kn, %vn : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}
