// RUN: tlm-opt %s --split-input-file --tlm-gpu-fuse-elementwise | FileCheck %s

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#red = affine_map<(i, j) -> (i)>

// SiLU(a) · b: the producer, used once, goes into its consumer; one
// generic is left, reading a and b.
// CHECK-LABEL: func @chain
// CHECK:         %[[R:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<?x8xf32>, tensor<?x8xf32>)
// CHECK:           arith.negf
// CHECK:           math.exp
// CHECK:           arith.mulf
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
func.func @chain(%a: tensor<?x8xf32>, %b: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %one = arith.constant 1.0 : f32
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.negf %x : f32
    %ex = math.exp %m : f32
    %d = arith.addf %ex, %one : f32
    %y = arith.divf %x, %d : f32
    linalg.yield %y : f32
  } -> tensor<?x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s, %b : tensor<?x8xf32>, tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    linalg.yield %p : f32
  } -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>

// Left as they are: a producer with two uses (it would run anyway), and
// the ops around a reduction (tlm-gpu-block-reductions knows it by its
// shape): neither its elementwise producer nor its elementwise consumer
// is fused with it.
// CHECK-LABEL: func @kept
// CHECK:         %[[SQ:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]}
// CHECK:         %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[SQ]] :
// CHECK:         %[[RMS:.*]] = linalg.generic {{.*}} ins(%[[SUM]] :
// CHECK:         %[[TWICE:.*]] = linalg.generic {{.*}} ins(%[[SQ]], %[[SQ]] :
// CHECK:         return %[[RMS]], %[[TWICE]]
func.func @kept(%a: tensor<?x8xf32>) -> (tensor<?xf32>, tensor<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %a, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<?x8xf32>
  %er = tensor.empty(%n) : tensor<?xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%sq : tensor<?x8xf32>) outs(%z : tensor<?xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<?xf32>
  %rms = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%sum : tensor<?xf32>) outs(%er : tensor<?xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.sqrt %x : f32
    linalg.yield %y : f32
  } -> tensor<?xf32>
  %twice = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sq, %sq : tensor<?x8xf32>, tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  return %rms, %twice : tensor<?xf32>, tensor<?x8xf32>
}

// -----

#xk = affine_map<(m, n, k) -> (m, k)>
#wk = affine_map<(m, n, k) -> (n, k)>
#yk = affine_map<(m, n, k) -> (m, n)>

// One zero fill (CSE's merge of two) started two projections: each gets a
// fill of an empty tensor of its own, so bufferization fills two buffers
// rather than filling one and copying it.
// CHECK-LABEL: func @shared_fill
// CHECK:         %[[E1:.*]] = tensor.empty
// CHECK:         %[[F1:.*]] = linalg.fill ins(%{{.*}}) outs(%[[E1]]
// CHECK:         %[[E2:.*]] = tensor.empty
// CHECK:         %[[F2:.*]] = linalg.fill ins(%{{.*}}) outs(%[[E2]]
// CHECK-DAG:     linalg.generic {{.*}} outs(%[[F1]] :
// CHECK-DAG:     linalg.generic {{.*}} outs(%[[F2]] :
func.func @shared_fill(%x: tensor<?x64xf32>, %w: tensor<8x64xf32>, %v: tensor<8x64xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %x, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%m) : tensor<?x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %k = linalg.generic {indexing_maps = [#xk, #wk, #yk], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x64xf32>, tensor<8x64xf32>) outs(%f : tensor<?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  %q = linalg.generic {indexing_maps = [#xk, #wk, #yk], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %v : tensor<?x64xf32>, tensor<8x64xf32>) outs(%f : tensor<?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  return %k, %q : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

#id = affine_map<(i) -> (i)>

// The fill a fused producer started from is read by nothing now: erased,
// so bufferization does not fill a buffer for it.
// CHECK-LABEL: func @dead_fill
// CHECK-NOT:     linalg.fill
// CHECK:         linalg.generic
// CHECK-NOT:     linalg.generic
func.func @dead_fill(%a: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<?xf32>) outs(%f : tensor<?xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.sqrt %x : f32
    linalg.yield %y : f32
  } -> tensor<?xf32>
  %e2 = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%s : tensor<?xf32>) outs(%e2 : tensor<?xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

#xk = affine_map<(m, n, k) -> (m, k)>
#wk = affine_map<(m, n, k) -> (n, k)>
#yk = affine_map<(m, n, k) -> (m, n)>
#id2 = affine_map<(m, n) -> (m, n)>

// A contraction keeps its operands whatever they are (upstream's fusion
// patterns would fold a splat weight into its body, and the projection
// kernels would no longer know it). A fill one op writes into and another
// reads: the writer gets a fill of its own, the reader keeps the first.
// CHECK-LABEL: func @contraction_kept
// CHECK:         %[[W:.*]] = arith.constant dense<1.000000e+00> : tensor<8x64xf32>
// CHECK:         %[[F:.*]] = linalg.fill
// CHECK:         %[[E2:.*]] = tensor.empty
// CHECK:         %[[F2:.*]] = linalg.fill ins({{.*}}) outs(%[[E2]]
// CHECK:         linalg.generic {{.*}} ins(%arg0, %[[W]] : tensor<?x64xf32>, tensor<8x64xf32>) outs(%[[F2]] :
// CHECK:         linalg.generic {{.*}} ins(%[[F]], %[[F]] :
func.func @contraction_kept(%x: tensor<?x64xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<1.0> : tensor<8x64xf32>
  %m = tensor.dim %x, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%m) : tensor<?x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %y = linalg.generic {indexing_maps = [#xk, #wk, #yk], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x64xf32>, tensor<8x64xf32>) outs(%f : tensor<?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  %e2 = tensor.empty(%m) : tensor<?x8xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%f, %f : tensor<?x8xf32>, tensor<?x8xf32>) outs(%e2 : tensor<?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  return %y, %r : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// A residual add of a projection that starts at zero: the projection
// accumulates into the residual, the add (and the fill) are gone; the
// product after it stays a kernel of its own (its producer is the
// contraction).
// CHECK-LABEL: func @residual
// CHECK-NOT:     linalg.fill
// CHECK:         %[[P:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : {{.*}}) outs(%arg2 : tensor<?x64xf32>)
// CHECK:         %[[Y:.*]] = linalg.generic {{.*}} ins(%[[P]] :
// CHECK:         return %[[Y]]
#xk = affine_map<(m, n, k) -> (m, k)>
#wk = affine_map<(m, n, k) -> (n, k)>
#yk = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
func.func @residual(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>, %r: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %x, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%m) : tensor<?x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  %p = linalg.generic {indexing_maps = [#xk, #wk, #yk], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x64xf32>, tensor<64x64xf32>) outs(%f : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %t = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  %e2 = tensor.empty(%m) : tensor<?x64xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r, %p : tensor<?x64xf32>, tensor<?x64xf32>) outs(%e2 : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  %e3 = tensor.empty(%m) : tensor<?x64xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<?x64xf32>) outs(%e3 : tensor<?x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
