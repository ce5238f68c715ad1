//===- GenerateBatch.cpp - several sequences decoded together -------------===//
//
// generate --prompts-file (one prompt per line) or --batch N (one prompt,
// N samples): every sequence lives in one batched KV cache at a position
// of its own, so each step reads the weights once for all of them.
//
// The prompts, of different lengths, are prefilled in one step, each
// right-padded to the longest (causal attention keeps the padding out of
// the real rows), and cut back to its own length (Session::truncate): its
// first token is sampled from the row of its last prompt token. Then each
// step feeds every sequence's last token at its own position. A sequence
// that ends (--max-new-tokens, its end-of-sequence token, a stop token or
// string, the context) keeps a place in the batch but is cut to nothing,
// so it costs no attention and never reaches the context. Each sequence's text is collected and printed at
// the end, in the order of the prompts, as `[i] text`.
//
//===----------------------------------------------------------------------===//

#include "tools/common/Commands.h"
#include "tools/common/GenerateParts.h"
#include "tools/common/Progress.h"

#include "lib/io/FileIO.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>

namespace tlm::cli {

namespace {

/// The prompts: --prompts-file's lines (text through the tokenizer, or ids
/// without one), or the one prompt of the flags --batch times.
Expected<std::vector<std::vector<int64_t>>>
batchPrompts(const Flags &f, const io::Tokenizer *tokenizer) {
  std::vector<std::vector<int64_t>> prompts;
  if (f.promptsFile.empty()) {
    auto text = promptText(f);
    if (!text)
      return text.takeError();
    auto ids = promptIds(f, *text, tokenizer);
    if (!ids)
      return ids.takeError();
    prompts.assign(f.batch, *ids);
    return prompts;
  }
  auto read = io::readRegularFile(f.promptsFile, 16 << 20);
  if (!read)
    return userError("--prompts-file: " + read.takeError().message());
  size_t start = 0, lineNumber = 0;
  while (start < read->size()) {
    size_t end = read->find('\n', start);
    if (end == std::string::npos)
      end = read->size();
    std::string line = read->substr(start, end - start);
    start = end + 1;
    ++lineNumber;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.empty())
      continue;
    std::vector<int64_t> ids;
    if (tokenizer) {
      ids = tokenizer->encode(line, tokenizer->bos() >= 0);
    } else {
      auto parsed = parseIds("prompts-file", line);
      if (!parsed)
        return userError(parsed.takeError().message() + " (line " +
                         std::to_string(lineNumber) + ")");
      ids = std::move(*parsed);
    }
    if (ids.empty())
      return userError("--prompts-file: line " + std::to_string(lineNumber) +
                       " encodes to no tokens");
    prompts.push_back(std::move(ids));
  }
  if (prompts.empty())
    return userError("--prompts-file: " + f.promptsFile + " has no prompts");
  return prompts;
}

/// One sequence of the batch.
struct Sequence {
  std::unique_ptr<runtime::Sampler> sampler;
  std::unique_ptr<Printer> printer;
  std::string text;
  int64_t next = 0;
  int printed = 0;
  bool done = false;
  /// Ended by a stop string: nothing after it is printed, not even what
  /// the stream decoder still holds.
  bool stoppedByString = false;
};

} // namespace

Error runGenerateBatch(const Flags &f, const SessionMaker &make) {
  if (f.batch < 1)
    return userError("--batch must be >= 1, found " + std::to_string(f.batch));
  if (!f.promptsFile.empty() && f.batch != 1)
    return userError("--batch samples one prompt several times; "
                     "--prompts-file gives the prompts: give one of them");
  int prompts = !f.promptTokens.empty() + !f.prompt.empty() +
                !f.promptFile.empty() + !f.promptsFile.empty();
  if (prompts != 1)
    return userError("give exactly one of --prompt-tokens, --prompt, "
                     "--prompt-file and --prompts-file");
  if (f.interactive)
    return userError("--interactive continues one sequence; it takes neither "
                     "--batch nor --prompts-file");
  if (Error err = checkGenerateFlags(f))
    return err;
  auto sampling = samplingOptions(f);
  if (!sampling)
    return sampling.takeError();
  auto stopIds = stopTokenIds(f);
  if (!stopIds)
    return stopIds.takeError();
  std::set<int64_t> stopTokens(stopIds->begin(), stopIds->end());
  auto config = loadConfig(f);
  if (!config)
    return config.takeError();
  auto tokenizer = generateTokenizer(f, *config);
  if (!tokenizer)
    return tokenizer.takeError();
  const io::Tokenizer *tok = tokenizer->get();
  auto promptList = batchPrompts(f, tok);
  if (!promptList)
    return promptList.takeError();
  int64_t batch = promptList->size(), longest = 0;
  for (const std::vector<int64_t> &ids : *promptList) {
    if (Error err = checkTokens({ids, 1, int64_t(ids.size())}, *config))
      return err;
    longest = std::max<int64_t>(longest, ids.size());
  }
  auto run = setUp(f, {batch, longest, /*everyPosition=*/true}, make);
  if (!run)
    return run.takeError();
  runtime::Session &s = *run->session;
  if (s.program().onDevice())
    return userError("--prompts-file and --batch run on the CPU only (a GPU "
                     "session keeps one position for the whole batch)");
  int64_t vocab = run->config.vocabSize;
  if (tok)
    sampling->vocabLimit = tok->vocabSize();

  // Each sequence samples from a stream of its own: copies of one prompt
  // from seeds seed, seed + 1, ...; different prompts from the same seed,
  // so each gives the text it gives alone.
  std::vector<Sequence> seqs(batch);
  for (int64_t b = 0; b < batch; ++b) {
    runtime::SamplingOptions o = *sampling;
    if (f.promptsFile.empty())
      o.seed += b;
    seqs[b].sampler = std::make_unique<runtime::Sampler>(o);
    const std::vector<int64_t> &ids = (*promptList)[b];
    for (int64_t id : ids)
      seqs[b].sampler->observe(id);
    seqs[b].printer = std::make_unique<Printer>(tok, ids.back(), f.stops,
                                                &seqs[b].text);
    if (f.echo) {
      auto echo = promptEcho(ids, tok);
      if (!echo)
        return echo.takeError();
      seqs[b].text = std::move(*echo);
    }
  }

  // The prompts in one step, right-padded (with id 0) to the longest.
  StopOnSignal stopOnSignal;
  int64_t promptTokens = 0;
  std::vector<int64_t> padded(batch * longest, 0);
  for (int64_t b = 0; b < batch; ++b) {
    const std::vector<int64_t> &ids = (*promptList)[b];
    std::copy(ids.begin(), ids.end(), padded.begin() + b * longest);
    promptTokens += ids.size();
  }
  auto start = Clock::now();
  Phase prefill(!f.quiet, f.json, "prefill",
                formatString("prefill of %lld prompts (%lld tokens)",
                             (long long)batch, (long long)promptTokens));
  std::vector<float> logits(batch * longest * vocab);
  if (Error err = s.step(padded.data(), longest, logits.data()))
    return err;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t length = (*promptList)[b].size();
    const float *row = logits.data() + (b * longest + length - 1) * vocab;
    if (Error err = checkFinite(*run, row, vocab))
      return err;
    if (Error err = s.truncate(b, length))
      return err;
    seqs[b].next = seqs[b].sampler->sample(row, vocab);
    seqs[b].sampler->observe(seqs[b].next);
  }
  double prefillMs = msSince(start);
  prefill.done(formatString("prefill: %lld tokens (%.1f tok/s)",
                            (long long)promptTokens,
                            promptTokens / (prefillMs / 1000)),
               formatString("\"tokens\": %lld, \"tok_s\": %.1f",
                            (long long)promptTokens,
                            promptTokens / (prefillMs / 1000)));

  // One token of every sequence per step, until each has ended.
  auto decodeStart = Clock::now();
  int steps = 0, generated = 0;
  std::vector<int64_t> ids(batch);
  logits.resize(batch * vocab);
  while (true) {
    if (stopRequested)
      break;
    bool any = false;
    for (int64_t b = 0; b < batch; ++b) {
      Sequence &q = seqs[b];
      if (q.done)
        continue;
      if (q.printed == f.maxNewTokens ||
          (tok && q.next == tok->eos() && !f.ignoreEos) ||
          stopTokens.count(q.next)) {
        q.done = true;
        continue;
      }
      auto stopped = q.printer->add(q.next);
      if (!stopped)
        return stopped.takeError();
      ++q.printed;
      ++generated;
      q.stoppedByString = *stopped;
      q.done = *stopped || q.printed == f.maxNewTokens ||
               s.position(b) >= run->config.contextLength;
      any = any || !q.done;
    }
    if (!any)
      break;
    for (int64_t b = 0; b < batch; ++b) {
      ids[b] = seqs[b].done ? 0 : seqs[b].next;
      if (seqs[b].done)
        if (Error err = s.truncate(b, 0))
          return err;
    }
    if (Error err = s.stepLast(ids.data(), 1, logits.data()))
      return err;
    ++steps;
    for (int64_t b = 0; b < batch; ++b) {
      Sequence &q = seqs[b];
      if (q.done) {
        // Its place in the batch, but nothing of it is read again: cut to
        // nothing, its rows cost no attention and never reach the context.
        if (Error err = s.truncate(b, 0))
          return err;
        continue;
      }
      const float *row = logits.data() + b * vocab;
      if (Error err = checkFinite(*run, row, vocab))
        return err;
      q.next = q.sampler->sample(row, vocab);
      q.sampler->observe(q.next);
    }
  }
  double decodeMs = msSince(decodeStart);
  for (int64_t b = 0; b < batch; ++b) {
    if (!seqs[b].stoppedByString)
      seqs[b].printer->finish();
    std::printf("[%lld] %s\n", (long long)b, seqs[b].text.c_str());
  }
  std::fflush(stdout);
  if (stopRequested)
    return Error::withExitCode(
        128 + stopRequested,
        std::string("interrupted by ") +
            (stopRequested == SIGINT ? "SIGINT" : "SIGTERM") + " after " +
            std::to_string(steps) + " steps");
  if (f.quiet)
    return Error::success();
  // Each step after the first tokens decodes every sequence still going:
  // the rate counts their tokens (the first tokens came from the prefill).
  int decoded = generated - int(std::count_if(
                                    seqs.begin(), seqs.end(),
                                    [](const Sequence &q) { return q.printed; }));
  double decodeTokS = steps > 0 ? decoded / (decodeMs / 1000.0) : 0;
  std::fprintf(stderr,
               "generated %d tokens for %lld sequences in %.1f ms (%.1f tok/s "
               "decode, all sequences; %d steps); prompts %lld tokens in %.1f "
               "ms (%.1f tok/s); compile %.1f ms, weights %.1f ms\n",
               generated, (long long)batch, prefillMs + decodeMs, decodeTokS,
               steps, (long long)promptTokens, prefillMs,
               promptTokens / (prefillMs / 1000.0), run->compileMs,
               run->weightsMs);
  if (f.json)
    std::fprintf(stderr,
                 "{\"tokens\": %d, \"sequences\": %lld, \"steps\": %d, "
                 "\"prompt_tokens\": %lld, \"prefill_ms\": %.3f, "
                 "\"decode_tok_s\": %.3f, \"compile_ms\": %.3f, "
                 "\"weights_ms\": %.3f}\n",
                 generated, (long long)batch, steps, (long long)promptTokens,
                 prefillMs, decodeTokS, run->compileMs, run->weightsMs);
  return Error::success();
}

} // namespace tlm::cli
