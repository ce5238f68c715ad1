//===- Commands.cpp - what the commands share, and forward ----------------===//

#include "tools/common/Commands.h"
#include "tools/common/Progress.h"

#include "lib/io/FileIO.h"
#include "lib/io/SafeTensors.h"
#include "lib/io/TokenFile.h"
#include "lib/io/Tokenizer.h"
#include "lib/model/ConfigJson.h"
#include "lib/runtime/Artifact.h"
#include "lib/runtime/cuda/CudaRuntime.h"
#include "lib/runtime/Metrics.h"
#include "lib/runtime/Sampler.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <csignal>
#include <cstdio>
#include <optional>
#include <cstring>
#include <sys/resource.h>
#include <sys/stat.h>

namespace tlm::cli {

double peakRssMb() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0; // Linux reports KiB
}

namespace {

/// The length of the UTF-8 sequence at the start of `s` when it is a valid
/// one of at least two bytes, else 0.
size_t utf8Length(std::string_view s) {
  unsigned char c = s[0];
  size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (c >= 0xF5 || n == 0 || s.size() < n)
    return 0;
  for (size_t i = 1; i < n; ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80)
      return 0;
  // Well-formed only (Unicode's table 3-7): no overlong form (E0 80 9B
  // would be ESC in disguise), no surrogate, nothing past U+10FFFF.
  unsigned char second = s[1];
  if ((c == 0xE0 && second < 0xA0) || (c == 0xED && second > 0x9F) ||
      (c == 0xF0 && second < 0x90) || (c == 0xF4 && second > 0x8F))
    return 0;
  return n;
}

} // namespace

std::string printable(std::string_view message, bool keepNewlines) {
  constexpr size_t kHead = 700, kTail = 300;
  std::string out;
  char buf[8];
  for (size_t i = 0; i < message.size();) {
    unsigned char c = message[i];
    if (c >= 0x80) {
      // Whole UTF-8 characters pass, but the C1 controls (U+0080 to
      // U+009F, which a terminal may obey as it does ESC) and bytes that
      // are no character are escaped.
      size_t n = utf8Length(message.substr(i));
      bool c1 = n == 2 && c == 0xC2 &&
                static_cast<unsigned char>(message[i + 1]) <= 0x9F;
      if (n && !c1) {
        out.append(message.substr(i, n));
        i += n;
        continue;
      }
      if (c1) {
        snprintf(buf, sizeof(buf), "\\u%04x",
                 static_cast<unsigned char>(message[i + 1]));
        out += buf;
        i += 2;
        continue;
      }
    }
    if ((c < 0x20 && !(keepNewlines && c == '\n')) || c == 0x7f || c >= 0x80) {
      snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  if (out.size() > kHead + kTail)
    out = out.substr(0, kHead) + "..." + out.substr(out.size() - kTail);
  return out;
}

int report(const Error &err) {
  if (!err)
    return 0;
  int code = err.exitCode();
  std::fflush(stdout);
  std::fprintf(stderr, "error: %s\n",
               printable(err.message(), code == 2).c_str());
  return code;
}

namespace {

Expected<model::Config> readConfig(const Flags &f) {
  if (f.config.empty() && !f.artifact.empty()) {
    // An artifact records the config it was compiled for.
    auto manifest = runtime::readArtifactManifest(f.artifact);
    if (!manifest)
      return manifest.takeError();
    return model::parseConfig(manifest->model);
  }
  if (f.config.empty())
    return userError("--config is required");
  return model::loadConfig(f.config);
}

} // namespace

Error resolveDtype(const Flags &f, model::Config &c) {
  std::optional<model::WeightDtype> flag;
  if (!f.weightsDtype.empty()) {
    flag = model::parseWeightDtype(f.weightsDtype);
    if (!flag)
      return userError("--weights-dtype must be one of " +
                       std::string(model::dtypeNames()) + ", found '" +
                       f.weightsDtype + "'");
  }
  if (f.weights.empty()) {
    // Seeded weights: initialised in f32 and rounded to the dtype.
    if (flag)
      c.dtype = *flag;
    return Error::success();
  }
  // A weights file says how its matrices are stored; what else asks for a
  // dtype must agree with it.
  auto file = model::Weights::fileDtype(f.weights);
  if (!file)
    return file.takeError();
  std::string holds =
      f.weights + " holds " + std::string(model::dtypeName(*file)) + " weights";
  if (flag && *flag != *file)
    return userError("--weights-dtype " + f.weightsDtype + ": " + holds +
                     " (tlm-run quantize converts them)");
  if (c.dtype != model::WeightDtype::F32 && c.dtype != *file)
    return userError(
        (f.config.empty() ? "artifact " + f.artifact : "config " + f.config) +
        " is for " + std::string(model::dtypeName(c.dtype)) + " weights, and " +
        holds);
  c.dtype = *file;
  return Error::success();
}

Expected<model::Config> loadConfig(const Flags &f) {
  auto c = readConfig(f);
  if (!c)
    return c.takeError();
  if (Error err = resolveDtype(f, *c))
    return err;
  return c;
}

Error checkThreads(const Flags &f) {
  if (f.threads < 1)
    return userError("--threads must be >= 1, found " +
                     std::to_string(f.threads));
  // More threads than cores only adds forks, and libomp aborts when the
  // system cannot start them.
  int most = std::min(1024, 4 * f.cores);
  if (f.threads > most)
    return userError("--threads (" + std::to_string(f.threads) +
                     ") exceeds the supported maximum " + std::to_string(most) +
                     " (4 x the " + std::to_string(f.cores) +
                     " cores this process may use, at most 1024)");
  return Error::success();
}

namespace {

/// Checks the flags every model-running command shares.
Error checkRunFlags(const Flags &f) {
  if (Error err = checkThreads(f))
    return err;
  if (f.target != "cpu" && f.target != "cuda")
    return userError("--target must be cpu or cuda, found '" + f.target + "'");
  if (f.target == "cuda")
    if (Error err = runtime::cuda::available())
      return Error::withExitCode(3, "target cuda is not available: " +
                                        err.message());
  return Error::success();
}

} // namespace

Expected<bool> hugePages(const Flags &f) {
  if (f.hugePages != "on" && f.hugePages != "off")
    return userError("--huge-pages must be on or off, found '" + f.hugePages +
                     "'");
  return f.hugePages == "on";
}

Expected<bool> cudaGraphs(const Flags &f) {
  if (f.cudaGraphs != "on" && f.cudaGraphs != "off")
    return userError("--cuda-graphs must be on or off, found '" + f.cudaGraphs +
                     "'");
  return f.cudaGraphs == "on";
}

Expected<model::Weights> loadWeights(const Flags &f, const model::Config &c) {
  if (f.init != "module" && f.init != "gpt2")
    return userError("--init must be module or gpt2, found '" + f.init + "'");
  auto huge = hugePages(f);
  if (!huge)
    return huge.takeError();
  if (f.weights.empty())
    return model::Weights::init(c, f.seed,
                                f.init == "gpt2" ? model::InitScheme::GPT2
                                                 : model::InitScheme::Module,
                                *huge);
  if (f.weightsLoad != "read" && f.weightsLoad != "mmap")
    return userError("--weights-load must be read or mmap, found '" +
                     f.weightsLoad + "'");
  return model::Weights::load(c, f.weights,
                              f.weightsLoad == "mmap"
                                  ? io::SafeTensors::Load::Map
                                  : io::SafeTensors::Load::Read,
                              *huge);
}

Expected<std::unique_ptr<runtime::Session>>
artifactSession(const Flags &f, const model::Config &c, int64_t batch) {
  auto huge = hugePages(f);
  if (!huge)
    return huge.takeError();
  std::string shortfall = runtime::Session::memoryShortfall(c, batch);
  if (!shortfall.empty())
    return userError(shortfall);
  runtime::SessionOptions options;
  options.batch = batch;
  options.hugePages = *huge;
  options.artifact = f.artifact;
  auto graphs = cudaGraphs(f);
  if (!graphs)
    return graphs.takeError();
  options.cudaGraphs = *graphs;
  auto s = runtime::Session::open(c, options);
  if (!s)
    return s.takeError();
  if (f.target == "cuda" && !(*s)->program().onDevice())
    return userError("--target cuda: " + f.artifact + " is a CPU artifact");
  if (*graphs && !(*s)->program().onDevice())
    return userError("--cuda-graphs on: " + f.artifact + " is a CPU artifact");
  int threads = (*s)->program().artifactManifest()->threads;
  if (f.threadsGiven && threads != f.threads)
    return userError("--threads " + std::to_string(f.threads) + ": " +
                     f.artifact + " was compiled for " +
                     std::to_string(threads) + " threads");
  const std::string &compute = (*s)->program().artifactManifest()->compute;
  if (f.isGiven("compute") && compute != f.compute)
    return userError("--compute " + f.compute + ": " + f.artifact +
                     " was compiled for " + compute + " compute");
  return s;
}

Expected<std::vector<int64_t>> parseIds(std::string_view flag,
                                        std::string_view text) {
  std::vector<int64_t> ids;
  std::string word;
  auto flush = [&]() -> Error {
    if (word.empty())
      return Error::success();
    char *end = nullptr;
    errno = 0;
    long long v = std::strtoll(word.c_str(), &end, 10);
    if (errno || end != word.c_str() + word.size() || word[0] == '+')
      return userError("--" + std::string(flag) + ": '" + word +
                       "' is not an integer");
    ids.push_back(v);
    word.clear();
    return Error::success();
  };
  for (char c : text) {
    if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (Error err = flush())
        return err;
    } else {
      word += c;
    }
  }
  if (Error err = flush())
    return err;
  if (ids.empty())
    return userError("--" + std::string(flag) + " holds no token ids");
  return ids;
}

/// Rejects ids outside the vocabulary and sequences past the context.
Error checkTokens(const Tokens &t, const model::Config &c) {
  if (t.seq > c.contextLength)
    return userError("sequence of " + std::to_string(t.seq) +
                     " tokens exceeds context_length (" +
                     std::to_string(c.contextLength) + ")");
  for (size_t i = 0; i < t.ids.size(); ++i)
    if (t.ids[i] < 0 || t.ids[i] >= c.vocabSize)
      return userError("token id " + std::to_string(t.ids[i]) + " at index " +
                       std::to_string(i) + " is out of range [0, " +
                       std::to_string(c.vocabSize) + ")");
  return Error::success();
}

namespace {

Expected<Tokens> forwardTokens(const Flags &f) {
  if (!f.tokens.empty() == !f.tokensFile.empty())
    return userError("give exactly one of --tokens and --tokens-file");
  if (!f.tokensFile.empty())
    return io::readTokenFile(f.tokensFile);
  auto ids = parseIds("tokens", f.tokens);
  if (!ids)
    return ids.takeError();
  Tokens t;
  t.seq = ids->size();
  t.batch = 1;
  t.ids = std::move(*ids);
  return t;
}

extern "C" void requestStop(int signal) { stopRequested = signal; }

} // namespace

volatile std::sig_atomic_t stopRequested = 0;

StopOnSignal::StopOnSignal() {
  struct sigaction sa = {};
  sa.sa_handler = requestStop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &oldInt);
  sigaction(SIGTERM, &sa, &oldTerm);
}

StopOnSignal::~StopOnSignal() {
  sigaction(SIGINT, &oldInt, nullptr);
  sigaction(SIGTERM, &oldTerm, nullptr);
}

int finishStdout(int code, int failedErrno) {
  errno = 0;
  int flushed = std::fflush(stdout);
  int err = failedErrno ? failedErrno : flushed != 0 ? errno : 0;
  if (err == 0 && !std::ferror(stdout))
    return code;
  // stdio keeps only that a write failed, not why: a pipe's failure is its
  // reader leaving, anything else (ENOSPC, EIO, EFBIG) is lost output.
  struct stat st;
  bool pipe = err == EPIPE ||
              (err == 0 && ::fstat(1, &st) == 0 &&
               (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)));
  // A command that failed has said why already.
  if (!pipe && code == 0) {
    std::fprintf(stderr, "error: cannot write to standard output: %s\n",
                 err ? std::strerror(err) : "a write failed");
    code = 1;
  }
  return code;
}

std::FILE *resultStream(const Flags &f) {
  if (!f.json)
    return stdout;
  return f.quiet ? nullptr : stderr;
}

void printTo(std::FILE *out, const char *format, ...) {
  if (!out)
    return;
  va_list args;
  va_start(args, format);
  std::vfprintf(out, format, args);
  va_end(args);
}

void printJsonDocument(const json::Value &doc) {
  std::string text = doc.dump(json::Value::Layout::Line) + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
}

Error checkFinite(const Run &run, const float *logits, int64_t count) {
  if (Error err = runtime::checkLogitsFinite(
          run.config, run.weights.pointers(), logits, count))
    return userError(err.message()); // exit 1 either way, as it always was
  return Error::success();
}

double compiledHeapLimit(const model::MemoryLimit &limit, double kvCache,
                         double kvResident, double logits) {
  double left = limit.bytes - logits;
  // The KV cache is reserved: an address-space limit has counted it
  // already, the machine's memory only the pages touched so far.
  if (!limit.countsReservations)
    left -= kvCache - kvResident;
  return std::max(left, 1.0);
}

/// The compiler's high-water mark above the process at start, with room:
/// ~80 MiB measured (docs/memory.md), more in address space (each compile
/// thread's malloc arena reserves 64 MiB).
constexpr double kCompileAllowanceBytes = 256e6;

/// What each OpenMP worker thread reserves in address space: its stack
/// (8 MiB) with libomp's own per-thread state, measured at ~10 MB a thread
/// (the lowest ulimit -v that runs tiny.json at 2 and at 8 threads differ
/// by 60 MB), with room. Only an address-space limit counts reservations;
/// without this share a limit just above the rest passed the check and
/// libomp then aborted starting its threads (OMP Error #34).
constexpr double kThreadReservationBytes = 12.0 * (1 << 20);

Expected<Run> setUp(const Flags &f, const RunShape &shape,
                    const SessionMaker &make) {
  int64_t batch = shape.batch;
  if (Error err = checkRunFlags(f))
    return err;
  auto config = loadConfig(f);
  if (!config)
    return config.takeError();
  {
    // The KV cache alone first: a batch that could never fit says so.
    std::string kvShortfall = runtime::Session::memoryShortfall(*config, batch);
    if (!kvShortfall.empty())
      return userError(kvShortfall);
    double weights = double(model::weightBytes(*config));
    double kv = runtime::Session::kvCacheBytes(*config, batch);
    double logits = shape.logitBytes(config->vocabSize);
    double activations = runtime::Session::activationBytes(
        *config, batch, shape.seq, f.threads, shape.everyPosition);
    double compile = f.artifact.empty() ? kCompileAllowanceBytes : 0;
    // An artifact runs on the threads it was compiled for, not --threads's
    // default.
    int threadCount = f.threads;
    if (!f.artifact.empty())
      if (auto manifest = runtime::readArtifactManifest(f.artifact))
        threadCount = manifest->threads;
    double threads = model::memoryLimit().countsReservations
                         ? double(threadCount - 1) * kThreadReservationBytes
                         : 0;
    std::string parts =
        formatString("this run (weights %.2f GB, KV cache %.2f GB, logits "
                     "%.2f GB, activations %.2f GB, compiler ~%.2f GB",
                     weights / 1e9, kv / 1e9, logits / 1e9, activations / 1e9,
                     compile / 1e9);
    if (threads > 0)
      parts += formatString(", %d threads' stacks ~%.2f GB", threadCount,
                            threads / 1e9);
    std::string shortfall = model::memoryShortfall(
        weights + kv + logits + activations + compile + threads,
        parts + ")");
    if (!shortfall.empty())
      return userError(shortfall);
  }
  // Compile first (it depends on the config only): the compiler's heap is
  // returned before the weights are read, so peak memory is the larger of
  // the two rather than their sum.
  auto start = Clock::now();
  Phase compile(!f.quiet, f.json, "compile",
                f.artifact.empty() ? "compiling the model (MLIR passes, then "
                                     "LLVM; --cache-dir keeps the result)"
                                   : "loading the artifact");
  auto session = make(f, *config, batch);
  if (!session)
    return session.takeError();
  double compileMs = msSince(start);
  double compilePeakMb = peakRssMb();
  const runtime::CompileStats &stats = (*session)->program().stats();
  if (!f.artifact.empty())
    compile.done("loaded the artifact");
  else if (stats.cacheHit)
    compile.done("loaded the compiled code from the cache",
                 jsonObject({{"cache", "hit"}}));
  else
    compile.done(formatString("compiled (MLIR passes %.2f s, LLVM %.2f s)",
                              stats.pipelineMs / 1000, stats.codegenMs / 1000),
                 jsonObject({{"cache", f.noCache ? "off" : "miss"},
                             {"pipeline_ms", rounded(stats.pipelineMs, 1)},
                             {"codegen_ms", rounded(stats.codegenMs, 1)}}));
  start = Clock::now();
  double megabytes = 0;
  for (const model::WeightSpec &spec : model::weightSpecs(*config))
    megabytes += spec.numElements() * io::dtypeSize(spec.dtype) / 1e6;
  Phase load(!f.quiet, f.json, "weights",
             formatString("%s the weights (%.1f MB)",
                          f.weights.empty() ? "initialising" : "reading",
                          megabytes));
  auto weights = loadWeights(f, *config);
  if (!weights)
    return weights.takeError();
  Run run{*config, std::move(*weights), std::move(*session), compileMs};
  run.compilePeakMb = compilePeakMb;
  if (Error err = run.session->setWeights(run.weights.pointers())) {
    // The GPU out of memory is the run's size (1), not the target (3). An
    // artifact's target is its own, whatever --target said.
    const char *target =
        run.session->program().onDevice() ? "cuda" : f.target.c_str();
    return Error::withExitCode(err.exitCode() == 1 ? 1 : 3,
                               std::string("target ") + target + ": " +
                                   err.message());
  }
  run.weightsMs = msSince(start);
  // The weights are in and the KV cache reserved but not yet touched; the
  // command's logits are still to be allocated. What is left of the memory
  // available now is the compiled code's.
  if (auto setLimit = run.session->program().heap().setLimit)
    setLimit(uint64_t(compiledHeapLimit(
        model::memoryLimit(/*available=*/true),
        runtime::Session::kvCacheBytes(*config, batch),
        double(run.session->kvCacheResidentBytes()),
        shape.logitBytes(config->vocabSize))));
  load.done(formatString("%s %.1f MB of weights (%.0f MB/s)",
                         f.weights.empty() ? "initialised" : "read", megabytes,
                         megabytes / (run.weightsMs / 1000)),
            jsonObject({{"mb", rounded(megabytes, 1)},
                        {"mb_s", rounded(megabytes / (run.weightsMs / 1000), 1)}}));
  return run;
}

Error runForward(const Flags &f, const SessionMaker &make) {
  if (Error err = checkRunFlags(f))
    return err;
  if (Error err = io::refuseOverwritingInput(
          f.output, {f.config, f.weights, f.tokensFile}, "--output"))
    return err;
  auto config = loadConfig(f);
  if (!config)
    return config.takeError();
  auto tokens = forwardTokens(f);
  if (!tokens)
    return tokens.takeError();
  if (Error err = checkTokens(*tokens, *config))
    return err;
  auto run = setUp(f, {tokens->batch, tokens->seq, true}, make);
  if (!run)
    return run.takeError();
  int64_t vocab = run->config.vocabSize;
  int64_t batch = tokens->batch, seq = tokens->seq;
  std::vector<float> logits(batch * seq * vocab);
  auto start = Clock::now();
  if (!f.incremental) {
    if (Error err = run->session->step(tokens->ids.data(), seq, logits.data()))
      return err;
  } else {
    // One token a step, each sequence's position t together: the logits
    // of decode's code, which must match the prefill's.
    std::vector<int64_t> ids(batch);
    std::vector<float> row(batch * vocab);
    for (int64_t t = 0; t < seq; ++t) {
      for (int64_t b = 0; b < batch; ++b)
        ids[b] = tokens->ids[b * seq + t];
      if (Error err = run->session->step(ids.data(), 1, row.data()))
        return err;
      for (int64_t b = 0; b < batch; ++b)
        std::copy_n(row.data() + b * vocab, vocab,
                    logits.data() + (b * seq + t) * vocab);
    }
  }
  double forwardMs = msSince(start);
  if (Error err = checkFinite(*run, logits.data(), logits.size()))
    return err;
  std::string shape = formatString("(%lld, %lld, %lld)", (long long)batch,
                                   (long long)seq, (long long)vocab);
  json::Value doc = jsonObject(
      {{"shape", jsonArray({batch, seq, vocab})},
       {"compile_ms", rounded(run->compileMs, 3)},
       {"weights_ms", rounded(run->weightsMs, 3)},
       {"forward_ms", rounded(forwardMs, 3)},
       {"tok_s", rounded(double(batch * seq) / (forwardMs / 1000), 1)}});
  if (!f.output.empty()) {
    start = Clock::now();
    if (Error err = io::writeSafeTensors(
            f.output, {{"logits", io::DType::F32, {batch, seq, vocab},
                        logits.data()}}))
      return err;
    // On stderr with the progress, as every model command's notes: stdout
    // stays the result's (here nothing, or --json's document).
    if (!f.quiet)
      std::fprintf(stderr, "wrote %s (logits %s, %s) in %s\n",
                   f.output.c_str(), shape.c_str(),
                   sizeText(logits.size() * 4.0).c_str(),
                   durationText(msSince(start)).c_str());
    doc.set("output", f.output);
    if (f.json)
      printJsonDocument(doc);
    return Error::success();
  }
  double checksum = 0;
  json::Value argmax = json::Value::array();
  for (int64_t b = 0; b < batch; ++b) {
    const float *row = logits.data() + ((b + 1) * seq - 1) * vocab;
    argmax.push(int64_t(std::max_element(row, row + vocab) - row));
  }
  for (float v : logits)
    checksum += v;
  std::FILE *out = resultStream(f);
  printTo(out, "logits: %s\nargmax at the last position:", shape.c_str());
  for (const json::Value &id : argmax.elements())
    printTo(out, " %lld", (long long)id.asInt());
  printTo(out, "\nchecksum: %.6e\n", checksum);
  if (f.json) {
    doc.set("argmax_last", std::move(argmax));
    doc.set("checksum", checksum);
    printJsonDocument(doc);
  }
  return Error::success();
}

} // namespace tlm::cli
