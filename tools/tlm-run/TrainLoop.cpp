//===- TrainLoop.cpp - tlm-run train --------------------------------------===//
//
// Optimizer steps with a learning-rate schedule, on the rows of a
// --tokens-file in order, or on batches drawn at random from a flat
// --train-data file as CS336's get_batch draws them (lib/runtime/Batches.h),
// with the validation loss of a --val-data file on fixed batches.
//
//===----------------------------------------------------------------------===//

#include "tools/tlm-run/RunDir.h"
#include "tools/tlm-run/TrainSupport.h"

#include "lib/io/FileIO.h"
#include "lib/model/ConfigJson.h"
#include "lib/runtime/Batches.h"
#include "lib/runtime/Schedule.h"
#include "lib/support/Json.h"

#include <cmath>
#include <cstdio>
#include <optional>

namespace tlm::cli {

namespace {

/// The validation batches' generator differs from the training one's.
constexpr uint64_t kValidationSeed = 0x76616C6964ull; // "valid"

Expected<runtime::Schedule> scheduleOf(const Options &o) {
  runtime::Schedule s;
  auto kind = runtime::Schedule::kindNamed(o.schedule);
  if (!kind)
    return flagError("--schedule: " + kind.takeError().message());
  s.kind = *kind;
  s.maxLr = o.lr;
  s.minLr = o.isGiven("min-lr") ? o.minLr : o.lr / 10;
  if (!(s.minLr >= 0) || s.minLr > s.maxLr)
    return flagError("--min-lr must be in [0, --lr], found " +
                     std::to_string(s.minLr));
  if (o.warmup < 0 || o.warmup > o.steps)
    return flagError("--warmup must be in [0, --steps], found " +
                     std::to_string(o.warmup));
  s.warmup = o.warmup;
  // The decay ends at the last step (t = steps - 1 counts from 0).
  s.decayEnd = std::max<int64_t>(o.steps - 1, o.warmup);
  return s;
}

/// What a run reports: one line a step on stderr (unless --quiet or
/// --json), and with --json one object on stdout at the end.
class Report {
public:
  /// A run whose loop starts now at step `first` (0, or a resumed
  /// checkpoint's).
  Report(const Options &o, int64_t first = 0)
      : o(o), first(first), start(Clock::now()) {}

  /// The loop starts now, at step `from`.
  void startAt(int64_t from) {
    first = from;
    start = Clock::now();
  }

  /// Step `s` of `steps`, which took `ms` (the step alone: no batch
  /// drawing, evaluation or checkpoint).
  void step(int64_t s, int64_t steps, const runtime::StepResult &r,
            double lr, double ms, int64_t tokensPerStep) {
    stepMs += ms;
    double tokS = double(tokensPerStep) / (ms / 1e3);
    losses.push(double(r.loss));
    norms.push(double(r.gradNorm));
    lrs.push(lr);
    if (o.quiet || o.json)
      return;
    double elapsed = msSince(start) / 1e3;
    double eta = elapsed / double(s - first) * double(steps - s);
    std::fprintf(stderr,
                 "step %lld/%lld: loss %.6f, lr %.3g, grad norm %.4f, "
                 "%.0f tok/s, %s elapsed, ETA %s\n",
                 (long long)s, (long long)steps, r.loss, lr, r.gradNorm, tokS,
                 duration(elapsed).c_str(), duration(eta).c_str());
  }

  /// "42.0 s", "3m05s", "1h02m".
  static std::string duration(double seconds) {
    char text[32];
    if (seconds < 60)
      std::snprintf(text, sizeof text, "%.1f s", seconds);
    else if (seconds < 3600)
      std::snprintf(text, sizeof text, "%dm%02ds", int(seconds) / 60,
                    int(seconds) % 60);
    else
      std::snprintf(text, sizeof text, "%dh%02dm", int(seconds) / 3600,
                    int(seconds) % 3600 / 60);
    return text;
  }

  void validation(int64_t s, double loss) {
    json::Value v = json::Value::object();
    v.set("step", s);
    v.set("loss", loss);
    val.push(std::move(v));
    if (!o.quiet && !o.json)
      std::fprintf(stderr, "step %lld: validation loss %.6f, perplexity %.3f\n",
                   (long long)s, loss, std::exp(loss));
  }

  /// `ms`: the whole loop (steps, batches, evaluations, checkpoints).
  void finish(int64_t steps, double ms, int64_t tokensPerStep) {
    if (!o.json)
      return;
    json::Value out = json::Value::object();
    out.set("steps", steps);
    out.set("losses", std::move(losses));
    out.set("grad_norms", std::move(norms));
    out.set("lrs", std::move(lrs));
    if (val.size())
      out.set("validation", std::move(val));
    out.set("ms_per_step", stepMs / double(steps));
    out.set("tok_s", double(tokensPerStep * steps) / (stepMs / 1e3));
    out.set("loop_s", ms / 1e3);
    std::printf("%s\n", out.dump(json::Value::Layout::Line).c_str());
  }

private:
  const Options &o;
  int64_t first;
  Clock::time_point start;
  double stepMs = 0;
  json::Value losses = json::Value::array(), norms = json::Value::array(),
              lrs = json::Value::array(), val = json::Value::array();
};

/// The flags that shape a run (run.json, each checkpoint's state.json).
json::Value runArgs(const Options &o, int64_t seq) {
  json::Value a = json::Value::object();
  a.set("train_data", o.trainData);
  a.set("val_data", o.valData);
  a.set("tokens_dtype", o.tokensDtype);
  a.set("batch", o.batch);
  a.set("grad_accum", o.gradAccum);
  a.set("seq", seq);
  a.set("steps", o.steps);
  a.set("seed", o.seed);
  a.set("lr", o.lr);
  a.set("min_lr", o.isGiven("min-lr") ? o.minLr : o.lr / 10);
  a.set("warmup", o.warmup);
  a.set("schedule", o.schedule);
  a.set("beta1", o.beta1);
  a.set("beta2", o.beta2);
  a.set("adam_eps", o.adamEps);
  a.set("weight_decay", o.weightDecay);
  a.set("max_norm", o.maxNorm);
  a.set("adamw", o.adamw);
  a.set("decay_vectors", o.decayVectors);
  a.set("eval_interval", o.evalInterval);
  a.set("eval_batches", o.evalBatches);
  return a;
}

/// The mean loss over `batches` at the trainer's current parameters.
Expected<double> validationLoss(runtime::Trainer &trainer,
                                const std::vector<runtime::TrainingBatch> &batches) {
  double sum = 0;
  for (const runtime::TrainingBatch &b : batches) {
    auto loss = trainer.loss(b);
    if (!loss)
      return makeError("the validation loss: " + loss.takeError().message());
    sum += *loss;
  }
  return sum / double(batches.size());
}

/// The validation batches of --val-data, drawn once: every evaluation sees
/// the same.
Expected<std::vector<runtime::TrainingBatch>>
validationBatches(const Options &o, const model::Config &config, int64_t seq,
                  const io::TokenStream &val) {
  auto sampler = runtime::BatchSampler::create(val, o.valData, o.batch, seq,
                                               o.seed ^ kValidationSeed);
  if (!sampler)
    return userError(sampler.takeError().message());
  std::vector<runtime::TrainingBatch> batches;
  for (int64_t i = 0; i < o.evalBatches; ++i) {
    auto b = sampler->next(config);
    if (!b)
      return userError(b.takeError().message());
    batches.push_back(std::move(*b));
  }
  return batches;
}

/// The run's folder: a new one with --out-dir, the run's own with
/// --resume, whose latest checkpoint (`checkpoint`) gives the weights, the
/// moments, the step and the batch generator's state; none without either.
struct RunFolder {
  std::optional<RunDir> run;
  std::string checkpoint;
};

Expected<RunFolder> openRunFolder(const Options &o,
                                  const json::Value &configJson,
                                  int64_t seq) {
  RunFolder folder;
  if (!o.resume.empty()) {
    if (!o.outDir.empty() && o.outDir != o.resume)
      return flagError("--resume continues the run in its own folder: give "
                       "no --out-dir, or the same one");
    if (o.isGiven("weights"))
      return flagError("--resume takes the weights from its checkpoint, not "
                       "--weights");
    auto opened = RunDir::resume(o.resume, configJson, runArgs(o, seq));
    if (!opened)
      return userError(opened.takeError().message());
    folder.run.emplace(std::move(*opened));
    auto latest = folder.run->latest();
    if (!latest)
      return userError(latest.takeError().message());
    folder.checkpoint = *latest;
  } else if (!o.outDir.empty()) {
    json::Value info = json::Value::object();
    info.set("config", configJson);
    info.set("args", runArgs(o, seq));
    auto started = RunDir::start(o.outDir, info);
    if (!started)
      return userError(started.takeError().message());
    folder.run.emplace(std::move(*started));
  }
  return folder;
}

/// A --train-data run once set up: the steps from its first (0, or a
/// checkpoint's) to --steps, each with its metrics line, the evaluations
/// and the checkpoints.
class StreamRun {
public:
  StreamRun(const Options &o, const model::Config &config, int64_t seq,
            const runtime::Schedule &schedule, runtime::Trainer &trainer,
            runtime::BatchSampler &sampler,
            const std::vector<runtime::TrainingBatch> &valBatches,
            RunDir *run, const json::Value &configJson)
      : o(o), config(config), seq(seq), schedule(schedule), trainer(trainer),
        sampler(sampler), valBatches(valBatches), run(run),
        configJson(configJson), report(o) {}

  /// Continues from `checkpoint`: the moments, the step, the generator, the
  /// metrics up to it (the parameters came as the trainer's weights).
  Error resume(const std::string &checkpoint) {
    auto saved = runtime::readCheckpoint(checkpoint, trainer.specs());
    if (!saved)
      return userError("--resume: " + saved.takeError().message());
    firstStep = saved->state.step;
    priorSeconds = saved->state.seconds;
    if (Error err = trainer.restore(std::move(saved->m), std::move(saved->v),
                                    firstStep))
      return userError("--resume: " + checkpoint + ": " + err.message());
    sampler.generator().setState(saved->state.rng);
    if (Error err = run->keepMetricsUpTo(firstStep))
      return userError(err.message());
    if (!o.quiet && !o.json)
      std::fprintf(stderr, "resuming from %s at step %lld\n",
                   checkpoint.c_str(), (long long)firstStep);
    return Error::success();
  }

  /// The steps; SIGINT or SIGTERM ends the run after the step in flight,
  /// with a checkpoint when it has a folder.
  Error steps() {
    start = Clock::now();
    report.startAt(firstStep);
    if (!valBatches.empty() && firstStep == 0)
      if (Error err = evaluate(0))
        return err;
    StopOnSignal stopOnSignal;
    std::vector<runtime::TrainingBatch> micro(size_t(o.gradAccum));
    for (int64_t s = firstStep; s < o.steps; ++s) {
      if (Error err = step(s, micro))
        return err;
      bool last = s + 1 == o.steps;
      if (!valBatches.empty() &&
          (last || (o.evalInterval > 0 && (s + 1) % o.evalInterval == 0)))
        if (Error err = evaluate(s + 1))
          return err;
      bool stop = stopRequested != 0;
      if (run && (last || stop ||
                  (o.saveInterval > 0 && (s + 1) % o.saveInterval == 0)))
        if (Error err = save(s + 1))
          return err;
      if (stop)
        return Error::withExitCode(
            128 + int(stopRequested),
            "interrupted after step " + std::to_string(s + 1) +
                (run ? " (checkpoint saved; --resume " + run->path() +
                           " continues)"
                     : ""));
    }
    return Error::success();
  }

  /// --json's object (the steps this process ran).
  void finish() {
    if (o.steps > firstStep)
      report.finish(o.steps - firstStep, msSince(start), tokensPerStep());
  }

private:
  int64_t tokensPerStep() const { return o.gradAccum * o.batch * seq; }
  double seconds() const { return priorSeconds + msSince(start) / 1e3; }

  /// Step `s` (from 0) on --grad-accum batches drawn into `micro`.
  Error step(int64_t s, std::vector<runtime::TrainingBatch> &micro) {
    for (runtime::TrainingBatch &b : micro) {
      auto batch = sampler.next(config);
      if (!batch)
        return userError(batch.takeError().message());
      b = std::move(*batch);
    }
    double lr = schedule.at(s);
    Clock::time_point stepStart = Clock::now();
    auto result = o.gradAccum > 1 ? trainer.accumulatedStep(micro, lr)
                                  : trainer.step(micro[0], lr);
    if (!result)
      return userError(result.takeError().message());
    double stepMs = msSince(stepStart);
    report.step(s + 1, o.steps, *result, lr, stepMs, tokensPerStep());
    json::Value line = json::Value::object();
    line.set("step", s + 1);
    line.set("tokens", (s + 1) * tokensPerStep());
    line.set("train_loss", double(result->loss));
    line.set("lr", lr);
    line.set("grad_norm", double(result->gradNorm));
    line.set("tok_s", double(tokensPerStep()) / (stepMs / 1e3));
    return log(std::move(line));
  }

  Error evaluate(int64_t s) {
    auto loss = validationLoss(trainer, valBatches);
    if (!loss)
      return userError(loss.takeError().message());
    report.validation(s, *loss);
    json::Value line = json::Value::object();
    line.set("step", s);
    line.set("val_loss", *loss);
    return log(std::move(line));
  }

  /// One line of metrics.jsonl, when the run has a folder.
  Error log(json::Value line) {
    if (!run)
      return Error::success();
    line.set("time_s", seconds());
    if (Error err = run->log(line))
      return userError(err.message());
    return Error::success();
  }

  Error save(int64_t step) {
    runtime::CheckpointState state;
    state.step = step;
    state.rng = sampler.generator().state();
    state.seconds = seconds();
    state.config = configJson;
    state.args = runArgs(o, seq);
    auto saved = run->save(trainer, state, std::max<int64_t>(o.keep, 1));
    if (!saved)
      return userError(saved.takeError().message());
    if (!o.quiet && !o.json)
      std::fprintf(stderr, "checkpoint %s\n", saved->c_str());
    return Error::success();
  }

  const Options &o;
  const model::Config &config;
  int64_t seq;
  const runtime::Schedule &schedule;
  runtime::Trainer &trainer;
  runtime::BatchSampler &sampler;
  const std::vector<runtime::TrainingBatch> &valBatches;
  RunDir *run;
  const json::Value &configJson;
  Report report;
  Clock::time_point start = Clock::now();
  int64_t firstStep = 0;
  /// Training time before a resume: metrics' time_s goes on from it.
  double priorSeconds = 0;
};

/// --train-data (and --val-data): batches drawn at random starts.
Error trainOnStream(const Options &o,
                    const runtime::OptimizerOptions &optimizer,
                    const runtime::Schedule &schedule) {
  if (!o.tokensFile.empty())
    return flagError("give --train-data or --tokens-file, not both");
  if (!o.output.empty())
    if (Error err = io::refuseOverwritingInput(
            o.output, {o.config, o.weights, o.trainData, o.valData},
            "--output"))
      return err;
  if (Error err = checkThreads(o))
    return err;
  if (o.evalInterval < 0 || o.evalBatches < 1)
    return flagError("--eval-interval must be >= 0 and --eval-batches >= 1");
  if (o.gradAccum < 1)
    return flagError("--grad-accum must be at least 1, found " +
                     std::to_string(o.gradAccum));
  auto config = loadConfig(o);
  if (!config)
    return config.takeError();
  int64_t seq = o.isGiven("seq") ? o.seq : config->contextLength;
  if (seq < 1 || seq > config->contextLength)
    return flagError("--seq must be in [1, context_length = " +
                     std::to_string(config->contextLength) + "], found " +
                     std::to_string(seq));
  auto train = io::TokenStream::open(o.trainData, o.tokensDtype);
  if (!train)
    return userError("--train-data: " + train.takeError().message());
  auto sampler = runtime::BatchSampler::create(*train, o.trainData, o.batch,
                                               seq, o.seed);
  if (!sampler)
    return userError(sampler.takeError().message());
  std::optional<io::TokenStream> val;
  std::vector<runtime::TrainingBatch> valBatches;
  if (!o.valData.empty()) {
    auto opened = io::TokenStream::open(o.valData, o.tokensDtype);
    if (!opened)
      return userError("--val-data: " + opened.takeError().message());
    val.emplace(std::move(*opened));
    auto drawn = validationBatches(o, *config, seq, *val);
    if (!drawn)
      return drawn.takeError();
    valBatches = std::move(*drawn);
  }
  auto configJson = json::Value::parse(model::configToJson(*config));
  if (!configJson)
    return configJson.takeError();
  auto folder = openRunFolder(o, *configJson, seq);
  if (!folder)
    return folder.takeError();
  Options from = o;
  if (!folder->checkpoint.empty())
    from.weights = folder->checkpoint + "/model.safetensors";
  runtime::TrainingShape shape{o.batch, seq};
  shape.withLoss = val.has_value();
  shape.separateUpdate = o.gradAccum > 1;
  auto trainer = makeTrainer(from, *config, &optimizer, shape);
  if (!trainer)
    return trainer.takeError();

  StreamRun run(o, *config, seq, schedule, **trainer, *sampler, valBatches,
                folder->run ? &*folder->run : nullptr, *configJson);
  if (!folder->checkpoint.empty())
    if (Error err = run.resume(folder->checkpoint))
      return err;
  if (Error err = run.steps())
    return err;
  if (!o.output.empty())
    if (Error err = writeParameters(o.output, **trainer))
      return err;
  run.finish();
  return Error::success();
}

/// --tokens-file: its rows in order, `--batch` a step, wrapping around.
Error trainOnRows(const Options &o, const runtime::OptimizerOptions &optimizer,
                  const runtime::Schedule &schedule) {
  if (!o.valData.empty() || !o.outDir.empty() || !o.resume.empty() ||
      o.gradAccum != 1)
    return flagError("--val-data, --out-dir, --resume and --grad-accum go "
                     "with --train-data");
  auto input = readTrainingInput(o);
  if (!input)
    return input.takeError();
  model::Config &config = input->config;
  const io::TokenMatrix &tokens = input->tokens;
  auto trainer =
      makeTrainer(o, config, &optimizer, {o.batch, tokens.seq - 1});
  if (!trainer)
    return trainer.takeError();
  Report report(o);
  Clock::time_point start = Clock::now();
  for (int64_t s = 0; s < o.steps; ++s) {
    auto batch =
        runtime::splitTokens(rows(tokens, s * o.batch, o.batch), config);
    if (!batch)
      return batch.takeError();
    double lr = schedule.at(s);
    Clock::time_point stepStart = Clock::now();
    auto result = (*trainer)->step(*batch, lr);
    if (!result)
      return result.takeError();
    report.step(s + 1, o.steps, *result, lr, msSince(stepStart),
                o.batch * (tokens.seq - 1));
  }
  double ms = msSince(start);
  if (!o.output.empty())
    if (Error err = writeParameters(o.output, **trainer))
      return err;
  report.finish(o.steps, ms, o.batch * (tokens.seq - 1));
  return Error::success();
}

} // namespace

Error runTrain(const Options &o) {
  if (o.tokensFile.empty() && o.trainData.empty())
    return flagError("train needs --train-data (a flat token file) or "
                     "--tokens-file T.safetensors ('tokens' of shape (rows, "
                     "seq + 1))");
  if (o.steps < 1)
    return flagError("--steps must be at least 1, found " +
                     std::to_string(o.steps));
  if (o.batch < 1)
    return flagError("--batch must be at least 1, found " +
                     std::to_string(o.batch));
  if (!(o.lr >= 0))
    return flagError("--lr must be >= 0, found " + std::to_string(o.lr));
  auto optimizer = optimizerOptions(o);
  if (!optimizer)
    return optimizer.takeError();
  auto schedule = scheduleOf(o);
  if (!schedule)
    return schedule.takeError();
  if (!o.trainData.empty())
    return trainOnStream(o, *optimizer, *schedule);
  return trainOnRows(o, *optimizer, *schedule);
}

} // namespace tlm::cli
