// RUN: tlm-opt %s --tlm-approximate-math | FileCheck %s
// RUN: tlm-opt %s --tlm-approximate-math=ops=exp,sin | FileCheck %s --check-prefix=SIN

// exp becomes pure arithmetic (vectorizable); sin and cos stay libm calls
// unless asked for.
// CHECK-LABEL: func.func @exp_only
// CHECK-NOT:     math.exp
// CHECK:         arith.mulf {{.*}} : vector<16xf32>
// CHECK:         arith.bitcast {{.*}} : vector<16xi32> to vector<16xf32>
// CHECK:         math.sin
// CHECK:         math.cos
// SIN-LABEL: func.func @exp_only
// SIN-NOT:     math.exp
// SIN-NOT:     math.sin
// SIN:         math.cos
func.func @exp_only(%x: vector<16xf32>, %a: f32) -> (vector<16xf32>, f32, f32) {
  %e = math.exp %x : vector<16xf32>
  %s = math.sin %a : f32
  %c = math.cos %a : f32
  return %e, %s, %c : vector<16xf32>, f32, f32
}
