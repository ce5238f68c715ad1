// RUN: tlm-opt %s --split-input-file --tlm-gpu-decode-attention --cse | FileCheck %s
// RUN: tlm-opt %s --split-input-file --tlm-gpu-decode-attention="chunk=128 warps=8" --cse | FileCheck %s --check-prefix=OPTS
// RUN: not tlm-opt %s --tlm-gpu-decode-attention=chunk=0 2>&1 | FileCheck %s --check-prefix=NOCHUNK
// NOCHUNK: error: tlm-gpu-decode-attention: chunk must be >= 1, got 0
// RUN: not tlm-opt %s --tlm-gpu-decode-attention=warps=33 2>&1 | FileCheck %s --check-prefix=WARPS
// WARPS: error: tlm-gpu-decode-attention: warps must be <= 32, got 33
// RUN: not tlm-opt %s --split-input-file --tlm-gpu-decode-attention=chunk=60000 2>&1 | FileCheck %s --check-prefix=SMEM
// SMEM: error: tlm-gpu-decode-attention: chunk 60000 needs 240512 bytes of shared memory a block, more than 232448
//
// The kernels exist before bufferization: their reads fold into the
// buffers of what they read, and buffer deallocation (which takes
// gpu.barrier's effects from registerGpuInterfaces) frees the pieces'
// buffers after the merge.
// RUN: tlm-opt %s --split-input-file --tlm-gpu-decode-attention --tlm-lower-to-linalg --canonicalize --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --buffer-deallocation-pipeline | FileCheck %s --check-prefix=BUF

// One new token a sequence (S = 1), 4 heads of 16 over 2 kv heads. After
// the prologue (RoPE, the new rows transposed to the cache's layout), the
// kernels read q, the cache and the new rows in place; the cache (T rows)
// and the new token make T + 1 positions, in pieces of 64.
// CHECK-LABEL: func @one_token
// CHECK-SAME:    (%{{.*}}: tensor<?x1x64xf32>, %{{.*}}: tensor<?x1x32xf32>, %[[PAST:.*]]: tensor<?x?x32xf32>)
// CHECK:         %[[T:.*]] = tensor.dim %[[PAST]], %c0
// CHECK:         %[[KPAST:.*]] = tensor.expand_shape %[[PAST]] {{.*}} into tensor<?x?x2x16xf32>
// CHECK:         %[[KROWS:.*]] = linalg.transpose {{.*}} permutation = [1, 0, 2, 3]
// CHECK:         %[[VROWS:.*]] = linalg.transpose {{.*}} permutation = [1, 0, 2, 3]
// CHECK:         %[[QB:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<?x1x4x16xf32> to memref<?x1x4x16xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK:         %[[KB:.*]] = bufferization.to_buffer %[[KPAST]] read_only
// CHECK:         %[[KNB:.*]] = bufferization.to_buffer %[[KROWS]] read_only
// CHECK:         %[[VNB:.*]] = bufferization.to_buffer %[[VROWS]] read_only
// CHECK:         %[[COUNT:.*]] = arith.addi %[[T]], %c1
// CHECK:         %[[PIECES:.*]] = arith.ceildivui %[[COUNT]], %c64
// CHECK:         %[[MAXES:.*]] = memref.alloc(%[[B:.*]], %[[PIECES]]) : memref<?x4x?xf32>
// CHECK:         %[[SUMS:.*]] = memref.alloc(%[[B]], %[[PIECES]]) : memref<?x4x?xf32>
// CHECK:         %[[OUTS:.*]] = memref.alloc(%[[B]], %[[PIECES]]) : memref<?x4x?x16xf32>
// CHECK:         %[[OUT:.*]] = memref.alloc(%[[B]]) : memref<?x1x4x16xf32>
// A block per (piece, head, sequence), 4 warps; 64 scores and 8 groups'
// partial outputs of 16 in 768 bytes of dynamic shared memory.
// CHECK:         gpu.launch blocks(%[[PIECE:[^,]+]], %[[H:[^,]+]], %[[SEQ:[^)]+]]) in (%{{.*}} = %[[PIECES]], %{{.*}} = %c4, %{{.*}} = %[[B]]) threads(%[[LANE:[^,]+]], %[[WARP:[^,]+]], %{{[^)]+}}) in (%{{.*}} = %c32, %{{.*}} = %c4, %{{.*}} = %c1) dynamic_shared_memory_size %c768_i32
// CHECK:           %[[SHARED:.*]] = gpu.dynamic_shared_memory
// CHECK:           %[[SCORES:.*]] = memref.view %[[SHARED]][%c0][] {{.*}} to memref<64xf32, #gpu.address_space<workgroup>>
// CHECK:           %[[PARTS:.*]] = memref.view %[[SHARED]][%c256][] {{.*}} to memref<8x16xf32, #gpu.address_space<workgroup>>
// CHECK:           %[[KVH:.*]] = arith.divui %[[H]], %c2
// CHECK:           %[[START:.*]] = arith.muli %[[PIECE]], %c64
// CHECK:           %[[LEFT:.*]] = arith.subi %[[COUNT]], %[[START]]
// CHECK:           %[[N0:.*]] = arith.maxsi %[[LEFT]], %c0
// CHECK:           %[[N:.*]] = arith.minsi %[[N0]], %c64
// Lane l holds q[d = l] (lanes 16..31 none); warp w takes positions w,
// w + 4, ...: a cached key below T, the new one (row j - T = 0) at T, summed over the
// warp's lanes, scaled by 1/4 and left by lane 0.
// CHECK:           memref.load %[[QB]][%[[SEQ]], %c0, %[[H]], %{{.*}}]
// CHECK:           scf.for %[[JL:.*]] = %[[WARP]] to %[[N]] step %c4 {
// CHECK:             %[[J:.*]] = arith.addi %[[START]], %[[JL]]
// CHECK:             %[[CACHED:.*]] = arith.cmpi ult, %[[J]], %[[T]]
// CHECK:             scf.if %[[CACHED]]
// CHECK:               memref.load %[[KB]][%[[J]], %[[SEQ]], %[[KVH]], %{{.*}}]
// CHECK:               %[[ROW:.*]] = arith.subi %[[J]], %[[T]]
// CHECK:               memref.load %[[KNB]][%[[ROW]], %[[SEQ]], %[[KVH]], %{{.*}}]
// CHECK:             math.fma
// CHECK-COUNT-5:     gpu.shuffle  xor
// CHECK:             arith.mulf %{{.*}}, %cst_{{[0-9]+}} : f32
// CHECK:             memref.store %{{.*}}, %[[SCORES]][%[[JL]]]
// CHECK:           gpu.barrier
// CHECK:           %[[M:.*]] = scf.for {{.*}} = %c0 to %[[N]] step %c1 iter_args({{.*}}) -> (f32)
// CHECK:             arith.maximumf
// CHECK:           gpu.barrier
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[N]] step %c128 {
// CHECK:             arith.subf %{{.*}}, %[[M]]
// CHECK:             math.exp
// CHECK:           gpu.barrier
// CHECK:           %[[L:.*]] = scf.for {{.*}} = %c0 to %[[N]] step %c1 iter_args({{.*}}) -> (f32)
// Thread t: head dim t % 16 of every 8th position from t / 16.
// CHECK:           %[[G:.*]] = arith.divui %{{.*}}, %c16
// CHECK:           %[[D:.*]] = arith.remui %{{.*}}, %c16
// CHECK:             scf.for %{{.*}} = %[[G]] to %[[N]] step %c8 iter_args
// CHECK:               %[[VROW:.*]] = arith.subi %{{.*}}, %[[T]]
// CHECK:               memref.load %[[VNB]][%[[VROW]], %[[SEQ]], %[[KVH]], %[[D]]]
// CHECK:             memref.store %{{.*}}, %[[PARTS]][%[[G]], %[[D]]]
// CHECK:           gpu.barrier
// CHECK-COUNT-8:     memref.load %[[PARTS]]
// CHECK:             memref.store %{{.*}}, %[[OUTS]][%[[SEQ]], %[[H]], %[[PIECE]], %{{.*}}]
// CHECK:             memref.store %[[M]], %[[MAXES]][%[[SEQ]], %[[H]], %[[PIECE]]]
// CHECK:             memref.store %[[L]], %[[SUMS]][%[[SEQ]], %[[H]], %[[PIECE]]]
// The merge: a block per (head, sequence), a thread per head dim.
// CHECK:         gpu.launch blocks(%[[H2:[^,]+]], %[[SEQ2:[^,]+]], %{{[^)]+}}) in (%{{.*}} = %c4, %{{.*}} = %[[B]], %{{.*}} = %c1) threads(%[[D2:[^,]+]], %{{[^,]+}}, %{{[^)]+}}) in (%{{.*}} = %c16, %{{.*}} = %c1, %{{.*}} = %c1) {
// CHECK:           %[[MAX:.*]] = scf.for {{.*}} = %c0 to %[[PIECES]] step %c1
// CHECK:           %[[SUM:.*]]:2 = scf.for {{.*}} = %c0 to %[[PIECES]] step %c1
// CHECK:             arith.subf %{{.*}}, %[[MAX]]
// CHECK:             math.exp
// CHECK:           arith.divf %[[SUM]]#1, %[[SUM]]#0
// CHECK:           memref.store %{{.*}}, %[[OUT]][%[[SEQ2]], %c0, %[[H2]], %[[D2]]]
// CHECK:         bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-NOT:     tlm.cached_attention
// CHECK:         return

// OPTS-LABEL: func @one_token
// OPTS:         arith.ceildivui %{{.*}}, %c128
// 8 warps: 16 groups of 16 threads; 128 + 256 floats of shared memory.
// OPTS:         threads({{.*}}) in (%{{.*}} = %c32, %{{.*}} = %c8, %{{.*}} = %c1) dynamic_shared_memory_size %c1536_i32
// OPTS:         memref.view {{.*}} to memref<16x16xf32, #gpu.address_space<workgroup>>

// BUF-LABEL: func @one_token
// BUF:         %[[MAXES:.*]] = memref.alloc({{.*}}) : memref<?x4x?xf32>
// BUF:         gpu.launch
// BUF:           gpu.barrier
// BUF:         gpu.launch
// BUF:         memref.dealloc %[[MAXES]]
func.func @one_token(%q: tensor<?x1x64xf32>, %kv: tensor<?x1x32xf32>, %past: tensor<?x?x32xf32>) -> (tensor<?x1x64xf32>, tensor<?x1x32xf32>, tensor<?x1x32xf32>) {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x1x64xf32>, tensor<?x1x32xf32>, tensor<?x1x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> (tensor<?x1x64xf32>, tensor<?x1x32xf32>, tensor<?x1x32xf32>)
  return %o, %kn, %vn : tensor<?x1x64xf32>, tensor<?x1x32xf32>, tensor<?x1x32xf32>
}

// -----

// New tokens counted at run time: the kernels when there is one, the op
// (for tlm-lower-to-linalg) otherwise.
// CHECK-LABEL: func @rows_at_run_time
// CHECK:         %[[ROWS:.*]] = tensor.dim %arg0, %c1 : tensor<?x?x64xf32>
// CHECK:         %[[ONE:.*]] = arith.cmpi eq, %[[ROWS]], %c1
// CHECK:         %[[R:.*]]:3 = scf.if %[[ONE]] -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
// CHECK-COUNT-2:   gpu.launch
// CHECK:         } else {
// CHECK-NOT:       gpu.launch
// CHECK:           tlm.cached_attention
// CHECK:         return %[[R]]#0, %[[R]]#1, %[[R]]#2
// BUF-LABEL: func @rows_at_run_time
// BUF:         scf.if
// BUF-COUNT-2:   gpu.launch
func.func @rows_at_run_time(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>, %past: tensor<?x?x32xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %o, %kn, %vn : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}

// -----

// Each sequence with its own cached length: a block reads lengths[b] (its
// past keys, at most T as the conversion reads them; the new one comes
// after them), the pieces still cover the cache's T + 1.
// CHECK-LABEL: func @lengths
// CHECK-SAME:    %[[LEN:[^:]*]]: tensor<?xi64>)
// CHECK:         %[[LB:.*]] = bufferization.to_buffer %[[LEN]] read_only
// CHECK:         gpu.launch blocks(%{{[^,]+}}, %{{[^,]+}}, %[[SEQ:[^)]+]]) in
// CHECK:           %[[L64:.*]] = memref.load %[[LB]][%[[SEQ]]]
// CHECK:           %[[LI:.*]] = arith.index_cast %[[L64]] : i64 to index
// CHECK:           %[[PASTB:.*]] = arith.minui %[[LI]], %{{.*}} : index
// CHECK:           arith.addi %[[PASTB]], %c1
// CHECK:             arith.cmpi ult, %{{.*}}, %[[PASTB]]
func.func @lengths(%q: tensor<?x1x64xf32>, %kv: tensor<?x1x32xf32>, %past: tensor<?x?x32xf32>, %len: tensor<?xi64>) -> (tensor<?x1x64xf32>, tensor<?x1x32xf32>, tensor<?x1x32xf32>) {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past, %len {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x1x64xf32>, tensor<?x1x32xf32>, tensor<?x1x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?xi64>) -> (tensor<?x1x64xf32>, tensor<?x1x32xf32>, tensor<?x1x32xf32>)
  return %o, %kn, %vn : tensor<?x1x64xf32>, tensor<?x1x32xf32>, tensor<?x1x32xf32>
}

// -----

// One head of 64: each lane holds two of q's dims (l and l + 32).
// CHECK-LABEL: func @wide_head
// CHECK:         gpu.launch
// CHECK-COUNT-2:   memref.load %{{.*}}[%{{.*}}, %c0, %{{.*}}, %{{.*}}] : memref<?x1x1x64xf32
// CHECK:           scf.for
// CHECK-COUNT-2:     math.fma
// CHECK:             gpu.shuffle
func.func @wide_head(%q: tensor<?x1x64xf32>, %kv: tensor<?x1x64xf32>, %past: tensor<?x?x64xf32>) -> (tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?x1x64xf32>) {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past {num_heads = 1 : i64, num_kv_heads = 1 : i64} : (tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> (tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?x1x64xf32>)
  return %o, %kn, %vn : tensor<?x1x64xf32>, tensor<?x1x64xf32>, tensor<?x1x64xf32>
}

// -----

// Left to the conversion: a step known to have four new tokens, and f16.
// CHECK-LABEL: func @four_rows
// CHECK-NOT:     gpu.launch
// CHECK:         tlm.cached_attention
func.func @four_rows(%q: tensor<?x4x64xf32>, %kv: tensor<?x4x32xf32>, %past: tensor<?x?x32xf32>) -> (tensor<?x4x64xf32>, tensor<?x4x32xf32>, tensor<?x4x32xf32>) {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x4x64xf32>, tensor<?x4x32xf32>, tensor<?x4x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> (tensor<?x4x64xf32>, tensor<?x4x32xf32>, tensor<?x4x32xf32>)
  return %o, %kn, %vn : tensor<?x4x64xf32>, tensor<?x4x32xf32>, tensor<?x4x32xf32>
}

// -----

// CHECK-LABEL: func @f16
// CHECK-NOT:     gpu.launch
// CHECK:         tlm.cached_attention
func.func @f16(%q: tensor<?x1x64xf16>, %kv: tensor<?x1x32xf16>, %past: tensor<?x?x32xf16>) -> (tensor<?x1x64xf16>, tensor<?x1x32xf16>, tensor<?x1x32xf16>) {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x1x64xf16>, tensor<?x1x32xf16>, tensor<?x1x32xf16>, tensor<?x?x32xf16>, tensor<?x?x32xf16>) -> (tensor<?x1x64xf16>, tensor<?x1x32xf16>, tensor<?x1x32xf16>)
  return %o, %kn, %vn : tensor<?x1x64xf16>, tensor<?x1x32xf16>, tensor<?x1x32xf16>
}
