//===- DialectTest.cpp - building and verifying tlm ops from C++ ----------===//

#include "dialect/TlmDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

class DialectTest : public ::testing::Test {
protected:
  DialectTest() : builder(&ctx) {
    ctx.loadDialect<tlm::TlmDialect, func::FuncDialect>();
    module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
  }

  /// A function whose arguments have `types`; the builder points into it.
  ValueRange makeFunc(ArrayRef<Type> types) {
    auto fn = func::FuncOp::create(builder, builder.getUnknownLoc(), "f",
                                   builder.getFunctionType(types, {}));
    Block *entry = fn.addEntryBlock();
    builder.setInsertionPointToStart(entry);
    return entry->getArguments();
  }

  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder.getF32Type());
  }
  RankedTensorType i64(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder.getI64Type());
  }

  /// Verifies `op`, returning the first diagnostic message ("" if valid).
  std::string verifyMessage(Operation *op) {
    std::string message;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      if (message.empty())
        message = d.str();
      return success();
    });
    if (succeeded(verify(op)))
      return "";
    return message;
  }

  MLIRContext ctx;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
  int64_t dyn = ShapedType::kDynamic;
};

TEST_F(DialectTest, BuildsEveryOpAndVerifies) {
  Location loc = builder.getUnknownLoc();
  ValueRange a =
      makeFunc({f32({dyn, dyn, 64}), f32({128, 64}), f32({64, 128}), f32({64}),
                i64({dyn, dyn}), f32({100, 64}), f32({dyn, dyn, 32})});
  Value x = a[0], w1 = a[1], w2 = a[2], g = a[3], ids = a[4], table = a[5],
        kv = a[6];
  auto lin = tlm::LinearOp::create(builder, loc, f32({dyn, dyn, 128}), x, w1);
  auto emb =
      tlm::EmbeddingOp::create(builder, loc, f32({dyn, dyn, 64}), ids, table);
  auto norm = tlm::RMSNormOp::create(builder, loc, x.getType(), x, g,
                                     builder.getF64FloatAttr(1e-5));
  auto swi = tlm::SwiGLUOp::create(builder, loc, x.getType(), x, w1, w2, w1);
  auto ffn = tlm::SiLUFFNOp::create(builder, loc, x.getType(), x, w1, w2);
  auto rope = tlm::RoPEOp::create(builder, loc, x.getType(), x, Value(),
                                  builder.getF64FloatAttr(10000.0));
  auto attn = tlm::AttentionOp::create(builder, loc, x.getType(), x, kv, kv,
                                       Value(), builder.getI64IntegerAttr(4),
                                       builder.getI64IntegerAttr(2),
                                       builder.getF64FloatAttr(10000.0));
  auto sdpa = tlm::SDPAOp::create(builder, loc, x.getType(), x, x, x, Value(),
                                  builder.getUnitAttr());
  auto silu = tlm::SiLUOp::create(builder, loc, x.getType(), x);
  auto soft = tlm::SoftmaxOp::create(builder, loc, x.getType(), x);
  auto ce = tlm::CrossEntropyOp::create(builder, loc, f32({}), x, ids);
  func::ReturnOp::create(builder, loc);

  for (Operation *op :
       {lin.getOperation(), emb.getOperation(), norm.getOperation(),
        swi.getOperation(), ffn.getOperation(), rope.getOperation(),
        attn.getOperation(), sdpa.getOperation(), silu.getOperation(),
        soft.getOperation(), ce.getOperation()})
    EXPECT_EQ(verifyMessage(op), "") << op->getName().getStringRef().str();
  EXPECT_EQ(attn.getHeadDim(), 16);
  EXPECT_TRUE(succeeded(verify(*module)));
}

TEST_F(DialectTest, RejectsLinearWithWrongInputDim) {
  Location loc = builder.getUnknownLoc();
  ValueRange a = makeFunc({f32({4, 64}), f32({128, 32})});
  auto lin = tlm::LinearOp::create(builder, loc, f32({4, 128}), a[0], a[1]);
  EXPECT_EQ(verifyMessage(lin),
            "'tlm.linear' op expected weight dim 1 (d_in, the input's last "
            "dim) to be 64, found 32 in shape (128, 32)");
}

TEST_F(DialectTest, RejectsAttentionWithIndivisibleHeads) {
  Location loc = builder.getUnknownLoc();
  ValueRange a = makeFunc({f32({1, 8, 64}), f32({1, 8, 48})});
  auto attn = tlm::AttentionOp::create(
      builder, loc, a[0].getType(), a[0], a[1], a[1], Value(),
      builder.getI64IntegerAttr(4), builder.getI64IntegerAttr(3), nullptr);
  EXPECT_EQ(verifyMessage(attn), "'tlm.attention' op expected num_heads (4) "
                                 "to be divisible by num_kv_heads (3)");
}

TEST_F(DialectTest, RejectsOddHeadDimWithRope) {
  Location loc = builder.getUnknownLoc();
  ValueRange a = makeFunc({f32({1, 8, 12})});
  auto attn = tlm::AttentionOp::create(
      builder, loc, a[0].getType(), a[0], a[0], a[0], Value(),
      builder.getI64IntegerAttr(4), builder.getI64IntegerAttr(4),
      builder.getF64FloatAttr(10000.0));
  EXPECT_EQ(verifyMessage(attn), "'tlm.attention' op expected an even head "
                                 "dim with RoPE, found d_k 3 (12 / 4)");
}

} // namespace
