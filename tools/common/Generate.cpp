//===- Generate.cpp - the generate command --------------------------------===//
//
// A prompt in one step, then one token per step through the KV cache,
// printed as it comes: text through the tokenizer's stream decoder, or ids.
// A turn ends at --max-new-tokens, the end-of-sequence token, a stop token
// or string, or the context's end. With --interactive every line of stdin
// is one more turn on the same cache, until end of file.
//
//===----------------------------------------------------------------------===//

#include "tools/common/Commands.h"
#include "tools/common/GenerateParts.h"
#include "tools/common/Progress.h"

#include "lib/io/FileIO.h"
#include "lib/io/Tokenizer.h"
#include "lib/runtime/Sampler.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <unistd.h>

namespace tlm::cli {

namespace {

struct Turn {
  int printed = 0, steps = 0;
  Stop stop = Stop::MaxTokens;
  /// The new tokens, and with --json their text (less a stop string).
  std::vector<int64_t> ids;
  std::string text;
  /// The last token printed when it is not in the cache yet (the turn
  /// ended on it), or -1: the next turn feeds it first.
  int64_t unfed = -1;
};

/// What one generation needs across its turns.
struct Generator {
  const Flags &f;
  Run &run;
  const io::Tokenizer *tokenizer;
  /// Where the text goes as it comes (resultStream: null for none).
  std::FILE *out;
  runtime::Sampler &sampler;
  std::set<int64_t> stopTokens;
  std::vector<float> logits;

  /// `ids` into the cache, the first token sampled from their logits.
  Expected<int64_t> feed(const std::vector<int64_t> &ids) {
    for (int64_t id : ids)
      sampler.observe(id);
    if (Error err =
            run.session->stepLast(ids.data(), ids.size(), logits.data()))
      return err;
    if (Error err = checkFinite(run, logits.data(), run.config.vocabSize))
      return err;
    int64_t next = sampler.sample(logits.data(), run.config.vocabSize);
    sampler.observe(next);
    return next;
  }

  /// Prints `next` and what follows it, up to --max-new-tokens.
  Expected<Turn> turn(int64_t next, int64_t prev) {
    Turn t;
    Printer printer(tokenizer, prev, f.stops, out,
                    f.json && tokenizer ? &t.text : nullptr);
    runtime::Session &s = *run.session;
    for (; t.printed < f.maxNewTokens; ++t.printed) {
      if (stopRequested) {
        printer.finish();
        printTo(out, "\n");
        if (out)
          std::fflush(out);
        return interruptedAfter(std::to_string(t.printed) + " new tokens");
      }
      // A reader of the text that went away (a closed pipe): nothing more
      // to say. With --json the text is stderr's, and stdout's document
      // is still due: stderr's failures do not stop it.
      if (out == stdout && std::ferror(stdout)) {
        t.stop = Stop::Reader;
        return t;
      }
      if (tokenizer && next == tokenizer->eos() && !f.ignoreEos) {
        t.stop = Stop::Eos;
        break;
      }
      if (stopTokens.count(next)) {
        t.stop = Stop::StopToken;
        break;
      }
      auto stopped = printer.add(next);
      if (!stopped)
        return stopped.takeError();
      t.ids.push_back(next);
      // A full disk stops generation at once with its reason; a reader that
      // went away (EPIPE) is seen above, quietly, before the next token.
      errno = 0;
      if (out && std::fflush(out) != 0 && errno != EPIPE && out == stdout)
        return userError(std::string("cannot write to standard output: ") +
                         std::strerror(errno));
      if (*stopped) {
        ++t.printed;
        t.stop = Stop::StopString;
        t.unfed = next;
        return t;
      }
      if (t.printed + 1 == f.maxNewTokens) {
        ++t.printed;
        t.unfed = next;
        break;
      }
      if (s.position() >= run.config.contextLength) {
        ++t.printed;
        t.stop = Stop::Context;
        break;
      }
      ++t.steps;
      auto sampled = feed({next});
      if (!sampled) {
        printTo(out, "\n");
        return sampled.takeError();
      }
      next = *sampled;
    }
    printer.finish();
    return t;
  }
};

/// What the flags give one generation, checked, before there is a session.
struct GenerateInputs {
  runtime::SamplingOptions sampling;
  GenerateModel model;
  /// The prompt's ids: empty for --interactive without one.
  std::vector<int64_t> prompt;
};

/// The prompt flags and generate's own, then the sampling options, the
/// model and the prompt, the prompt checked against the config.
Expected<GenerateInputs> generateInputs(const Flags &f) {
  int prompts =
      !f.promptTokens.empty() + !f.prompt.empty() + !f.promptFile.empty();
  if (prompts > 1 || (prompts == 0 && !f.interactive))
    return userError("give exactly one of --prompt-tokens, --prompt, "
                     "--prompt-file and --prompts-file");
  if (f.interactive && (f.promptFile == "-" || f.promptsFile == "-"))
    return userError("--interactive reads its lines from standard input: "
                     "give the prompt another way than a file named '-'");
  if (Error err = checkGenerateFlags(f))
    return err;
  GenerateInputs in;
  auto sampling = samplingOptions(f);
  if (!sampling)
    return sampling.takeError();
  in.sampling = *sampling;
  auto text = promptText(f);
  if (!text)
    return text.takeError();
  auto model = loadGenerateModel(f);
  if (!model)
    return model.takeError();
  in.model = std::move(*model);
  auto ids = promptIds(f, *text, in.model.tokenizer.get());
  if (!ids)
    return ids.takeError();
  in.prompt = std::move(*ids);
  if (!in.prompt.empty()) {
    Tokens prompt{in.prompt, 1, static_cast<int64_t>(in.prompt.size())};
    if (Error err = checkTokens(prompt, in.model.config))
      return err;
  }
  return std::move(in);
}

/// With --echo, the prompt ahead of its continuation.
Error echoPrompt(const Flags &f, std::FILE *out,
                 const std::vector<int64_t> &ids,
                 const io::Tokenizer *tokenizer) {
  if (!f.echo || ids.empty() || !out)
    return Error::success();
  // The continuation follows on the same line: text from the last prompt
  // id on, or ids after a space.
  auto echo = promptEcho(ids, tokenizer);
  if (!echo)
    return echo.takeError();
  std::fwrite(echo->data(), 1, echo->size(), out);
  return Error::success();
}

/// What the summary counts over every turn.
struct Totals {
  /// The new tokens and decode steps of every turn, the last one's stop,
  /// and (--json) every turn's ids and text, and each turn as it was.
  Turn turns;
  std::vector<Turn> each;
  int64_t promptTokens = 0;
  double prefillMs = 0, decodeMs = 0;
  /// When the first turn began.
  Clock::time_point start = Clock::now();
};

/// Reads stdin a whole line at a time however long (a fixed buffer would
/// split a line into turns).
class LineReader {
public:
  LineReader() = default;
  LineReader(const LineReader &) = delete;
  LineReader &operator=(const LineReader &) = delete;
  ~LineReader() { std::free(line_); }

  /// The next line without its line ending, or nothing at the end of file;
  /// on a terminal (`prompt`) a "> " on stderr first asks for it.
  std::optional<std::string> read(bool prompt) {
    if (prompt) {
      std::fputs("> ", stderr);
      std::fflush(stderr);
    }
    ssize_t length = ::getline(&line_, &capacity_, stdin);
    if (length < 0) {
      if (prompt) // the summary below starts a line of its own
        std::fputc('\n', stderr);
      return std::nullopt;
    }
    std::string text(line_, size_t(length));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
      text.pop_back();
    return text;
  }

private:
  char *line_ = nullptr;
  size_t capacity_ = 0;
};

/// The ids of the next line of stdin that has any (--interactive), after
/// the last turn's `unfed` token; empty at the end of the input.
Expected<std::vector<int64_t>> nextLine(LineReader &lines, bool prompt,
                                        const io::Tokenizer *tokenizer,
                                        bool first, int64_t unfed) {
  while (std::optional<std::string> text = lines.read(prompt)) {
    if (text->empty())
      continue;
    std::vector<int64_t> ids;
    if (tokenizer) {
      ids = tokenizer->encode(*text, first && tokenizer->bos() >= 0);
    } else {
      auto parsed = parseIds("interactive", *text);
      if (!parsed)
        return parsed.takeError();
      ids = std::move(*parsed);
    }
    if (ids.empty())
      continue;
    // The last turn's final token, printed but not yet in the cache: the
    // model reads on from everything it printed.
    if (unfed >= 0)
      ids.insert(ids.begin(), unfed);
    return std::move(ids);
  }
  return std::vector<int64_t>();
}

/// One turn: `ids` into the cache, then the continuation printed and its
/// line ended; counted in `totals`.
Expected<Turn> promptTurn(Generator &g, const std::vector<int64_t> &ids,
                          Totals &totals) {
  const Flags &f = g.f;
  Tokens turnIds{ids, 1, static_cast<int64_t>(ids.size())};
  turnIds.seq = g.run.session->position() + int64_t(ids.size());
  if (Error err = checkTokens(turnIds, g.run.config))
    return err;
  auto stepStart = Clock::now();
  Phase prefill(!f.quiet, f.json, "prefill",
                formatString("prefill of %zu tokens", ids.size()));
  auto sampled = g.feed(ids);
  if (!sampled)
    return sampled.takeError();
  double stepMs = msSince(stepStart);
  totals.prefillMs += stepMs;
  prefill.done(formatString("prefill: %zu tokens (%.1f tok/s)", ids.size(),
                            ids.size() / (stepMs / 1000)),
               jsonObject({{"tokens", uint64_t(ids.size())},
                           {"tok_s", rounded(ids.size() / (stepMs / 1000), 1)}}));
  totals.promptTokens += ids.size();
  auto decodeStart = Clock::now();
  auto t = g.turn(*sampled, ids.back());
  if (!t)
    return t.takeError();
  totals.decodeMs += msSince(decodeStart);
  printTo(g.out, "\n");
  if (g.out)
    std::fflush(g.out);
  totals.turns.printed += t->printed;
  totals.turns.steps += t->steps;
  totals.turns.stop = t->stop;
  totals.turns.ids.insert(totals.turns.ids.end(), t->ids.begin(),
                          t->ids.end());
  totals.turns.text += t->text;
  if (g.f.json && g.f.interactive)
    totals.each.push_back(*t);
  return t;
}

/// Notes on stderr (unless --quiet) a turn that ended at the
/// end-of-sequence token or the context's end; true at the context's end,
/// where no turn can follow.
bool noteStop(const Flags &f, const Run &run, const Turn &t) {
  if (!f.quiet && t.stop == Stop::Eos)
    std::fprintf(stderr,
                 "note: stopped at the end-of-sequence token after %d new "
                 "tokens\n",
                 t.printed);
  if (t.stop != Stop::Context)
    return false;
  if (!f.quiet)
    std::fprintf(stderr,
                 "note: stopped at context_length (%lld) after %d new "
                 "tokens\n",
                 (long long)run.config.contextLength, t.printed);
  return true;
}

/// One turn per prompt: the flags' one, then (interactive) each line of
/// stdin, until the input, the context or the reader of stdout ends.
Error runTurns(Generator &g, std::vector<int64_t> next, Totals &totals) {
  LineReader lines;
  // Someone typing at a terminal is asked for each line.
  bool prompt = !g.f.quiet && ::isatty(STDIN_FILENO);
  bool first = true;
  int64_t unfed = -1;
  while (true) {
    if (next.empty()) {
      if (!g.f.interactive)
        break;
      auto line = nextLine(lines, prompt, g.tokenizer, first, unfed);
      if (!line)
        return line.takeError();
      if (line->empty())
        break;
      next = std::move(*line);
    }
    auto t = promptTurn(g, next, totals);
    if (!t)
      return t.takeError();
    unfed = t->unfed;
    next.clear();
    first = false;
    if (t->stop == Stop::Reader || noteStop(g.f, g.run, *t))
      break;
  }
  return Error::success();
}

/// "N token" or "N tokens".
std::string tokenCount(int64_t n) {
  return std::to_string(n) + (n == 1 ? " token" : " tokens");
}

/// The summary on stderr (unless --quiet), and with --json the document
/// on stdout.
void reportGenerate(const Flags &f, const Run &run, const Totals &totals,
                    const io::Tokenizer *tokenizer) {
  double decodeMs = totals.decodeMs, prefillMs = totals.prefillMs;
  // Interactive turns wait for their lines: the time spent typing is
  // neither prefill nor decode, and not generation.
  double totalMs =
      f.interactive ? prefillMs + decodeMs : msSince(totals.start);
  int64_t promptTokens = totals.promptTokens;
  // The first token is sampled from the prompt step's logits: it is there
  // after the prefill (and the weights, and the compile).
  double decodeTokS =
      totals.turns.steps > 0 ? totals.turns.steps / (decodeMs / 1000.0) : 0;
  double prefillTokS =
      promptTokens > 0 ? promptTokens / (prefillMs / 1000.0) : 0;
  double firstMs = run.compileMs + run.weightsMs + prefillMs;
  if (!f.quiet)
    std::fprintf(stderr,
                 "generated %s in %.1f ms (%.1f tok/s decode); prompt %s in "
                 "%.1f ms (%.1f tok/s); compile %.1f ms, weights %.1f ms, "
                 "first token after %.1f ms\n",
                 tokenCount(totals.turns.printed).c_str(), totalMs,
                 decodeTokS, tokenCount(promptTokens).c_str(), prefillMs,
                 prefillTokS, run.compileMs, run.weightsMs, firstMs);
  if (!f.json)
    return;
  // The ids include the one that completed a stop string; the text ends
  // before the stop string.
  auto turnJson = [&](const Turn &t) {
    json::Value ids = json::Value::array();
    for (int64_t id : t.ids)
      ids.push(id);
    json::Value doc = jsonObject({{"ids", std::move(ids)}});
    if (tokenizer)
      doc.set("text", t.text);
    doc.set("stop", stopName(t.stop));
    return doc;
  };
  // Every turn's ids and text in order, and with --interactive each turn.
  json::Value doc = turnJson(totals.turns);
  if (f.interactive) {
    json::Value turns = json::Value::array();
    for (const Turn &t : totals.each)
      turns.push(turnJson(t));
    doc.set("turns", std::move(turns));
  }
  for (auto &[key, value] : std::initializer_list<
           std::pair<const char *, json::Value>>{
           {"tokens", totals.turns.printed},
           {"prompt_tokens", int64_t(promptTokens)},
           {"compile_ms", rounded(run.compileMs, 3)},
           {"weights_ms", rounded(run.weightsMs, 3)},
           {"prefill_ms", rounded(prefillMs, 3)},
           {"prefill_tok_s", rounded(prefillTokS, 3)},
           {"first_token_ms", rounded(firstMs, 3)},
           {"decode_ms", rounded(decodeMs, 3)},
           {"decode_tok_s", rounded(decodeTokS, 3)}})
    doc.set(key, value);
  printJsonDocument(doc);
}

} // namespace

Error checkGenerateFlags(const Flags &f) {
  if ((!f.prompt.empty() || !f.promptFile.empty()) && f.tokenizer.empty())
    return userError(
        std::string(f.prompt.empty() ? "--prompt-file" : "--prompt") +
        " needs --tokenizer");
  if (f.special && f.tokenizer.empty())
    return userError("--special needs --tokenizer");
  if (f.ignoreEos && f.tokenizer.empty())
    return userError("--ignore-eos needs --tokenizer (without one no token "
                     "ends the text)");
  if (!f.stops.empty() && f.tokenizer.empty())
    return userError("--stop needs --tokenizer (it matches text; "
                     "--stop-tokens matches ids)");
  for (const std::string &stop : f.stops)
    if (stop.empty())
      return userError("--stop: an empty string would stop at once");
  if (f.maxNewTokens < 0)
    return userError("--max-new-tokens must be >= 0");
  return Error::success();
}

Expected<std::unique_ptr<io::Tokenizer>>
generateTokenizer(const Flags &f, const model::Config &config) {
  if (f.tokenizer.empty())
    return std::unique_ptr<io::Tokenizer>();
  auto tokenizer = io::Tokenizer::load(f.tokenizer);
  if (!tokenizer)
    return tokenizer.takeError();
  if (!(*tokenizer)->setParseSpecial(f.special))
    return userError("--special needs a tokenizer.json (" + f.tokenizer +
                     " has no added tokens to recognise)");
  if ((*tokenizer)->vocabSize() > config.vocabSize)
    return userError("the tokenizer has " +
                     std::to_string((*tokenizer)->vocabSize()) +
                     " tokens but the model's vocab_size is " +
                     std::to_string(config.vocabSize));
  return std::move(*tokenizer);
}

Expected<std::vector<int64_t>> stopTokenIds(const Flags &f) {
  if (f.stopTokensText.empty())
    return std::vector<int64_t>();
  return parseIds("stop-tokens", f.stopTokensText);
}

Error runGenerate(const Flags &f, const SessionMaker &make) {
  if (!f.promptsFile.empty() || f.batch != 1)
    return runGenerateBatch(f, make);
  auto in = generateInputs(f);
  if (!in)
    return in.takeError();
  // Interactive lines are prefilled as they come: any length up to the
  // context.
  int64_t longestStep = f.interactive ? in->model.config.contextLength
                                      : std::max<int64_t>(1, in->prompt.size());
  auto run = setUp(f, {1, longestStep, false}, make);
  if (!run)
    return run.takeError();
  const io::Tokenizer *tokenizer = in->model.tokenizer.get();
  // A vocabulary padded past the tokenizer's: the padding rows are never
  // sampled (docs/tlm-run.md#generate).
  if (tokenizer)
    in->sampling.vocabLimit = tokenizer->vocabSize();
  runtime::Sampler sampler(in->sampling);
  Generator g{f,
              *run,
              tokenizer,
              resultStream(f),
              sampler,
              std::move(in->model.stopTokens),
              std::vector<float>(run->config.vocabSize)};
  StopOnSignal stopOnSignal;
  if (Error err = echoPrompt(f, g.out, in->prompt, tokenizer))
    return err;
  Totals totals;
  if (Error err = runTurns(g, in->prompt, totals))
    return err;
  // A reader of the text that went away hears nothing more: no summary.
  if (totals.turns.stop == Stop::Reader)
    return Error::success();
  reportGenerate(f, *run, totals, tokenizer);
  return Error::success();
}

} // namespace tlm::cli
