//===- Builder.cpp - build tlm IR for a TransformerLM ---------------------===//

#include "lib/compiler/Builder.h"

#include "dialect/TlmDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace tlmd = mlir::tlm;

namespace tlm::model {
using namespace mlir;

namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;

RankedTensorType tensorOf(OpBuilder &b, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, b.getF32Type());
}

/// x · Wᵀ on (batch, seq, d_in) activations; the result keeps x's batch
/// and seq, static or not.
Value linear(OpBuilder &b, Location loc, Value x, Value w) {
  auto wType = cast<RankedTensorType>(w.getType());
  auto xType = cast<RankedTensorType>(x.getType());
  auto type = tensorOf(b, {xType.getDimSize(0), xType.getDimSize(1),
                           wType.getDimSize(0)});
  return tlmd::LinearOp::create(b, loc, type, x, w);
}

/// RMSNorm, or the identity when the config turns it off.
Value norm(OpBuilder &b, Location loc, const Config &c, Value x, Value g) {
  if (!c.useRMSNorm)
    return x;
  return tlmd::RMSNormOp::create(b, loc, x.getType(), x, g,
                                 b.getF64FloatAttr(c.rmsNormEps));
}

/// The weights `args` (in `specs` order) as the ops take them: a quantized
/// matrix's values and scales (two entries) as one tlm.dequantize.
SmallVector<Value> logicalWeights(OpBuilder &b, Location loc,
                                  ArrayRef<WeightSpec> specs, ValueRange args) {
  assert(specs.size() == args.size() && "one argument per weight");
  SmallVector<Value> out;
  for (size_t i = 0; i < specs.size(); ++i) {
    const WeightSpec &s = specs[i];
    if (!isQuantized(s.format)) {
      out.push_back(args[i]);
      continue;
    }
    assert(i + 1 < specs.size() && specs[i + 1].isScale && "scales follow");
    bool q4 = s.format == WeightDtype::Q4_0;
    auto type = tensorOf(b, {s.shape[0], q4 ? 2 * s.shape[1] : s.shape[1]});
    out.push_back(tlmd::DequantizeOp::create(b, loc, type, args[i], args[i + 1],
                                             b.getI64IntegerAttr(q4 ? 4 : 8)));
    ++i;
  }
  return out;
}

/// Names the block's weights so the switches read clearly below.
struct BlockWeights {
  Value wq, wk, wv, wo, ln1, w1, w2, w3, ln2;

  BlockWeights(const Config &c, ValueRange w) {
    size_t i = 0;
    wq = w[i++], wk = w[i++], wv = w[i++], wo = w[i++];
    if (c.useRMSNorm)
      ln1 = w[i++];
    w1 = w[i++], w2 = w[i++];
    if (c.useSwiGLU)
      w3 = w[i++];
    if (c.useRMSNorm)
      ln2 = w[i++];
    assert(i == w.size() && "weights do not match blockWeightSpecs");
  }
};

Value attention(OpBuilder &b, Location loc, const Config &c, Value x,
                const BlockWeights &w, BlockCache *cache) {
  Value q = linear(b, loc, x, w.wq);
  Value k = linear(b, loc, x, w.wk);
  Value v = linear(b, loc, x, w.wv);
  FloatAttr theta = c.useRope ? b.getF64FloatAttr(c.ropeTheta) : FloatAttr();
  IntegerAttr heads = b.getI64IntegerAttr(c.numHeads);
  IntegerAttr kvHeads = b.getI64IntegerAttr(c.kvHeads());
  Value o;
  if (cache) {
    auto rows = tensorOf(b, {kDyn, kDyn, c.kvDim()});
    auto op = tlmd::CachedAttentionOp::create(
        b, loc, TypeRange{q.getType(), rows, rows}, q, k, v, cache->kPast,
        cache->vPast, cache->lengths, heads, kvHeads, theta);
    o = op.getResult();
    cache->kNew = op.getKNew();
    cache->vNew = op.getVNew();
  } else {
    o = tlmd::AttentionOp::create(b, loc, q.getType(), q, k, v,
                                  /*positions=*/Value(), heads, kvHeads, theta);
  }
  return linear(b, loc, o, w.wo);
}

Value ffn(OpBuilder &b, Location loc, const Config &c, Value x,
          const BlockWeights &w) {
  if (c.useSwiGLU)
    return tlmd::SwiGLUOp::create(b, loc, x.getType(), x, w.w1, w.w2, w.w3);
  return tlmd::SiLUFFNOp::create(b, loc, x.getType(), x, w.w1, w.w2);
}

Value add(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::AddFOp::create(b, loc, x, y);
}

/// `v` with the (compatible) static info of `type`.
Value castTo(OpBuilder &b, Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  return tensor::CastOp::create(b, loc, type, v);
}

} // namespace

Value emitBlock(OpBuilder &b, Location loc, const Config &c, Value x,
                ValueRange weights, BlockCache *cache) {
  BlockWeights w(c, logicalWeights(b, loc, blockWeightSpecs(c), weights));
  if (c.postNorm) {
    Value a = attention(b, loc, c, x, w, cache);
    Value h = norm(b, loc, c, add(b, loc, x, a), w.ln1);
    return norm(b, loc, c, add(b, loc, h, ffn(b, loc, c, h, w)), w.ln2);
  }
  Value a = attention(b, loc, c, norm(b, loc, c, x, w.ln1), w, cache);
  Value h = add(b, loc, x, a);
  return add(b, loc, h, ffn(b, loc, c, norm(b, loc, c, h, w.ln2), w));
}

static SmallVector<Type> weightTypes(OpBuilder &b, ArrayRef<WeightSpec> specs);

/// The entries' and the block's `lengths`: one i64 per sequence.
static RankedTensorType lengthsType(OpBuilder &b) {
  return RankedTensorType::get({kDyn}, b.getI64Type());
}

/// Keeps `fn` out of line in MLIR (no_inline) and in LLVM (the passthrough
/// attribute survives func-to-llvm as the `noinline` function attribute).
static void setNoInline(func::FuncOp fn) {
  fn.setNoInline(true);
  Builder b(fn.getContext());
  fn->setAttr("passthrough", b.getArrayAttr({b.getStringAttr("noinline")}));
}

/// `@block(x, [lengths, k_past, v_past,] weights...) -> (y [, k_new,
/// v_new])`, made once per module.
static func::FuncOp getOrCreateBlockFunction(ModuleOp module, const Config &c,
                                             bool cached) {
  StringRef name = cached ? "block_cached" : "block";
  if (auto fn = module.lookupSymbol<func::FuncOp>(name))
    return fn;
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToStart(module.getBody());
  Location loc = b.getUnknownLoc();
  auto act = tensorOf(b, {kDyn, kDyn, c.dModel});
  auto rows = tensorOf(b, {kDyn, kDyn, c.kvDim()});
  SmallVector<Type> inputs{act}, results{act};
  if (cached) {
    inputs.append({lengthsType(b), rows, rows});
    results.append({rows, rows});
  }
  llvm::append_range(inputs, weightTypes(b, blockWeightSpecs(c)));
  auto fn =
      func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, results));
  fn.setPrivate();
  // Compiled once, not inlined into each caller: LLVM would otherwise copy
  // the whole block into every entry and multiply the JIT time.
  setNoInline(fn);
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  ValueRange args = entry->getArguments();
  BlockCache cache;
  if (cached) {
    cache.lengths = args[1];
    cache.kPast = args[2];
    cache.vPast = args[3];
  }
  Value y = emitBlock(b, loc, c, args[0], args.drop_front(cached ? 4 : 1),
                      cached ? &cache : nullptr);
  SmallVector<Value> outs{y};
  if (cached)
    outs.append({cache.kNew, cache.vNew});
  func::ReturnOp::create(b, loc, outs);
  return fn;
}

/// `@head(x, [ln_final,] head) -> logits`: the final norm and the LM head,
/// made once per module and shared by the entries, which each used to carry
/// a copy (the head is the model's biggest projection).
static func::FuncOp getOrCreateHeadFunction(ModuleOp module, const Config &c,
                                            ArrayRef<WeightSpec> headSpecs) {
  if (auto fn = module.lookupSymbol<func::FuncOp>("head"))
    return fn;
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToStart(module.getBody());
  Location loc = b.getUnknownLoc();
  auto act = tensorOf(b, {kDyn, kDyn, c.dModel});
  SmallVector<Type> inputs{act};
  if (c.useRMSNorm)
    inputs.push_back(tensorOf(b, {c.dModel}));
  llvm::append_range(inputs, weightTypes(b, headSpecs));
  auto fn = func::FuncOp::create(
      b, loc, "head",
      b.getFunctionType(inputs, tensorOf(b, {kDyn, kDyn, c.vocabSize})));
  fn.setPrivate();
  setNoInline(fn);
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value x = entry->getArgument(0);
  if (c.useRMSNorm)
    x = norm(b, loc, c, x, entry->getArgument(1));
  Value head = logicalWeights(
      b, loc, headSpecs, entry->getArguments().take_back(headSpecs.size()))[0];
  func::ReturnOp::create(b, loc, linear(b, loc, x, head));
  return fn;
}

/// How emitModel lays out the layers.
struct ModelForm {
  /// Incremental when non-empty: each block reads and extends its cache,
  /// each sequence with `lengths` cached positions.
  MutableArrayRef<BlockCache> caches;
  Value lengths;
  /// Logits of the last position only, (batch, 1, vocab).
  bool lastOnly = false;
  /// Every layer and the head inline rather than calls to @block and
  /// @head (training differentiates one function).
  bool inlined = false;
};

/// The layers inline: the blocks, the final norm and the head.
static Value emitInlineLayers(OpBuilder &b, Location loc, const Config &c,
                              Value x, ValueRange w, size_t next,
                              ArrayRef<WeightSpec> tableSpecs) {
  size_t perBlock = blockWeightSpecs(c).size();
  for (int64_t i = 0; i < c.numLayers; ++i, next += perBlock)
    x = emitBlock(b, loc, c, x, w.slice(next, perBlock));
  if (c.useRMSNorm)
    x = norm(b, loc, c, x, w[next++]);
  std::vector<WeightSpec> specs = weightSpecs(c);
  ArrayRef<WeightSpec> headSpecs =
      c.tieEmbeddings ? tableSpecs : ArrayRef(specs).drop_front(next);
  ValueRange headArgs = c.tieEmbeddings ? w.take_front(tableSpecs.size())
                                        : w.slice(next, headSpecs.size());
  assert(next + (c.tieEmbeddings ? 0 : headSpecs.size()) == w.size() &&
         "weights do not match weightSpecs");
  return linear(b, loc, x, logicalWeights(b, loc, headSpecs, headArgs)[0]);
}

/// Embedding, the blocks, the final norm and the LM head, in `form`:
/// logits (batch, seq, vocab), or (batch, 1, vocab) with `form.lastOnly`.
static Value emitModel(OpBuilder &b, Location loc, const Config &c, Value ids,
                       ValueRange w, const ModelForm &form) {
  MutableArrayRef<BlockCache> caches = form.caches;
  Value lengths = form.lengths;
  bool lastOnly = form.lastOnly;
  std::vector<WeightSpec> specs = weightSpecs(c);
  // A quantized table is two arguments (values and scales).
  size_t tableArgs = specs.size() > 1 && specs[1].isScale ? 2 : 1;
  ArrayRef<WeightSpec> tableSpecs = ArrayRef(specs).take_front(tableArgs);
  Value embedding =
      logicalWeights(b, loc, tableSpecs, w.take_front(tableArgs))[0];
  auto idsType = cast<RankedTensorType>(ids.getType());
  Value x = tlmd::EmbeddingOp::create(
      b, loc,
      tensorOf(b, {form.inlined ? idsType.getDimSize(0) : kDyn,
                   idsType.getDimSize(1), c.dModel}),
      ids, embedding);
  // Inline, the layers keep the ids' static sizes (training's); the block
  // functions take any.
  if (form.inlined)
    return emitInlineLayers(b, loc, c, x, w, tableArgs, tableSpecs);
  x = castTo(b, loc, x, tensorOf(b, {kDyn, kDyn, c.dModel}));
  size_t perBlock = blockWeightSpecs(c).size();
  size_t next = tableArgs;
  // Every layer runs the same code on its own weights: one private block
  // function called per layer keeps the module (and JIT time) independent
  // of num_layers.
  auto module = b.getBlock()->getParentOp()->getParentOfType<ModuleOp>();
  func::FuncOp blockFn = getOrCreateBlockFunction(module, c, !caches.empty());
  for (int64_t i = 0; i < c.numLayers; ++i, next += perBlock) {
    SmallVector<Value> args{x};
    if (!caches.empty())
      args.append({lengths, caches[i].kPast, caches[i].vPast});
    llvm::append_range(args, w.slice(next, perBlock));
    auto call = func::CallOp::create(b, loc, blockFn, args);
    x = call.getResult(0);
    if (!caches.empty()) {
      caches[i].kNew = call.getResult(1);
      caches[i].vNew = call.getResult(2);
    }
  }
  if (lastOnly) {
    // The final norm and the head work row by row: generation needs only
    // the last row, and the head is a fifth of small.json's prefill.
    Value seq = tensor::DimOp::create(b, loc, x, 1);
    Value last = arith::SubIOp::create(
        b, loc, seq, arith::ConstantIndexOp::create(b, loc, 1));
    Value batch = tensor::DimOp::create(b, loc, x, 0);
    auto rowType = tensorOf(b, {kDyn, 1, c.dModel});
    x = tensor::ExtractSliceOp::create(
        b, loc, rowType, x,
        ArrayRef<OpFoldResult>{b.getIndexAttr(0), last, b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{batch, b.getIndexAttr(1),
                               b.getIndexAttr(c.dModel)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1),
                               b.getIndexAttr(1)});
    // The rows into a tensor of their own: @head takes identity-layout
    // buffers, and bufferization would otherwise copy the strided slice
    // with MLIR's generic runtime copy, whose call (descriptors stored on
    // the stack) made LLVM select the whole unoptimized @decode wrapper
    // with the slower SelectionDAG instead of FastISel.
    x = linalg::CopyOp::create(
            b, loc, x,
            tensor::EmptyOp::create(b, loc, rowType, ValueRange{batch})
                .getResult())
            .getResult(0);
  }
  SmallVector<Value> args{
      castTo(b, loc, x, tensorOf(b, {kDyn, kDyn, c.dModel}))};
  if (c.useRMSNorm)
    args.push_back(w[next++]);
  // The head's own arguments, or with tied embeddings the table's.
  ArrayRef<WeightSpec> headSpecs =
      c.tieEmbeddings ? tableSpecs : ArrayRef(specs).drop_front(next);
  llvm::append_range(args, c.tieEmbeddings ? w.take_front(tableArgs)
                                           : w.slice(next, headSpecs.size()));
  next += c.tieEmbeddings ? 0 : headSpecs.size();
  assert(next == w.size() && "weights do not match weightSpecs");
  func::FuncOp headFn = getOrCreateHeadFunction(module, c, headSpecs);
  return func::CallOp::create(b, loc, headFn, args).getResult(0);
}

static SmallVector<Type> weightTypes(OpBuilder &b, ArrayRef<WeightSpec> specs) {
  SmallVector<Type> types;
  for (const WeightSpec &s : specs) {
    Type elem = s.dtype == io::DType::BF16  ? b.getBF16Type()
                : s.dtype == io::DType::F16 ? b.getF16Type()
                : s.dtype == io::DType::I8 || s.dtype == io::DType::U8
                    ? Type(b.getI8Type())
                    : b.getF32Type();
    types.push_back(RankedTensorType::get(s.shape, elem));
  }
  return types;
}

void addBlockFunction(ModuleOp module, const Config &c, llvm::StringRef name) {
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  Location loc = b.getUnknownLoc();
  auto act = tensorOf(b, {kDyn, kDyn, c.dModel});
  SmallVector<Type> inputs{act};
  llvm::append_range(inputs, weightTypes(b, blockWeightSpecs(c)));
  auto func =
      func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, {act}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value y = emitBlock(b, loc, c, entry->getArgument(0),
                      entry->getArguments().drop_front());
  func::ReturnOp::create(b, loc, y);
}

void addForwardFunction(ModuleOp module, const Config &c,
                        llvm::StringRef name) {
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  Location loc = b.getUnknownLoc();
  auto ids = RankedTensorType::get({kDyn, kDyn}, b.getI64Type());
  auto logitsType = tensorOf(b, {kDyn, kDyn, c.vocabSize});
  std::vector<WeightSpec> specs = weightSpecs(c);
  SmallVector<Type> inputs{ids};
  llvm::append_range(inputs, weightTypes(b, specs));
  auto func = func::FuncOp::create(b, loc, name,
                                   b.getFunctionType(inputs, {logitsType}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value logits = emitModel(b, loc, c, entry->getArgument(0),
                           entry->getArguments().drop_front(), ModelForm());
  func::ReturnOp::create(b, loc, logits);
}

void addLossFunction(ModuleOp module, const Config &c, llvm::StringRef name,
                     int64_t batch, int64_t seq) {
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  Location loc = b.getUnknownLoc();
  auto ids = RankedTensorType::get({batch, seq}, b.getI64Type());
  SmallVector<Type> inputs{ids, ids};
  llvm::append_range(inputs, weightTypes(b, weightSpecs(c)));
  auto lossType = RankedTensorType::get({}, b.getF32Type());
  auto func =
      func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, lossType));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  ModelForm form;
  form.inlined = true;
  Value logits = emitModel(b, loc, c, entry->getArgument(0),
                           entry->getArguments().drop_front(2), form);
  Value loss = tlmd::CrossEntropyOp::create(b, loc, lossType, logits,
                                            entry->getArgument(1));
  func::ReturnOp::create(b, loc, loss);
}

void addStepFunction(ModuleOp module, const Config &c, llvm::StringRef name,
                     int64_t seq, bool lastLogits) {
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  Location loc = b.getUnknownLoc();
  auto ids = RankedTensorType::get({kDyn, seq}, b.getI64Type());
  auto rows = tensorOf(b, {kDyn, kDyn, c.kvDim()});
  SmallVector<Type> inputs{ids, lengthsType(b)},
      results{tensorOf(b, {kDyn, lastLogits ? 1 : seq, c.vocabSize})};
  for (int64_t i = 0; i < 2 * c.numLayers; ++i) {
    inputs.push_back(rows);
    results.push_back(rows);
  }
  llvm::append_range(inputs, weightTypes(b, weightSpecs(c)));
  auto func =
      func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, results));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  ValueRange args = entry->getArguments();
  SmallVector<BlockCache> caches(c.numLayers);
  for (int64_t i = 0; i < c.numLayers; ++i) {
    caches[i].kPast = args[2 + 2 * i];
    caches[i].vPast = args[3 + 2 * i];
  }
  ModelForm form;
  form.caches = caches;
  form.lengths = args[1];
  form.lastOnly = lastLogits;
  Value logits = emitModel(b, loc, c, args[0],
                           args.drop_front(2 + 2 * c.numLayers), form);
  SmallVector<Value> outs{castTo(b, loc, logits, results[0])};
  for (BlockCache &cache : caches) {
    outs.push_back(cache.kNew);
    outs.push_back(cache.vNew);
  }
  func::ReturnOp::create(b, loc, outs);
}

void addGenerationFunctions(ModuleOp module, const Config &c) {
  // Both bodies are short (embedding, one call per layer to the shared
  // block, head); the block itself is compiled once. `decode` takes any
  // number of new tokens too (generation's prompt step as well as each
  // token after it) but computes only the last position's logits.
  addStepFunction(module, c, "prefill", kDyn, /*lastLogits=*/false);
  addStepFunction(module, c, "decode", kDyn, /*lastLogits=*/true);
}

} // namespace tlm::model
