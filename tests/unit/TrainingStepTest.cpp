//===- TrainingStepTest.cpp - the compiled optimizer vs CS336's data ------===//
//
// tlm.adamw and tlm.global_norm compiled and run against CS336's
// conformance data (data/conformance/cs336/training): 1000 updates of a 2x3
// weight in both AdamW forms, and clipping by the global norm. The
// gradients of the AdamW case are the host's, as in TrainingReferenceTest;
// everything the optimizer does is the compiled code's.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/JitTestUtil.h"
#include "tests/unit/TrainingData.h"


using namespace tlm;
using namespace tlm::test;

namespace {

/// `@name(p, g, m, v, lr, step, norm) -> (p', m', v')` of one tlm.adamw on
/// `shape` with `attrs`.
std::string adamwEntry(const std::string &name, const std::string &shape,
                       const std::string &attrs) {
  std::string t = "tensor<" + shape + "xf32>", s = "tensor<f32>";
  return "func.func @" + name + "(%p: " + t + ", %g: " + t + ", %m: " + t +
         ", %v: " + t + ", %lr: " + s + ", %t: " + s + ", %n: " + s +
         ") -> (" + t + ", " + t + ", " + t + ") {\n" +
         "  %r:3 = tlm.adamw %p, %g, %m, %v, %lr, %t, %n " + attrs + " : (" +
         t + ", " + t + ", " + t + ", " + t + ", " + s + ", " + s + ", " + s +
         ") -> (" + t + ", " + t + ", " + t + ")\n" +
         "  return %r#0, %r#1, %r#2 : " + t + ", " + t + ", " + t + "\n}\n";
}

/// CS336's test_adamw with the compiled update: W (2x3) fitted to
/// y = [x0 + x1, -x2] under loss sum((y - W x)^2), one input a step, the
/// parameter and moments updated in place (each buffer both the entry's
/// input and its output, as the training step runs).
std::vector<float> runAdamW(runtime::Jit &jit, const std::string &entry,
                            const io::SafeTensors &st) {
  std::vector<float> w = f32Tensor(st, "initial_weight");
  std::vector<float> inputs = f32Tensor(st, "inputs");
  std::vector<float> m(6, 0), v(6, 0), g(6);
  float lr = 1e-3f, norm = 0;
  for (int64_t t = 1; t <= 1000; ++t) {
    cs336AdamwGradient(w, &inputs[(t - 1) * 3], g);
    float step = float(t);
    std::vector<runtime::TensorRef> args{
        {w.data(), {2, 3}}, {g.data(), {2, 3}}, {m.data(), {2, 3}},
        {v.data(), {2, 3}}, {&lr, {}},          {&step, {}},
        {&norm, {}},        {w.data(), {2, 3}}, {m.data(), {2, 3}},
        {v.data(), {2, 3}}};
    llvm::Error err = jit.call(entry, args);
    EXPECT_FALSE(bool(err)) << llvm::toString(std::move(err));
  }
  return w;
}

TEST(TrainingStep, AdamWReproducesCs336AndTorch) {
  auto st = io::SafeTensors::open(trainingFile("adamw.safetensors"));
  ASSERT_TRUE(bool(st)) << st.takeError().message();
  std::string attrs = "{beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = "
                      "1.0e-08 : f64, weight_decay = 0.01 : f64, max_norm = "
                      "0.0 : f64";
  std::unique_ptr<mlir::MLIRContext> ctx = makeContext();
  std::unique_ptr<runtime::Jit> jit =
      compileText(*ctx, adamwEntry("cs336", "2x3", attrs + "}") +
                            adamwEntry("torch", "2x3", attrs + ", torch_form}"));
  ASSERT_TRUE(jit);
  std::vector<float> cs336 = runAdamW(*jit, "cs336", *st);
  std::vector<float> torch = runAdamW(*jit, "torch", *st);
  EXPECT_TRUE(
      allClose(cs336, f32Tensor(*st, "expected_cs336"), tol::kOptimizer));
  EXPECT_TRUE(
      allClose(torch, f32Tensor(*st, "expected_torch_adamw"), tol::kOptimizer));
  // The forms differ (by 5.4e-6): each check above can fail.
  EXPECT_FALSE(allClose(cs336, f32Tensor(*st, "expected_torch_adamw"),
                        Tolerance{1e-7, 0.0}));
}

/// Clipping as the step does it: the norm over every gradient, then each
/// gradient scaled inside tlm.adamw. With β1 = 0, lr = 0 and no decay, the
/// new first moment is the clipped gradient itself.
TEST(TrainingStep, ClippingByTheGlobalNorm) {
  auto st = io::SafeTensors::open(trainingFile("gradient_clipping.safetensors"));
  ASSERT_TRUE(bool(st)) << st.takeError().message();
  std::string t = "tensor<5x5xf32>", text = "func.func @norm(";
  for (int i = 0; i < 5; ++i)
    text += (i ? ", %g" : "%g") + std::to_string(i) + ": " + t;
  text += ") -> tensor<f32> {\n  %n = tlm.global_norm %g0, %g1, %g2, %g3, %g4"
          " : " + t + ", " + t + ", " + t + ", " + t + ", " + t +
          " -> tensor<f32>\n  return %n : tensor<f32>\n}\n";
  text += adamwEntry("clip", "5x5",
                     "{beta1 = 0.0 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 "
                     ": f64, weight_decay = 0.0 : f64, max_norm = 1.0e-02 : "
                     "f64}");
  std::unique_ptr<mlir::MLIRContext> ctx = makeContext();
  std::unique_ptr<runtime::Jit> jit = compileText(*ctx, text);
  ASSERT_TRUE(jit);
  for (std::string set : {"ones", "random"}) {
    SCOPED_TRACE(set);
    std::vector<std::vector<float>> grads;
    for (int i = 0; i < 5; ++i)
      grads.push_back(set == "ones" ? std::vector<float>(25, 1.0f)
                                    : f32Tensor(*st, "random.grad" +
                                                      std::to_string(i)));
    float norm = 0;
    std::vector<runtime::TensorRef> args;
    for (auto &g : grads)
      args.push_back({g.data(), {5, 5}});
    args.push_back({&norm, {}});
    ASSERT_FALSE(bool(jit->call("norm", args)));
    EXPECT_NEAR(norm, set == "ones" ? std::sqrt(125.0) : 10.426177024841309,
                1e-5);
    for (int i = 0; i < 5; ++i) {
      std::vector<float> p(25, 0), m(25, 0), v(25, 0), newP(25), newM(25),
          newV(25);
      float lr = 0, step = 1;
      std::vector<runtime::TensorRef> a{
          {p.data(), {5, 5}},    {grads[i].data(), {5, 5}},
          {m.data(), {5, 5}},    {v.data(), {5, 5}},
          {&lr, {}},             {&step, {}},
          {&norm, {}},           {newP.data(), {5, 5}},
          {newM.data(), {5, 5}}, {newV.data(), {5, 5}}};
      ASSERT_FALSE(bool(jit->call("clip", a)));
      EXPECT_TRUE(allClose(newM,
                           f32Tensor(*st, set + ".clipped" + std::to_string(i)),
                           tol::kClip));
    }
  }
}

} // namespace
