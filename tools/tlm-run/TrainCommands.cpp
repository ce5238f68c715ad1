//===- TrainCommands.cpp - tlm-run grad -----------------------------------===//
//
// The training commands, which need the compiler (the step is compiled for
// the config in this process): grad writes one batch's gradients, bench
// --train times the step; the helpers train shares (TrainSupport.h).
//
//===----------------------------------------------------------------------===//

#include "tools/tlm-run/TrainSupport.h"

#include "lib/compiler/TrainCompile.h"
#include "lib/io/FileIO.h"
#include "lib/io/SafeTensors.h"
#include "lib/runtime/Training.h"
#include "lib/support/Json.h"
#include "tools/common/Progress.h"

#include <algorithm>
#include <cstdio>
#include <random>

namespace tlm::cli {

Expected<std::unique_ptr<runtime::Trainer>>
makeTrainer(const Options &o, model::Config &config,
            const runtime::OptimizerOptions *optimizer,
            runtime::TrainingShape shape, CompileInfo *info) {
  if (config.dtype != model::WeightDtype::F32)
    return userError("training is f32, but the weights are " +
                     std::string(model::dtypeName(config.dtype)) +
                     " (tlm-run quantize --dtype f32 converts them)");
  // Before any work: a batch that cannot fit is refused with its parts.
  if (Error err = runtime::checkTrainingMemory(runtime::trainingMemory(
          config, shape.batch, shape.seq, optimizer != nullptr)))
    return userError(err.message());
  auto jit = jitOptions(o, config);
  if (!jit)
    return jit.takeError();
  // A step runs many times: `auto`'s quick compile for small models (which
  // pays off for one forward) would cost more than it saves.
  if (o.optLevel == "auto")
    jit->optLevel = 3;
  Clock::time_point start = Clock::now();
  auto program = runtime::compileTrainingProgram(config, *jit, optimizer, shape);
  if (info)
    *info = {msSince(start), jit->threads, peakRssMb()};
  if (!program)
    return program.takeError();
  // The weights after the compile, whose transient heap is back with the
  // OS by then (compileTrainingProgram), so the two never add up.
  auto weights = loadWeights(o, config);
  if (!weights)
    return weights.takeError();
  return runtime::Trainer::create(config, std::move(*program), *weights);
}

Expected<runtime::OptimizerOptions> optimizerOptions(const Options &o) {
  runtime::OptimizerOptions opt;
  opt.beta1 = o.beta1;
  opt.beta2 = o.beta2;
  opt.eps = o.adamEps;
  opt.weightDecay = o.weightDecay;
  opt.maxNorm = o.maxNorm;
  auto inUnit = [](double x) { return x >= 0 && x < 1; };
  if (!inUnit(opt.beta1) || !inUnit(opt.beta2))
    return flagError("--beta1 and --beta2 must be in [0, 1), found " +
                     std::to_string(opt.beta1) + " and " +
                     std::to_string(opt.beta2));
  if (!(opt.eps > 0))
    return flagError("--adam-eps must be > 0, found " + std::to_string(opt.eps));
  if (!(opt.weightDecay >= 0) || !(opt.maxNorm >= 0))
    return flagError("--weight-decay and --max-norm must be >= 0");
  if (o.adamw != "cs336" && o.adamw != "torch")
    return flagError("--adamw must be cs336 or torch, found '" + o.adamw +
                     "'");
  opt.torchForm = o.adamw == "torch";
  if (o.decayVectors != "on" && o.decayVectors != "off")
    return flagError("--decay-vectors must be on or off, found '" +
                     o.decayVectors + "'");
  opt.decayVectors = o.decayVectors == "on";
  return opt;
}

io::TokenMatrix rows(const io::TokenMatrix &tokens, int64_t first,
                     int64_t count) {
  io::TokenMatrix out;
  out.batch = count;
  out.seq = tokens.seq;
  for (int64_t r = 0; r < count; ++r) {
    const int64_t *row =
        tokens.ids.data() + ((first + r) % tokens.batch) * tokens.seq;
    out.ids.insert(out.ids.end(), row, row + tokens.seq);
  }
  return out;
}

Error writeParameters(const std::string &path,
                      const runtime::Trainer &trainer) {
  std::vector<io::TensorView> out;
  for (size_t i = 0; i < trainer.specs().size(); ++i)
    out.push_back({trainer.specs()[i].name, io::DType::F32,
                   trainer.specs()[i].shape, trainer.parameters()[i].data()});
  return io::writeSafeTensors(path, out);
}

Expected<TrainingInput> readTrainingInput(const Options &o) {
  if (!o.output.empty())
    if (Error err = io::refuseOverwritingInput(
            o.output, {o.config, o.weights, o.tokensFile}, "--output"))
      return err;
  if (Error err = checkThreads(o))
    return err;
  auto config = loadConfig(o);
  if (!config)
    return config.takeError();
  auto tokens = io::readTokenFile(o.tokensFile);
  if (!tokens)
    return tokens.takeError();
  auto batch = runtime::splitTokens(*tokens, *config);
  if (!batch)
    return userError(o.tokensFile + ": " + batch.takeError().message());
  return TrainingInput{std::move(*config), std::move(*tokens),
                       std::move(*batch)};
}

namespace {

/// FLOPs of one training step: 6 per matmul parameter and token (forward
/// 2, backward 4), and attention's 12 · layers · d_model · seq per token
/// (PaLM's count, the causal half included).
double stepFlops(const model::Config &c, int64_t batch, int64_t seq) {
  double matmul = 0;
  for (const model::WeightSpec &s : model::weightSpecs(c))
    if (s.shape.size() == 2 && s.name != "token_embeddings.weight")
      matmul += double(s.numElements());
  if (c.tieEmbeddings)
    matmul += double(c.vocabSize) * double(c.dModel);
  double tokens = double(batch) * double(seq);
  return 6 * matmul * tokens + 12.0 * double(c.numLayers) * double(c.dModel) *
                                   double(seq) * tokens;
}

/// `batch` rows of `seq` + 1 seeded random ids.
io::TokenMatrix randomTokens(int64_t batch, int64_t seq, int64_t vocab,
                             uint64_t seed) {
  io::TokenMatrix t;
  t.batch = batch;
  t.seq = seq + 1;
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int64_t> id(0, vocab - 1);
  for (int64_t i = 0; i < batch * (seq + 1); ++i)
    t.ids.push_back(id(gen));
  return t;
}

} // namespace

Error runTrainBench(const Options &o) {
  if (Error err = checkThreads(o))
    return err;
  if (o.batch < 1 || o.repeat < 1)
    return flagError("--batch and --repeat must be at least 1");
  auto config = loadConfig(o);
  if (!config)
    return config.takeError();
  int64_t seq = o.seq ? o.seq : config->contextLength;
  if (seq < 1 || seq > config->contextLength)
    return flagError("--seq must be in [1, context_length = " +
                     std::to_string(config->contextLength) + "], found " +
                     std::to_string(seq));
  runtime::OptimizerOptions optimizer;
  CompileInfo compiled;
  auto trainer =
      makeTrainer(o, *config, &optimizer, {o.batch, seq}, &compiled);
  if (!trainer)
    return trainer.takeError();
  auto batch = runtime::splitTokens(
      randomTokens(o.batch, seq, config->vocabSize, o.seed), *config);
  if (!batch)
    return batch.takeError();
  // One step to warm up (first touches of every buffer), then the timed
  // ones; the median is reported.
  std::vector<double> ms;
  for (int i = 0; i <= std::max(o.repeat, 3); ++i) {
    Clock::time_point start = Clock::now();
    if (auto r = (*trainer)->step(*batch, 1e-4); !r)
      return r.takeError();
    if (i)
      ms.push_back(msSince(start));
  }
  std::sort(ms.begin(), ms.end());
  double median = ms[ms.size() / 2];
  double tokS = double(o.batch * seq) / (median / 1e3);
  double gflops = stepFlops(*config, o.batch, seq) / (median / 1e3) / 1e9;
  runtime::TrainingMemory memory =
      runtime::trainingMemory(*config, o.batch, seq, true);
  double peak = peakRssMb();
  const runtime::Program::HeapCounters &heap = (*trainer)->program().heap();
  double stepHeapMb = heap.peak ? double(heap.peak()) / kMiB : 0;
  // As inference's budget: the buffers the trainer owns (1.2x), the
  // activations, the process at start and the compiler's high-water mark.
  MemoryBudget budget{
      (memory.parameters + memory.gradients + memory.moments) / kMiB, 0,
      memory.activations / kMiB, o.startRssMb,
      std::max(0.0, compiled.peakMb - o.startRssMb)};
  if (std::string warning = budget.warning(peak);
      !warning.empty() && !o.quiet)
    std::fprintf(stderr, "%s\n", warning.c_str());
  printTo(resultStream(o),
          "train step    %.2f ms for %lld x %lld tokens (%.1f tok/s, "
          "%.1f GFLOP/s), median of %zu\n"
          "compile       %.1f ms (%d threads)\n"
          "peak RSS      %.1f MiB (the step's estimate %.1f MiB: %s; "
          "process at start %.1f MiB, compile %.1f MiB)\n"
          "RSS bound     %.1f MiB (1.2 x parameters, gradients and "
          "moments + activations + process at start + compile)\n"
          "step heap     %.1f MiB at its peak (the compiled code's "
          "buffers: the activations)\n",
          median, (long long)o.batch, (long long)seq, tokS, gflops, ms.size(),
          compiled.ms, compiled.threads, peak, memory.total() / kMiB,
          memory.parts(/*mebibytes=*/true).c_str(), o.startRssMb,
          budget.compile, budget.bound(), stepHeapMb);
  if (o.json) {
    json::Value out = json::Value::object();
    out.set("train", true);
    out.set("batch", o.batch);
    out.set("seq", seq);
    out.set("threads", compiled.threads);
    out.set("compile_ms", rounded(compiled.ms, 1));
    out.set("ms_per_step", rounded(median, 2));
    out.set("tok_s", rounded(tokS, 1));
    out.set("gflop_s", rounded(gflops, 1));
    out.set("peak_rss_mib", rounded(peak, 1));
    out.set("estimate_mib", rounded(memory.total() / kMiB, 1));
    out.set("activations_mib", rounded(memory.activations / kMiB, 1));
    out.set("step_heap_mib", rounded(stepHeapMb, 1));
    out.set("start_rss_mib", rounded(o.startRssMb, 1));
    out.set("compile_mib", rounded(budget.compile, 1));
    out.set("rss_bound_mib", rounded(budget.bound(), 1));
    printJsonDocument(out);
  }
  return Error::success();
}

Error runGrad(const Options &o) {
  if (o.tokensFile.empty())
    return flagError("grad needs --tokens-file T.safetensors: 'tokens' of "
                     "shape (batch, seq + 1)");
  if (o.output.empty())
    return flagError("grad needs --output G.safetensors");
  auto input = readTrainingInput(o);
  if (!input)
    return input.takeError();
  const runtime::TrainingBatch &batch = input->batch;
  auto trainer =
      makeTrainer(o, input->config, nullptr, {batch.batch, batch.seq});
  if (!trainer)
    return trainer.takeError();
  auto loss = (*trainer)->computeGradients(batch);
  if (!loss)
    return loss.takeError();

  float lossValue = *loss;
  std::vector<io::TensorView> out{
      {"loss", io::DType::F32, {1}, &lossValue}};
  const auto &specs = (*trainer)->specs();
  for (size_t i = 0; i < specs.size(); ++i)
    out.push_back({"grad." + specs[i].name, io::DType::F32, specs[i].shape,
                   (*trainer)->gradients()[i].data()});
  if (Error err = io::writeSafeTensors(o.output, out))
    return err;
  if (!o.quiet)
    std::printf("loss: %.6f\ngradients: %zu tensors in %s\n", lossValue,
                specs.size(), o.output.c_str());
  return Error::success();
}

} // namespace tlm::cli
