//===- TrainLoop.cpp - tlm-run train --------------------------------------===//
//
// Optimizer steps with a learning-rate schedule, on the rows of a
// --tokens-file in order, or on batches drawn at random from a flat
// --train-data file as CS336's get_batch draws them (lib/runtime/Batches.h),
// with the validation loss of a --val-data file on fixed batches.
//
// Under `mpirun -np N` (lib/parallel), every rank draws the same batches and
// takes rows r, r + N, ... of each, so the run sees the data one process
// would; the gradients are summed across the ranks once a step, every rank
// applies the same update, and rank 0 alone prints, logs and saves
// (docs/training.md#several-processes-mpi).
//
//===----------------------------------------------------------------------===//

#include "tools/tlm-run/RunDir.h"
#include "tools/tlm-run/TrainRanks.h"
#include "tools/tlm-run/TrainReport.h"
#include "tools/tlm-run/TrainSupport.h"

#include "lib/io/FileIO.h"
#include "lib/model/ConfigJson.h"
#include "lib/parallel/Communicator.h"
#include "lib/runtime/Batches.h"
#include "lib/runtime/Schedule.h"
#include "lib/support/Json.h"

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
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

/// runArgs with the world size, which a resumed run must keep (the ranks'
/// shares of a batch, and the batch each compiled for, depend on it).
json::Value runArgs(const Options &o, int64_t seq, int ranks) {
  json::Value a = runArgs(o, seq);
  a.set("ranks", int64_t(ranks));
  return a;
}

/// This rank's shares of the validation batches of --val-data, drawn once:
/// every evaluation sees the same.
Expected<std::vector<runtime::TrainingBatch>>
validationBatches(const Options &o, const model::Config &config, int64_t seq,
                  const io::TokenStream &val, int rank, int ranks) {
  auto sampler = runtime::BatchSampler::create(val, o.valData, o.batch, seq,
                                               o.seed ^ kValidationSeed);
  if (!sampler)
    return userError(sampler.takeError().message());
  std::vector<runtime::TrainingBatch> batches;
  for (int64_t i = 0; i < o.evalBatches; ++i) {
    auto b = sampler->next(config);
    if (!b)
      return userError(b.takeError().message());
    batches.push_back(shareOf(std::move(*b), rank, ranks));
  }
  return batches;
}

/// The run's folder: a new one with --out-dir, the run's own with
/// --resume, whose latest checkpoint (`checkpoint`) gives the weights, the
/// moments, the step and the batch generator's state; none without either.
/// Rank 0 alone writes it (`run`); the others read the checkpoint.
struct RunFolder {
  std::optional<RunDir> run;
  std::string checkpoint;
  /// Whether the run saves checkpoints (on rank 0; every rank compares its
  /// parameters then).
  bool saves = false;
};

Error openRunFolder(const Options &o, const json::Value &configJson,
                    int64_t seq, int rank, int ranks, RunFolder &folder) {
  folder.saves = !o.resume.empty() || !o.outDir.empty();
  if (!o.resume.empty()) {
    if (!o.outDir.empty() && o.outDir != o.resume)
      return flagError("--resume continues the run in its own folder: give "
                       "no --out-dir, or the same one");
    if (o.isGiven("weights"))
      return flagError("--resume takes the weights from its checkpoint, not "
                       "--weights");
    auto opened =
        RunDir::resume(o.resume, configJson, runArgs(o, seq, ranks));
    if (!opened)
      return userError(opened.takeError().message());
    auto latest = opened->latest();
    if (!latest)
      return userError(latest.takeError().message());
    folder.checkpoint = *latest;
    if (rank == 0)
      folder.run.emplace(std::move(*opened));
  } else if (!o.outDir.empty() && rank == 0) {
    json::Value info = json::Value::object();
    info.set("config", configJson);
    info.set("args", runArgs(o, seq, ranks));
    auto started = RunDir::start(o.outDir, info);
    if (!started)
      return userError(started.takeError().message());
    folder.run.emplace(std::move(*started));
  }
  return Error::success();
}

/// A --train-data run once set up: the steps from its first (0, or a
/// checkpoint's) to --steps, each with its metrics line, the evaluations
/// and the checkpoints.
class StreamRun {
public:
  /// `run`: the folder rank 0 writes (null on the others, or without
  /// one); `saves`: whether the run saves checkpoints.
  StreamRun(const Options &o, const model::Config &config, int64_t seq,
            const runtime::Schedule &schedule, runtime::Trainer &trainer,
            runtime::BatchSampler &sampler,
            const std::vector<runtime::TrainingBatch> &valBatches,
            RunDir *run, bool saves, const json::Value &configJson,
            parallel::Communicator &comm)
      : o(o), config(config), seq(seq), schedule(schedule), trainer(trainer),
        sampler(sampler), valBatches(valBatches), run(run), saves(saves),
        configJson(configJson), comm(comm), report(o, comm.size()) {}

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
    if (run)
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
      if (comm.size() == 1)
        stopSignal = int(stopRequested);
      bool stop = stopSignal != 0;
      bool saving = saves && (last || stop || (o.saveInterval > 0 &&
                                               (s + 1) % o.saveInterval == 0));
      bool checking = saving || last || (o.rankCheckInterval > 0 &&
                                         (s + 1) % o.rankCheckInterval == 0);
      if (checking)
        if (Error err = compareRanks(trainer, comm, s + 1))
          return err;
      if (saving && run)
        if (Error err = save(s + 1))
          return err;
      if (stop)
        return comm.shared(Error::withExitCode(
            128 + stopSignal,
            "interrupted after step " + std::to_string(s + 1) +
                (saves ? " (checkpoint saved; --resume " +
                             (o.resume.empty() ? o.outDir : o.resume) +
                             " continues)"
                       : "")));
    }
    return Error::success();
  }

  /// --json's object (the steps this process ran: none when a resumed run
  /// was at --steps already).
  void finish() {
    report.finish(std::max<int64_t>(0, o.steps - firstStep), msSince(start),
                  tokensPerStep());
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
      b = shareOf(std::move(*batch), comm.rank(), comm.size());
    }
    double lr = schedule.at(s);
    Clock::time_point stepStart = Clock::now();
    auto result = takeStep(micro, lr);
    if (!result)
      return userError(result.takeError().message());
    if (fault.rank == comm.rank() && s == firstStep)
      if (Error err = fault.inject(trainer))
        return err;
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

  /// One optimizer step on this rank's shares `micro`. With several ranks
  /// the gradients are summed across them, and with them whether any rank
  /// was asked to stop (a signal reaches each rank at its own time): all
  /// stop after the same step.
  Expected<runtime::StepResult>
  takeStep(const std::vector<runtime::TrainingBatch> &micro, double lr) {
    if (comm.size() == 1)
      return o.gradAccum > 1 ? trainer.accumulatedStep(micro, lr)
                             : trainer.step(micro[0], lr);
    runtime::StepReduction reduction;
    reduction.ranks = comm.size();
    reduction.sum = [this](float *data, size_t n) {
      Clock::time_point start = Clock::now();
      Error err = comm.sum(data, n);
      report.summed(msSince(start));
      return err;
    };
    // How many ranks were asked to stop by SIGINT and by SIGTERM (a signal
    // reaches each rank at its own time, so some may have it and others not
    // yet): every rank stops after this step, with SIGINT's code if any had
    // it.
    int signal = int(stopRequested);
    reduction.extra = {signal == SIGINT ? 1.0f : 0.0f,
                       signal == SIGTERM ? 1.0f : 0.0f};
    auto result = trainer.accumulatedStep(micro, lr, &reduction);
    stopSignal = reduction.extra[0] > 0   ? SIGINT
                 : reduction.extra[1] > 0 ? SIGTERM
                                          : 0;
    // A failure after the sum (the norm is not finite) every rank meets
    // alike: said once.
    if (!result && reduction.reduced)
      return comm.shared(result.takeError());
    return result;
  }

  Error evaluate(int64_t s) {
    auto loss = validationLoss(trainer, valBatches, comm);
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
    state.args = runArgs(o, seq, comm.size());
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
  bool saves;
  const json::Value &configJson;
  parallel::Communicator &comm;
  Report report;
  /// The signal that ends the run after this step (every rank's the same).
  int stopSignal = 0;
  TestFault fault = TestFault::fromEnvironment();

  Clock::time_point start = Clock::now();
  int64_t firstStep = 0;
  /// Training time before a resume: metrics' time_s goes on from it.
  double priorSeconds = 0;
};

/// The flags every run checks first, and what they make.
struct RunPlan {
  runtime::OptimizerOptions optimizer;
  runtime::Schedule schedule;
};

Expected<RunPlan> planRun(const Options &o) {
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
  return RunPlan{*optimizer, *schedule};
}

/// What a --train-data run sets up before its first step. It stays where it
/// is made: the samplers point at the streams.
struct StreamSetup {
  RunPlan plan;
  model::Config config;
  int64_t seq = 0;
  std::optional<io::TokenStream> train, val;
  std::optional<runtime::BatchSampler> sampler;
  std::vector<runtime::TrainingBatch> valBatches;
  json::Value configJson;
  RunFolder folder;
  std::unique_ptr<runtime::Trainer> trainer;
};

/// Checks the flags and files of a --train-data run and compiles its step:
/// for this rank's share of each batch under mpirun.
Error setUpStream(const Options &o, const parallel::Communicator &comm,
                  StreamSetup &setup) {
  auto plan = planRun(o);
  if (!plan)
    return plan.takeError();
  setup.plan = std::move(*plan);
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
  if (o.rankCheckInterval < 0)
    return flagError("--rank-check-interval must be >= 0, found " +
                     std::to_string(o.rankCheckInterval));
  int ranks = comm.size();
  if (o.batch % ranks != 0)
    return flagError("--batch " + std::to_string(o.batch) +
                     " does not split over " + std::to_string(ranks) +
                     " ranks: each takes an equal share of every batch, so "
                     "--batch must be a multiple of the ranks");
  auto config = loadConfig(o);
  if (!config)
    return config.takeError();
  setup.config = *config;
  setup.seq = o.isGiven("seq") ? o.seq : config->contextLength;
  int64_t seq = setup.seq;
  if (seq < 1 || seq > config->contextLength)
    return flagError("--seq must be in [1, context_length = " +
                     std::to_string(config->contextLength) + "], found " +
                     std::to_string(seq));
  auto train = io::TokenStream::open(o.trainData, o.tokensDtype);
  if (!train)
    return userError("--train-data: " + train.takeError().message());
  setup.train.emplace(std::move(*train));
  auto sampler = runtime::BatchSampler::create(*setup.train, o.trainData,
                                               o.batch, seq, o.seed);
  if (!sampler)
    return userError(sampler.takeError().message());
  setup.sampler.emplace(std::move(*sampler));
  if (!o.valData.empty()) {
    auto opened = io::TokenStream::open(o.valData, o.tokensDtype);
    if (!opened)
      return userError("--val-data: " + opened.takeError().message());
    setup.val.emplace(std::move(*opened));
    auto drawn = validationBatches(o, setup.config, seq, *setup.val,
                                   comm.rank(), ranks);
    if (!drawn)
      return drawn.takeError();
    setup.valBatches = std::move(*drawn);
  }
  auto configJson = json::Value::parse(model::configToJson(setup.config));
  if (!configJson)
    return configJson.takeError();
  setup.configJson = std::move(*configJson);
  if (Error err = openRunFolder(o, setup.configJson, seq, comm.rank(), ranks,
                                setup.folder))
    return err;
  Options from = o;
  if (!setup.folder.checkpoint.empty())
    from.weights = setup.folder.checkpoint + "/model.safetensors";
  // Ranks on one machine share its cores.
  if (!o.isGiven("threads") && comm.localSize() > 1)
    from.threads = std::max(1, o.cores / comm.localSize());
  runtime::TrainingShape shape{o.batch / ranks, seq};
  shape.withLoss = setup.val.has_value();
  shape.separateUpdate = o.gradAccum > 1 || ranks > 1;
  auto trainer =
      makeTrainer(from, setup.config, &setup.plan.optimizer, shape);
  if (!trainer)
    return trainer.takeError();
  setup.trainer = std::move(*trainer);
  return Error::success();
}

/// --train-data (and --val-data): batches drawn at random starts.
Error trainOnStream(const Options &o, parallel::Communicator &comm) {
  // Set up on every rank, then agree: a failure anywhere ends every rank
  // here, said once.
  StreamSetup setup;
  if (Error err = comm.agree(setUpStream(o, comm, setup)))
    return err;
  StreamRun run(o, setup.config, setup.seq, setup.plan.schedule,
                *setup.trainer,
                *setup.sampler, setup.valBatches,
                setup.folder.run ? &*setup.folder.run : nullptr,
                setup.folder.saves, setup.configJson, comm);
  if (!setup.folder.checkpoint.empty())
    if (Error err = comm.agree(run.resume(setup.folder.checkpoint)))
      return err;
  if (Error err = run.steps())
    return err;
  if (!o.output.empty() && comm.rank() == 0)
    if (Error err = writeParameters(o.output, *setup.trainer))
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
  if (o.trainData.empty() && parallel::launchedRanks() == 1) {
    auto plan = planRun(o);
    if (!plan)
      return plan.takeError();
    return trainOnRows(o, plan->optimizer, plan->schedule);
  }
  if (!(o.rankTimeout > 0))
    return flagError("--rank-timeout must be > 0 seconds, found " +
                     std::to_string(o.rankTimeout));
  auto comm = parallel::open(o.rankTimeout);
  if (!comm)
    return userError(comm.takeError().message());
  sayCrashesAsRank(**comm);
  if (o.trainData.empty())
    return (*comm)->end(
        (*comm)->agree(flagError("--tokens-file trains in one process: "
                                 "under mpirun give --train-data")),
        report);
  // Rank 0 alone speaks: the others run quiet.
  Options rankOptions = o;
  if ((*comm)->rank() > 0) {
    rankOptions.quiet = true;
    rankOptions.json = false;
  }
  return (*comm)->end(trainOnStream(rankOptions, **comm), report);
}

} // namespace tlm::cli
