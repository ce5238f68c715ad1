//===- TokenizerTraining.cpp - tlm-run train-tokenizer --------------------===//
//
// A byte-level BPE trained on a text file (lib/io/BpeTrainer.h), written as
// a Hugging Face tokenizer.json that --tokenizer loads.
//
//===----------------------------------------------------------------------===//

#include "tools/tlm-run/Options.h"

#include "lib/io/BpeTrainer.h"
#include "lib/io/FileIO.h"
#include "lib/io/Tokenizer.h"
#include "lib/support/Json.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdio>

namespace tlm::cli {

Error runTrainTokenizer(const Options &o) {
  if (o.textFile.empty())
    return flagError("--text-file is required");
  if (!o.isGiven("vocab-size"))
    return flagError("--vocab-size is required");
  if (o.output.empty())
    return flagError("--output is required");
  if (Error err =
          io::refuseOverwritingInput(o.output, {o.textFile}, "--output"))
    return err;
  // A regular file only (a FIFO would block), and a bounded one.
  auto text = io::readInput(o.textFile, uint64_t(1) << 32);
  if (!text)
    return flagError("--text-file: " + text.takeError().message());

  auto start = std::chrono::steady_clock::now();
  io::BpeTrainingOptions options;
  options.vocabSize = o.vocabSize;
  options.specials = o.specialTokens;
  io::BpeStats stats;
  auto vocab = io::trainBpe(*text, options, &stats);
  if (!vocab)
    return flagError("--vocab-size / --special-token: " +
                     vocab.takeError().message());
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();

  auto file = io::AtomicFile::create(o.output);
  if (!file)
    return file.takeError();
  if (Error err = file->write(io::bpeTokenizerJson(*vocab)))
    return err;
  if (Error err = file->commit())
    return err;

  size_t merges = vocab->merges.size();
  if (o.json) {
    json::Value out = json::Value::object();
    out.set("output", o.output);
    out.set("vocab_size", int64_t(vocab->tokens.size()));
    out.set("merges", int64_t(merges));
    out.set("special_tokens", int64_t(vocab->numSpecials));
    out.set("text_bytes", int64_t(text->size()));
    out.set("pre_tokens", int64_t(stats.preTokens));
    out.set("distinct_pre_tokens", int64_t(stats.distinctPreTokens));
    out.set("train_s", seconds);
    std::printf("%s\n", out.dump(json::Value::Layout::Line).c_str());
    return Error::success();
  }
  llvm::errs() << "trained " << merges << " merges (vocabulary "
               << vocab->tokens.size() << ") on "
               << llvm::format("%.2f", double(text->size()) / 1e6) << " MB ("
               << stats.preTokens << " pre-tokens, "
               << stats.distinctPreTokens << " distinct) in "
               << llvm::format("%.3f", seconds) << " s; wrote " << o.output
               << "\n";
  if (int64_t(vocab->tokens.size()) < o.vocabSize)
    llvm::errs() << "note: the text has no pair left to merge: "
                 << vocab->tokens.size() << " tokens, not " << o.vocabSize
                 << "\n";
  return Error::success();
}

} // namespace tlm::cli
