// RUN: tlm-opt %s --tlm-allow-inlining | FileCheck %s
// RUN: tlm-opt %s --tlm-allow-inlining --inline --symbol-dce | FileCheck %s --check-prefix=INLINED
// RUN: tlm-opt %s --inline | FileCheck %s --check-prefix=KEPT

// CHECK-LABEL: func.func private @block
// CHECK-NOT:     no_inline
// CHECK-NOT:     passthrough
// INLINED-NOT:   func.func private @block
// INLINED-LABEL: func.func @entry
// INLINED-NOT:     call
// INLINED:         arith.addf
// Without the pass, the marks keep the call.
// KEPT-LABEL:    func.func @entry
// KEPT:            call @block
func.func private @block(%x: f32) -> f32 attributes {no_inline, passthrough = ["noinline"]} {
  %y = arith.addf %x, %x : f32
  return %y : f32
}
func.func @entry(%x: f32) -> f32 {
  %y = call @block(%x) : (f32) -> f32
  return %y : f32
}
