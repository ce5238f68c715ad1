// RUN: tlm-opt %s --split-input-file --tlm-gpu-prefill-attention --cse | FileCheck %s
// RUN: tlm-opt %s --split-input-file --tlm-gpu-prefill-attention=rows=8 --cse | FileCheck %s --check-prefix=ROWS8
// RUN: not tlm-opt %s --tlm-gpu-prefill-attention=rows=6 2>&1 | FileCheck %s --check-prefix=MULT
// MULT: error: tlm-gpu-prefill-attention: rows must be a multiple of 4 (a block's warps), got 6
// RUN: not tlm-opt %s --tlm-gpu-prefill-attention=rows=0 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: tlm-gpu-prefill-attention: rows must be >= 4, got 0
// RUN: not tlm-opt %s --split-input-file --tlm-gpu-prefill-attention=rows=4096 2>&1 | FileCheck %s --check-prefix=SMEM
// SMEM: error: tlm-gpu-prefill-attention: rows 4096 and head dim 16 need 790656 bytes of shared memory a block, more than 232448
//
// Prefill (S new tokens a sequence, each sequence with `lengths` cached
// positions): after the shared prologue, one kernel of 4 warps per
// (16 queries, head, sequence), 7296 bytes of dynamic shared memory: the
// queries (16 x 16), a tile of 32 keys (rows padded to 17) and values
// (32 x 16), and the tile's probabilities (16 x 32).
// CHECK-LABEL: func.func @prefill
// CHECK-DAG:     %[[QB:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<?x?x4x16xf32>
// CHECK-DAG:     %[[KB:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<?x?x2x16xf32>
// CHECK-DAG:     %[[LB:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<?xi64>
// CHECK:         %[[OUT:.*]] = memref.alloc(%[[B:.*]], %[[S:.*]]) : memref<?x?x4x16xf32>
// CHECK:         %[[QBLOCKS:.*]] = arith.ceildivui %[[S]], %c16
// CHECK:         gpu.launch blocks(%[[QBLK:.*]], %[[H:.*]], %[[SEQ:.*]]) in (%{{.*}} = %[[QBLOCKS]], %{{.*}} = %c4, %{{.*}} = %[[B]]) threads(%[[LANE:.*]], %[[WARP:.*]], %{{.*}}) in (%{{.*}} = %c32, %{{.*}} = %c4, %{{.*}} = %c1) dynamic_shared_memory_size %c7296_i32
// CHECK:           %[[QS:.*]] = memref.view {{.*}} to memref<16x16xf32, #gpu.address_space<workgroup>>
// CHECK:           %[[KS:.*]] = memref.view {{.*}} to memref<32x17xf32, #gpu.address_space<workgroup>>
// CHECK:           %[[VS:.*]] = memref.view {{.*}} to memref<32x16xf32, #gpu.address_space<workgroup>>
// CHECK:           %[[PS:.*]] = memref.view {{.*}} to memref<16x32xf32, #gpu.address_space<workgroup>>
// The sequence's past is lengths[b] clamped to T; the block's last query
// sees keys 0 .. past + q0 + here - 1, in tiles of 32.
// CHECK:           %[[KVH:.*]] = arith.divui %[[H]], %c2
// CHECK:           %[[LEN:.*]] = memref.load %[[LB]][%[[SEQ]]]
// CHECK:           %[[LENI:.*]] = arith.index_cast %[[LEN]]
// CHECK:           %[[PAST:.*]] = arith.minui %[[LENI]], %{{.*}}
// CHECK:           %[[Q0:.*]] = arith.muli %[[QBLK]], %c16
// CHECK:           %[[LEFT:.*]] = arith.subi %[[S]], %[[Q0]]
// CHECK:           %[[HERE:.*]] = arith.minui %[[LEFT]], %c16
// CHECK:           %[[END:.*]] = arith.addi %[[Q0]], %[[HERE]]
// CHECK:           %[[KEYS:.*]] = arith.addi %[[PAST]], %[[END]]
// CHECK:           %[[TILES:.*]] = arith.ceildivui %[[KEYS]], %c32
// Queries staged, zero past S.
// CHECK:           scf.for
// CHECK:             %[[QI:.*]] = arith.addi %[[Q0]], %{{.*}}
// CHECK:             arith.cmpi ult, %[[QI]], %[[S]]
// CHECK:             memref.load %[[QB]][%[[SEQ]], %[[QI]], %[[H]], %{{.*}}]
// CHECK:             memref.store %{{.*}}, %[[QS]]
// Warp w's queries are rows 4w .. 4w + 3; lane l's head dim l, clamped
// to 15 for the loads (lanes 16..31 never store).
// CHECK:           %[[R0:.*]] = arith.muli %[[WARP]], %c4
// CHECK:           %[[QR0:.*]] = arith.addi %[[Q0]], %[[R0]]
// CHECK:           %[[DIM:.*]] = arith.minui %[[LANE]], %c15
// Carried: 4 maxes (-inf), 4 sums, 4 outputs.
// CHECK:           %[[ACC:.*]]:12 = scf.for %[[TILE:.*]] = %c0 to %[[TILES]] step %c1 iter_args(%[[M0:[^ ]*]] = %cst{{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK:             %[[K0:.*]] = arith.muli %[[TILE]], %c32
// CHECK-NEXT:        gpu.barrier
// Key/value j of the tile: from the cache below past, new row j - past
// from there, zero past the block's last key.
// CHECK:             scf.for
// CHECK:               %[[J:.*]] = arith.addi %[[K0]], %{{.*}}
// CHECK:               %[[INKEYS:.*]] = arith.cmpi ult, %[[J]], %[[KEYS]]
// CHECK:               scf.if %[[INKEYS]]
// CHECK:                 %[[CACHED:.*]] = arith.cmpi ult, %[[J]], %[[PAST]]
// CHECK:                 scf.if %[[CACHED]]
// CHECK:                   memref.load %[[KB]][%[[J]], %[[SEQ]], %[[KVH]], %{{.*}}]
// CHECK:                 } else {
// CHECK:                   %[[ROW:.*]] = arith.subi %[[J]], %[[PAST]]
// CHECK:                   memref.load %{{.*}}[%[[ROW]], %[[SEQ]], %[[KVH]], %{{.*}}]
// CHECK:               memref.store %{{.*}}, %[[KS]]
// CHECK:               memref.store %{{.*}}, %[[VS]]
// CHECK:             gpu.barrier
// Lane l scores key k0 + l against the warp's 4 queries in one pass over
// the head dim.
// CHECK:             %[[DOTS:.*]]:4 = scf.for %[[D:.*]] = %c0 to %c16 step %c1
// CHECK:               %[[KD:.*]] = memref.load %[[KS]][%[[LANE]], %[[D]]]
// CHECK:               %[[Q:.*]] = memref.load %[[QS]][%{{.*}}, %[[D]]]
// CHECK:               math.fma %[[Q]], %[[KD]]
// CHECK-COUNT-3:       math.fma
// Causal: key k0 + l is visible to query q at position past + q.
// CHECK:             %[[JL:.*]] = arith.addi %[[K0]], %[[LANE]]
// CHECK:             %[[POS:.*]] = arith.addi %[[PAST]], %[[QR0]]
// CHECK:             %[[SEES:.*]] = arith.cmpi ule, %[[JL]], %[[POS]]
// CHECK:             %[[REAL:.*]] = arith.cmpi ult, %[[QR0]], %[[S]]
// CHECK:             %[[VIS:.*]] = arith.andi %[[SEES]], %[[REAL]]
// CHECK:             %[[SC:.*]] = arith.mulf %[[DOTS]]#0, %cst_{{[0-9]+}} : f32
// CHECK:             %[[SM:.*]] = arith.select %[[VIS]], %[[SC]], %cst
// The online softmax: the warp's max (shuffles), the new max, the
// probabilities against it (0 if the query sees nothing yet), the old
// sums rescaled by exp(old max - new max).
// CHECK-COUNT-5:     arith.maximumf
// CHECK:             %[[MNEW:.*]] = arith.maximumf %[[M0]], %{{.*}}
// CHECK:             %[[NONE:.*]] = arith.cmpf oeq, %[[MNEW]], %cst
// CHECK:             %[[SHIFT:.*]] = arith.select %[[NONE]], %{{.*}}, %[[MNEW]]
// CHECK:             %[[PD:.*]] = arith.subf %[[SM]], %[[SHIFT]]
// CHECK:             %[[P:.*]] = math.exp %[[PD]]
// CHECK:             %[[AD:.*]] = arith.subf %[[M0]], %[[SHIFT]]
// CHECK:             %[[ALPHA:.*]] = math.exp %[[AD]]
// CHECK-COUNT-5:     arith.addf
// CHECK:             math.fma %{{.*}}, %[[ALPHA]], %{{.*}}
// CHECK:             memref.store %[[P]], %[[PS]][%{{.*}}, %[[LANE]]]
// CHECK:             gpu.barrier
// P·V: each output rescaled, then the tile's 32 keys.
// CHECK:             %[[O0:.*]] = arith.mulf %{{.*}}, %[[ALPHA]]
// CHECK:             scf.for %[[JJ:.*]] = %c0 to %c32 step %c1 iter_args(%{{.*}} = %[[O0]]
// CHECK:               %[[V:.*]] = memref.load %[[VS]][%[[JJ]], %[[DIM]]]
// CHECK:               %[[PJ:.*]] = memref.load %[[PS]][%{{.*}}, %[[JJ]]]
// CHECK:               math.fma %[[PJ]], %[[V]]
// CHECK:           }
// The result, divided by the sum, for queries below S and dims below 16.
// CHECK:           %[[QOK:.*]] = arith.cmpi ult, %[[QR0]], %[[S]]
// CHECK:           %[[DOK:.*]] = arith.cmpi ult, %[[LANE]], %c16
// CHECK:           %[[OK:.*]] = arith.andi %[[QOK]], %[[DOK]]
// CHECK:           scf.if %[[OK]]
// CHECK:             %[[O:.*]] = arith.divf %[[ACC]]#8, %[[ACC]]#4
// CHECK:             memref.store %[[O]], %[[OUT]][%[[SEQ]], %[[QR0]], %[[H]], %[[LANE]]]
// CHECK-COUNT-3:   memref.store %{{.*}}, %[[OUT]]
// CHECK:           gpu.terminator
// CHECK:         bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-NOT:     tlm.cached_attention
// CHECK:         return
//
// rows=8: 2 queries a warp, 4 * (8*16 + 32*17 + 32*16 + 8*32) bytes.
// ROWS8-LABEL: func.func @prefill
// ROWS8: arith.ceildivui %{{.*}}, %c8
// ROWS8: dynamic_shared_memory_size %c5760_i32
// ROWS8: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32)
func.func @prefill(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>, %past: tensor<?x?x32xf32>, %len: tensor<?xi64>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past, %len {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?xi64>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %o, %kn, %vn : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// A head of 64: two dims a lane (l and l + 32), none clamped; no lengths:
// every sequence's past is T.
// CHECK-LABEL: func.func @wide_head
// CHECK-NOT:     arith.minui %{{.*}}, %c63
// CHECK:         gpu.launch
// CHECK:           %[[D1:.*]] = arith.addi %[[LANE:.*]], %c32
// CHECK:           scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK:             scf.for %[[JJ:.*]] = %c0 to %c32
// CHECK:               memref.load %{{.*}}[%[[JJ]], %[[LANE]]] : memref<32x64xf32
// CHECK:               memref.load %{{.*}}[%[[JJ]], %[[D1]]] : memref<32x64xf32
// CHECK-COUNT-8:   memref.store {{.*}} : memref<?x?x1x64xf32>
func.func @wide_head(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x64xf32>, %past: tensor<?x?x64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past {num_heads = 1 : i64, num_kv_heads = 1 : i64} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>)
  return %o, %kn, %vn : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// -----

// A head of 48: lane l's dims l and l + 32, the second clamped to 47 for
// the loads (lanes 16..31 have no second dim) and guarded for the stores.
// CHECK-LABEL: func.func @head_48
// CHECK:         gpu.launch
// CHECK-NOT:       arith.minui %[[LANE48:[^,]*]], %c47
// CHECK:           %[[SECOND:.*]] = arith.addi %{{.*}}, %c32
// CHECK:           %[[CLAMPED:.*]] = arith.minui %[[SECOND]], %c47
// CHECK:           scf.for
// CHECK:             scf.for %[[JJ:.*]] = %c0 to %c32
// CHECK:               memref.load %{{.*}}[%[[JJ]], %[[CLAMPED]]] : memref<32x48xf32
// CHECK:           %[[OK:.*]] = arith.cmpi ult, %[[SECOND]], %c48
// CHECK:           memref.store {{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %[[SECOND]]] : memref<?x?x1x48xf32>
func.func @head_48(%q: tensor<?x?x48xf32>, %kv: tensor<?x?x48xf32>, %past: tensor<?x?x48xf32>) -> (tensor<?x?x48xf32>, tensor<?x?x48xf32>, tensor<?x?x48xf32>) {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past {num_heads = 1 : i64, num_kv_heads = 1 : i64} : (tensor<?x?x48xf32>, tensor<?x?x48xf32>, tensor<?x?x48xf32>, tensor<?x?x48xf32>, tensor<?x?x48xf32>) -> (tensor<?x?x48xf32>, tensor<?x?x48xf32>, tensor<?x?x48xf32>)
  return %o, %kn, %vn : tensor<?x?x48xf32>, tensor<?x?x48xf32>, tensor<?x?x48xf32>
}

// -----

// An odd head (7): key rows of 9 floats (an odd stride keeps the 32 lanes
// on 32 banks), 4 x (16·7 + 32·9 + 32·7 + 16·32) = 4544 bytes.
// CHECK-LABEL: func.func @odd_head
// CHECK:         dynamic_shared_memory_size %c4544_i32
// CHECK:           memref.view {{.*}} to memref<32x9xf32, #gpu.address_space<workgroup>>
func.func @odd_head(%q: tensor<?x?x14xf32>, %kv: tensor<?x?x14xf32>, %past: tensor<?x?x14xf32>) -> (tensor<?x?x14xf32>, tensor<?x?x14xf32>, tensor<?x?x14xf32>) {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past {num_heads = 2 : i64, num_kv_heads = 2 : i64} : (tensor<?x?x14xf32>, tensor<?x?x14xf32>, tensor<?x?x14xf32>, tensor<?x?x14xf32>, tensor<?x?x14xf32>) -> (tensor<?x?x14xf32>, tensor<?x?x14xf32>, tensor<?x?x14xf32>)
  return %o, %kn, %vn : tensor<?x?x14xf32>, tensor<?x?x14xf32>, tensor<?x?x14xf32>
}

// -----

// f16 attention is left to the conversion.
// CHECK-LABEL: func.func @f16
// CHECK-NOT:     gpu.launch
// CHECK:         tlm.cached_attention
func.func @f16(%q: tensor<?x?x64xf16>, %kv: tensor<?x?x32xf16>, %past: tensor<?x?x32xf16>) -> (tensor<?x?x64xf16>, tensor<?x?x32xf16>, tensor<?x?x32xf16>) {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x?x64xf16>, tensor<?x?x32xf16>, tensor<?x?x32xf16>, tensor<?x?x32xf16>, tensor<?x?x32xf16>) -> (tensor<?x?x64xf16>, tensor<?x?x32xf16>, tensor<?x?x32xf16>)
  return %o, %kn, %vn : tensor<?x?x64xf16>, tensor<?x?x32xf16>, tensor<?x?x32xf16>
}
