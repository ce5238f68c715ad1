// RUN: tlm-opt %s --tlm-lower-lookup | FileCheck %s
// RUN: tlm-opt %s --tlm-lower-lookup | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR

// Each tlm.lookup becomes AVX-512's vpermps intrinsic, table first.
// CHECK-LABEL: llvm.func @lookups
// CHECK-NOT:     tlm.lookup
// CHECK:         %[[A:.*]] = llvm.call_intrinsic "llvm.x86.avx512.permvar.sf.512"(%arg0, %arg1) : (vector<16xf32>, vector<16xi32>) -> vector<16xf32>
// CHECK:         %[[B:.*]] = llvm.call_intrinsic "llvm.x86.avx512.permvar.sf.512"(%arg0, %arg2) : (vector<16xf32>, vector<16xi32>) -> vector<16xf32>
// CHECK:         llvm.fadd %[[A]], %[[B]]
// LLVMIR: call <16 x float> @llvm.x86.avx512.permvar.sf.512(<16 x float> %0, <16 x i32> %1)
llvm.func @lookups(%table: vector<16xf32>, %i: vector<16xi32>, %j: vector<16xi32>) -> vector<16xf32> {
  %a = tlm.lookup %table[%i] : vector<16xf32>, vector<16xi32>
  %b = tlm.lookup %table[%j] : vector<16xf32>, vector<16xi32>
  %c = llvm.fadd %a, %b : vector<16xf32>
  llvm.return %c : vector<16xf32>
}

// Each tlm.dot_u8s8 becomes AVX512-VNNI's vpdpbusd intrinsic: the
// accumulator, the unsigned bytes, the signed bytes.
// CHECK-LABEL: llvm.func @dots
// CHECK-NOT:     tlm.dot_u8s8
// CHECK:         %[[S:.*]] = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%arg0, %arg1, %arg2) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// CHECK:         llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%[[S]], %arg2, %arg1)
// LLVMIR: call <16 x i32> @llvm.x86.avx512.vpdpbusd.512(<16 x i32> %0, <64 x i8> %1, <64 x i8> %2)
llvm.func @dots(%acc: vector<16xi32>, %a: vector<64xi8>, %b: vector<64xi8>) -> vector<16xi32> {
  %s = tlm.dot_u8s8 %acc, %a, %b : vector<16xi32>, vector<64xi8>
  %t = tlm.dot_u8s8 %s, %b, %a : vector<16xi32>, vector<64xi8>
  llvm.return %t : vector<16xi32>
}
