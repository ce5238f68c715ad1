// RUN: tlm-opt %s --tlm-gpu-native-math | FileCheck %s

// sqrt gets the round-to-nearest NVVM intrinsic, fma and absf the LLVM
// ones; sin (no PTX instruction) and vector ops are left alone.
// CHECK-LABEL: func.func @scalars
// CHECK:         llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"(%{{.*}}) : (f32) -> f32
// CHECK:         llvm.call_intrinsic "llvm.nvvm.sqrt.rn.d"(%{{.*}}) : (f64) -> f64
// CHECK:         llvm.intr.fma
// CHECK:         llvm.intr.fabs
// CHECK:         math.sin
// CHECK:         math.sqrt %{{.*}} : vector<4xf32>
// CHECK-NOT:     math.sqrt %{{.*}} : f32
func.func @scalars(%x: f32, %y: f64, %v: vector<4xf32>) -> (f32, f64, f32, f32, f32, vector<4xf32>) {
  %a = math.sqrt %x : f32
  %b = math.sqrt %y : f64
  %c = math.fma %x, %x, %x : f32
  %d = math.absf %x : f32
  %e = math.sin %x : f32
  %f = math.sqrt %v : vector<4xf32>
  return %a, %b, %c, %d, %e, %f : f32, f64, f32, f32, f32, vector<4xf32>
}
