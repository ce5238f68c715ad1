//===- HfTokenizer.cpp - tokenizer.json's encoder and decoder -------------===//
//
// Text through the pipeline HfTokenizerLoad.cpp read (HfTokenizer.h): added
// tokens cut out, the normalizer, each pre-tokenizer step over every piece,
// then BPE inside each piece as `tokenizers` applies it: the pair of lowest
// rank first, leftmost on ties, one merge at a time.
//
//===----------------------------------------------------------------------===//

#include "lib/io/HfTokenizer.h"

#include "lib/io/Gpt2PreTokenizer.h"
#include "lib/io/SymbolList.h"

#include <algorithm>

namespace tlm::io::hf {

std::string replaceAll(std::string_view text, std::string_view from,
                       std::string_view to) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i, from.size()) == from) {
      out += to;
      i += from.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

std::vector<int64_t> HfTokenizer::encode(std::string_view text,
                                         bool addBos) const {
  std::vector<int64_t> out;
  if (addBos && bosId >= 0)
    out.push_back(bosId);
  // Added tokens are cut out first (leftmost, then longest); the text
  // between them is encoded on its own, as `tokenizers` does.
  size_t start = 0;
  bool first = true;
  if (parseSpecial && !added.empty()) {
    for (size_t i = 0; i < text.size();) {
      const auto &candidates = addedByFirstByte[static_cast<uint8_t>(text[i])];
      auto index = std::find_if(
          candidates.begin(), candidates.end(), [&](uint32_t k) {
            return text.substr(i, added[k].first.size()) == added[k].first;
          });
      if (index == candidates.end()) {
        ++i;
        continue;
      }
      auto match = added.begin() + *index;
      encodeSegment(text.substr(start, i - start), first, out);
      out.push_back(match->second);
      first = false;
      i += match->first.size();
      start = i;
    }
  }
  encodeSegment(text.substr(start), first, out);
  return out;
}

void HfTokenizer::encodeSegment(std::string_view text, bool first,
                                std::vector<int64_t> &out) const {
  if (text.empty())
    return;
  std::string normal = spacesToMetaspace
                           ? replaceAll(text, " ", kMetaspace)
                           : std::string(text);
  normal.insert(0, normalPrefix);

  // Pieces own their text: Metaspace and ByteLevel rewrite it.
  std::vector<std::string> pieces{std::move(normal)}, next;
  auto keep = [&](const std::vector<std::string_view> &parts) {
    for (std::string_view p : parts)
      next.emplace_back(p);
  };
  for (const PreStep &step : steps) {
    next.clear();
    for (size_t k = 0; k < pieces.size(); ++k) {
      const std::string &p = pieces[k];
      switch (step.kind) {
      case PreStep::Gpt2Split:
        keep(splitGpt2(p));
        break;
      case PreStep::Llama3Split:
        keep(splitLlama3(p));
        break;
      case PreStep::Digits:
        keep(splitDigits(p, step.flag));
        break;
      case PreStep::ByteLevel: {
        std::string q = p;
        if (step.flag && !startsWith(q, " "))
          q.insert(0, " ");
        if (step.regex)
          keep(splitGpt2(q));
        else
          next.push_back(q);
        break;
      }
      case PreStep::Metaspace: {
        std::string q = replaceAll(p, " ", kMetaspace);
        bool prefix = step.prepend == 2 || (step.prepend == 1 && first && k == 0);
        if (prefix && !startsWith(q, kMetaspace))
          q.insert(0, kMetaspace);
        if (!step.flag) {
          next.push_back(q);
          break;
        }
        // Split before every `▁`, which starts the next piece.
        size_t from = 0;
        for (size_t at = q.find(kMetaspace, 1); at != std::string::npos;
             at = q.find(kMetaspace, at + 1)) {
          next.push_back(q.substr(from, at - from));
          from = at;
        }
        next.push_back(q.substr(from));
        break;
      }
      }
    }
    pieces.swap(next);
  }
  for (const std::string &p : pieces)
    if (!p.empty())
      encodePiece(p, out);
}

void HfTokenizer::encodePiece(std::string_view piece,
                              std::vector<int64_t> &out) const {
  if (ignoreMerges)
    if (auto it = ids.find(std::string(piece)); it != ids.end()) {
      out.push_back(it->second);
      return;
    }
  std::vector<int32_t> symbols;
  if (byteLevel) {
    for (char c : piece)
      symbols.push_back(byteIds[static_cast<uint8_t>(c)]);
  } else {
    // One symbol per character; an unknown one becomes its bytes' tokens,
    // or <unk> (several in a row fused into one when fuse_unk).
    for (size_t i = 0; i < piece.size();) {
      // A character: a lead byte and its continuation bytes. An ASCII or
      // stray continuation byte stands alone (and falls back to its byte).
      size_t len = 1;
      while (static_cast<uint8_t>(piece[i]) >= 0xC0 && len < 4 &&
             i + len < piece.size() &&
             (static_cast<uint8_t>(piece[i + len]) & 0xC0) == 0x80)
        ++len;
      auto it = ids.find(std::string(piece.substr(i, len)));
      if (it != ids.end()) {
        symbols.push_back(it->second);
      } else if (byteIds[0] >= 0) {
        for (size_t k = 0; k < len; ++k)
          symbols.push_back(byteIds[static_cast<uint8_t>(piece[i + k])]);
      } else if (!(fuseUnk && !symbols.empty() && symbols.back() == unkId)) {
        symbols.push_back(unkId);
      }
      i += len;
    }
  }

  // The lowest rank first, leftmost on ties; a candidate names the two ids
  // it saw, so one made stale by an earlier merge is skipped when popped.
  RankedMergeHeap heap;
  SymbolList list(std::move(symbols));
  auto consider = [&](int32_t left) {
    if (left < 0 || list.next(left) < 0)
      return;
    int32_t a = list.at(left), b = list.at(list.next(left));
    auto it = merges.find(pairKey(a, b));
    if (it != merges.end())
      heap.push({it->second.rank, left, a, b, it->second.merged});
  };
  list.mergeBestFirst(heap, consider);
  list.appendTo(out);
}

Expected<std::string_view> HfTokenizer::piece(int64_t prev, int64_t id) const {
  if (id < 0 || id >= vocabSize())
    return makeError("token id " + std::to_string(id) +
                     " is outside the vocabulary (0.." +
                     std::to_string(vocabSize() - 1) + ")");
  std::string_view text = texts[id];
  // SentencePiece's decoder drops the prepended `▁` of the first piece (the
  // one after BOS).
  if (stripFirstSpace && (prev < 0 || prev == bosId) &&
      (kinds[id] == Kind::Normal ||
       (stripByteSpace && kinds[id] == Kind::Byte)) &&
      startsWith(text, " "))
    text.remove_prefix(1);
  return text;
}

} // namespace tlm::io::hf
