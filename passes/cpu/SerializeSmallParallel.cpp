//===- SerializeSmallParallel.cpp - no threads for loops too small --------===//
//
// A parallel region costs a fork and a join (a few microseconds with
// Debian's libomp); a loop whose whole work is less than that, split in
// two, only gets slower. This pass estimates each outermost scf.parallel's
// work in element operations and runs the small ones as scf.for nests:
// statically when its trip counts are known, behind an scf.if on the
// estimate computed at run time when they are not (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "passes/common/OptionChecks.h"
#include "passes/cpu/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tlm-serialize-small-parallel"

namespace mlir::tlm {
#define GEN_PASS_DEF_TLMSERIALIZESMALLPARALLEL
#include "passes/cpu/Passes.h.inc"
} // namespace mlir::tlm

using namespace mlir;

namespace {

/// The estimated work of one outermost parallel loop, as an expression over
/// its trip counts and branch conditions: evaluated statically where they
/// are constants, materialized in front of the loop where they can be
/// computed there (from values defined before it, through pure ops).
class WorkEstimate {
public:
  explicit WorkEstimate(scf::ParallelOp root) : root(root) { top = ofOp(root); }

  /// The work with every run-time trip count taken as 1 and every unknown
  /// branch as its cheaper side.
  int64_t lowerBound() const { return lower(top); }

  /// Whether the estimate depends on no run-time value.
  bool isStatic() const { return isStatic(top); }

  /// The estimate as an index value computed in front of the loop.
  Value materialize(OpBuilder &b) {
    b.setInsertionPoint(&*root);
    return emit(b, top);
  }

private:
  enum class Kind { Const, Trip, Add, Mul, Select, Min };
  /// Trip: ceildiv(ub - lb, step) of `values`; Select: `values[0]` ? a : b.
  struct Node {
    Kind kind;
    int64_t constant = 0;
    SmallVector<Value, 3> values;
    unsigned a = 0, b = 0;
  };

  static int64_t add(int64_t x, int64_t y) {
    return x > INT64_MAX - y ? INT64_MAX : x + y;
  }
  static int64_t mul(int64_t x, int64_t y) {
    return y != 0 && x > INT64_MAX / y ? INT64_MAX : x * y;
  }

  unsigned make(Node node) {
    nodes.push_back(std::move(node));
    return nodes.size() - 1;
  }
  unsigned constant(int64_t c) { return make({Kind::Const, c, {}}); }
  std::optional<int64_t> constantOf(unsigned n) const {
    if (nodes[n].kind == Kind::Const)
      return nodes[n].constant;
    return std::nullopt;
  }
  unsigned binary(Kind kind, unsigned x, unsigned y) {
    std::optional<int64_t> cx = constantOf(x), cy = constantOf(y);
    if (cx && cy)
      return constant(kind == Kind::Add   ? add(*cx, *cy)
                      : kind == Kind::Mul ? mul(*cx, *cy)
                                          : std::min(*cx, *cy));
    if (kind == Kind::Add && (cx == 0 || cy == 0))
      return cx == 0 ? y : x;
    if (kind == Kind::Mul && (cx == 1 || cy == 1))
      return cx == 1 ? y : x;
    return make({Kind(kind), 0, {}, x, y});
  }

  /// Whether `v` can be computed in front of the loop.
  bool hoistable(Value v) {
    if (root.isDefinedOutsideOfLoop(v))
      return true;
    Operation *def = v.getDefiningOp();
    if (!def || def->getNumRegions() != 0 || !isPure(def))
      return false;
    auto [it, inserted] = hoistableOps.try_emplace(def, false);
    if (inserted)
      it->second = llvm::all_of(def->getOperands(), [&](Value operand) {
        return hoistable(operand);
      });
    return it->second;
  }

  /// `loop`'s trip count in dim `d`; 1 when it depends on values inside
  /// the loop's iterations (the estimate stays a lower bound).
  unsigned trip(Value lb, Value ub, Value step) {
    std::optional<int64_t> l = getConstantIntValue(lb),
                           u = getConstantIntValue(ub),
                           s = getConstantIntValue(step);
    if (l && u && s && *s > 0)
      return constant(std::max<int64_t>(0, (*u - *l + *s - 1) / *s));
    if (hoistable(lb) && hoistable(ub) && hoistable(step))
      return make({Kind::Trip, 0, {lb, ub, step}, 0, 0});
    return constant(1);
  }

  /// Element operations of one op: the widest vector it makes or takes.
  static int64_t elements(Operation *op) {
    int64_t n = 1;
    for (Type t :
         llvm::concat<const Type>(op->getResultTypes(), op->getOperandTypes()))
      if (auto v = dyn_cast<VectorType>(t))
        n = std::max(n, v.getNumElements());
    return n;
  }

  unsigned ofBlock(Block &block) {
    unsigned sum = constant(0);
    for (Operation &op : block)
      sum = binary(Kind::Add, sum, ofOp(&op));
    return sum;
  }

  unsigned ofOp(Operation *op) {
    if (auto loop = dyn_cast<scf::ForOp>(op))
      return binary(
          Kind::Mul,
          trip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep()),
          ofBlock(*loop.getBody()));
    if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
      unsigned work = ofBlock(*loop.getBody());
      for (unsigned d = 0; d < loop.getNumLoops(); ++d)
        work = binary(Kind::Mul, work,
                      trip(loop.getLowerBound()[d], loop.getUpperBound()[d],
                           loop.getStep()[d]));
      return work;
    }
    if (auto branch = dyn_cast<scf::IfOp>(op)) {
      unsigned then = ofBlock(*branch.thenBlock());
      unsigned other =
          branch.elseBlock() ? ofBlock(*branch.elseBlock()) : constant(0);
      Value cond = branch.getCondition();
      if (std::optional<int64_t> c = getConstantIntValue(cond))
        return *c ? then : other;
      if (then == other)
        return then;
      if (hoistable(cond))
        return make({Kind::Select, 0, {cond}, then, other});
      return binary(Kind::Min, then, other);
    }
    // A call or a whole-buffer copy does work this count cannot see: such a
    // loop is never taken for small.
    if (isa<CallOpInterface, memref::CopyOp>(op))
      return constant(int64_t(1) << 40);
    unsigned work = constant(elements(op));
    for (Region &region : op->getRegions())
      for (Block &block : region)
        work = binary(Kind::Add, work, ofBlock(block));
    return work;
  }

  int64_t lower(unsigned n) const {
    const Node &node = nodes[n];
    switch (node.kind) {
    case Kind::Const:
      return node.constant;
    case Kind::Trip:
      return 1;
    case Kind::Add:
      return add(lower(node.a), lower(node.b));
    case Kind::Mul:
      return mul(lower(node.a), lower(node.b));
    case Kind::Select:
    case Kind::Min:
      return std::min(lower(node.a), lower(node.b));
    }
    llvm_unreachable("unknown node kind");
  }

  bool isStatic(unsigned n) const {
    const Node &node = nodes[n];
    switch (node.kind) {
    case Kind::Const:
      return true;
    case Kind::Trip:
    case Kind::Select:
      return false;
    default:
      return isStatic(node.a) && isStatic(node.b);
    }
  }

  /// `v`, or its pure computation cloned in front of the loop.
  Value hoist(OpBuilder &b, Value v) {
    if (root.isDefinedOutsideOfLoop(v))
      return v;
    if (Value done = hoisted.lookupOrNull(v))
      return done;
    Operation *def = v.getDefiningOp();
    for (Value operand : def->getOperands())
      hoisted.map(operand, hoist(b, operand));
    b.clone(*def, hoisted);
    return hoisted.lookup(v);
  }

  Value emit(OpBuilder &b, unsigned n) {
    const Node &node = nodes[n];
    Location loc = root->getLoc();
    switch (node.kind) {
    case Kind::Const:
      return arith::ConstantIndexOp::create(b, loc, node.constant);
    case Kind::Trip: {
      Value lb = hoist(b, node.values[0]), ub = hoist(b, node.values[1]),
            step = hoist(b, node.values[2]);
      Value span = b.createOrFold<arith::SubIOp>(loc, ub, lb);
      return b.createOrFold<arith::CeilDivSIOp>(loc, span, step);
    }
    case Kind::Add:
      return b.createOrFold<arith::AddIOp>(loc, emit(b, node.a),
                                           emit(b, node.b));
    case Kind::Mul:
      return b.createOrFold<arith::MulIOp>(loc, emit(b, node.a),
                                           emit(b, node.b));
    case Kind::Min:
      return b.createOrFold<arith::MinSIOp>(loc, emit(b, node.a),
                                            emit(b, node.b));
    case Kind::Select:
      return b.createOrFold<arith::SelectOp>(loc, hoist(b, node.values[0]),
                                             emit(b, node.a), emit(b, node.b));
    }
    llvm_unreachable("unknown node kind");
  }

  scf::ParallelOp root;
  SmallVector<Node> nodes;
  unsigned top = 0;
  llvm::DenseMap<Operation *, bool> hoistableOps;
  IRMapping hoisted;
};

/// Operations in `op`'s regions, to bound what versioning duplicates.
int64_t bodySize(Operation *op) {
  int64_t n = 0;
  op->walk([&](Operation *) { ++n; });
  return n - 1;
}

struct TlmSerializeSmallParallel
    : public tlm::impl::TlmSerializeSmallParallelBase<
          TlmSerializeSmallParallel> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(tlm::checkOptions(getOperation(), "tlm-serialize-small-parallel",
                                 {{"min-work", minWork, 0},
                                  {"max-versioned-ops", maxVersionedOps, 0}})))
      return signalPassFailure();
    SmallVector<scf::ParallelOp> roots;
    getOperation().walk([&](scf::ParallelOp op) {
      if (!op->getParentOfType<scf::ParallelOp>())
        roots.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ParallelOp op : roots) {
      if (op.getNumReductions() != 0) {
        LLVM_DEBUG(llvm::dbgs()
                   << "left parallel (reductions): " << op << "\n");
        continue;
      }
      WorkEstimate work(op);
      int64_t least = work.lowerBound();
      if (least >= minWork) {
        LLVM_DEBUG(llvm::dbgs() << "left parallel (at least " << least
                                << " element operations): " << op << "\n");
        continue;
      }
      if (work.isStatic()) {
        rewriter.setInsertionPoint(op);
        if (failed(scf::parallelForToNestedFors(rewriter, op)))
          return signalPassFailure();
        continue;
      }
      if (bodySize(op) > maxVersionedOps) {
        LLVM_DEBUG(llvm::dbgs()
                   << "left parallel (too big to version): " << op << "\n");
        continue;
      }
      // if (work >= min-work) { the parallel loop } else { a for nest }
      Location loc = op.getLoc();
      Value estimate = work.materialize(rewriter);
      Value big = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::sge, estimate,
          arith::ConstantIndexOp::create(rewriter, loc, minWork));
      auto branch = scf::IfOp::create(rewriter, loc, big,
                                      /*withElseRegion=*/true);
      rewriter.setInsertionPoint(branch.elseBlock()->getTerminator());
      auto serial = cast<scf::ParallelOp>(rewriter.clone(*op));
      rewriter.moveOpBefore(op, branch.thenBlock()->getTerminator());
      rewriter.setInsertionPoint(serial);
      if (failed(scf::parallelForToNestedFors(rewriter, serial)))
        return signalPassFailure();
    }
  }
};

} // namespace
