//===- UtilityCommands.cpp - tlm-run commands that run no model -----------===//
//
// compare, import-llama2c, init, tokenize and detokenize.
//
//===----------------------------------------------------------------------===//

#include "tools/tlm-run/Options.h"
#include "tools/common/Progress.h"

#include "lib/io/FileIO.h"
#include "lib/io/SafeTensors.h"
#include "lib/io/Tokenizer.h"
#include "lib/model/HfImport.h"
#include "lib/model/Llama2c.h"
#include "lib/model/Weights.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tlm::cli {

namespace {

/// How two F32 tensors of one shape differ.
struct Difference {
  double maxErr = 0;
  int64_t elements = 0, bad = 0, nanA = 0, nanB = 0;
};

Difference difference(const io::Tensor &a, const io::Tensor &b, double atol,
                      double rtol) {
  // Infinities are values: equal ones agree, any other pair with one is
  // an infinite error. A NaN agrees with nothing and is counted apart, so
  // that it cannot hide in (or poison) the maximum.
  Difference d;
  d.elements = a.numElements();
  for (int64_t i = 0; i < d.elements; ++i) {
    double x = a.f32()[i], e = b.f32()[i];
    if (std::isnan(x) || std::isnan(e)) {
      d.nanA += std::isnan(x);
      d.nanB += std::isnan(e);
      ++d.bad;
      continue;
    }
    if (x == e)
      continue; // infinities included (rtol x inf would be NaN)
    double err = std::fabs(x - e);
    d.maxErr = std::max(d.maxErr, err);
    if (std::isinf(err) || !(err <= atol + rtol * std::fabs(e)))
      ++d.bad;
  }
  return d;
}

void printDifference(const Difference &d, double atol, double rtol) {
  llvm::outs() << llvm::format("max abs error %.3g over %lld elements; %lld "
                               "outside atol %g + rtol %g",
                               d.maxErr, (long long)d.elements,
                               (long long)d.bad, atol, rtol);
  if (d.nanA || d.nanB)
    llvm::outs() << llvm::format(" (NaN: %lld in the first, %lld in the "
                                 "second)",
                                 (long long)d.nanA, (long long)d.nanB);
  llvm::outs() << "\n";
}

/// compare A B: every F32 tensor the two files share, a line each, by name.
Error compareShared(const Options &o, const io::SafeTensors &a,
                    const io::SafeTensors &b) {
  int64_t differing = 0, compared = 0;
  std::vector<std::string> apart;
  for (const auto &[name, ta] : a.tensors()) {
    const io::Tensor *tb = b.find(name);
    if (!tb) {
      apart.push_back(name + " (first only)");
      continue;
    }
    if (ta.dtype != io::DType::F32 || tb->dtype != io::DType::F32 ||
        ta.shape != tb->shape) {
      apart.push_back(name + " (not F32 of one shape in both)");
      continue;
    }
    llvm::outs() << name << ": ";
    Difference d = difference(ta, *tb, o.atol, o.rtol);
    printDifference(d, o.atol, o.rtol);
    ++compared;
    differing += d.bad != 0;
  }
  for (const auto &[name, tb] : b.tensors())
    if (!a.find(name))
      apart.push_back(name + " (second only)");
  for (const std::string &what : apart)
    llvm::outs() << "not compared: " << what << "\n";
  if (compared == 0)
    return flagError("the two files share no F32 tensor of one shape");
  if (differing)
    return flagError(llvm::Twine(differing) + " of " + llvm::Twine(compared) +
                     " tensors differ");
  return Error::success();
}

} // namespace

Error runCompare(const Options &o) {
  if (o.positional.size() != 2)
    return flagError("compare takes two files, FILE:TENSOR or FILE (every "
                     "tensor they share)");
  std::vector<io::SafeTensors> files;
  std::vector<std::string> names;
  for (const std::string &arg : o.positional) {
    // FILE:TENSOR, or a FILE (with no ':' after its last '/').
    llvm::StringRef ref(arg);
    size_t colon = ref.rfind(':');
    bool named = colon != llvm::StringRef::npos &&
                 (ref.rfind('/') == llvm::StringRef::npos ||
                  colon > ref.rfind('/'));
    std::string path = named ? ref.substr(0, colon).str() : arg;
    names.push_back(named ? ref.substr(colon + 1).str() : "");
    auto file = io::SafeTensors::open(path);
    if (!file)
      return file.takeError();
    files.push_back(std::move(*file));
  }
  if (names[0].empty() && names[1].empty())
    return compareShared(o, files[0], files[1]);
  if (names[0].empty() || names[1].empty())
    return flagError("name a tensor in both files (FILE:TENSOR), or in "
                     "neither to compare every tensor they share");
  std::vector<const io::Tensor *> tensors;
  for (size_t i = 0; i < 2; ++i) {
    const io::Tensor *t = files[i].find(names[i]);
    if (!t || t->dtype != io::DType::F32)
      return flagError("no F32 tensor '" + names[i] + "' in " +
                       o.positional[i]);
    tensors.push_back(t);
  }
  if (tensors[0]->shape != tensors[1]->shape)
    return flagError("shapes differ: " + io::shapeString(tensors[0]->shape) +
                     " vs " + io::shapeString(tensors[1]->shape));
  Difference d = difference(*tensors[0], *tensors[1], o.atol, o.rtol);
  printDifference(d, o.atol, o.rtol);
  if (d.bad)
    return flagError(llvm::Twine(d.bad) + " elements differ");
  return Error::success();
}

Error runImportLlama2c(const Options &o) {
  if (o.positional.size() != 2)
    return flagError("import-llama2c takes MODEL.bin OUTDIR");
  auto start = Clock::now();
  auto config = model::importLlama2c(o.positional[0], o.positional[1]);
  if (!config)
    return config.takeError();
  llvm::outs() << "wrote " << o.positional[1] << "/config.json and "
               << o.positional[1] << "/weights.safetensors ("
               << model::parameterCount(*config) << " parameters) in "
               << durationText(msSince(start)) << "\n";
  return Error::success();
}

Error runImportHf(const Options &o) {
  if (o.positional.size() != 2)
    return flagError("import-hf takes HF_DIR OUTDIR");
  const std::string &dir = o.positional[0], &outDir = o.positional[1];
  // The folder's tokenizer.json goes along when tlm can encode with it, so
  // OUTDIR is all that generate needs; one it cannot read is only a note,
  // since the weights are right without it. Read before anything is
  // written: the folder is written as a unit.
  std::vector<model::ModelFile> extra;
  std::string from = dir + "/tokenizer.json";
  int64_t tokens = 0;
  if (llvm::sys::fs::exists(from)) {
    auto tokenizer = io::Tokenizer::load(from);
    if (!tokenizer) {
      llvm::errs() << "note: " << from << " not copied: "
                   << tokenizer.takeError().message() << "\n";
    } else {
      auto text = io::readRegularFile(from, uint64_t(256) << 20);
      if (!text)
        return text.takeError();
      tokens = (*tokenizer)->vocabSize();
      extra.push_back({"tokenizer.json", std::move(*text)});
    }
  }
  std::string stale = outDir + "/tokenizer.json";
  bool hadStale = extra.empty() && llvm::sys::fs::exists(stale);
  auto start = Clock::now();
  auto config = model::importHf(dir, outDir, extra);
  if (!config)
    return config.takeError();
  llvm::outs() << "wrote " << outDir << "/config.json and " << outDir
               << "/weights.safetensors ("
               << model::parameterCount(*config) << " parameters, "
               << model::dtypeName(config->dtype) << ") in "
               << durationText(msSince(start)) << "\n";
  if (!extra.empty())
    llvm::outs() << "wrote " << stale << " (" << tokens << " tokens)\n";
  if (hadStale && !llvm::sys::fs::exists(stale))
    llvm::errs() << "note: removed " << stale
                 << ", an earlier import's, which does not fit this model\n";
  return Error::success();
}

static Expected<std::unique_ptr<io::Tokenizer>>
loadTokenizer(const Options &o) {
  if (o.tokenizer.empty())
    return flagError("--tokenizer is required");
  auto t = io::Tokenizer::load(o.tokenizer);
  if (!t)
    return t.takeError();
  if (!(*t)->setParseSpecial(o.special))
    return flagError("--special needs a tokenizer.json (" + o.tokenizer +
                     " has no added tokens to recognise)");
  return t;
}

Error runTokenize(const Options &o) {
  auto tokenizer = loadTokenizer(o);
  if (!tokenizer)
    return tokenizer.takeError();
  if (o.isGiven("text") == !o.textFile.empty())
    return flagError("give exactly one of --text and --text-file");
  std::string text = o.text;
  if (!o.textFile.empty()) {
    // A regular file only (a FIFO would block), and a bounded one.
    auto read = io::readInput(o.textFile, uint64_t(1) << 32);
    if (!read)
      return flagError("--text-file: " + read.takeError().message());
    text = std::move(*read);
  }
  std::vector<int64_t> ids = (*tokenizer)->encode(text, o.bos);
  if (o.output.empty()) {
    for (size_t i = 0; i < ids.size(); ++i)
      llvm::outs() << (i ? " " : "") << ids[i];
    llvm::outs() << "\n";
    return Error::success();
  }
  if (Error err = io::refuseOverwritingInput(
          o.output, {o.textFile, o.tokenizer}, "--output"))
    return err;
  if (ids.empty())
    return flagError("the text encodes to no tokens: nothing to write");
  // A token file eval reads: safetensors `tokens` (I32, rank 1), or with
  // --tokens-dtype raw little-endian ids.
  std::string dtype =
      o.tokensDtype.empty() ? "int32" : o.tokensDtype;
  // auto: the narrowest raw type the vocabulary fits (said in the line
  // that reports the file).
  if (dtype == "auto")
    dtype = *std::max_element(ids.begin(), ids.end()) <= 65535 ? "uint16"
                                                                : "int32";
  size_t width = dtype == "uint16"  ? 2
                 : dtype == "int32" ? 4
                 : dtype == "int64" ? 8
                                    : 0;
  if (!width)
    return flagError(
        "--tokens-dtype must be uint16, int32, int64 or auto, found '" +
        dtype + "'");
  int64_t most = width == 2 ? 65535 : width == 4 ? INT32_MAX : INT64_MAX;
  for (int64_t id : ids)
    if (id > most)
      return flagError("token id " + std::to_string(id) + " does not fit " +
                       dtype);
  // --split F: the first F of the ids to --output, the rest to
  // --val-output (nanoGPT's split: 0.9).
  size_t trainCount = ids.size();
  if (o.isGiven("split") != !o.valOutput.empty())
    return flagError("--split and --val-output go together");
  if (o.isGiven("split")) {
    if (!(o.split > 0 && o.split < 1))
      return flagError("--split must be in (0, 1), found " +
                       std::to_string(o.split));
    if (Error err = io::refuseOverwritingInput(
            o.valOutput, {o.textFile, o.tokenizer, o.output}, "--val-output"))
      return err;
    trainCount = size_t(double(ids.size()) * o.split);
    if (trainCount == 0 || trainCount == ids.size())
      return flagError("--split " + std::to_string(o.split) + " of " +
                       std::to_string(ids.size()) +
                       " tokens leaves one side empty");
  }
  auto write = [&](const std::string &path, const int64_t *first,
                   size_t count) -> Error {
    std::string raw;
    raw.reserve(count * width);
    for (size_t i = 0; i < count; ++i)
      for (size_t b = 0; b < width; ++b)
        raw.push_back(char(uint64_t(first[i]) >> (8 * b)));
    if (o.tokensDtype.empty()) {
      io::TensorView view{"tokens", io::DType::I32,
                          {static_cast<int64_t>(count)}, raw.data()};
      if (Error err = io::writeSafeTensors(path, {view}))
        return err;
    } else {
      auto file = io::AtomicFile::create(path);
      if (!file)
        return file.takeError();
      if (Error err = file->write(raw))
        return err;
      if (Error err = file->commit())
        return err;
    }
    llvm::outs() << "wrote " << path << " (" << count << " tokens, " << dtype
                 << ")\n";
    return Error::success();
  };
  if (Error err = write(o.output, ids.data(), trainCount))
    return err;
  if (trainCount < ids.size())
    if (Error err = write(o.valOutput, ids.data() + trainCount,
                          ids.size() - trainCount)) {
      // Not one file of the pair without the other.
      std::error_code ec;
      std::filesystem::remove(o.output, ec);
      return err;
    }
  return Error::success();
}

Error runDetokenize(const Options &o) {
  auto tokenizer = loadTokenizer(o);
  if (!tokenizer)
    return tokenizer.takeError();
  std::vector<int64_t> ids;
  if (!llvm::StringRef(o.ids).trim().empty()) {
    auto parsed = parseIds("ids", o.ids);
    if (!parsed)
      return parsed.takeError();
    ids = std::move(*parsed);
  }
  auto text = (*tokenizer)->decode(ids);
  if (!text)
    return text.takeError();
  llvm::outs() << *text;
  return Error::success();
}

llvm::raw_ostream &wroteStream(const std::string &output) {
  return isStandardOutput(output) ? llvm::errs() : llvm::outs();
}

namespace {

/// `weights` (of `config`, in its dtype) as a safetensors file.
Error writeWeights(const std::string &path, const model::Config &config,
                         const model::Weights &weights) {
  std::vector<io::TensorView> views;
  std::vector<model::WeightSpec> specs = model::weightSpecs(config);
  for (size_t i = 0; i < specs.size(); ++i)
    views.push_back(
        {specs[i].name, specs[i].dtype, specs[i].shape, weights.pointers()[i]});
  // The format for readers other than tlm (tlm itself reads the dtypes).
  std::vector<std::pair<std::string, std::string>> metadata{
      {"tlm.dtype", std::string(model::dtypeName(config.dtype))}};
  if (model::isQuantized(config.dtype))
    metadata.push_back({"tlm.quant_block", std::to_string(model::kQuantBlock)});
  auto start = Clock::now();
  if (Error err = io::writeSafeTensors(path, views, metadata))
    return err;
  wroteStream(path) << "wrote " << path << " (" << views.size() << " tensors, "
               << model::dtypeName(config.dtype) << ", "
               << sizeText(double(weights.bytes())) << ") in "
               << durationText(msSince(start)) << "\n";
  return Error::success();
}

} // namespace

/// The config and its weights (--weights, or seeded), for a command that
/// writes weights to --output.
static Expected<std::pair<model::Config, model::Weights>>
weightsToWrite(const Options &o) {
  if (Error err = io::refuseOverwritingInput(
          o.output, {o.config, o.weights}, "--output"))
    return std::move(err);
  auto config = loadConfig(o);
  if (!config)
    return config.takeError();
  auto weights = loadWeights(o, *config);
  if (!weights)
    return weights.takeError();
  return std::make_pair(std::move(*config), std::move(*weights));
}

Error runInit(const Options &o) {
  if (o.output.empty())
    return flagError("--output is required");
  auto in = weightsToWrite(o);
  if (!in)
    return in.takeError();
  return writeWeights(o.output, in->first, in->second);
}

Error runQuantize(const Options &o) {
  if (o.output.empty())
    return flagError("--output is required");
  if (o.dtype.empty())
    return flagError("--dtype is required (" +
                     std::string(model::dtypeNames()) + ")");
  std::optional<model::WeightDtype> to = model::parseWeightDtype(o.dtype);
  if (!to)
    return flagError("--dtype must be one of " +
                     std::string(model::dtypeNames()) + ", found '" + o.dtype +
                     "'");
  // The weights as they are (a file's dtype, or seeded in f32), then
  // rounded or quantized to --dtype.
  auto in = weightsToWrite(o);
  if (!in)
    return in.takeError();
  auto converted = model::Weights::convert(in->second, in->first, *to,
                                                  /*hugePages=*/false);
  if (!converted)
    return converted.takeError();
  model::Config target = in->first;
  target.dtype = *to;
  return writeWeights(o.output, target, *converted);
}

} // namespace tlm::cli
