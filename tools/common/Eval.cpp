//===- Eval.cpp - the eval command ----------------------------------------===//
//
// Mean next-token cross-entropy and perplexity: of a token file's rows in
// one step, or of a flat stream in windows (--context, --stride,
// --max-tokens, a raw --tokens-dtype), read a window at a time.
//
//===----------------------------------------------------------------------===//

#include "tools/common/Commands.h"
#include "tools/common/Progress.h"

#include "lib/io/SafeTensors.h"
#include "lib/io/TokenFile.h"
#include "lib/runtime/Metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tlm::cli {

namespace {

/// eval over a flat stream in windows of --context tokens every --stride:
/// each target scored once, by the first window whose context reaches it
/// (the first window scores all its targets; a later one those past the
/// one before), as Hugging Face's sliding-window perplexity. Memory is one
/// window: its ids and its logits.
Error evalWindows(const Flags &f, const SessionMaker &make,
                  const model::Config &config) {
  auto stream = io::TokenStream::open(f.tokensFile, f.tokensDtype);
  if (!stream)
    return userError(stream.takeError().message());
  // Given, a value is checked like any other: 0 is no window, not "the
  // default".
  int64_t context =
      f.isGiven("context") ? f.evalContext : config.contextLength;
  int64_t stride = f.isGiven("stride") ? f.evalStride : context;
  if (context < 2 || context > config.contextLength)
    return userError("--context must be in [2, context_length " +
                     std::to_string(config.contextLength) + "], found " +
                     std::to_string(context));
  if (stride < 1 || stride > context)
    return userError("--stride must be in [1, --context " +
                     std::to_string(context) + "], found " +
                     std::to_string(stride));
  int64_t total = stream->size();
  if (f.maxTokens > 0)
    total = std::min<int64_t>(total, f.maxTokens);
  if (total < 2)
    return userError("eval needs at least 2 tokens, found " +
                     std::to_string(total));
  auto run = setUp(f, {1, context, true}, make);
  if (!run)
    return run.takeError();
  int64_t vocab = run->config.vocabSize;
  std::vector<float> logits(context * vocab);
  double loss = 0;
  int64_t scored = 0, windows = 0, scoredUpTo = 0; // targets < it are done
  auto start = Clock::now();
  // A line every few seconds of a long eval: where it is and how fast.
  auto lastReport = start;
  // (A threshold of 0, the tests' mode, reports after every window.)
  auto report = progressAfter() * 5;
  for (int64_t begin = 0; scoredUpTo < total; begin += stride) {
    if (!f.quiet && scored > 0 && Clock::now() - lastReport >= report) {
      lastReport = Clock::now();
      double s = msSince(start) / 1000;
      if (f.json)
        std::fprintf(stderr, "%s\n",
                     jsonObject({{"phase", "eval"},
                                 {"scored", int64_t(scored)},
                                 {"tokens", int64_t(total)},
                                 {"tok_s", rounded(scored / s, 1)}})
                         .dump(json::Value::Layout::Line)
                         .c_str());
      else
        std::fprintf(stderr, "eval: %lld of %lld tokens scored, %.1f tok/s\n",
                     (long long)scored, (long long)total, scored / s);
    }
    int64_t end = std::min(begin + context, total);
    auto ids = stream->read(begin, end - begin);
    if (!ids)
      return userError(ids.takeError().message());
    Tokens window{*ids, 1, end - begin};
    if (Error err = checkTokens(window, run->config))
      return userError("window at token " + std::to_string(begin) + ": " +
                       err.message());
    run->session->reset();
    if (Error err = run->session->step(ids->data(), end - begin, logits.data()))
      return err;
    if (Error err = checkFinite(*run, logits.data(), (end - begin) * vocab))
      return err;
    // Row i predicts token begin + i + 1.
    for (int64_t t = std::max(begin + 1, scoredUpTo); t < end; ++t) {
      loss += runtime::nextTokenLoss(logits.data() + (t - begin - 1) * vocab,
                                     vocab, (*ids)[t - begin]);
      ++scored;
    }
    scoredUpTo = end;
    ++windows;
    if (end == total)
      break;
  }
  double seconds = msSince(start) / 1000.0, mean = loss / scored;
  printTo(resultStream(f), "tokens %lld\ncross-entropy %.6f nats\nperplexity %.4f\n"
              "windows %lld of %lld tokens every %lld (%.1f tok/s)\n",
              (long long)scored, mean, std::exp(mean), (long long)windows,
              (long long)context, (long long)stride, scored / seconds);
  if (f.json)
    printJsonDocument(jsonObject({{"tokens", int64_t(scored)},
                                    {"cross_entropy", mean},
                                    {"perplexity", std::exp(mean)},
                                    {"windows", int64_t(windows)},
                                    {"context", int64_t(context)},
                                    {"stride", int64_t(stride)},
                                    {"tok_s", rounded(scored / seconds, 3)},
                                    {"peak_rss_mib", rounded(peakRssMb(), 1)}}));
  return Error::success();
}

/// Whether --tokens-file (safetensors) holds one flat sequence: its tokens
/// tensor (or its only tensor) of rank 1. Anything else is readTokenFile's
/// to read or report.
bool isFlatTokenFile(const std::string &path) {
  auto file = io::SafeTensors::open(path, io::SafeTensors::Load::Header);
  if (!file)
    return false;
  const io::Tensor *t = file->find("tokens");
  if (!t && file->tensors().size() == 1)
    t = &file->tensors().begin()->second;
  return t && t->shape.size() == 1;
}

/// The logits a row block of eval holds at most: the file's own shape no
/// longer decides eval's memory (a 64 x 128 file at vocab 32000 once held
/// 2.2 GB of logits).
constexpr double kEvalBlockLogitBytes = 64.0 * (1 << 20);

} // namespace

Error runEval(const Flags &f, const SessionMaker &make) {
  if (f.tokensFile.empty())
    return userError("--tokens-file is required");
  auto config = loadConfig(f);
  if (!config)
    return config.takeError();
  // One flat sequence (tokenize --output writes one) is one long text:
  // windows of context_length, as the flags below choose otherwise.
  if (f.isGiven("context") || f.isGiven("stride") || f.maxTokens ||
      !f.tokensDtype.empty() || isFlatTokenFile(f.tokensFile))
    return evalWindows(f, make, *config);
  auto tokens = io::readTokenFile(f.tokensFile);
  if (!tokens)
    return tokens.takeError();
  if (tokens->seq < 2)
    return userError("eval needs sequences of at least 2 tokens, found " +
                     std::to_string(tokens->seq));
  if (Error err = checkTokens(*tokens, *config))
    return err;
  int64_t vocab = config->vocabSize, seq = tokens->seq;
  // Rows a block at a time, each block a batch of its own (the rows are
  // independent sequences): memory is a block's logits whatever the file.
  int64_t block = std::clamp<int64_t>(
      int64_t(kEvalBlockLogitBytes / (double(seq) * vocab * sizeof(float))), 1,
      tokens->batch);
  auto run = setUp(f, {block, seq, true}, make);
  if (!run)
    return run.takeError();
  std::vector<float> logits(size_t(block * seq * vocab));
  std::vector<int64_t> ids(size_t(block * seq));
  double loss = 0;
  auto start = Clock::now();
  auto lastReport = start;
  auto report = progressAfter() * 5;
  for (int64_t first = 0; first < tokens->batch; first += block) {
    int64_t rows = std::min(block, tokens->batch - first);
    if (!f.quiet && first > 0 && Clock::now() - lastReport >= report) {
      lastReport = Clock::now();
      std::fprintf(stderr, "eval: %lld of %lld rows, %.1f tok/s\n",
                   (long long)first, (long long)tokens->batch,
                   double(first * (seq - 1)) / (msSince(start) / 1000));
    }
    // A last block short of rows repeats its first row; only `rows` count.
    for (int64_t r = 0; r < block; ++r) {
      int64_t from = first + std::min(r, rows - 1);
      std::copy_n(tokens->ids.begin() + from * seq, seq,
                  ids.begin() + r * seq);
    }
    run->session->reset();
    if (Error err = run->session->step(ids.data(), seq, logits.data()))
      return err;
    if (Error err = checkFinite(*run, logits.data(), rows * seq * vocab))
      return err;
    loss += runtime::meanNextTokenCrossEntropy(logits.data(), ids.data(),
                                               rows, seq, vocab) *
            double(rows * (seq - 1));
  }
  long long count = tokens->batch * (seq - 1);
  double mean = loss / double(count), seconds = msSince(start) / 1000;
  printTo(resultStream(f), "tokens %lld\ncross-entropy %.6f nats\nperplexity %.4f\n"
              "rows %lld of %lld tokens, %lld a step (%.1f tok/s)\n",
              count, mean, std::exp(mean), (long long)tokens->batch,
              (long long)seq, (long long)block, double(count) / seconds);
  if (f.json)
    printJsonDocument(jsonObject({{"tokens", int64_t(count)},
                                    {"cross_entropy", mean},
                                    {"perplexity", std::exp(mean)},
                                    {"tok_s", rounded(double(count) / seconds, 3)},
                                    {"peak_rss_mib", rounded(peakRssMb(), 1)}}));
  return Error::success();
}

} // namespace tlm::cli
