// RUN: tlm-opt %s --split-input-file --tlm-serialize-nested-parallel | FileCheck %s

// A parallel loop inside another becomes a for nest (one scf.for per
// dimension); the outer one stays parallel.
// CHECK-LABEL: func.func @nested
// CHECK:         scf.parallel (%[[I:.*]]) = (%c0) to (%{{.*}}) step (%c1) {
// CHECK-NOT:       scf.parallel
// CHECK:           scf.for %[[J:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK:             scf.for %[[K:.*]] = %c0 to %c4 step %c1 {
// CHECK:               memref.store %{{.*}}, %{{.*}}[%[[I]], %[[J]], %[[K]]]
func.func @nested(%buf: memref<?x?x4xf32>, %n: index, %m: index, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.parallel (%j, %k) = (%c0, %c0) to (%m, %c4) step (%c1, %c1) {
      memref.store %x, %buf[%i, %j, %k] : memref<?x?x4xf32>
    }
  }
  return
}

// -----

// Outermost parallel loops (one after another, or under a for) stay.
// CHECK-LABEL: func.func @outermost
// CHECK:         scf.parallel
// CHECK:         scf.for
// CHECK-NEXT:      scf.parallel
func.func @outermost(%buf: memref<?xf32>, %n: index, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %x, %buf[%i] : memref<?xf32>
  }
  scf.for %t = %c0 to %n step %c1 {
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      memref.store %x, %buf[%i] : memref<?xf32>
    }
  }
  return
}

// -----

// A nested loop with a reduction stays parallel (it has results).
// CHECK-LABEL: func.func @nested_reduction
// CHECK:         scf.parallel
// CHECK:           scf.parallel {{.*}} init
func.func @nested_reduction(%buf: memref<?x?xf32>, %out: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %s = scf.parallel (%j) = (%c0) to (%n) step (%c1) init (%zero) -> f32 {
      %v = memref.load %buf[%i, %j] : memref<?x?xf32>
      scf.reduce(%v : f32) {
      ^bb0(%a: f32, %b: f32):
        %r = arith.addf %a, %b : f32
        scf.reduce.return %r : f32
      }
    }
    memref.store %s, %out[%i] : memref<?xf32>
  }
  return
}
