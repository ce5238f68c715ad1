//===- Bench.cpp - bench: tlm-run's and tlm-exec's -----------------------===//
//
// Compile time, prefill and decode speed and peak memory of one model
// (docs/performance.md#one-model-tlm-run-bench).
//
//===----------------------------------------------------------------------===//

#include "tools/common/Commands.h"
#include "tools/common/Progress.h"

#include "lib/runtime/Artifact.h"
#include "lib/runtime/Session.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <vector>

namespace tlm::cli {

std::string MemoryBudget::warning(double peak) const {
  double limit = bound();
  if (!(peak > limit))
    return "";
  char line[200];
  std::snprintf(line, sizeof(line),
                "warning: peak RSS %.1f MiB exceeds the memory budget of "
                "docs/memory.md, %.1f MiB, by %.1f MiB (%.0f%%)",
                peak, limit, peak - limit, 100 * (peak - limit) / limit);
  return line;
}

namespace {

/// bench's flags checked, --gen and --prompt-len fitted to the model's
/// context when not given.
Expected<Flags> benchFlags(const Flags &given) {
  Flags o = given;
  if (o.promptLen < 1 || o.gen < 0 || o.batch < 1)
    return userError("--prompt-len and --batch must be >= 1, --gen >= 0");
  if (o.repeat < 1 || o.repeat > 1000)
    return userError("--repeat must be in [1, 1000], found " +
                     std::to_string(o.repeat));
  auto config = loadConfig(o);
  if (!config)
    return config.takeError();
  // Defaults that fit the model: 32 steps (at most a quarter of the
  // context) after a prompt of 128 (at most what the context leaves).
  int64_t context = config->contextLength;
  if (!o.genGiven)
    o.gen = int(std::min<int64_t>(32, context / 4));
  if (!o.promptLenGiven)
    o.promptLen = int(std::min<int64_t>(128, context - o.gen));
  if (int64_t(o.promptLen) + o.gen > config->contextLength)
    return userError("--prompt-len + --gen (" +
                     std::to_string(int64_t(o.promptLen) + o.gen) +
                     ") exceeds context_length (" +
                     std::to_string(config->contextLength) + ")");
  return std::move(o);
}

/// What the runs measured: tok/s of each, and the activations' memory.
struct Measured {
  std::vector<double> prefills, decodes;
  double activationsMb = 0;
};

/// Warm-up with the measured shapes: one prefill of the whole prompt and
/// one decode step, then start over.
Error warmUp(const Flags &o, Run &run, const std::vector<int64_t> &prompt,
             std::vector<float> &logits) {
  // The first step of a size touches its activation memory for the first
  // time (page faults, ~12 µs per 4 KiB page on this VM kind: ~47 ms of a
  // 97 ms prefill of 128 tokens on a one-layer d_ff 8192 model); a server
  // pays that once, not per request.
  runtime::Session &s = *run.session;
  if (Error err = s.stepLast(prompt.data(), o.promptLen, logits.data()))
    return err;
  if (o.promptLen < run.config.contextLength)
    if (Error err = s.stepLast(prompt.data(), 1, logits.data()))
      return err;
  s.reset();
  return Error::success();
}

/// The activations' memory, MiB, once the warm-up has run.
double activationsMb(const Flags &o, const Run &run, double rssBeforeSteps) {
  // Activations: the most the warm-up steps added to resident memory (the
  // logits, the compiled code's temporaries), less the KV cache pages they
  // touched and, with mmapped weights, the weight pages they read in; both
  // are counted apart. If loading the weights peaked higher, this
  // undercounts, which only makes the budget stricter. The KV pages are
  // asked of the kernel (mincore): on huge pages a row touches 2 MiB.
  double kvRowsMb = run.session->kvCacheResidentBytes() / kMiB;
  double mappedWeightsMb =
      o.weightsLoad == "mmap" ? run.weights.bytes() / kMiB : 0.0;
  return std::max(0.0,
                  peakRssMb() - rssBeforeSteps - kvRowsMb - mappedWeightsMb);
}

/// The measured runs: tok/s of each prefill and of its decode steps.
Error timeRuns(const Flags &o, runtime::Session &s,
               const std::vector<int64_t> &prompt, std::vector<float> &logits,
               Measured &m) {
  // --repeat runs of a prefill then the decode steps, from an empty cache
  // each: the medians are reported, and the spread (fastest, slowest).
  int64_t batch = o.batch;
  std::vector<int64_t> next(batch, 1);
  for (int r = 0; r < o.repeat; ++r) {
    s.reset();
    auto start = Clock::now();
    if (Error err = s.stepLast(prompt.data(), o.promptLen, logits.data()))
      return err;
    m.prefills.push_back(batch * o.promptLen / (msSince(start) / 1000.0));
    start = Clock::now();
    for (int i = 0; i < o.gen; ++i)
      if (Error err = s.stepLast(next.data(), 1, logits.data()))
        return err;
    m.decodes.push_back(o.gen ? batch * o.gen / (msSince(start) / 1000.0)
                              : 0.0);
  }
  return Error::success();
}

/// The warm-up, which measures the activations, then the timed runs.
Expected<Measured> measure(const Flags &o, Run &run) {
  int64_t vocab = run.config.vocabSize, batch = o.batch;
  std::vector<int64_t> prompt(batch * o.promptLen);
  for (size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = (i * 7919) % vocab;
  double rssBeforeSteps = currentRssMb();
  // Prefill and decode as generation runs them: each step computes the
  // logits of its last position only.
  std::vector<float> logits(batch * vocab);
  Measured m;
  if (Error err = warmUp(o, run, prompt, logits))
    return err;
  m.activationsMb = activationsMb(o, run, rssBeforeSteps);
  if (Error err = timeRuns(o, *run.session, prompt, logits, m))
    return err;
  return std::move(m);
}

/// The median of `v`.
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// What one decode step reads of the weights, bytes.
double stepWeightBytes(const model::Config &mc) {
  // All of them but the embedding table, of which one row (unless the LM
  // head is the table).
  double rowBytes =
      double(mc.dModel) * io::dtypeSize(model::storageDType(mc.dtype));
  double stepBytes = double(model::weightBytes(mc));
  if (!mc.tieEmbeddings)
    stepBytes -= (mc.vocabSize - 1) * rowBytes;
  return stepBytes;
}

/// The memory budget (docs/memory.md): one copy of the weights with 20%
/// to spare, the whole KV cache, the activations, and what the process
/// held before it read its first input (tlm-run's and libLLVM/libMLIR's
/// code and relocated data).
MemoryBudget memoryBudget(const Flags &o, const Run &run,
                          double activationsMb) {
  double weightsMb = run.weights.bytes() / kMiB;
  double kvMb = runtime::Session::kvCacheBytes(run.config, o.batch) / kMiB;
  // The compiler's high-water mark above the start: LLVM's heap and the
  // code pages of libLLVM/libMLIR it touched. Most of the heap is returned
  // before the weights are read, but not all of it, and the code pages stay.
  double compileMb = std::max(0.0, run.compilePeakMb - o.startRssMb);
  return MemoryBudget{weightsMb, kvMb, activationsMb, o.startRssMb, compileMb};
}

/// The compile cache's part in the run: off, hit or miss.
const char *cacheState(const Flags &o, const char *target,
                       const runtime::CompileStats &stats) {
  // A hit's compile_ms is the load of the stored code (docs/jit.md).
  // An artifact is not compiled here: no cache is involved.
  return o.noCache || std::string_view(target) == "cuda" || !o.artifact.empty()
             ? "off"
         : stats.cacheHit ? "hit"
                          : "miss";
}

/// The compile line: the artifact's load, or the compile's parts.
std::string compiledLine(const Run &run, bool artifact) {
  const runtime::CompileStats &stats = run.session->program().stats();
  char compiled[160];
  if (artifact)
    std::snprintf(compiled, sizeof(compiled),
                  "%.1f ms (the artifact loaded; compiled ahead of time)",
                  run.compileMs);
  else
    std::snprintf(compiled, sizeof(compiled),
                  "%.1f ms (MLIR passes %.1f ms, LLVM O%u %.1f ms on %u "
                  "threads)",
                  run.compileMs, stats.pipelineMs, stats.optLevel,
                  stats.codegenMs, stats.compileThreads);
  return compiled;
}

/// Everything bench prints but the compile's own figures.
struct BenchReport {
  double prefillTokS = 0, decodeTokS = 0, prefillMs = 0;
  /// The spread over the runs: the slowest and fastest of each.
  double prefillLo = 0, prefillHi = 0, decodeLo = 0, decodeHi = 0;
  int64_t params = 0;
  double stepBytes = 0, decodeGBs = 0;
  std::string dtype, compiled;
  /// Prefill's arithmetic: --compute, or an artifact's.
  std::string compute;
  int threads = 0;
  const char *target = "", *cache = "";
  MemoryBudget budget;
  double boundMb = 0, peakMb = 0;
};

/// The report of the measured runs on `run`'s session.
BenchReport benchReport(const Flags &o, const Run &run, const Measured &m) {
  BenchReport r;
  int64_t batch = o.batch;
  r.prefillTokS = median(m.prefills);
  r.decodeTokS = median(m.decodes);
  r.prefillMs = batch * o.promptLen / r.prefillTokS * 1000.0;
  auto [prefillLo, prefillHi] =
      std::minmax_element(m.prefills.begin(), m.prefills.end());
  auto [decodeLo, decodeHi] =
      std::minmax_element(m.decodes.begin(), m.decodes.end());
  r.prefillLo = *prefillLo;
  r.prefillHi = *prefillHi;
  r.decodeLo = *decodeLo;
  r.decodeHi = *decodeHi;
  r.params = model::parameterCount(run.config);
  r.stepBytes = stepWeightBytes(run.config);
  // A step reads the weights once for all `batch` sequences: the rate of
  // steps is the aggregate tok/s over the batch.
  r.decodeGBs = r.stepBytes * (r.decodeTokS / batch) / 1e9;
  r.dtype = std::string(model::dtypeName(run.config.dtype));
  // An artifact runs on the threads it was compiled for.
  const runtime::ArtifactManifest *artifact =
      run.session->program().artifactManifest();
  r.threads = artifact ? artifact->threads : o.threads;
  r.compute = artifact ? artifact->compute : o.compute;
  // Where the code runs: a cuda artifact's, whatever --target said.
  r.target = run.session->program().onDevice() ? "cuda" : "cpu";
  r.budget = memoryBudget(o, run, m.activationsMb);
  r.boundMb = r.budget.bound();
  r.peakMb = peakRssMb();
  r.cache = cacheState(o, r.target, run.session->program().stats());
  r.compiled = compiledLine(run, artifact != nullptr);
  return r;
}

/// The report's lines on stdout, with the spread over --repeat runs.
void printReport(const Flags &o, const BenchReport &r) {
  int64_t batch = o.batch;
  const MemoryBudget &b = r.budget;
  std::FILE *out = resultStream(o);
  printTo(out,
      "config        %s\nparams        %lld\ntarget        %s\nthreads       "
      "%d%s\ncache         %s\ncompile       %s\n"
      "prefill       %.1f ms for %d x %d "
      "tokens "
      "(%.1f tok/s%s)\ndecode        %.2f tok/s%s over %d steps (%s weights, "
      "%.1f MB read per step, %.2f GB/s)\npeak RSS      "
      "%.1f MiB (weights %.1f, KV cache %.1f, activations %.1f, process at "
      "start %.1f, compiler %.1f MiB)\nRSS bound     %.1f MiB "
      "(docs/memory.md: 1.2 x weights + KV cache + activations + process "
      "at start + compiler; the peak stays under it)\n",
      (o.config.empty() ? o.artifact : o.config).c_str(), (long long)r.params,
      r.target, r.threads,
      o.threadsChoice.empty() ? "" : (" (" + o.threadsChoice + ")").c_str(),
      r.cache, r.compiled.c_str(), r.prefillMs, (int)batch,
      o.promptLen, r.prefillTokS,
      r.compute == "f32" ? "" : (", " + r.compute + " compute").c_str(),
      r.decodeTokS,
      batch > 1 ? formatString(" (all %lld sequences; %.2f each)",
                               (long long)batch, r.decodeTokS / batch)
                      .c_str()
                : "",
      o.gen, r.dtype.c_str(), r.stepBytes / 1e6, r.decodeGBs, r.peakMb,
      b.weights, b.kvCache, b.activations, o.startRssMb, b.compile, r.boundMb);
  if (o.repeat > 1)
    printTo(out, "spread        prefill %.1f..%.1f tok/s, decode %.2f..%.2f "
                "tok/s over %d runs (medians above)\n",
                r.prefillLo, r.prefillHi, r.decodeLo, r.decodeHi, o.repeat);
}

/// The report as one JSON line on stdout (--json).
void printJson(const Flags &o, const Run &run, const BenchReport &r) {
  const runtime::CompileStats &stats = run.session->program().stats();
  // Decode steps launched as CUDA graphs (--cuda-graphs on), and how many
  // of them had to instantiate theirs rather than update the last one's.
  const runtime::cuda::StepGraph *graph = run.session->stepGraph();
  const MemoryBudget &b = r.budget;
  auto ms = [](double v) { return rounded(v, 3); };
  auto mb = [](double v) { return rounded(v, 1); };
  json::Value line = jsonObject({
      {"compile_ms", ms(run.compileMs)},
      {"pipeline_ms", ms(stats.pipelineMs)},
      {"codegen_ms", ms(stats.codegenMs)},
      {"prefill_ms", ms(r.prefillMs)},
      {"prefill_tok_s", ms(r.prefillTokS)},
      {"decode_tok_s", ms(r.decodeTokS)},
      {"peak_rss_mib", mb(r.peakMb)},
      {"weights_mib", mb(b.weights)},
      {"kv_cache_mib", mb(b.kvCache)},
      {"activations_mib", mb(b.activations)},
      {"start_rss_mib", mb(o.startRssMb)},
      {"compile_mib", mb(b.compile)},
      {"rss_bound_mib", mb(r.boundMb)},
      {"params", int64_t(r.params)},
      {"threads", r.threads},
      {"threads_given", o.threadsGiven},
      {"compile_threads", stats.compileThreads},
      {"target", r.target},
      {"cache", r.cache},
      {"cuda_graph_steps", int64_t(graph ? graph->launches() : 0)},
      {"cuda_graph_instantiations",
       int64_t(graph ? graph->instantiations() : 0)},
      {"weights_dtype", r.dtype},
      {"compute", r.compute},
      {"weight_bytes_per_token", int64_t(std::llround(r.stepBytes))},
      {"decode_gb_s", ms(r.decodeGBs)},
      {"batch", int64_t(o.batch)},
      {"runs", o.repeat},
      {"prefill_tok_s_min", ms(r.prefillLo)},
      {"prefill_tok_s_max", ms(r.prefillHi)},
      {"decode_tok_s_min", ms(r.decodeLo)},
      {"decode_tok_s_max", ms(r.decodeHi)},
  });
  printJsonDocument(line);
}

} // namespace

Error runBench(const Flags &given, const SessionMaker &make) {
  auto o = benchFlags(given);
  if (!o)
    return o.takeError();
  auto run = setUp(*o, {o->batch, o->promptLen, false}, make);
  if (!run)
    return run.takeError();
  auto measured = measure(*o, *run);
  if (!measured)
    return measured.takeError();
  BenchReport r = benchReport(*o, *run, *measured);
  if (std::string warning = r.budget.warning(r.peakMb);
      !warning.empty() && !o->quiet)
    std::fprintf(stderr, "%s\n", warning.c_str());
  printReport(*o, r);
  if (o->json)
    printJson(*o, *run, r);
  return Error::success();
}

} // namespace tlm::cli
