// compute=bf16 (--compute bf16): the packed tiles' x86vector.avx512.dot
// reaches LLVM as AVX512-BF16's dpbf16ps intrinsic (convert-vector-to-llvm
// with enable-x86vector); the default (f32) has none.
// RUN: tlm-opt %s --tlm-cpu-pipeline="compute=bf16" | FileCheck %s
// RUN: tlm-opt %s --tlm-cpu-pipeline="compute=bf16" | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR
// RUN: tlm-opt %s --tlm-cpu-pipeline | FileCheck %s --check-prefix=F32

// CHECK-LABEL: llvm.func linkonce_odr @bf16(
// CHECK-NOT:     x86vector
// CHECK:         llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// LLVMIR: call <16 x float> @llvm.x86.avx512bf16.dpbf16ps.512(<16 x float>
// F32-NOT: dpbf16ps
func.func @bf16(%x: tensor<?x256xf32>, %w: tensor<64x256xbf16>) -> tensor<?x64xf32> {
  %y = tlm.linear %x, %w : tensor<?x256xf32>, tensor<64x256xbf16> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
