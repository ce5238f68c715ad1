// RUN: tlm-opt %s --split-input-file --tlm-vectorize-elementwise --canonicalize | FileCheck %s
// RUN: tlm-opt %s --split-input-file --tlm-vectorize-elementwise=threads=2 --canonicalize | FileCheck %s --check-prefix=THREADS

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

// An elementwise op with dynamic rows and a static innermost dim of 64:
// rows one at a time, 16 lanes at a time, as vector<1x16xf32> ops; the
// broadcast operand (a per-column scale) is read along the lanes.
// CHECK-LABEL: func.func @scale_add
// CHECK:         scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// CHECK:           scf.for %{{.*}} = %c0 to %c64 step %c16
// CHECK:             vector.transfer_read {{.*}} : tensor<?x64xf32>, vector<1x16xf32>
// CHECK:             arith.mulf {{.*}} : vector<1x16xf32>
// CHECK:             arith.addf {{.*}} : vector<1x16xf32>
// CHECK:             vector.transfer_write {{.*}} : vector<1x16xf32>, tensor<?x64xf32>
// CHECK-NOT:     linalg.generic
// With threads, the blocks are the iterations of one forall (an OpenMP
// loop later), each writing its own 1 x 16 slice.
// THREADS-LABEL: func.func @scale_add
// THREADS:         scf.forall (%[[R:.*]], %[[C:.*]]) = (0, 0) to (%{{.*}}, 64) step (1, 16)
// THREADS:           arith.mulf {{.*}} : vector<1x16xf32>
// THREADS:           scf.forall.in_parallel
// THREADS:             tensor.parallel_insert_slice %{{.*}}[%[[R]], %[[C]]] [1, 16]
// THREADS-NOT:   scf.for %
func.func @scale_add(%a: tensor<?x64xf32>, %b: tensor<?x64xf32>,
                     %g: tensor<64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %a, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%m) : tensor<?x64xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #col, #id],
                       iterator_types = ["parallel", "parallel"]}
         ins(%a, %b, %g : tensor<?x64xf32>, tensor<?x64xf32>, tensor<64xf32>)
         outs(%e : tensor<?x64xf32>) {
  ^bb0(%x: f32, %z: f32, %s: f32, %o: f32):
    %p = arith.mulf %x, %s : f32
    %q = arith.addf %p, %z : f32
    linalg.yield %q : f32
  } -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Left alone: a reduction (RMSNorm's sum of squares) and an innermost dim
// that is not a multiple of 16.
// CHECK-LABEL: func.func @not_elementwise
// CHECK-NOT:     vector.
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-NOT:     vector.
func.func @not_elementwise(%a: tensor<?x64xf32>, %r: tensor<?xf32>,
                           %b: tensor<?x24xf32>)
    -> (tensor<?xf32>, tensor<?x24xf32>) {
  %sum = linalg.generic {indexing_maps = [#id, #row],
                         iterator_types = ["parallel", "reduction"]}
           ins(%a : tensor<?x64xf32>) outs(%r : tensor<?xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %sq = arith.mulf %x, %x : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  %c0 = arith.constant 0 : index
  %m = tensor.dim %b, %c0 : tensor<?x24xf32>
  %e = tensor.empty(%m) : tensor<?x24xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id],
                         iterator_types = ["parallel", "parallel"]}
           ins(%b : tensor<?x24xf32>) outs(%e : tensor<?x24xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<?x24xf32>
  return %sum, %neg : tensor<?xf32>, tensor<?x24xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// The residual add as the lowering writes it, into one of its inputs
// (outs(%a)) without reading it: the blocks write a fresh tensor.empty
// instead, so bufferization does not copy %a first.
// CHECK-LABEL: func.func @unread_output
// CHECK-SAME:    (%[[A:[^:]*]]: tensor<?x32xf32>
// CHECK:         %[[E:.*]] = tensor.empty(%{{.*}}) : tensor<?x32xf32>
// CHECK:         scf.for {{.*}} iter_args(%{{.*}} = %[[E]])
// CHECK:           arith.addf {{.*}} : vector<1x16xf32>
// THREADS-LABEL: func.func @unread_output
// THREADS:         %[[E:.*]] = tensor.empty(%{{.*}}) : tensor<?x32xf32>
// THREADS:         scf.forall {{.*}} shared_outs(%{{.*}} = %[[E]])
func.func @unread_output(%a: tensor<?x32xf32>, %b: tensor<?x32xf32>)
    -> tensor<?x32xf32> {
  %y = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
         ins(%a, %b : tensor<?x32xf32>, tensor<?x32xf32>)
         outs(%a : tensor<?x32xf32>) {
  ^bb0(%x: f32, %z: f32, %o: f32):
    %s = arith.addf %x, %z : f32
    linalg.yield %s : f32
  } -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
