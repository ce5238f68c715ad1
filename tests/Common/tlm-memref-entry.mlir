// RUN: tlm-opt %s --split-input-file --tlm-memref-entry --verify-diagnostics | FileCheck %s

// Tensor arguments become memrefs read through to_tensor; the result becomes
// an appended output memref filled by materialize_in_destination.
// CHECK-LABEL: func.func @entry
// CHECK-SAME: (%[[X:[^:]*]]: memref<?x4xf32>, %[[OUT:[^:]*]]: memref<?x4xf32>)
// CHECK-SAME: attributes {llvm.emit_c_interface, llvm.linkage = #llvm.linkage<linkonce_odr>, passthrough = ["alwaysinline"]}
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[X]] restrict : memref<?x4xf32> to tensor<?x4xf32>
// CHECK: %[[S:.*]] = tlm.silu %[[T]]
// CHECK: bufferization.materialize_in_destination %[[S]] in restrict writable %[[OUT]]
// CHECK: return{{$}}
func.func @entry(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %s = tlm.silu %x : tensor<?x4xf32>
  return %s : tensor<?x4xf32>
}

// Private helpers keep their tensor signature: only entry points change.
// CHECK-LABEL: func.func private @helper
// CHECK-SAME: (%{{.*}}: tensor<2xf32>) -> tensor<2xf32>
func.func private @helper(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}

// -----

// A non-tensor argument cannot be passed by the JIT: a clear error.
// expected-error @+1 {{entry point 'scalar' has a non-tensor argument or result 'f32'; the JIT ABI takes ranked tensors only}}
func.func @scalar(%x: f32) -> f32 {
  return %x : f32
}
