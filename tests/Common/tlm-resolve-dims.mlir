// RUN: tlm-opt %s --split-input-file --tlm-resolve-dims | FileCheck %s

// The row count of a loop's collapsed result is read off the function's
// argument: the loop keeps its tensor's shape, the collapse multiplies.
// CHECK-LABEL: func.func @through_loop_and_collapse
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4xf32>, %{{.*}}: index)
// CHECK:         %[[D:.*]] = tensor.dim %[[X]], %c0
// CHECK:         %[[N:.*]] = affine.apply #{{.*}}()[%[[D]]]
// CHECK:         return %[[N]]
func.func @through_loop_and_collapse(%x: tensor<?x4xf32>, %n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%t = %x) -> (tensor<?x4xf32>) {
    %s = tensor.extract_slice %t[%i, 0] [1, 4] [1, 1]
        : tensor<?x4xf32> to tensor<1x4xf32>
    %u = tensor.insert_slice %s into %t[%i, 0] [1, 4] [1, 1]
        : tensor<1x4xf32> into tensor<?x4xf32>
    scf.yield %u : tensor<?x4xf32>
  }
  %c = tensor.collapse_shape %r [[0, 1]] : tensor<?x4xf32> into tensor<?xf32>
  %d = tensor.dim %c, %c0 : tensor<?xf32>
  return %d : index
}

// -----

// A linalg result's dim comes from the op's loop ranges, here its input's.
// CHECK-LABEL: func.func @through_linalg
// CHECK-SAME:    (%[[X:.*]]: tensor<?xf32>, %{{.*}}: index)
// CHECK:         %[[D:.*]] = tensor.dim %[[X]], %c0
// CHECK:         return %[[D]]
func.func @through_linalg(%x: tensor<?xf32>, %m: index) -> index {
  %c0 = arith.constant 0 : index
  %e = tensor.empty(%m) : tensor<?xf32>
  %y = linalg.copy ins(%x : tensor<?xf32>) outs(%e : tensor<?xf32>)
      -> tensor<?xf32>
  %d = tensor.dim %y, %c0 : tensor<?xf32>
  return %d : index
}

// -----

// A loop that yields a tensor of another size does not keep its init's
// shape: the dim of its result stays.
// CHECK-LABEL: func.func @resized_in_loop
// CHECK:         %[[R:.*]] = scf.for
// CHECK:         tensor.dim %[[R]], %c0
func.func @resized_in_loop(%x: tensor<?xf32>, %n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%t = %x) -> (tensor<?xf32>) {
    %e = tensor.empty(%i) : tensor<?xf32>
    scf.yield %e : tensor<?xf32>
  }
  %d = tensor.dim %r, %c0 : tensor<?xf32>
  return %d : index
}
