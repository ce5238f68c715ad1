// RUN: tlm-opt %s --split-input-file --tlm-serialize-small-parallel="min-work=1024" | FileCheck %s
// RUN: tlm-opt %s --split-input-file --tlm-serialize-small-parallel="min-work=1024 max-versioned-ops=2" | FileCheck %s --check-prefix=NOVERSION
// Options out of range are one diagnostic, not a crash.
// RUN: not tlm-opt %s --split-input-file --tlm-serialize-small-parallel=min-work=-1 2>&1 | FileCheck %s --check-prefix=BADOPT
// BADOPT: error: tlm-serialize-small-parallel: min-work must be >= 0, got -1

// 16 rows of one 8-lane read and write (+ the terminator): 16 x 17
// element operations, all static, below 1024: a for nest.
// CHECK-LABEL: func.func @static_small
// CHECK-NOT:     scf.parallel
// CHECK:         scf.for %{{.*}} = %c0 to %c16 step %c1 {
// CHECK:           vector.transfer_read
func.func @static_small(%a: memref<16x8xf32>, %b: memref<16x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %pad = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    %v = vector.transfer_read %a[%i, %c0], %pad : memref<16x8xf32>, vector<8xf32>
    vector.transfer_write %v, %b[%i, %c0] : vector<8xf32>, memref<16x8xf32>
  }
  return
}

// -----

// 64 rows of 17: 1088, enough for threads.
// CHECK-LABEL: func.func @static_big
// CHECK-NOT:     scf.if
// CHECK:         scf.parallel
func.func @static_big(%a: memref<64x8xf32>, %b: memref<64x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %v = vector.transfer_read %a[%i, %c0], %pad : memref<64x8xf32>, vector<8xf32>
    vector.transfer_write %v, %b[%i, %c0] : vector<8xf32>, memref<64x8xf32>
  }
  return
}

// -----

// Rows known at run time: the estimate (rows x 17) is computed in front of
// the loop, which runs in parallel from 1024 on and as a for nest below.
// Too big to duplicate (max-versioned-ops), it stays parallel.
// CHECK-LABEL: func.func @dynamic
// CHECK:         %[[WORK:.*]] = arith.muli %[[N:.*]], %c17 : index
// CHECK:         %[[BIG:.*]] = arith.cmpi sge, %[[WORK]], %c1024 : index
// CHECK:         scf.if %[[BIG]] {
// CHECK:           scf.parallel (%{{.*}}) = (%c0) to (%[[N]]) step (%c1) {
// CHECK:         } else {
// CHECK:           scf.for %{{.*}} = %c0 to %[[N]] step %c1 {
// NOVERSION-LABEL: func.func @dynamic
// NOVERSION-NOT:     scf.if
// NOVERSION:         scf.parallel
func.func @dynamic(%a: memref<?x8xf32>, %b: memref<?x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %pad = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = vector.transfer_read %a[%i, %c0], %pad : memref<?x8xf32>, vector<8xf32>
    vector.transfer_write %v, %b[%i, %c0] : vector<8xf32>, memref<?x8xf32>
  }
  return
}

// -----

// An inner loop whose bound is computed inside the region from values
// defined before it (a peeled tile's full rows) is counted at run time: the
// pure computation is cloned in front of the loop. A branch on such a
// value counts the side it takes.
// CHECK-LABEL: func.func @hoisted
// CHECK:         %[[FULL:.*]] = arith.muli %{{.*}}, %c6 : index
// CHECK:         %[[ANY:.*]] = arith.cmpi sgt, %[[FULL]], %c0 : index
// CHECK:         arith.select %[[ANY]]
// CHECK:         arith.cmpi sge, %{{.*}}, %c1024 : index
// CHECK:         scf.if
// CHECK:           scf.parallel
// CHECK:         } else {
// CHECK:           scf.for
func.func @hoisted(%a: memref<?x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %pad = arith.constant 0.0 : f32
  scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
    %q = arith.divui %n, %c6 : index
    %full = arith.muli %q, %c6 : index
    %any = arith.cmpi sgt, %full, %c0 : index
    scf.if %any {
      scf.for %i = %c0 to %full step %c1 {
        %v = vector.transfer_read %a[%i, %c0], %pad : memref<?x8xf32>, vector<8xf32>
        vector.transfer_write %v, %a[%i, %c0] : vector<8xf32>, memref<?x8xf32>
      }
    }
  }
  return
}

// -----

// Loops with reductions are left alone (they have results).
// CHECK-LABEL: func.func @reduction
// CHECK:         scf.parallel {{.*}} init
func.func @reduction(%buf: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %s = scf.parallel (%i) = (%c0) to (%c4) step (%c1) init (%zero) -> f32 {
    %v = memref.load %buf[%i] : memref<4xf32>
    scf.reduce(%v : f32) {
    ^bb0(%x: f32, %y: f32):
      %r = arith.addf %x, %y : f32
      scf.reduce.return %r : f32
    }
  }
  return %s : f32
}

// -----

// A copy (or a call) counts as more than any threshold.
// CHECK-LABEL: func.func @copy
// CHECK-NOT:     scf.if
// CHECK:         scf.parallel
func.func @copy(%a: memref<2x?xf32>, %b: memref<2x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.parallel (%i) = (%c0) to (%c2) step (%c1) {
    %s = memref.subview %a[%i, 0] [1, 1] [1, 1] : memref<2x?xf32> to memref<1x1xf32, strided<[?, 1], offset: ?>>
    %t = memref.subview %b[%i, 0] [1, 1] [1, 1] : memref<2x?xf32> to memref<1x1xf32, strided<[?, 1], offset: ?>>
    memref.copy %s, %t : memref<1x1xf32, strided<[?, 1], offset: ?>> to memref<1x1xf32, strided<[?, 1], offset: ?>>
  }
  return
}
