// compute=int8 (--compute int8): a q8_0 projection's packed tiles quantize
// x per block and multiply with tlm.dot_u8s8, which tlm-lower-lookup turns
// into AVX512-VNNI's vpdpbusd intrinsic; f32 compute has none.
// RUN: tlm-opt %s --tlm-cpu-pipeline="compute=int8" | FileCheck %s
// RUN: tlm-opt %s --tlm-cpu-pipeline="compute=int8" | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR
// RUN: tlm-opt %s --tlm-cpu-pipeline | FileCheck %s --check-prefix=F32

// CHECK-LABEL: llvm.func linkonce_odr @q8_0(
// CHECK-NOT:     tlm.dot_u8s8
// CHECK:         llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// LLVMIR: call <16 x i32> @llvm.x86.avx512.vpdpbusd.512(<16 x i32>
// F32-NOT: vpdpbusd
func.func @q8_0(%x: tensor<?x256xf32>, %q: tensor<64x256xi8>, %s: tensor<64x8xf32>) -> tensor<?x64xf32> {
  %w = tlm.dequantize %q, %s {bits = 8 : i64} : tensor<64x256xi8>, tensor<64x8xf32> -> tensor<64x256xf32>
  %y = tlm.linear %x, %w : tensor<?x256xf32>, tensor<64x256xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// Decode's one row: the int8 GEMV, which takes one column a block and
// prefetches its codes whatever the GEMV columns (8 here, the pipeline's
// default for cached weights); f32's q8_0 blocks take those 8 columns and
// no prefetch.
// CHECK-LABEL: llvm.func linkonce_odr @q8_0_row(
// CHECK:         "llvm.intr.prefetch"
// CHECK:         llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// F32-LABEL: llvm.func linkonce_odr @q8_0_row(
// F32-NOT:     prefetch
// F32:         llvm.return
func.func @q8_0_row(%x: tensor<1x256xf32>, %q: tensor<64x256xi8>, %s: tensor<64x8xf32>) -> tensor<1x64xf32> {
  %w = tlm.dequantize %q, %s {bits = 8 : i64} : tensor<64x256xi8>, tensor<64x8xf32> -> tensor<64x256xf32>
  %y = tlm.linear %x, %w : tensor<1x256xf32>, tensor<64x256xf32> -> tensor<1x64xf32>
  return %y : tensor<1x64xf32>
}
