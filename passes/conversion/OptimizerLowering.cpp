//===- OptimizerLowering.cpp - tlm.global_norm and tlm.adamw to linalg ----===//
//
// The optimizer's ops: a reduction per tensor for the global norm, and one
// elementwise pass per parameter for AdamW (reading p, g, m, v once and
// writing p', m', v'), its scalars (bias corrections, the clipping scale)
// computed once before it in f64, as the plain C++ reference does.
//
//===----------------------------------------------------------------------===//

#include "dialect/TlmDialect.h"
#include "passes/common/Builders.h"
#include "passes/conversion/PopulatePatterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::tlm;

namespace {

/// Σ x² over every element of `x`, in f64, as a scalar.
Value sumOfSquares(OpBuilder &b, Location loc, Value x) {
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  Type f64 = b.getF64Type();
  Value acc = filledTensor(b, loc, {}, f64, 0.0);
  SmallVector<utils::IteratorType> iters(rank,
                                         utils::IteratorType::reduction);
  Value sum = genericOp(
      b, loc, ValueRange{x}, acc,
      {b.getMultiDimIdentityMap(rank), AffineMap::get(rank, 0, b.getContext())},
      iters, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value v = arith::ExtFOp::create(nb, l, f64, a[0]);
        Value sq = arith::MulFOp::create(nb, l, v, v);
        return arith::AddFOp::create(nb, l, a[1], sq).getResult();
      });
  return tensor::ExtractOp::create(b, loc, sum, ValueRange{});
}

struct LowerGlobalNorm : OpRewritePattern<GlobalNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GlobalNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value total;
    for (Value x : op.getInputs()) {
      Value s = sumOfSquares(rewriter, loc, x);
      total = total ? arith::AddFOp::create(rewriter, loc, total, s) : s;
    }
    Value norm = arith::TruncFOp::create(rewriter, loc, rewriter.getF32Type(),
                                         math::SqrtOp::create(rewriter, loc,
                                                              total));
    rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(op, op.getType(),
                                                        ValueRange{norm});
    return success();
  }
};

/// The scalars of one update, in f32 for the elementwise body.
struct AdamWScalars {
  Value clip;           ///< the gradient's scale (1 when not clipped)
  Value beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps;
  Value decay;          ///< lr·λ
  Value alpha;          ///< CS336: lr·sqrt(1 − β2^t)/(1 − β1^t)
  Value rate, sqrtBias2; ///< PyTorch: lr/(1 − β1^t), sqrt(1 − β2^t)
};

AdamWScalars adamwScalars(OpBuilder &b, Location loc, AdamWOp op) {
  Type f32 = b.getF32Type(), f64 = b.getF64Type();
  auto scalar = [&](Value t) -> Value {
    Value x = tensor::ExtractOp::create(b, loc, t, ValueRange{});
    return arith::ExtFOp::create(b, loc, f64, x);
  };
  auto c64 = [&](double v) -> Value { return floatConst(b, loc, f64, v); };
  auto to32 = [&](Value v) {
    return arith::TruncFOp::create(b, loc, f32, v).getResult();
  };
  double beta1 = op.getBeta1().convertToDouble();
  double beta2 = op.getBeta2().convertToDouble();
  Value lr = scalar(op.getLr()), t = scalar(op.getStep());
  Value one = c64(1.0);
  Value bias1 = arith::SubFOp::create(
      b, loc, one, math::PowFOp::create(b, loc, c64(beta1), t));
  Value bias2 = arith::SubFOp::create(
      b, loc, one, math::PowFOp::create(b, loc, c64(beta2), t));
  AdamWScalars s;
  double maxNorm = op.getMaxNorm().convertToDouble();
  if (maxNorm > 0) {
    Value norm = scalar(op.getNorm());
    Value over = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                       norm, c64(maxNorm));
    Value scale = arith::DivFOp::create(
        b, loc, c64(maxNorm), arith::AddFOp::create(b, loc, norm, c64(1e-6)));
    s.clip = to32(arith::SelectOp::create(b, loc, over, scale, one));
  }
  s.beta1 = floatConst(b, loc, f32, beta1);
  s.oneMinusBeta1 = floatConst(b, loc, f32, 1 - beta1);
  s.beta2 = floatConst(b, loc, f32, beta2);
  s.oneMinusBeta2 = floatConst(b, loc, f32, 1 - beta2);
  s.eps = floatConst(b, loc, f32, op.getEps().convertToDouble());
  s.decay = to32(arith::MulFOp::create(
      b, loc, lr, c64(op.getWeightDecay().convertToDouble())));
  Value sqrtBias2 = math::SqrtOp::create(b, loc, bias2);
  s.alpha = to32(arith::DivFOp::create(
      b, loc, arith::MulFOp::create(b, loc, lr, sqrtBias2), bias1));
  s.rate = to32(arith::DivFOp::create(b, loc, lr, bias1));
  s.sqrtBias2 = to32(sqrtBias2);
  return s;
}

struct LowerAdamW : OpRewritePattern<AdamWOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AdamWOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    AdamWScalars s = adamwScalars(b, loc, op);
    bool torchForm = op.getTorchForm();
    Value p = op.getParam();
    int64_t rank = op.getParam().getType().getRank();
    SmallVector<OpFoldResult> sizes = sizesOf(b, loc, p);
    Type f32 = b.getF32Type();
    SmallVector<Value> outs(3, emptyTensor(b, loc, sizes, f32));
    SmallVector<AffineMap> maps(7, b.getMultiDimIdentityMap(rank));
    SmallVector<utils::IteratorType> iters(rank,
                                           utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        b, loc, TypeRange(ValueRange(outs)),
        ValueRange{p, op.getGrad(), op.getM(), op.getV()}, outs, maps, iters,
        [&](OpBuilder &nb, Location l, ValueRange a) {
          auto mul = [&](Value x, Value y) {
            return arith::MulFOp::create(nb, l, x, y).getResult();
          };
          auto add = [&](Value x, Value y) {
            return arith::AddFOp::create(nb, l, x, y).getResult();
          };
          auto sub = [&](Value x, Value y) {
            return arith::SubFOp::create(nb, l, x, y).getResult();
          };
          auto div = [&](Value x, Value y) {
            return arith::DivFOp::create(nb, l, x, y).getResult();
          };
          Value g = s.clip ? mul(a[1], s.clip) : a[1];
          Value m = add(mul(s.beta1, a[2]), mul(s.oneMinusBeta1, g));
          Value v = add(mul(s.beta2, a[3]), mul(mul(s.oneMinusBeta2, g), g));
          Value root = math::SqrtOp::create(nb, l, v);
          Value w;
          if (!torchForm) {
            w = sub(a[0], div(mul(s.alpha, m), add(root, s.eps)));
            w = sub(w, mul(s.decay, w));
          } else {
            Value one = floatConst(nb, l, f32, 1.0);
            w = mul(a[0], sub(one, s.decay));
            w = sub(w, div(mul(s.rate, m), add(div(root, s.sqrtBias2), s.eps)));
          }
          linalg::YieldOp::create(nb, l, ValueRange{w, m, v});
        });
    SmallVector<Value> results;
    for (auto [v, r] : llvm::zip(generic.getResults(), op->getResults()))
      results.push_back(castTo(b, loc, v, r.getType()));
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void tlm::populateOptimizerLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerGlobalNorm, LowerAdamW>(patterns.getContext());
}
