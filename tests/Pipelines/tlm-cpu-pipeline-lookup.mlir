// lookup-nibbles (a switch, on by default): a q4_0 projection's one-column
// GEMV looks its nibbles up with AVX-512's vpermps, which reaches LLVM as
// its intrinsic (tlm-lower-lookup runs after buffer deallocation). Only
// for a target with AVX-512 (the pipeline's avx512, which the JIT sets
// from the CPU's features): without it, or with the switch off, the
// split-k form. Whatever the GEMV's columns: lookup blocks take one each.
// RUN: tlm-opt %s --tlm-cpu-pipeline="gemv-columns=1" | FileCheck %s
// RUN: tlm-opt %s --tlm-cpu-pipeline="gemv-columns=8" | FileCheck %s
// RUN: tlm-opt %s --tlm-cpu-pipeline="gemv-columns=1" | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR
// RUN: tlm-opt %s --tlm-cpu-pipeline="gemv-columns=1 avx512=false" | FileCheck %s --check-prefix=NONE
// RUN: tlm-opt %s --tlm-cpu-pipeline="gemv-columns=1 lookup-nibbles=false" | FileCheck %s --check-prefix=NONE

// 256 weights are two chunks of 8 lookups each; the loop over them may be
// unrolled.
// CHECK-LABEL: llvm.func linkonce_odr @q4_0(
// CHECK-NOT:     tlm.lookup
// CHECK:         llvm.call_intrinsic "llvm.x86.avx512.permvar.sf.512"
// LLVMIR: call <16 x float> @llvm.x86.avx512.permvar.sf.512(
// NONE-NOT: permvar
// NONE-NOT: tlm.lookup
func.func @q4_0(%x: tensor<?x256xf32>, %q: tensor<64x128xi8>, %s: tensor<64x8xf32>) -> tensor<?x64xf32> {
  %w = tlm.dequantize %q, %s {bits = 4 : i64} : tensor<64x128xi8>, tensor<64x8xf32> -> tensor<64x256xf32>
  %y = tlm.linear %x, %w : tensor<?x256xf32>, tensor<64x256xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
