//===- Commands.cpp - forward, generate and eval (bench: Bench.cpp) -------===//

#include "tools/common/Commands.h"

#include "lib/io/FileIO.h"
#include "lib/io/SafeTensors.h"
#include "lib/io/TokenFile.h"
#include "lib/io/Tokenizer.h"
#include "lib/model/ConfigJson.h"
#include "lib/runtime/Artifact.h"
#include "lib/runtime/CudaRuntime.h"
#include "lib/runtime/Metrics.h"
#include "lib/runtime/Sampler.h"
#include "lib/support/Float16.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <optional>
#include <sys/resource.h>

namespace tlm::cli {

double peakRssMb() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0; // Linux reports KiB
}

std::string printable(std::string_view message, bool keepNewlines) {
  constexpr size_t kHead = 700, kTail = 300;
  std::string out;
  for (unsigned char c : message) {
    if ((c < 0x20 && !(keepNewlines && c == '\n')) || c == 0x7f) {
      char buf[5];
      snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
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
      return userError("--weights-dtype must be f32, bf16 or f16, found '" +
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
  auto s = runtime::Session::open(c, options);
  if (!s)
    return s.takeError();
  if (f.target == "cuda" && !(*s)->program().onDevice())
    return userError("--target cuda: " + f.artifact + " is a CPU artifact");
  int threads = (*s)->program().artifactManifest()->threads;
  if (f.threadsGiven && threads != f.threads)
    return userError("--threads " + std::to_string(f.threads) + ": " +
                     f.artifact + " was compiled for " +
                     std::to_string(threads) + " threads");
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

namespace {

/// A (batch, seq) token matrix.
using Tokens = io::TokenMatrix;

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

Error checkFinite(const Run &run, const float *logits, int64_t count) {
  int64_t vocab = run.config.vocabSize;
  int64_t bad = 0;
  while (bad < count && std::isfinite(logits[bad]))
    ++bad;
  if (bad == count)
    return Error::success();
  std::string where = "logit " + std::to_string(bad % vocab) + " of row " +
                      std::to_string(bad / vocab);
  // Only on this path: a scan of every weight.
  std::vector<model::WeightSpec> specs = model::weightSpecs(run.config);
  const std::vector<const void *> &w = run.weights.pointers();
  for (size_t i = 0; i < specs.size(); ++i) {
    int64_t n = specs[i].numElements();
    auto value = [&](int64_t j) -> float {
      const void *data = w[i];
      switch (specs[i].dtype) {
      case io::DType::BF16:
        return bf16ToF32(static_cast<const uint16_t *>(data)[j]);
      case io::DType::F16:
        return f16ToF32(static_cast<const uint16_t *>(data)[j]);
      default:
        return static_cast<const float *>(data)[j];
      }
    };
    for (int64_t j = 0; j < n; ++j)
      if (float v = value(j); !std::isfinite(v))
        return userError("the logits are not finite (" + where + "): weight '" +
                         specs[i].name + "' holds " +
                         (std::isnan(v) ? "NaN" : "Inf") + " at element " +
                         std::to_string(j));
  }
  return userError("the logits are not finite (" + where +
                   "): the weights are finite, so the model overflows f32");
}

Expected<Run> setUp(const Flags &f, int64_t batch, const SessionMaker &make) {
  if (Error err = checkRunFlags(f))
    return err;
  auto config = loadConfig(f);
  if (!config)
    return config.takeError();
  // Compile first (it depends on the config only): the compiler's heap is
  // returned before the weights are read, so peak memory is the larger of
  // the two rather than their sum.
  auto start = Clock::now();
  auto session = make(f, *config, batch);
  if (!session)
    return session.takeError();
  double compileMs = msSince(start);
  start = Clock::now();
  auto weights = loadWeights(f, *config);
  if (!weights)
    return weights.takeError();
  Run run{*config, std::move(*weights), std::move(*session), compileMs};
  if (Error err = run.session->setWeights(run.weights.pointers()))
    return Error::withExitCode(3, "target " + f.target + ": " + err.message());
  run.weightsMs = msSince(start);
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
  auto run = setUp(f, tokens->batch, make);
  if (!run)
    return run.takeError();
  int64_t vocab = run->config.vocabSize;
  std::vector<float> logits(tokens->batch * tokens->seq * vocab);
  if (Error err =
          run->session->step(tokens->ids.data(), tokens->seq, logits.data()))
    return err;
  if (Error err = checkFinite(*run, logits.data(), logits.size()))
    return err;
  if (!f.output.empty())
    return io::writeSafeTensors(f.output, {{"logits",
                                            io::DType::F32,
                                            {tokens->batch, tokens->seq, vocab},
                                            logits.data()}});
  double checksum = 0;
  for (float v : logits)
    checksum += v;
  std::printf("logits: (%lld, %lld, %lld)\nargmax at the last position:",
              (long long)tokens->batch, (long long)tokens->seq,
              (long long)vocab);
  for (int64_t b = 0; b < tokens->batch; ++b) {
    const float *row = logits.data() + ((b + 1) * tokens->seq - 1) * vocab;
    std::printf(" %lld", (long long)(std::max_element(row, row + vocab) - row));
  }
  std::printf("\nchecksum: %.6e\n", checksum);
  return Error::success();
}

namespace {

/// generate's sampling flags, checked.
Expected<runtime::SamplingOptions> samplingOptions(const Flags &f) {
  if (!(f.temperature >= 0) || !std::isfinite(f.temperature))
    return userError("--temperature must be a finite number >= 0");
  if (!(f.topP > 0 && f.topP <= 1))
    return userError("--top-p must be in (0, 1]");
  if (f.topK < 0)
    return userError("--top-k must be >= 0 (0: every token)");
  if (!(f.minP >= 0 && f.minP <= 1))
    return userError("--min-p must be in [0, 1]");
  if (!(f.repeatPenalty > 0) || !std::isfinite(f.repeatPenalty))
    return userError("--repeat-penalty must be a finite number > 0");
  if (f.repeatLastN < 0)
    return userError("--repeat-last-n must be >= 0");
  if (!std::isfinite(f.frequencyPenalty) || !std::isfinite(f.presencePenalty))
    return userError("--frequency-penalty and --presence-penalty must be "
                     "finite numbers");
  runtime::SamplingOptions o;
  o.temperature = f.temperature;
  o.topP = f.topP;
  o.topK = f.topK;
  o.minP = f.minP;
  o.repeatPenalty = f.repeatPenalty;
  o.repeatLastN = f.repeatLastN;
  o.frequencyPenalty = f.frequencyPenalty;
  o.presencePenalty = f.presencePenalty;
  o.seed = f.samplingSeed;
  return o;
}

} // namespace

Error runGenerate(const Flags &f, const SessionMaker &make) {
  int prompts =
      !f.promptTokens.empty() + !f.prompt.empty() + !f.promptFile.empty();
  if (prompts != 1)
    return userError(
        "give exactly one of --prompt-tokens, --prompt and --prompt-file");
  std::string promptText = f.prompt;
  if (!f.promptFile.empty()) {
    // A prompt is text for the tokenizer: 16 MiB bounds the read.
    auto text = io::readRegularFile(f.promptFile, 16 << 20);
    if (!text)
      return userError("--prompt-file: " + text.takeError().message());
    promptText = std::move(*text);
    if (promptText.empty())
      return userError("--prompt-file: " + f.promptFile + " is empty");
  }
  if (!promptText.empty() && f.tokenizer.empty())
    return userError(
        std::string(f.prompt.empty() ? "--prompt-file" : "--prompt") +
        " needs --tokenizer");
  if (f.ignoreEos && f.tokenizer.empty())
    return userError("--ignore-eos needs --tokenizer (without one no token "
                     "ends the text)");
  if (f.maxNewTokens < 0)
    return userError("--max-new-tokens must be >= 0");
  auto sampling = samplingOptions(f);
  if (!sampling)
    return sampling.takeError();
  auto config = loadConfig(f);
  if (!config)
    return config.takeError();
  std::unique_ptr<io::Tokenizer> tokenizer;
  if (!f.tokenizer.empty()) {
    auto t = io::Tokenizer::load(f.tokenizer);
    if (!t)
      return t.takeError();
    tokenizer = std::move(*t);
    if (tokenizer->vocabSize() > config->vocabSize)
      return userError("the tokenizer has " +
                       std::to_string(tokenizer->vocabSize()) +
                       " tokens but the model's vocab_size is " +
                       std::to_string(config->vocabSize));
  }
  std::vector<int64_t> promptIds;
  if (!promptText.empty()) {
    promptIds = tokenizer->encode(promptText, tokenizer->bos() >= 0);
  } else {
    auto ids = parseIds("prompt-tokens", f.promptTokens);
    if (!ids)
      return ids.takeError();
    promptIds = std::move(*ids);
  }
  if (promptIds.empty())
    return userError("the prompt encodes to no tokens");
  Tokens prompt{promptIds, 1, static_cast<int64_t>(promptIds.size())};
  if (Error err = checkTokens(prompt, *config))
    return err;
  auto run = setUp(f, 1, make);
  if (!run)
    return run.takeError();
  runtime::Session &s = *run->session;
  int64_t vocab = run->config.vocabSize;
  // A vocabulary padded past the tokenizer's: the padding rows are never
  // sampled (docs/tlm-run.md#generate).
  if (tokenizer)
    sampling->vocabLimit = tokenizer->vocabSize();
  runtime::Sampler sampler(*sampling);
  for (int64_t id : prompt.ids)
    sampler.observe(id);

  std::vector<float> logits(vocab);
  auto start = Clock::now();
  if (Error err = s.stepLast(prompt.ids.data(), prompt.seq, logits.data()))
    return err;
  double prefillMs = msSince(start);
  if (Error err = checkFinite(*run, logits.data(), vocab))
    return err;
  int64_t next = sampler.sample(logits.data(), vocab);
  sampler.observe(next);
  // Tokens printed so far, which is also the decode steps run.
  int generated = 0;
  bool atEos = false;
  auto decodeStart = Clock::now();
  // With a tokenizer the text streams as it is produced; otherwise the ids.
  std::optional<io::StreamDecoder> stream;
  if (tokenizer)
    stream.emplace(*tokenizer, prompt.ids.back());
  StopOnSignal stopOnSignal;
  for (; generated < f.maxNewTokens; ++generated) {
    if (stopRequested) {
      std::printf("\n");
      std::fflush(stdout);
      int signal = stopRequested;
      return Error::withExitCode(128 + signal,
                                 std::string("interrupted by ") +
                                     (signal == SIGINT ? "SIGINT" : "SIGTERM") +
                                     " after " + std::to_string(generated) +
                                     " new tokens");
    }
    // A reader that went away (a closed pipe): nothing more to say.
    if (std::ferror(stdout))
      return Error::success();
    if (stream) {
      if (next == tokenizer->eos() && !f.ignoreEos) {
        atEos = true;
        break;
      }
      auto text = stream->feed(next);
      if (!text)
        return text.takeError();
      std::fwrite(text->data(), 1, text->size(), stdout);
    } else {
      std::printf("%s%lld", generated ? " " : "", (long long)next);
    }
    std::fflush(stdout);
    if (generated + 1 == f.maxNewTokens)
      break;
    if (s.position() >= run->config.contextLength) {
      std::printf("\n");
      std::fflush(stdout);
      if (!f.quiet)
        std::fprintf(stderr,
                     "note: stopped at context_length (%lld) after %d new "
                     "tokens\n",
                     (long long)run->config.contextLength, generated + 1);
      return Error::success();
    }
    if (Error err = s.stepLast(&next, 1, logits.data()))
      return err;
    if (Error err = checkFinite(*run, logits.data(), vocab)) {
      std::printf("\n");
      return err;
    }
    next = sampler.sample(logits.data(), vocab);
    sampler.observe(next);
  }
  if (stream) {
    std::string rest = stream->finish();
    std::fwrite(rest.data(), 1, rest.size(), stdout);
  }
  std::printf("\n");
  std::fflush(stdout);
  double decodeMs = msSince(decodeStart), totalMs = msSince(start);
  // The EOS token ends the text unprinted; --max-new-tokens ends it after
  // the last token printed, which was not fed back.
  int printed = atEos ? generated : std::min(generated + 1, f.maxNewTokens);
  if (f.quiet)
    return Error::success();
  if (atEos)
    std::fprintf(stderr,
                 "note: stopped at the end-of-sequence token after %d new "
                 "tokens\n",
                 printed);
  // The first token is sampled from the prompt step's logits: it is there
  // after the prefill (and the weights, and the compile).
  double decodeTokS = generated > 0 ? generated / (decodeMs / 1000.0) : 0.0;
  double prefillTokS = prompt.seq / (prefillMs / 1000.0);
  double firstMs = run->compileMs + run->weightsMs + prefillMs;
  std::fprintf(stderr,
               "generated %d tokens in %.1f ms (%.1f tok/s decode); prompt "
               "%lld tokens in %.1f ms (%.1f tok/s); compile %.1f ms, "
               "weights %.1f ms, first token after %.1f ms\n",
               printed, totalMs, decodeTokS, (long long)prompt.seq, prefillMs,
               prefillTokS, run->compileMs, run->weightsMs, firstMs);
  if (f.json)
    std::fprintf(stderr,
                 "{\"tokens\": %d, \"prompt_tokens\": %lld, "
                 "\"compile_ms\": %.3f, \"weights_ms\": %.3f, "
                 "\"prefill_ms\": %.3f, \"prefill_tok_s\": %.3f, "
                 "\"first_token_ms\": %.3f, \"decode_tok_s\": %.3f, "
                 "\"stopped_at_eos\": %s}\n",
                 printed, (long long)prompt.seq, run->compileMs, run->weightsMs,
                 prefillMs, prefillTokS, firstMs, decodeTokS,
                 atEos ? "true" : "false");
  return Error::success();
}

Error runEval(const Flags &f, const SessionMaker &make) {
  if (f.tokensFile.empty())
    return userError("--tokens-file is required");
  auto config = loadConfig(f);
  if (!config)
    return config.takeError();
  auto tokens = io::readTokenFile(f.tokensFile);
  if (!tokens)
    return tokens.takeError();
  if (tokens->seq < 2)
    return userError("eval needs sequences of at least 2 tokens, found " +
                     std::to_string(tokens->seq));
  if (Error err = checkTokens(*tokens, *config))
    return err;
  auto run = setUp(f, tokens->batch, make);
  if (!run)
    return run.takeError();
  int64_t vocab = run->config.vocabSize, seq = tokens->seq;
  std::vector<float> logits(tokens->batch * seq * vocab);
  if (Error err = run->session->step(tokens->ids.data(), seq, logits.data()))
    return err;
  if (Error err = checkFinite(*run, logits.data(), logits.size()))
    return err;
  double mean = runtime::meanNextTokenCrossEntropy(
      logits.data(), tokens->ids.data(), tokens->batch, seq, vocab);
  long long count = tokens->batch * (seq - 1);
  std::printf("tokens %lld\ncross-entropy %.6f nats\nperplexity %.4f\n", count,
              mean, std::exp(mean));
  if (f.json)
    std::printf("{\"tokens\": %lld, \"cross_entropy\": %.9g, \"perplexity\": "
                "%.9g}\n",
                count, mean, std::exp(mean));
  return Error::success();
}

} // namespace tlm::cli
