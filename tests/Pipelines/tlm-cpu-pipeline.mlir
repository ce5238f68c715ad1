// RUN: tlm-opt %s --tlm-cpu-pipeline | FileCheck %s
// RUN: tlm-opt %s --tlm-cpu-pipeline | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR
// RUN: tlm-opt %s --tlm-cpu-pipeline | FileCheck %s --check-prefix=AVX512
// RUN: tlm-opt %s --tlm-cpu-pipeline="lanes=8 vector-registers=16" | FileCheck %s --check-prefix=AVX2
// RUN: tlm-opt %s --tlm-cpu-pipeline="parallel=true threads=2" | FileCheck %s --check-prefix=OMP
// Every power of two is a lane count, one included (which once divided by
// lanes / 2 = 0 in the rotation's matcher).
// RUN: tlm-opt %s --tlm-cpu-pipeline="lanes=1" | FileCheck %s --check-prefix=LANES
// RUN: tlm-opt %s --tlm-cpu-pipeline="lanes=2" | FileCheck %s --check-prefix=LANES
// RUN: tlm-opt %s --tlm-cpu-pipeline="lanes=32" | FileCheck %s --check-prefix=LANES
// LANES: llvm.func {{.*}}@block(
// RUN: tlm-opt %s --tlm-cpu-pipeline="parallel=true threads=2" | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=OMPIR
// Lanes count f32 in a vector register: a power of two, checked by each pass
// that takes them before it rewrites anything.
// RUN: not tlm-opt %s --tlm-cpu-pipeline="lanes=7" 2>&1 | FileCheck %s --check-prefix=BADLANES
// BADLANES: error: tlm-{{[a-z-]+}}: lanes must be a power of two (f32 lanes of a vector register), got 7

// A whole pre-norm TransformerBlock (d_model 64, 4 heads, GQA 2 kv heads,
// RoPE, SwiGLU) with dynamic batch and sequence goes all the way to the LLVM
// dialect, and LLVM IR translation accepts it. With threads, its loops
// become OpenMP regions (those whose size is known only at run time behind
// a branch on it: tlm-serialize-small-parallel), forked through libomp.
// OMP-LABEL: llvm.func linkonce_odr @block(
// OMP:         omp.parallel
// OMPIR:       call void {{.*}}@__kmpc_fork_call(

// CHECK-NOT: tlm.
// CHECK-NOT: linalg.
// CHECK-NOT: memref.
// Inlined into its wrapper (alwaysinline), the entry itself may be dropped.
// CHECK: llvm.func linkonce_odr @block(
// CHECK: llvm.call @_mlir_memref_to_llvm_alloc
// CHECK: llvm.call @_mlir_memref_to_llvm_free
// CHECK: llvm.func @_mlir_ciface_block(
// LLVMIR: define linkonce_odr void @block({{.*}}) #[[ATTRS:[0-9]+]]
// LLVMIR: define void @_mlir_ciface_block(
// LLVMIR: attributes #[[ATTRS]] = { alwaysinline

// The packed projections' k loop carries its accumulators: 8 rows x 2
// vectors of 16 lanes by default (AVX-512's 32 registers), 6 x 2 of 8 lanes
// for AVX2's 16, whose elementwise blocks are 8 wide too.
// AVX512: llvm.br ^bb{{[0-9]+}}({{%[0-9]+(, %[0-9]+){16} }}: i64{{(, vector<16xf32>){16}\)$}}
// AVX2-NOT: llvm.intr.fmuladd{{.*}}vector<16xf32>
// AVX2: llvm.br ^bb{{[0-9]+}}({{%[0-9]+(, %[0-9]+){12} }}: i64{{(, vector<8xf32>){12}\)$}}
func.func @block(%x: tensor<?x?x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<32x64xf32>,
                 %wv: tensor<32x64xf32>, %wo: tensor<64x64xf32>, %ln1: tensor<64xf32>,
                 %w1: tensor<128x64xf32>, %w2: tensor<64x128xf32>, %w3: tensor<128x64xf32>,
                 %ln2: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %n1 = tlm.rmsnorm %x, %ln1 : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
  %q = tlm.linear %n1, %wq : tensor<?x?x64xf32>, tensor<64x64xf32> -> tensor<?x?x64xf32>
  %k = tlm.linear %n1, %wk : tensor<?x?x64xf32>, tensor<32x64xf32> -> tensor<?x?x32xf32>
  %v = tlm.linear %n1, %wv : tensor<?x?x64xf32>, tensor<32x64xf32> -> tensor<?x?x32xf32>
  %a = tlm.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e+04 : f64}
      : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x64xf32>
  %o = tlm.linear %a, %wo : tensor<?x?x64xf32>, tensor<64x64xf32> -> tensor<?x?x64xf32>
  %h = arith.addf %x, %o : tensor<?x?x64xf32>
  %n2 = tlm.rmsnorm %h, %ln2 : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
  %f = tlm.swiglu %n2, %w1, %w2, %w3 : (tensor<?x?x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<?x?x64xf32>
  %y = arith.addf %h, %f : tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}
