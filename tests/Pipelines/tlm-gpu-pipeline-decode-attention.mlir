// RUN: tlm-opt %s --tlm-gpu-pipeline=kernels-only | FileCheck %s
// RUN: tlm-opt %s --tlm-gpu-pipeline="kernels-only decode-attention=false" | FileCheck %s --check-prefix=OFF
// RUN: tlm-opt %s --tlm-gpu-pipeline="kernels-only prefill-attention=false" | FileCheck %s --check-prefix=NOPREFILL
// RUN: tlm-opt %s --tlm-gpu-pipeline="kernels-only decode-attention=false prefill-attention=false" | FileCheck %s --check-prefix=NEITHER
// RUN: %if libdevice %{ tlm-opt %s --tlm-gpu-pipeline | FileCheck %s --check-prefix=PTX %}

// Cached attention through the GPU pipeline: the host picks the
// flash-decoding kernels (tlm-gpu-decode-attention) when the step has one
// new token, the flash-attention kernel (tlm-gpu-prefill-attention)
// otherwise. In the first branch the pieces' kernel takes its scores from
// dynamic shared memory and the merge follows it; their buffers are device
// allocations freed after the merge. In the second one kernel takes 16
// queries a block: 7296 bytes of queries, a tile of keys and values and
// the tile's probabilities.
// CHECK-LABEL: func.func @attend
// CHECK:         %[[ONE:.*]] = arith.cmpi eq, %{{.*}}, %c1 : index
// CHECK:         scf.if %[[ONE]]
// CHECK:           %[[MAXES:.*]] = gpu.alloc  (%{{.*}}, %[[PIECES:.*]]) : memref<?x4x?xf32>
// CHECK:           gpu.launch_func  @[[PIECE:.*]]::@attend_kernel blocks in (%[[PIECES]], %c4, %{{.*}}) threads in (%c32, %c4, %c1)  dynamic_shared_memory_size %c768_i32
// CHECK:           gpu.launch_func  @{{.*}}::@attend_kernel blocks in (%c4, %{{.*}}, %c1) threads in (%c16, %c1, %c1)
// CHECK:           gpu.dealloc  %[[MAXES]]
// CHECK:         } else {
// CHECK:           gpu.launch_func  @[[FLASH:.*]]::@attend_kernel blocks in (%{{.*}}, %c4, %{{.*}}) threads in (%c32, %c4, %c1)  dynamic_shared_memory_size %c7296_i32
// CHECK-NOT:       dynamic_shared_memory_size
// CHECK:         }
// The pieces' kernel: its block size known, shared memory dynamic.
// CHECK:       gpu.module @[[PIECE]]
// CHECK:         gpu.func @attend_kernel({{.*}}) kernel attributes {known_block_size = array<i32: 32, 4, 1>}
// CHECK:           gpu.dynamic_shared_memory
// CHECK:           gpu.shuffle  xor
// CHECK:           gpu.barrier

// OFF-LABEL: func.func @attend
// OFF-NOT:     scf.if
// OFF:         dynamic_shared_memory_size %c7296_i32
// OFF-NOT:     dynamic_shared_memory_size
// NOPREFILL-LABEL: func.func @attend
// NOPREFILL:     dynamic_shared_memory_size %c768_i32
// NOPREFILL:     } else {
// NOPREFILL-NOT: dynamic_shared_memory_size
// NEITHER-LABEL: func.func @attend
// NEITHER-NOT:   dynamic_shared_memory_size

// The PTX addresses the scores and partial sums in shared memory.
// PTX: gpu.binary @attend_kernel_{{[0-9]+}} {{.*}}ld.shared{{.*}}shfl.sync.bfly
func.func @attend(%q: tensor<?x?x64xf32>, %kv: tensor<?x?x32xf32>, %past: tensor<?x?x32xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
  %o, %kn, %vn = tlm.cached_attention %q, %kv, %kv, %past, %past {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %o, %kn, %vn : tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>
}
