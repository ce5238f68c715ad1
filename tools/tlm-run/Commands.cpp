//===- Commands.cpp - the tlm-run subcommands -----------------------------===//

#include "tools/tlm-run/Options.h"
#include "tools/tlm-run/Run.h"

#include "lib/io/FileIO.h"
#include "lib/io/SafeTensors.h"
#include "lib/io/TokenFile.h"
#include "lib/io/Tokenizer.h"
#include "lib/model/Builder.h"
#include "lib/model/ConfigJson.h"
#include "lib/model/Weights.h"
#include "lib/runtime/CudaRuntime.h"
#include "lib/runtime/Metrics.h"
#include "lib/runtime/Sampler.h"
#include "lib/runtime/Session.h"
#include "passes/pipelines/Pipelines.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace tlm::cli {

double currentRssMb() {
  // statm's second field: resident pages.
  long pages = 0, resident = 0;
  if (FILE *f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2)
      resident = 0;
    std::fclose(f);
  }
  return resident * double(sysconf(_SC_PAGESIZE)) / 1048576.0;
}

llvm::Expected<model::Config> loadConfig(const Options &o) {
  if (o.config.empty() && !o.artifact.empty()) {
    // An artifact records the config it was compiled for.
    auto manifest = runtime::readArtifactManifest(o.artifact);
    if (!manifest)
      return asUserError(manifest.takeError());
    auto config = model::parseConfig(manifest->model);
    if (!config)
      return asUserError(config.takeError());
    return toLlvm(std::move(config));
  }
  if (o.config.empty())
    return userError("--config is required");
  auto config = model::loadConfig(o.config);
  if (!config)
    return asUserError(config.takeError());
  return toLlvm(std::move(config));
}

llvm::Error checkThreads(const Options &o) {
  if (o.threads < 1)
    return userError("--threads must be >= 1, found " + llvm::Twine(o.threads));
  // More threads than cores only adds forks, and libomp aborts when the
  // system cannot start them.
  int most = std::min(1024, 4 * o.cores);
  if (o.threads > most)
    return userError("--threads (" + llvm::Twine(o.threads) +
                     ") exceeds the supported maximum " + llvm::Twine(most) +
                     " (4 x the " + llvm::Twine(o.cores) +
                     " cores this process may use, at most 1024)");
  return llvm::Error::success();
}

namespace {

/// Checks the flags every model-running command shares.
llvm::Error checkRunFlags(const Options &o) {
  if (llvm::Error err = checkThreads(o))
    return err;
  if (o.target != "cpu" && o.target != "cuda")
    return userError("--target must be cpu or cuda, found '" + o.target + "'");
  if (o.target == "cuda")
    if (llvm::Error err = toLlvm(runtime::cuda::available()))
      return llvm::make_error<ExitError>(3, "target cuda is not available: " +
                                                llvm::toString(std::move(err)));
  return llvm::Error::success();
}

} // namespace

namespace {
/// --huge-pages as a flag (see io::LargeBuffer).
llvm::Expected<bool> hugePages(const Options &o) {
  if (o.hugePages != "on" && o.hugePages != "off")
    return userError("--huge-pages must be on or off, found '" + o.hugePages +
                     "'");
  return o.hugePages == "on";
}
} // namespace

llvm::Expected<model::Weights> loadWeights(const Options &o,
                                           const model::Config &c) {
  if (o.init != "module" && o.init != "gpt2")
    return userError("--init must be module or gpt2, found '" + o.init + "'");
  auto huge = hugePages(o);
  if (!huge)
    return huge.takeError();
  if (o.weights.empty()) {
    auto w = model::Weights::init(c, o.seed,
                                  o.init == "gpt2" ? model::InitScheme::GPT2
                                                   : model::InitScheme::Module,
                                  *huge);
    if (!w)
      return asUserError(w.takeError());
    return toLlvm(std::move(w));
  }
  if (o.weightsLoad != "read" && o.weightsLoad != "mmap")
    return userError("--weights-load must be read or mmap, found '" +
                     o.weightsLoad + "'");
  auto w = model::Weights::load(c, o.weights,
                                o.weightsLoad == "mmap"
                                    ? io::SafeTensors::Load::Map
                                    : io::SafeTensors::Load::Read,
                                *huge);
  if (!w)
    return asUserError(w.takeError());
  return toLlvm(std::move(w));
}

llvm::Expected<std::unique_ptr<runtime::Session>>
makeSession(const Options &o, const model::Config &c, int64_t batch) {
  auto jit = jitOptions(o, c);
  if (!jit)
    return jit.takeError();
  auto huge = hugePages(o);
  if (!huge)
    return huge.takeError();
  // Not enough memory is the user's problem; a failure after that is ours.
  std::string shortfall = runtime::Session::memoryShortfall(c, batch);
  if (!shortfall.empty())
    return userError(shortfall);
  runtime::SessionOptions options;
  options.batch = batch;
  options.hugePages = *huge;
  options.artifact = o.artifact;
  auto s = toLlvm(runtime::Session::compile(c, options, *jit));
  if (!s && !o.artifact.empty())
    return asUserError(s.takeError());
  if (s && !o.artifact.empty() && o.threadsGiven &&
      (*s)->program().artifactManifest()->threads != o.threads)
    return userError("--threads " + llvm::Twine(o.threads) + ": " + o.artifact +
                     " was compiled for " +
                     llvm::Twine((*s)->program().artifactManifest()->threads) +
                     " threads");
  if (!s) {
    // A GPU setup problem (no libdevice, kernels the driver rejects) makes
    // the target unavailable; anything else is a compiler failure.
    std::unique_ptr<ExitError> exit;
    llvm::handleAllErrors(
        s.takeError(),
        [&](const UnavailableError &e) {
          exit = std::make_unique<ExitError>(3, "target cuda: " + e.message);
        },
        [&](const llvm::ErrorInfoBase &e) {
          exit = std::make_unique<ExitError>(2, "compilation failed: " +
                                                    e.message());
        });
    return llvm::Error(std::move(exit));
  }
  return s;
}

/// "1 2 3" or "1,2,3".
llvm::Expected<std::vector<int64_t>> parseIds(llvm::StringRef flag,
                                              llvm::StringRef text) {
  std::vector<int64_t> ids;
  std::string normalized = text.str();
  std::replace(normalized.begin(), normalized.end(), ',', ' ');
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(normalized).split(parts, ' ', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef s : parts) {
    s = s.trim();
    if (s.empty())
      continue;
    long long v;
    if (s.getAsInteger(10, v))
      return userError("--" + flag + ": '" + s + "' is not an integer");
    ids.push_back(v);
  }
  if (ids.empty())
    return userError("--" + flag + " holds no token ids");
  return ids;
}

namespace {

/// A (batch, seq) token matrix.
using Tokens = io::TokenMatrix;

/// Reads a --tokens-file (see lib/io/TokenFile.h).
llvm::Expected<Tokens> readTokenFile(const std::string &path) {
  auto m = io::readTokenFile(path);
  if (!m)
    return asUserError(m.takeError());
  return toLlvm(std::move(m));
}

/// Rejects ids outside the vocabulary and sequences past the context.
llvm::Error checkTokens(const Tokens &t, const model::Config &c) {
  if (t.seq > c.contextLength)
    return userError("sequence of " + llvm::Twine(t.seq) +
                     " tokens exceeds context_length (" +
                     llvm::Twine(c.contextLength) + ")");
  for (size_t i = 0; i < t.ids.size(); ++i)
    if (t.ids[i] < 0 || t.ids[i] >= c.vocabSize)
      return userError("token id " + llvm::Twine(t.ids[i]) + " at index " +
                       llvm::Twine(i) + " is out of range [0, " +
                       llvm::Twine(c.vocabSize) + ")");
  return llvm::Error::success();
}

llvm::Expected<Tokens> forwardTokens(const Options &o) {
  if (!o.tokens.empty() == !o.tokensFile.empty())
    return userError("give exactly one of --tokens and --tokens-file");
  if (!o.tokensFile.empty())
    return readTokenFile(o.tokensFile);
  auto ids = parseIds("tokens", o.tokens);
  if (!ids)
    return ids.takeError();
  Tokens t;
  t.seq = ids->size();
  t.batch = 1;
  t.ids = std::move(*ids);
  return t;
}

/// The signal (SIGINT, SIGTERM) that asked generation to stop, or 0.
volatile std::sig_atomic_t stopRequested = 0;
extern "C" void requestStop(int signal) { stopRequested = signal; }

/// While alive, SIGINT and SIGTERM end generation after the token being
/// printed instead of killing the process mid-write.
struct StopOnSignal {
  struct sigaction oldInt, oldTerm;
  StopOnSignal() {
    struct sigaction sa = {};
    sa.sa_handler = requestStop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &oldInt);
    sigaction(SIGTERM, &sa, &oldTerm);
  }
  ~StopOnSignal() {
    sigaction(SIGINT, &oldInt, nullptr);
    sigaction(SIGTERM, &oldTerm, nullptr);
  }
};

} // namespace

/// An error when `logits` (rows of `vocab`) hold NaN or Inf: the weights'
/// fault (it names the first weight that is not finite) or an overflow.
llvm::Error checkFinite(const Run &run, const float *logits, int64_t count) {
  int64_t vocab = run.config.vocabSize;
  int64_t bad = 0;
  while (bad < count && std::isfinite(logits[bad]))
    ++bad;
  if (bad == count)
    return llvm::Error::success();
  std::string where = "logit " + std::to_string(bad % vocab) + " of row " +
                      std::to_string(bad / vocab);
  // Only on this path: a scan of every weight.
  std::vector<model::WeightSpec> specs = model::weightSpecs(run.config);
  const std::vector<const float *> &w = run.weights.pointers();
  for (size_t i = 0; i < specs.size(); ++i) {
    int64_t n = specs[i].numElements();
    for (int64_t j = 0; j < n; ++j)
      if (!std::isfinite(w[i][j]))
        return userError("the logits are not finite (" + where + "): weight '" +
                         specs[i].name + "' holds " +
                         (std::isnan(w[i][j]) ? "NaN" : "Inf") +
                         " at element " + std::to_string(j));
  }
  return userError("the logits are not finite (" + where +
                   "): the weights are finite, so the model overflows f32");
}

llvm::Expected<Run> setUp(const Options &o, int64_t batch) {
  if (llvm::Error err = checkRunFlags(o))
    return std::move(err);
  auto config = loadConfig(o);
  if (!config)
    return config.takeError();
  // Compile first (it depends on the config only): the compiler's heap is
  // returned before the weights are read, so peak memory is the larger of
  // the two rather than their sum.
  auto start = Clock::now();
  auto session = makeSession(o, *config, batch);
  if (!session)
    return session.takeError();
  double compileMs = msSince(start);
  auto weights = loadWeights(o, *config);
  if (!weights)
    return weights.takeError();
  Run run{*config, std::move(*weights), std::move(*session), compileMs};
  if (llvm::Error err = toLlvm(run.session->setWeights(run.weights.pointers())))
    return llvm::make_error<ExitError>(3, "target " + o.target + ": " +
                                              llvm::toString(std::move(err)));
  return run;
}

llvm::Error runForward(const Options &o) {
  if (llvm::Error err = checkRunFlags(o))
    return err;
  if (llvm::Error err = toLlvm(io::refuseOverwritingInput(
          o.output, {o.config, o.weights, o.tokensFile}, "--output")))
    return asUserError(std::move(err));
  auto config = loadConfig(o);
  if (!config)
    return config.takeError();
  auto tokens = forwardTokens(o);
  if (!tokens)
    return tokens.takeError();
  if (llvm::Error err = checkTokens(*tokens, *config))
    return err;
  auto run = setUp(o, tokens->batch);
  if (!run)
    return run.takeError();
  int64_t vocab = run->config.vocabSize;
  std::vector<float> logits(tokens->batch * tokens->seq * vocab);
  if (llvm::Error err = toLlvm(
          run->session->step(tokens->ids.data(), tokens->seq, logits.data())))
    return asUserError(std::move(err));
  if (llvm::Error err = checkFinite(*run, logits.data(), logits.size()))
    return err;
  if (!o.output.empty())
    return asUserError(
        io::writeSafeTensors(o.output, {{"logits",
                                         io::DType::F32,
                                         {tokens->batch, tokens->seq, vocab},
                                         logits.data()}}));
  double checksum = 0;
  for (float v : logits)
    checksum += v;
  llvm::outs() << "logits: (" << tokens->batch << ", " << tokens->seq << ", "
               << vocab << ")\nargmax at the last position:";
  for (int64_t b = 0; b < tokens->batch; ++b) {
    const float *row = logits.data() + ((b + 1) * tokens->seq - 1) * vocab;
    llvm::outs() << " " << (std::max_element(row, row + vocab) - row);
  }
  llvm::outs() << "\nchecksum: " << llvm::format("%.6e", checksum) << "\n";
  return llvm::Error::success();
}

llvm::Error runGenerate(const Options &o) {
  if (o.promptTokens.empty() == o.prompt.empty())
    return userError("give exactly one of --prompt-tokens and --prompt");
  if (!o.prompt.empty() && o.tokenizer.empty())
    return userError("--prompt needs --tokenizer");
  if (o.maxNewTokens < 0)
    return userError("--max-new-tokens must be >= 0");
  if (!(o.temperature >= 0) || !std::isfinite(o.temperature))
    return userError("--temperature must be a finite number >= 0");
  if (!(o.topP > 0 && o.topP <= 1))
    return userError("--top-p must be in (0, 1]");
  auto config = loadConfig(o);
  if (!config)
    return config.takeError();
  std::unique_ptr<io::Tokenizer> tokenizer;
  if (!o.tokenizer.empty()) {
    auto t = io::Tokenizer::load(o.tokenizer);
    if (!t)
      return asUserError(t.takeError());
    tokenizer = std::move(*t);
    if (tokenizer->vocabSize() > config->vocabSize)
      return userError("the tokenizer has " +
                       llvm::Twine(tokenizer->vocabSize()) +
                       " tokens but the model's vocab_size is " +
                       llvm::Twine(config->vocabSize));
  }
  std::vector<int64_t> promptIds;
  if (!o.prompt.empty()) {
    promptIds = tokenizer->encode(o.prompt, tokenizer->bos() >= 0);
  } else {
    auto ids = parseIds("prompt-tokens", o.promptTokens);
    if (!ids)
      return ids.takeError();
    promptIds = std::move(*ids);
  }
  if (promptIds.empty())
    return userError("the prompt encodes to no tokens");
  Tokens prompt{promptIds, 1, static_cast<int64_t>(promptIds.size())};
  if (llvm::Error err = checkTokens(prompt, *config))
    return err;
  auto run = setUp(o, 1);
  if (!run)
    return run.takeError();
  runtime::Session &s = *run->session;
  int64_t vocab = run->config.vocabSize;
  runtime::Sampler sampler(o.temperature, o.topP, o.seed);

  std::vector<float> logits(vocab);
  auto start = Clock::now();
  if (llvm::Error err =
          toLlvm(s.stepLast(prompt.ids.data(), prompt.seq, logits.data())))
    return asUserError(std::move(err));
  if (llvm::Error err = checkFinite(*run, logits.data(), vocab))
    return err;
  int64_t next = sampler.sample(logits.data(), vocab);
  int generated = 0;
  auto decodeStart = Clock::now();
  // With a tokenizer the text streams as it is produced; otherwise the ids.
  std::optional<io::StreamDecoder> stream;
  if (tokenizer)
    stream.emplace(*tokenizer, prompt.ids.back());
  StopOnSignal stopOnSignal;
  for (; generated < o.maxNewTokens; ++generated) {
    if (stopRequested) {
      llvm::outs() << "\n";
      llvm::outs().flush();
      int signal = stopRequested;
      return llvm::make_error<ExitError>(
          128 + signal, std::string("interrupted by ") +
                            (signal == SIGINT ? "SIGINT" : "SIGTERM") +
                            " after " + std::to_string(generated) +
                            " new tokens");
    }
    // A reader that went away (a closed pipe): nothing more to say.
    if (llvm::outs().has_error())
      return llvm::Error::success();
    if (stream) {
      if (next == tokenizer->eos())
        break;
      auto text = stream->feed(next);
      if (!text)
        return asUserError(text.takeError());
      llvm::outs() << *text;
    } else {
      llvm::outs() << (generated ? " " : "") << next;
    }
    llvm::outs().flush();
    if (generated + 1 == o.maxNewTokens)
      break;
    if (s.position() >= run->config.contextLength) {
      llvm::outs() << "\n";
      llvm::errs() << "note: stopped at context_length ("
                   << run->config.contextLength << ") after " << generated + 1
                   << " new tokens\n";
      return llvm::Error::success();
    }
    if (llvm::Error err = toLlvm(s.stepLast(&next, 1, logits.data())))
      return asUserError(std::move(err));
    if (llvm::Error err = checkFinite(*run, logits.data(), vocab)) {
      llvm::outs() << "\n";
      return err;
    }
    next = sampler.sample(logits.data(), vocab);
  }
  if (stream)
    llvm::outs() << stream->finish();
  llvm::outs() << "\n";
  llvm::outs().flush();
  double decodeMs = msSince(decodeStart), totalMs = msSince(start);
  llvm::errs() << llvm::format(
      "generated %d tokens in %.1f ms (%.1f tok/s decode)\n",
      generated + (o.maxNewTokens > 0), totalMs,
      generated > 0 ? generated / (decodeMs / 1000.0) : 0.0);
  return llvm::Error::success();
}

llvm::Error runEval(const Options &o) {
  if (o.tokensFile.empty())
    return userError("--tokens-file is required");
  auto config = loadConfig(o);
  if (!config)
    return config.takeError();
  auto tokens = readTokenFile(o.tokensFile);
  if (!tokens)
    return tokens.takeError();
  if (tokens->seq < 2)
    return userError("eval needs sequences of at least 2 tokens, found " +
                     llvm::Twine(tokens->seq));
  if (llvm::Error err = checkTokens(*tokens, *config))
    return err;
  auto run = setUp(o, tokens->batch);
  if (!run)
    return run.takeError();
  int64_t vocab = run->config.vocabSize, seq = tokens->seq;
  std::vector<float> logits(tokens->batch * seq * vocab);
  if (llvm::Error err =
          toLlvm(run->session->step(tokens->ids.data(), seq, logits.data())))
    return asUserError(std::move(err));
  if (llvm::Error err = checkFinite(*run, logits.data(), logits.size()))
    return err;
  double mean = runtime::meanNextTokenCrossEntropy(
      logits.data(), tokens->ids.data(), tokens->batch, seq, vocab);
  int64_t count = tokens->batch * (seq - 1);
  llvm::outs() << llvm::format("tokens %lld\ncross-entropy %.6f nats\n"
                               "perplexity %.4f\n",
                               (long long)count, mean, std::exp(mean));
  if (o.json)
    llvm::outs() << llvm::format(
        "{\"tokens\": %lld, \"cross_entropy\": %.9g, \"perplexity\": %.9g}\n",
        (long long)count, mean, std::exp(mean));
  return llvm::Error::success();
}

llvm::Error runEmit(const Options &o) {
  auto config = loadConfig(o);
  if (!config)
    return config.takeError();
  if (o.stage != "tlm" && o.stage != "linalg" && o.stage != "llvm")
    return userError("--stage must be tlm, linalg or llvm, found '" + o.stage +
                     "'");
  mlir::DialectRegistry registry;
  runtime::registerAll(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  auto module = mlir::OwningOpRef<mlir::ModuleOp>(
      mlir::ModuleOp::create(mlir::UnknownLoc::get(&ctx)));
  model::addGenerationFunctions(*module, *config);
  if (o.stage != "tlm") {
    mlir::PassManager pm(&ctx);
    if (o.stage == "linalg")
      mlir::tlm::buildLinalgPipeline(pm);
    else
      mlir::tlm::buildCpuPipeline(pm);
    if (failed(mlir::applyPassManagerCLOptions(pm)) || failed(pm.run(*module)))
      return llvm::make_error<ExitError>(2,
                                         "the " + o.stage + " pipeline failed");
  }
  module->print(llvm::outs());
  llvm::outs() << "\n";
  return llvm::Error::success();
}

} // namespace tlm::cli
