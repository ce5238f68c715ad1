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
// so it costs no attention and never reaches the context. Each sequence's
// text is collected and printed at the end, in the order of the prompts, as
// `[i] text`.
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
  auto read = io::readInput(f.promptsFile, 16 << 20);
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
  /// The new tokens, and why they ended.
  std::vector<int64_t> ids;
  Stop stop = Stop::MaxTokens;
  /// The bytes of `text` that --echo put ahead of the continuation.
  size_t echoed = 0;
  int64_t next = 0;
  int printed = 0;
  bool done = false;
  /// Ended by a stop string: nothing after it is printed, not even what
  /// the stream decoder still holds.
  bool stoppedByString = false;
};

/// --batch and the prompt flags checked against each other, then
/// generate's own flags.
Error checkBatchFlags(const Flags &f) {
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
  return checkGenerateFlags(f);
}

/// What the flags give the batch, checked, before there is a session.
struct BatchInputs {
  runtime::SamplingOptions sampling;
  GenerateModel model;
  std::vector<std::vector<int64_t>> prompts;
  /// The longest prompt's length: the prefill step's.
  int64_t longest = 0;
};

/// The sampling options, the model and the prompts, each prompt checked
/// against the config.
Expected<BatchInputs> batchInputs(const Flags &f) {
  BatchInputs in;
  auto sampling = samplingOptions(f);
  if (!sampling)
    return sampling.takeError();
  in.sampling = *sampling;
  auto model = loadGenerateModel(f);
  if (!model)
    return model.takeError();
  in.model = std::move(*model);
  auto prompts = batchPrompts(f, in.model.tokenizer.get());
  if (!prompts)
    return prompts.takeError();
  in.prompts = std::move(*prompts);
  for (const std::vector<int64_t> &ids : in.prompts) {
    if (Error err = checkTokens({ids, 1, int64_t(ids.size())}, in.model.config))
      return err;
    in.longest = std::max<int64_t>(in.longest, ids.size());
  }
  return std::move(in);
}

/// The batch in its session, step by step: the sequences, and what the
/// summary counts.
struct BatchDecoder {
  BatchDecoder(const Flags &f, Run &run, const BatchInputs &in)
      : f(f), run(run), in(in), tok(in.model.tokenizer.get()),
        batch(in.prompts.size()), vocab(run.config.vocabSize), seqs(batch) {}

  const Flags &f;
  Run &run;
  const BatchInputs &in;
  const io::Tokenizer *tok;
  int64_t batch, vocab;
  std::vector<Sequence> seqs;
  std::vector<float> logits;
  /// Each step's input: every sequence's last token.
  std::vector<int64_t> stepIds;
  int64_t promptTokens = 0;
  double prefillMs = 0, decodeMs = 0;
  int steps = 0, generated = 0;

  /// Each sequence's sampler, which has seen its prompt, and its printer;
  /// with --echo its text begins with the prompt.
  Error start() {
    // Each sequence samples from a stream of its own: copies of one prompt
    // from seeds seed, seed + 1, ...; different prompts from the same seed,
    // so each gives the text it gives alone.
    for (int64_t b = 0; b < batch; ++b) {
      runtime::SamplingOptions o = in.sampling;
      if (f.promptsFile.empty())
        o.seed += b;
      seqs[b].sampler = std::make_unique<runtime::Sampler>(o);
      const std::vector<int64_t> &ids = in.prompts[b];
      for (int64_t id : ids)
        seqs[b].sampler->observe(id);
      seqs[b].printer =
          std::make_unique<Printer>(tok, ids.back(), f.stops, nullptr,
                                    &seqs[b].text);
      if (f.echo) {
        auto echo = promptEcho(ids, tok);
        if (!echo)
          return echo.takeError();
        seqs[b].text = std::move(*echo);
        seqs[b].echoed = seqs[b].text.size();
      }
    }
    return Error::success();
  }

  /// The prompts in one step, right-padded (with id 0) to the longest, and
  /// each sequence's first token.
  Error prefill() {
    int64_t longest = in.longest;
    std::vector<int64_t> padded(batch * longest, 0);
    for (int64_t b = 0; b < batch; ++b) {
      const std::vector<int64_t> &ids = in.prompts[b];
      std::copy(ids.begin(), ids.end(), padded.begin() + b * longest);
      promptTokens += ids.size();
    }
    auto start = Clock::now();
    Phase phase(!f.quiet, f.json, "prefill",
                formatString("prefill of %lld prompts (%lld tokens)",
                             (long long)batch, (long long)promptTokens));
    logits.resize(batch * longest * vocab);
    if (Error err = run.session->step(padded.data(), longest, logits.data()))
      return err;
    if (Error err = sampleFirst())
      return err;
    prefillMs = msSince(start);
    phase.done(formatString("prefill: %lld tokens (%.1f tok/s)",
                            (long long)promptTokens,
                            promptTokens / (prefillMs / 1000)),
               jsonObject({{"tokens", int64_t(promptTokens)},
                           {"tok_s", rounded(promptTokens / (prefillMs / 1000),
                                             1)}}));
    return Error::success();
  }

  /// After the prefill: each sequence cut back to its own length, its first
  /// token sampled from the row of its last prompt token.
  Error sampleFirst() {
    int64_t longest = in.longest;
    for (int64_t b = 0; b < batch; ++b) {
      int64_t length = in.prompts[b].size();
      const float *row = logits.data() + (b * longest + length - 1) * vocab;
      if (Error err = checkFinite(run, row, vocab))
        return err;
      if (Error err = run.session->truncate(b, length))
        return err;
      seqs[b].next = seqs[b].sampler->sample(row, vocab);
      seqs[b].sampler->observe(seqs[b].next);
    }
    return Error::success();
  }

  /// One token of every sequence per step, until each has ended or a
  /// signal asks to stop.
  Error decode() {
    auto decodeStart = Clock::now();
    stepIds.resize(batch);
    logits.resize(batch * vocab);
    while (!stopRequested) {
      auto going = printNext();
      if (!going)
        return going.takeError();
      if (!*going)
        break;
      if (Error err = step())
        return err;
    }
    decodeMs = msSince(decodeStart);
    return Error::success();
  }

  /// Ends the sequences that their next token ends, and prints the next
  /// token of the others: true while any of them goes on.
  Expected<bool> printNext() {
    bool any = false;
    for (int64_t b = 0; b < batch; ++b) {
      Sequence &q = seqs[b];
      if (q.done)
        continue;
      bool eos = tok && q.next == tok->eos() && !f.ignoreEos;
      if (q.printed == f.maxNewTokens || eos ||
          in.model.stopTokens.count(q.next)) {
        q.stop = q.printed == f.maxNewTokens ? Stop::MaxTokens
                 : eos                       ? Stop::Eos
                                             : Stop::StopToken;
        q.done = true;
        continue;
      }
      auto stopped = q.printer->add(q.next);
      if (!stopped)
        return stopped.takeError();
      q.ids.push_back(q.next);
      ++q.printed;
      ++generated;
      q.stoppedByString = *stopped;
      bool atContext = run.session->position(b) >= run.config.contextLength;
      q.stop = *stopped ? Stop::StopString
               : q.printed == f.maxNewTokens ? Stop::MaxTokens
               : atContext ? Stop::Context
                           : q.stop;
      q.done = *stopped || q.printed == f.maxNewTokens || atContext;
      any = any || !q.done;
    }
    return any;
  }

  /// One decode step of every sequence's last token, and the next token of
  /// each sequence still going.
  Error step() {
    runtime::Session &s = *run.session;
    for (int64_t b = 0; b < batch; ++b) {
      stepIds[b] = seqs[b].done ? 0 : seqs[b].next;
      if (seqs[b].done)
        if (Error err = s.truncate(b, 0))
          return err;
    }
    if (Error err = s.stepLast(stepIds.data(), 1, logits.data()))
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
      if (Error err = checkFinite(run, row, vocab))
        return err;
      q.next = q.sampler->sample(row, vocab);
      q.sampler->observe(q.next);
    }
    return Error::success();
  }

  /// Each sequence's text, in the order of the prompts, as `[i] text`.
  void printTexts() {
    std::FILE *out = resultStream(f);
    for (int64_t b = 0; b < batch; ++b) {
      if (!seqs[b].stoppedByString)
        seqs[b].printer->finish();
      if (!out)
        continue;
      // Written by length: a NUL in the text (from the prompt, with
      // --echo) is a byte like any other, not its end.
      std::fprintf(out, "[%lld] ", (long long)b);
      std::fwrite(seqs[b].text.data(), 1, seqs[b].text.size(), out);
      std::fputc('\n', out);
    }
    if (out)
      std::fflush(out);
  }

  /// The summary on stderr (unless --quiet), and with --json the document
  /// on stdout: every sequence's ids, text and stop.
  void report() const {
    // Each step after the first tokens decodes every sequence still going:
    // the rate counts their tokens (the first tokens came from the prefill).
    int decoded =
        generated -
        int(std::count_if(seqs.begin(), seqs.end(),
                          [](const Sequence &q) { return q.printed; }));
    double decodeTokS = steps > 0 ? decoded / (decodeMs / 1000.0) : 0;
    if (!f.quiet)
      std::fprintf(
        stderr,
        "generated %d tokens for %lld sequences in %.1f ms (%.1f tok/s "
        "decode, all sequences; %d steps); prompts %lld tokens in %.1f "
        "ms (%.1f tok/s); compile %.1f ms, weights %.1f ms\n",
        generated, (long long)batch, prefillMs + decodeMs, decodeTokS, steps,
        (long long)promptTokens, prefillMs, promptTokens / (prefillMs / 1000.0),
        run.compileMs, run.weightsMs);
    if (!f.json)
      return;
    json::Value sequences = json::Value::array();
    for (const Sequence &q : seqs) {
      json::Value ids = json::Value::array();
      for (int64_t id : q.ids)
        ids.push(id);
      json::Value one = jsonObject({{"ids", std::move(ids)}});
      if (tok)
        one.set("text", q.text.substr(q.echoed));
      one.set("stop", stopName(q.stop));
      sequences.push(std::move(one));
    }
    printJsonDocument(jsonObject(
        {{"sequences", std::move(sequences)},
         {"tokens", generated},
         {"steps", steps},
         {"prompt_tokens", int64_t(promptTokens)},
         {"compile_ms", rounded(run.compileMs, 3)},
         {"weights_ms", rounded(run.weightsMs, 3)},
         {"prefill_ms", rounded(prefillMs, 3)},
         {"decode_ms", rounded(decodeMs, 3)},
         {"decode_tok_s", rounded(decodeTokS, 3)}}));
  }
};

} // namespace

Error runGenerateBatch(const Flags &f, const SessionMaker &make) {
  if (Error err = checkBatchFlags(f))
    return err;
  auto in = batchInputs(f);
  if (!in)
    return in.takeError();
  int64_t batch = in->prompts.size();
  auto run = setUp(f, {batch, in->longest, /*everyPosition=*/true}, make);
  if (!run)
    return run.takeError();
  if (run->session->program().onDevice())
    return userError("--prompts-file and --batch run on the CPU only (a GPU "
                     "session keeps one position for the whole batch)");
  if (const io::Tokenizer *tok = in->model.tokenizer.get())
    in->sampling.vocabLimit = tok->vocabSize();
  BatchDecoder d(f, *run, *in);
  if (Error err = d.start())
    return err;
  StopOnSignal stopOnSignal;
  if (Error err = d.prefill())
    return err;
  if (Error err = d.decode())
    return err;
  d.printTexts();
  if (stopRequested)
    return interruptedAfter(std::to_string(d.steps) + " steps");
  d.report();
  return Error::success();
}

} // namespace tlm::cli
