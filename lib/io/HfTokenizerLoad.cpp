//===- HfTokenizerLoad.cpp - reading and checking tokenizer.json ----------===//
//
// Every field is read or refused here, so that the encoder (HfTokenizer.cpp)
// only ever meets a pipeline it implements.
//
//===----------------------------------------------------------------------===//

#include "lib/io/ByteAlphabet.h"
#include "lib/io/FileIO.h"
#include "lib/io/HfTokenizer.h"

#include <algorithm>

namespace tlm::io::hf {
namespace {

/// An error naming a key of `v` outside `known`, the first unknown one:
/// fields tlm does not know might change the result.
Error checkKeys(const json::Value &v, const std::string &where,
                std::initializer_list<std::string_view> known) {
  for (const std::string &key : v.keys())
    if (std::find(known.begin(), known.end(), key) == known.end())
      return makeError(where + ": '" + key + "' is not supported");
  return Error::success();
}

bool isFalseOrNull(const json::Value *v) {
  return !v || v->isNull() || (v->isBool() && !v->asBool());
}

std::string typeOf(const json::Value &v) {
  const json::Value *t = v.isObject() ? v.find("type") : nullptr;
  return t && t->isString() ? t->asString() : "";
}

/// The pre-tokenizer steps of `v` appended to `steps`.
Error readPreTokenizer(const json::Value &v, const std::string &where,
                       std::vector<PreStep> &steps) {
  std::string type = typeOf(v);
  auto fail = [&](const std::string &what) {
    return makeError(where + ": " + what);
  };
  if (type == "Sequence") {
    const json::Value *list = v.find("pretokenizers");
    if (!list || !list->isArray())
      return fail("Sequence without 'pretokenizers'");
    for (const json::Value &step : list->elements())
      if (auto e = readPreTokenizer(step, where, steps))
        return e;
    return Error::success();
  }
  if (type == "ByteLevel") {
    if (auto e = checkKeys(v, where + ": ByteLevel",
                           {"type", "add_prefix_space", "trim_offsets",
                            "use_regex"}))
      return e;
    // use_regex defaults to true: GPT-2's split.
    const json::Value *regex = v.find("use_regex");
    bool useRegex = !(regex && regex->isBool() && !regex->asBool());
    steps.push_back({PreStep::ByteLevel,
                     !isFalseOrNull(v.find("add_prefix_space")), useRegex});
    return Error::success();
  }
  if (type == "Split") {
    if (auto e = checkKeys(v, where + ": Split",
                           {"type", "pattern", "behavior", "invert"}))
      return e;
    const json::Value *pattern = v.find("pattern");
    const json::Value *regex =
        pattern && pattern->isObject() ? pattern->find("Regex") : nullptr;
    const json::Value *behavior = v.find("behavior");
    if (!isFalseOrNull(v.find("invert")) || !behavior ||
        !behavior->isString() || behavior->asString() != "Isolated")
      return fail("Split is supported with behavior Isolated only");
    if (regex && regex->isString() && regex->asString() == kGpt2Pattern)
      steps.push_back({PreStep::Gpt2Split});
    else if (regex && regex->isString() && regex->asString() == kLlama3Pattern)
      steps.push_back({PreStep::Llama3Split});
    else
      return fail("Split pattern " +
                  (pattern ? pattern->dump().substr(0, 200) : "(none)") +
                  " is not one tlm knows (GPT-2's or Llama 3's)");
    return Error::success();
  }
  if (type == "Digits") {
    if (auto e = checkKeys(v, where + ": Digits", {"type", "individual_digits"}))
      return e;
    steps.push_back(
        {PreStep::Digits, !isFalseOrNull(v.find("individual_digits"))});
    return Error::success();
  }
  if (type == "Metaspace") {
    if (auto e = checkKeys(v, where + ": Metaspace",
                           {"type", "replacement", "add_prefix_space",
                            "prepend_scheme", "split", "str_rep"}))
      return e;
    const json::Value *rep = v.find("replacement");
    if (rep && !(rep->isString() && rep->asString() == kMetaspace))
      return fail("Metaspace replacement " + rep->dump() +
                  " is not supported (only \"\xE2\x96\x81\")");
    int prepend = 2;
    if (const json::Value *scheme = v.find("prepend_scheme");
        scheme && scheme->isString()) {
      const std::string &s = scheme->asString();
      if (s != "always" && s != "first" && s != "never")
        return fail("Metaspace prepend_scheme '" + s + "' is not supported");
      prepend = s == "always" ? 2 : s == "first" ? 1 : 0;
    } else if (isFalseOrNull(v.find("add_prefix_space")) &&
               v.find("add_prefix_space")) {
      prepend = 0;
    }
    const json::Value *split = v.find("split");
    steps.push_back({PreStep::Metaspace, !split || !isFalseOrNull(split),
                     false, prepend});
    return Error::success();
  }
  return fail("pre-tokenizer '" + type + "' is not supported");
}

/// `where: what`, the form of every message here.
Error failAt(const std::string &where, const std::string &what) {
  return makeError(where + ": " + what);
}

/// Whether any of `steps` is of `kind`.
bool hasStep(const std::vector<PreStep> &steps, PreStep::Kind kind) {
  return std::any_of(steps.begin(), steps.end(),
                     [&](const PreStep &s) { return s.kind == kind; });
}

/// The parts of `v`: the `listKey` array of a Sequence, else `v` itself;
/// false for a Sequence without that array.
bool sequenceParts(const json::Value &v, const char *listKey,
                   std::vector<const json::Value *> &parts) {
  if (typeOf(v) != "Sequence") {
    parts.push_back(&v);
    return true;
  }
  const json::Value *list = v.find(listKey);
  if (!list || !list->isArray())
    return false;
  for (const json::Value &p : list->elements())
    parts.push_back(&p);
  return true;
}

/// tokenizer.json's root object, read from `file`.
Expected<json::Value> readTokenizerJson(const std::string &file) {
  std::string where = "tokenizer: " + file;
  // Llama 3's file is 9 MB.
  Expected<std::string> text = readRegularFile(file, 256 << 20);
  if (!text)
    return makeError("tokenizer: " + text.takeError().message());
  Expected<json::Value> parsed = json::Value::parse(*text);
  if (!parsed)
    return failAt(where, "is not valid JSON: " + parsed.takeError().message());
  if (!parsed->isObject() || !parsed->find("model"))
    return failAt(where, "is not a tokenizer.json (no 'model' object)");
  return parsed;
}

/// The root's keys, less truncation and padding.
Error checkRootKeys(const json::Value &root, const std::string &where) {
  // Truncation and padding shape batches for training; tlm encodes one text
  // whole.
  if (auto e = checkKeys(root, where,
                         {"version", "truncation", "padding", "added_tokens",
                          "normalizer", "pre_tokenizer", "post_processor",
                          "decoder", "model"}))
    return e;
  for (const char *key : {"truncation", "padding"})
    if (!isFalseOrNull(root.find(key)))
      return failAt(where,
                    "'" + std::string(key) + "' is set, which tlm does not do");
  return Error::success();
}

/// The count of the vocab's and the added tokens' entries.
size_t countIds(const json::Value &root) {
  size_t count = 0;
  if (const json::Value *model = root.find("model"))
    if (const json::Value *vocab = model->find("vocab");
        vocab && vocab->isObject())
      count += vocab->size();
  if (const json::Value *list = root.find("added_tokens");
      list && list->isArray())
    count += list->size();
  return count;
}

/// The model's type, keys, dropout, subword prefix and suffix.
Error checkModelOptions(const json::Value &model, const std::string &where) {
  if (typeOf(model) != "BPE")
    return failAt(where, "type '" + typeOf(model) +
                             "' is not supported (only BPE: byte-level or "
                             "SentencePiece-style)");
  if (auto e = checkKeys(model, where,
                         {"type", "dropout", "unk_token",
                          "continuing_subword_prefix", "end_of_word_suffix",
                          "fuse_unk", "byte_fallback", "ignore_merges", "vocab",
                          "merges"}))
    return e;
  if (!isFalseOrNull(model.find("dropout")))
    if (const json::Value *d = model.find("dropout");
        !(d->isNumber() && d->asDouble() == 0))
      return failAt(where, "'dropout' is set: BPE dropout samples, tlm "
                           "encodes deterministically");
  for (const char *key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const json::Value *v = model.find(key);
        v && !v->isNull() && !(v->isString() && v->asString().empty()))
      return failAt(where, "'" + std::string(key) + "' is not supported");
  return Error::success();
}

/// The two tokens of merge `m` into `a` and `b`.
Error splitMerge(const json::Value &m, const std::string &where, std::string &a,
                 std::string &b) {
  // merges: "a b" strings (older files) or ["a", "b"] pairs.
  if (m.isString()) {
    size_t space = m.asString().find(' ');
    if (space == std::string::npos ||
        m.asString().find(' ', space + 1) != std::string::npos)
      return failAt(where, "merge " + m.dump() +
                               " must be two tokens separated by one space");
    a = m.asString().substr(0, space);
    b = m.asString().substr(space + 1);
    return Error::success();
  }
  if (m.isArray() && m.size() == 2 && m.elements()[0].isString() &&
      m.elements()[1].isString()) {
    a = m.elements()[0].asString();
    b = m.elements()[1].asString();
    return Error::success();
  }
  return failAt(where,
                "merge " + m.dump() + " is neither \"a b\" nor [\"a\", \"b\"]");
}

} // namespace

Error HfTokenizer::readModel(const json::Value &model, const std::string &file,
                             size_t idLimit) {
  std::string where = "tokenizer: " + file + ": model";
  if (auto e = checkModelOptions(model, where))
    return e;
  fuseUnk = !isFalseOrNull(model.find("fuse_unk"));
  ignoreMerges = !isFalseOrNull(model.find("ignore_merges"));
  bool byteFallback = !isFalseOrNull(model.find("byte_fallback"));
  if (auto e = readVocab(model, where, idLimit))
    return e;
  if (auto e = findByteTokens(where, byteFallback))
    return e;
  if (auto e = readUnkToken(model, where, byteFallback))
    return e;
  return readMerges(model, where);
}

Error HfTokenizer::readVocab(const json::Value &model, const std::string &where,
                             size_t idLimit) {
  const json::Value *vocab = model.find("vocab");
  if (!vocab || !vocab->isObject() || vocab->size() == 0)
    return failAt(where, "'vocab' must be a non-empty object of token -> id");
  ByteAlphabet alphabet;
  std::string bytes;
  vocabEntries = vocab->size();
  for (size_t item = 0; item < vocab->size(); ++item) {
    const std::string &token = vocab->keys()[item];
    const json::Value &value = vocab->elements()[item];
    // Ids run 0..n-1 without gaps over the vocab and the added tokens, so
    // none can reach their count (checked before any table grows to it).
    if (!value.isUnsigned() || value.asUint() >= idLimit)
      return failAt(where, "token \"" + token + "\" has id " + value.dump() +
                               "; ids must be integers 0.." +
                               std::to_string(idLimit - 1) +
                               " (the vocab's and added tokens' count, less "
                               "one)");
    auto id = static_cast<int32_t>(value.asUint());
    makeRoomFor(id);
    if (kinds[id] != Kind::Special)
      return failAt(where, "id " + std::to_string(id) + " is given twice");
    kinds[id] = Kind::Normal;
    if (!byteLevel) {
      texts[id] = replaceAll(token, kMetaspace, " ");
      ids.try_emplace(token, id);
    } else if (alphabet.unspell(token, bytes)) {
      texts[id] = bytes;
      ids.try_emplace(bytes, id);
    } else {
      // Special tokens may be spelled outside the alphabet; added_tokens
      // gives their text, and a token without one is caught there.
      ids.try_emplace(token, id);
      texts[id] = token;
      kinds[id] = Kind::Added; // must be an added token (checked by checkIds)
    }
  }
  return Error::success();
}

void HfTokenizer::makeRoomFor(int32_t id) {
  if (static_cast<size_t>(id) >= texts.size()) {
    texts.resize(id + 1);
    kinds.resize(id + 1, Kind::Special);
  }
}

Error HfTokenizer::findByteTokens(const std::string &where, bool byteFallback) {
  byteIds.fill(-1);
  if (byteLevel) {
    for (int b = 0; b < 256; ++b) {
      auto it = ids.find(std::string(1, static_cast<char>(b)));
      if (it == ids.end())
        return failAt(where, "has no token for byte " + std::to_string(b) +
                                 ", so some text could not be encoded");
      byteIds[b] = it->second;
    }
    return Error::success();
  }
  for (int b = 0; b < 256 && byteFallback; ++b) {
    static const char *hex = "0123456789ABCDEF";
    std::string spelled = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
    auto it = ids.find(spelled);
    if (it == ids.end())
      return failAt(where,
                    "byte_fallback is on, but there is no token " + spelled);
    byteIds[b] = it->second;
    kinds[it->second] = Kind::Byte;
    texts[it->second] = std::string(1, static_cast<char>(b));
  }
  return Error::success();
}

Error HfTokenizer::readUnkToken(const json::Value &model,
                                const std::string &where, bool byteFallback) {
  if (const json::Value *unk = model.find("unk_token"); unk && !unk->isNull()) {
    auto it = unk->isString() ? ids.find(unk->asString()) : ids.end();
    if (it == ids.end())
      return failAt(where, "unk_token " + unk->dump() + " is not in the vocab");
    unkId = it->second;
  } else if (!byteLevel && !byteFallback) {
    return failAt(where, "neither byte_fallback nor unk_token is set, so text "
                         "outside the vocabulary could not be encoded");
  }
  return Error::success();
}

Error HfTokenizer::readMerges(const json::Value &model,
                              const std::string &where) {
  const json::Value *list = model.find("merges");
  if (!list || !list->isArray())
    return failAt(where, "'merges' must be an array");
  ByteAlphabet alphabet;
  int32_t rank = 0;
  for (const json::Value &m : list->elements()) {
    std::string a, b;
    if (auto e = splitMerge(m, where, a, b))
      return e;
    std::string joined = a + b;
    std::string keyA = a, keyB = b, keyJoined = joined;
    if (byteLevel &&
        (!alphabet.unspell(a, keyA) || !alphabet.unspell(b, keyB) ||
         !alphabet.unspell(joined, keyJoined)))
      return failAt(where, "merge " + m.dump() +
                               " has a character outside the byte alphabet");
    auto ia = ids.find(keyA), ib = ids.find(keyB), im = ids.find(keyJoined);
    if (ia == ids.end() || ib == ids.end() || im == ids.end())
      return failAt(where, "merge " + m.dump() + ": \"" +
                               (ia == ids.end()   ? a
                                : ib == ids.end() ? b
                                                  : joined) +
                               "\" is not in the vocab");
    // A repeated merge takes its later rank, as tokenizers' map of merges
    // keeps the last insertion.
    merges.insert_or_assign(pairKey(ia->second, ib->second),
                            Merge{rank++, im->second});
  }
  return Error::success();
}

Error HfTokenizer::readPipeline(const json::Value &root,
                                const std::string &file) {
  std::string where = "tokenizer: " + file;
  if (auto e = checkRootKeys(root, where))
    return e;
  if (auto e = readNormalizer(root, where))
    return e;
  if (auto e = readPreTokenization(root, where))
    return e;
  if (auto e = readDecoder(root, where))
    return e;
  // The count of distinct ids bounds every id (readModel).
  if (const json::Value *model = root.find("model"))
    return readModel(*model, file, std::max<size_t>(countIds(root), 1));
  return failAt(where, "no 'model'");
}

Error HfTokenizer::readNormalizer(const json::Value &root,
                                  const std::string &where) {
  // Normalizer: none, or SentencePiece's Prepend("▁") and Replace(" ", "▁").
  const json::Value *n = root.find("normalizer");
  if (!n || n->isNull())
    return Error::success();
  std::vector<const json::Value *> parts;
  if (!sequenceParts(*n, "normalizers", parts))
    return failAt(where, "normalizer: Sequence without 'normalizers'");
  for (const json::Value *p : parts)
    if (!readNormalizerStep(*p))
      return failAt(where, "normalizer '" + typeOf(*p) + "' " +
                               p->dump().substr(0, 200) +
                               " is not supported (only SentencePiece's "
                               "Prepend and Replace of spaces by "
                               "\"\xE2\x96\x81\")");
  return Error::success();
}

bool HfTokenizer::readNormalizerStep(const json::Value &p) {
  std::string type = typeOf(p);
  const json::Value *prepend = p.find("prepend");
  const json::Value *pattern = p.find("pattern");
  const json::Value *literal =
      pattern && pattern->isObject() ? pattern->find("String") : nullptr;
  const json::Value *content = p.find("content");
  if (type == "Prepend" && prepend && prepend->isString() &&
      prepend->asString() == kMetaspace) {
    normalPrefix = prepend->asString();
    return true;
  }
  if (type == "Replace" && literal && literal->isString() &&
      literal->asString() == " " && content && content->isString() &&
      content->asString() == kMetaspace) {
    spacesToMetaspace = true;
    return true;
  }
  return false;
}

Error HfTokenizer::readPreTokenization(const json::Value &root,
                                       const std::string &where) {
  if (const json::Value *p = root.find("pre_tokenizer"); p && !p->isNull())
    if (auto e = readPreTokenizer(*p, where + ": pre_tokenizer", steps))
      return e;
  byteLevel = hasStep(steps, PreStep::ByteLevel);
  if (byteLevel && (hasStep(steps, PreStep::Metaspace) || spacesToMetaspace ||
                    !normalPrefix.empty()))
    return failAt(where, "mixes byte-level and SentencePiece-style steps");
  // After ByteLevel, tokenizers' later steps see the byte alphabet (`Ġ` is
  // a letter there); tlm splits raw text, so only steps before it are exact.
  for (size_t i = 0, seen = 0; i < steps.size(); ++i) {
    if (seen && steps[i].kind != PreStep::ByteLevel)
      return failAt(where, "pre_tokenizer: a Split or Digits after ByteLevel "
                           "is not supported (it would split the byte "
                           "alphabet's spelling)");
    seen |= steps[i].kind == PreStep::ByteLevel;
  }
  return Error::success();
}

Error HfTokenizer::readDecoder(const json::Value &root,
                               const std::string &where) {
  // Decoder: must undo what the encoder did, nothing else.
  const json::Value *d = root.find("decoder");
  if (!d || d->isNull())
    return failAt(where, "no 'decoder': tokenizers would print the tokens as "
                         "spelled in the vocab, which tlm does not");
  std::vector<const json::Value *> decoders;
  if (!sequenceParts(*d, "decoders", decoders))
    return failAt(where, "decoder: Sequence without 'decoders'");
  for (const json::Value *p : decoders)
    if (!readDecoderStep(*p))
      return failAt(where, "decoder '" + typeOf(*p) + "' " +
                               p->dump().substr(0, 200) +
                               " is not supported with this model");
  return Error::success();
}

bool HfTokenizer::readDecoderStep(const json::Value &p) {
  std::string type = typeOf(p);
  const json::Value *content = p.find("content");
  if (type == "ByteLevel" && byteLevel)
    return true;
  if ((type == "ByteFallback" || type == "Fuse") && !byteLevel)
    return true;
  const json::Value *pattern = p.find("pattern");
  const json::Value *literal =
      pattern && pattern->isObject() ? pattern->find("String") : nullptr;
  if (type == "Replace" && !byteLevel && content && content->isString() &&
      content->asString() == " " && literal && literal->isString() &&
      literal->asString() == kMetaspace)
    return true;
  if (type == "Metaspace" && !byteLevel) {
    // It drops the first token's `▁` unless it prepends none (its
    // default prepend_scheme is "always").
    const json::Value *scheme = p.find("prepend_scheme");
    const json::Value *prefix = p.find("add_prefix_space");
    stripFirstSpace = scheme && scheme->isString()
                          ? scheme->asString() != "never"
                          : !(prefix && prefix->isBool() && !prefix->asBool());
    return true;
  }
  if (type == "Strip" && !byteLevel && content && content->isString() &&
      content->asString() == " ") {
    const json::Value *start = p.find("start");
    const json::Value *stop = p.find("stop");
    if (start && start->isUnsigned() && start->asUint() <= 1 && stop &&
        stop->isUnsigned() && stop->asUint() == 0) {
      // Strip works on the fused text: a leading space goes whichever
      // token made it, a byte token's too.
      stripFirstSpace = stripByteSpace = start->asUint() == 1;
      return true;
    }
  }
  return false;
}

Expected<std::unique_ptr<Tokenizer>>
HfTokenizer::load(const std::string &file) {
  Expected<json::Value> root = readTokenizerJson(file);
  if (!root)
    return root.takeError();
  std::string where = "tokenizer: " + file;
  auto tok = std::make_unique<HfTokenizer>();
  if (auto e = tok->readPipeline(*root, file))
    return e;
  if (auto e = tok->readAddedTokens(*root, where))
    return e;
  if (auto e = tok->checkIds(where))
    return e;
  tok->indexAddedTokens();
  if (auto e = tok->readPostProcessor(*root, where))
    return e;
  tok->pickEos();
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

Error HfTokenizer::readAddedTokens(const json::Value &root,
                                   const std::string &where) {
  // Added tokens: their text overrides the model's; special ones (BOS, EOS,
  // chat markers) decode to nothing, as `skip_special_tokens` shows them.
  const json::Value *list = root.find("added_tokens");
  if (!list || list->isNull())
    return Error::success();
  if (!list->isArray())
    return failAt(where, "'added_tokens' must be an array");
  for (const json::Value &t : list->elements())
    if (auto e = readAddedToken(t, list->size(), where))
      return e;
  return Error::success();
}

Error HfTokenizer::readAddedToken(const json::Value &t, size_t count,
                                  const std::string &where) {
  const json::Value *id = t.isObject() ? t.find("id") : nullptr;
  const json::Value *content = t.isObject() ? t.find("content") : nullptr;
  if (!id || !id->isUnsigned() || id->asUint() >= count + texts.size() ||
      !content || !content->isString() || content->asString().empty())
    return failAt(where, "added token " + t.dump().substr(0, 200) +
                             " needs an integer 'id' and a non-empty "
                             "'content'");
  for (const char *key : {"single_word", "lstrip", "rstrip"})
    if (!isFalseOrNull(t.find(key)))
      return failAt(where, "added token \"" + content->asString() + "\": '" +
                               key + "' is not supported");
  // The id Hugging Face's tokenizers give it, whatever the file says: the
  // id its content already has (an earlier added token, or the vocab's),
  // else the next after the vocab and the added tokens so far. A file id
  // that collides with another vocab token would otherwise overwrite that
  // token's text and corrupt decoding; the library renumbers it (with a
  // warning), and so does this.
  const std::string &text = content->asString();
  // The vocab is looked up by the content as written, as the library does:
  // byte-level vocabularies key `ids` by the bytes a token spells, so the
  // content is read through the alphabet first (" hello" is no vocab
  // token; "Ġhello" is).
  std::string key = text;
  bool spelled = true;
  if (byteLevel) {
    std::string bytes;
    spelled = ByteAlphabet().unspell(text, bytes);
    if (spelled)
      key = bytes;
  }
  auto inVocab = ids.find(key);
  // Content outside the alphabet names a vocab token only when that token
  // was written so too (a special spelled as it is, Kind::Added here).
  if (inVocab != ids.end() && !spelled &&
      kinds[inVocab->second] == Kind::Normal)
    inVocab = ids.end();
  int32_t n;
  if (int32_t earlier = addedId(text); earlier >= 0)
    n = earlier;
  else if (inVocab != ids.end())
    n = inVocab->second;
  else
    n = lastAddedId >= int32_t(vocabEntries) ? lastAddedId + 1
                                             : int32_t(vocabEntries);
  lastAddedId = std::max(lastAddedId, n);
  makeRoomFor(n);
  bool special = !isFalseOrNull(t.find("special"));
  kinds[n] = special ? Kind::Special : Kind::Added;
  texts[n] = special ? "" : content->asString();
  if (addedId(text) < 0)
    added.push_back({text, n});
  return Error::success();
}

Error HfTokenizer::checkIds(const std::string &where) const {
  std::vector<bool> addedIds(texts.size(), false);
  for (const auto &a : added)
    addedIds[a.second] = true;
  for (size_t id = 0; id < texts.size(); ++id) {
    bool isAdded = addedIds[id];
    if (kinds[id] == Kind::Special && !isAdded)
      return failAt(
          where, "id " + std::to_string(id) + " has no token (ids must be 0.." +
                     std::to_string(texts.size() - 1) + " without gaps)");
    if (kinds[id] == Kind::Added && !isAdded)
      return failAt(where, "token \"" + texts[id] +
                               "\" has a character outside the byte alphabet");
  }
  return Error::success();
}

void HfTokenizer::indexAddedTokens() {
  std::sort(added.begin(), added.end(), [](const auto &a, const auto &b) {
    return a.first.size() != b.first.size() ? a.first.size() > b.first.size()
                                            : a.second < b.second;
  });
  for (size_t i = 0; i < added.size(); ++i)
    addedByFirstByte[static_cast<uint8_t>(added[i].first[0])].push_back(i);
}

int32_t HfTokenizer::addedId(std::string_view content) const {
  for (const auto &[text, id] : added)
    if (text == content)
      return id;
  return -1;
}

Error HfTokenizer::readPostProcessor(const json::Value &root,
                                     const std::string &where) {
  // BOS: the special token the post-processor puts before a single text.
  // Llama 3 wraps its template in a Sequence after a (no-op) ByteLevel.
  const json::Value *p = root.find("post_processor");
  if (!p || p->isNull())
    return Error::success();
  // A Sequence without 'processors' is one processor, refused by its type.
  std::vector<const json::Value *> processors;
  if (!sequenceParts(*p, "processors", processors))
    processors.push_back(p);
  for (const json::Value *q : processors) {
    std::string type = typeOf(*q);
    if (type == "TemplateProcessing") {
      if (auto e = readTemplate(*q, where))
        return e;
    } else if (type != "ByteLevel") {
      return failAt(where, "post_processor '" + type + "' is not supported");
    }
  }
  return Error::success();
}

Error HfTokenizer::readTemplate(const json::Value &p,
                                const std::string &where) {
  const json::Value *single = p.find("single");
  if (!single || !single->isArray())
    return failAt(where, "post_processor: TemplateProcessing without 'single'");
  for (size_t i = 0; i < single->size(); ++i) {
    const json::Value &item = single->elements()[i];
    const json::Value *special = item.find("SpecialToken");
    const json::Value *name = special ? special->find("id") : nullptr;
    if (i == 0 && name && name->isString() && addedId(name->asString()) >= 0) {
      bosId = addedId(name->asString());
      continue;
    }
    if (item.find("Sequence"))
      continue;
    return failAt(where, "post_processor: template item " +
                             item.dump().substr(0, 200) +
                             " is not supported (only a leading special "
                             "token)");
  }
  return Error::success();
}

void HfTokenizer::pickEos() {
  // EOS: tokenizer.json does not say which token ends a text; the names
  // the families' base models use, in order (it may be BOS as well, as
  // <|endoftext|> is in GPT-2 style). An instruct model's end of turn
  // (<|eot_id|>, <|im_end|>) is a --stop-tokens away.
  for (std::string_view name : {"</s>", "<|endoftext|>", "<|end_of_text|>",
                                "<|eot_id|>", "<|im_end|>", "<eos>"})
    if (int32_t id = addedId(name); id >= 0) {
      eosId = id;
      break;
    }
}

} // namespace tlm::io::hf

namespace tlm::io {

Expected<std::unique_ptr<Tokenizer>> loadHfTokenizer(const std::string &file) {
  return hf::HfTokenizer::load(file);
}

} // namespace tlm::io
