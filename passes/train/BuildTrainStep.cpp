//===- BuildTrainStep.cpp - the tlm-build-train-step pass -----------------===//
//
// Reverse mode over one function: the forward is cloned into the step, then
// its ops are visited last to first, each op whose result reaches the loss
// giving its operands their gradients (GradientRules.cpp), summed where an
// operand already has one.
//
//===----------------------------------------------------------------------===//

#include "passes/common/Recompute.h"
#include "passes/train/GradientRules.h"
#include "passes/train/Optimizer.h"
#include "passes/train/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

#define DEBUG_TYPE "tlm-build-train-step"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMBUILDTRAINSTEP
#include "passes/train/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;

namespace {

bool isF32Tensor(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && tensor.getElementType().isF32();
}

/// The loss function's shape rules: one block, one 0-d f32 result.
LogicalResult checkLossFunction(func::FuncOp loss) {
  if (loss.isExternal() || !loss.getBody().hasOneBlock())
    return loss.emitError("expected a loss function with a body of one block");
  auto results = loss.getFunctionType().getResults();
  auto lossType = results.size() == 1
                      ? dyn_cast<RankedTensorType>(results.front())
                      : RankedTensorType();
  if (!lossType || lossType.getRank() != 0 ||
      !lossType.getElementType().isF32())
    return loss.emitError("expected one result, the loss, of type "
                          "tensor<f32>; found ")
           << loss.getFunctionType();
  return success();
}

/// The gradients of every value on a path to the loss, summed as they
/// arrive.
class GradientMap {
public:
  explicit GradientMap(OpBuilder &b) : b(b) {}
  Value get(Value v) const { return grads.lookup(v); }
  void add(Value v, Value g) {
    Value &slot = grads[v];
    slot = slot ? arith::AddFOp::create(b, g.getLoc(), slot, g).getResult()
                : g;
  }

private:
  OpBuilder &b;
  DenseMap<Value, Value> grads;
};

/// The gradient of argument `arg`: what reached it, or zeros when it does
/// not reach the loss.
Value argumentGradient(OpBuilder &b, Location loc, const GradientMap &grads,
                       BlockArgument arg) {
  if (Value g = grads.get(arg))
    return g;
  auto type = cast<RankedTensorType>(arg.getType());
  return arith::ConstantOp::create(
      b, loc, type, DenseElementsAttr::get(type, b.getF32FloatAttr(0.0f)));
}

struct TlmBuildTrainStep
    : public tlm::impl::TlmBuildTrainStepBase<TlmBuildTrainStep> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto loss = module.lookupSymbol<func::FuncOp>(lossFunction);
    if (!loss) {
      module.emitError() << "no function @" << lossFunction
                         << " to differentiate";
      return signalPassFailure();
    }
    if (module.lookupSymbol(stepFunction)) {
      module.emitError() << "@" << stepFunction << " exists already";
      return signalPassFailure();
    }
    if (optimizer != "none" && optimizer != "adamw") {
      module.emitError() << "optimizer must be none or adamw, found '"
                         << optimizer << "'";
      return signalPassFailure();
    }
    if (failed(checkLossFunction(loss)) || failed(buildStep(loss)))
      signalPassFailure();
  }

  /// Appends the optimizer to the step (see the pass description): new
  /// arguments m, v, lr and step, and the norm then the updated
  /// parameters and moments after the gradients in `results`.
  void appendAdamW(OpBuilder &b, Location loc, Block &body,
                   ArrayRef<BlockArgument> params,
                   SmallVectorImpl<Value> &results) {
    SmallVector<Value> grads(results.begin() + 1, results.end());
    SmallVector<Value> m, v;
    for (BlockArgument p : params)
      m.push_back(body.addArgument(p.getType(), loc));
    for (BlockArgument p : params)
      v.push_back(body.addArgument(p.getType(), loc));
    auto scalarType = RankedTensorType::get({}, b.getF32Type());
    Value lr = body.addArgument(scalarType, loc);
    Value step = body.addArgument(scalarType, loc);
    tlm::AdamWSettings settings{beta1,     beta2,     eps,         weightDecay,
                                maxNorm,   torchForm, decayVectors};
    SmallVector<Value> paramValues(params.begin(), params.end());
    tlm::AdamWUpdate update =
        tlm::buildAdamW(b, loc, paramValues, grads, m, v, lr, step, settings);
    results.insert(results.begin() + 1, update.norm);
    llvm::append_range(results, update.params);
    llvm::append_range(results, update.m);
    llvm::append_range(results, update.v);
  }

  /// Puts tlm.attention_lse in place of each tlm.attention of the step's
  /// forward: its row logsumexps are what the backward rebuilds the
  /// probabilities from.
  LogicalResult keepAttentionLse(OpBuilder &b, Block &body) {
    SmallVector<tlm::AttentionOp> attentions(body.getOps<tlm::AttentionOp>());
    for (tlm::AttentionOp op : attentions) {
      if (op.getPositions())
        return op.emitOpError("has explicit positions, which training does "
                              "not take: its sequences start at position 0");
      auto q = cast<RankedTensorType>(op.getQ().getType());
      auto lseType = RankedTensorType::get(
          {q.getDimSize(0), int64_t(op.getNumHeads()), q.getDimSize(1)},
          b.getF32Type());
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(op);
      auto lse = tlm::AttentionLseOp::create(
          b, op.getLoc(), TypeRange{op.getType(), lseType}, op.getQ(),
          op.getK(), op.getV(), op.getNumHeadsAttr(), op.getNumKvHeadsAttr(),
          op.getRopeThetaAttr());
      op.getResult().replaceAllUsesWith(lse.getResult());
      op.erase();
    }
    return success();
  }

  /// Gives the backward its own copy of each RMSNorm output it reads,
  /// next to its first reader there (Recompute.h): the norm's input and
  /// gain are alive in the backward anyway (its gradient reads them), so
  /// the (B, T, d) output need not live from the forward to the backward.
  /// Not when an FFN's gradient reads it: its lowering rebuilds the
  /// forward's W1·x and W3·x from x, which CSE merges with the forward's
  /// only if x is the forward's own.
  /// The FFN gradients and attention's are marked for their lowering to
  /// compute the gate product and the rotated Q and K again.
  static void markRecomputation(ArrayRef<Operation *> forward) {
    if (forward.empty())
      return; // a loss that returns an argument: nothing to recompute
    DenseSet<Operation *> inForward(forward.begin(), forward.end());
    Block *body = forward.front()->getBlock();
    for (Operation &op : *body)
      if (!inForward.contains(&op) &&
          isa<tlm::SwiGLUGradOp, tlm::SiLUFFNGradOp, tlm::AttentionGradOp>(op))
        op.setAttr(tlm::kRecomputeAttr, UnitAttr::get(op.getContext()));
    for (Operation *op : forward) {
      auto norm = dyn_cast<tlm::RMSNormOp>(op);
      if (!norm)
        continue;
      SmallVector<OpOperand *> backwardUses;
      Operation *first = nullptr;
      bool readByFfnGrad = false;
      for (OpOperand &use : norm.getResult().getUses()) {
        Operation *user = use.getOwner();
        if (inForward.contains(user))
          continue;
        readByFfnGrad |= isa<tlm::SwiGLUGradOp, tlm::SiLUFFNGradOp>(user);
        backwardUses.push_back(&use);
        if (!first || user->isBeforeInBlock(first))
          first = user;
      }
      if (backwardUses.empty() || readByFfnGrad)
        continue;
      OpBuilder b(first);
      Operation *copy = b.clone(*norm);
      tlm::recomputed(copy->getResult(0));
      for (OpOperand *use : backwardUses)
        use->set(copy->getResult(0));
    }
  }

  LogicalResult buildStep(func::FuncOp loss) {
    OpBuilder b(loss);
    b.setInsertionPointAfter(loss);
    Location loc = loss.getLoc();
    auto step = cast<func::FuncOp>(b.clone(*loss));
    step.setSymName(stepFunction);
    Block &body = step.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Value lossValue = ret.getOperand(0);
    b.setInsertionPoint(ret);

    if (failed(keepAttentionLse(b, body)))
      return failure();
    GradientMap grads(b);
    auto lossType = cast<RankedTensorType>(lossValue.getType());
    grads.add(lossValue,
              arith::ConstantOp::create(
                  b, loc, lossType,
                  DenseElementsAttr::get(lossType, b.getF32FloatAttr(1.0f))));
    // The forward's ops, last to first (the backward's ops are inserted
    // before the return, so they are not visited).
    SmallVector<Operation *> forward;
    for (Operation &op : body.without_terminator())
      forward.push_back(&op);
    for (Operation *op : llvm::reverse(forward)) {
      SmallVector<Value> resultGrads;
      for (Value r : op->getResults())
        resultGrads.push_back(grads.get(r));
      if (llvm::all_of(resultGrads, [](Value g) { return !g; }))
        continue;
      FailureOr<SmallVector<Value>> operandGrads =
          tlm::buildOperandGradients(b, op, resultGrads);
      if (failed(operandGrads))
        return failure();
      for (auto [operand, g] : llvm::zip(op->getOperands(), *operandGrads))
        if (g)
          grads.add(operand, g);
    }

    if (recompute)
      markRecomputation(forward);

    SmallVector<Value> results{lossValue};
    SmallVector<BlockArgument> params;
    for (BlockArgument arg : body.getArguments())
      if (isF32Tensor(arg.getType())) {
        params.push_back(arg);
        results.push_back(argumentGradient(b, loc, grads, arg));
      }
    if (optimizer == "adamw")
      appendAdamW(b, loc, body, params, results);
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    step.setFunctionType(b.getFunctionType(
        body.getArgumentTypes(), ValueRange(results).getTypes()));
    return success();
  }
};

} // namespace
