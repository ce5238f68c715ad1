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
// Fused Q/K/V projections choose a part's codes at run time (a select of
// casts to dynamic rows): the clamp is then that tensor's last row.
// RUN: tlm-run emit --config %examples/tiny.json --weights-dtype q8_0 --stage tlm > %t.mlir
// RUN: tlm-opt %t.mlir --tlm-cpu-pipeline="gemv-columns=1" --mlir-print-ir-after=tlm-tile-matmuls 2>&1 >/dev/null | FileCheck %s --check-prefix=FUSED
// FUSED:      %[[CODES:.*]] = bufferization.to_buffer %[[PART:.*]] read_only : tensor<?x64xi8>
// FUSED-NEXT: %[[ROWS:.*]] = tensor.dim %[[PART]], %c0 : tensor<?x64xi8>
// FUSED-NEXT: %[[LAST:.*]] = arith.subi %[[ROWS]], %c1 : index
// FUSED-NEXT: %[[AHEAD:.*]] = arith.addi %{{.*}}, %c128 : index
// FUSED-NEXT: %[[ROW:.*]] = arith.minui %[[AHEAD]], %[[LAST]] : index
// FUSED-NEXT: memref.prefetch %[[CODES]][%[[ROW]], %c0]

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
