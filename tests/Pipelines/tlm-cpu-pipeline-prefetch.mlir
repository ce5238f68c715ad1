// prefetch-codes (a switch, on by default): a q8_0 projection's one-column
// GEMV blocks prefetch the codes ahead, through a read-only to_buffer that
// bufferization folds into the codes' own buffer, down to LLVM's prefetch
// intrinsic (read, locality 3, data). Only when the GEMV streams W (one
// column a block, which the JIT picks for weights larger than the cache);
// 8 columns, or the switch off, prefetch nothing.
// RUN: tlm-opt %s --tlm-cpu-pipeline="gemv-columns=1" | FileCheck %s
// RUN: tlm-opt %s --tlm-cpu-pipeline="gemv-columns=8" | FileCheck %s --check-prefix=NONE
// RUN: tlm-opt %s --tlm-cpu-pipeline="gemv-columns=1 prefetch-codes=false" | FileCheck %s --check-prefix=NONE
// RUN: tlm-opt %s --tlm-cpu-pipeline="gemv-columns=1" | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR

// A 256-byte row is 4 lines.
// CHECK-LABEL: llvm.func linkonce_odr @q8_0(
// CHECK-NOT:     bufferization.to_buffer
// CHECK-COUNT-4: llvm.intr.prefetch"(%{{.*}}) <{cache = 1 : i32, hint = 3 : i32, rw = 0 : i32}>
// CHECK-NOT:     llvm.intr.prefetch
// NONE-NOT:      prefetch
// LLVMIR: call void @llvm.prefetch.p0(ptr %{{.*}}, i32 0, i32 3, i32 1)
func.func @q8_0(%x: tensor<?x256xf32>, %q: tensor<64x256xi8>, %s: tensor<64x8xf32>) -> tensor<?x64xf32> {
  %w = tlm.dequantize %q, %s {bits = 8 : i64} : tensor<64x256xi8>, tensor<64x8xf32> -> tensor<64x256xf32>
  %y = tlm.linear %x, %w : tensor<?x256xf32>, tensor<64x256xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
