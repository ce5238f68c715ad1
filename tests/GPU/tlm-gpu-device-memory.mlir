// RUN: tlm-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(tlm-gpu-device-memory))' | FileCheck %s

// Temporaries move to device memory with the same lifetimes; copies become
// linalg.copy (a kernel later), never a host loop.
// CHECK-LABEL: func.func @temporaries
// CHECK-NOT:     memref.alloc
// CHECK:         %[[T:.*]] = gpu.alloc (%{{.*}}) : memref<?x64xf32>
// CHECK:         linalg.copy ins(%{{.*}} : memref<?x64xf32>) outs(%[[T]] : memref<?x64xf32>)
// CHECK:         linalg.copy ins(%[[T]] : memref<?x64xf32>) outs(%{{.*}} : memref<?x64xf32>)
// CHECK:         gpu.dealloc %[[T]] : memref<?x64xf32>
// CHECK-NOT:     memref.copy
// CHECK-NOT:     memref.dealloc
func.func @temporaries(%a: memref<?x64xf32>, %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %a, %c0 : memref<?x64xf32>
  %t = memref.alloc(%n) : memref<?x64xf32>
  memref.copy %a, %t : memref<?x64xf32> to memref<?x64xf32>
  memref.copy %t, %out : memref<?x64xf32> to memref<?x64xf32>
  memref.dealloc %t : memref<?x64xf32>
  return
}

// -----

// Nothing to move: the function is left as it is.
// CHECK-LABEL: func.func @no_buffers
// CHECK-NEXT:    return
func.func @no_buffers(%a: memref<4xf32>) {
  return
}

// -----

// A stack buffer would live in host memory: refused.
func.func @stack(%a: memref<4xf32>) {
  // expected-error @+1 {{would leave data in host memory on the GPU path}}
  %t = memref.alloca() : memref<4xf32>
  return
}
