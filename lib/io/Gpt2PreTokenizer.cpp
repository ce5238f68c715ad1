//===- Gpt2PreTokenizer.cpp - GPT-2's split of text into pieces -----------===//

#include "lib/io/Gpt2PreTokenizer.h"

#include <algorithm>
#include <iterator>

namespace tlm::io {
namespace {

struct ClassRange {
  uint32_t lo, hi;
  CharClass cls;
};

constexpr CharClass L = CharClass::Letter, N = CharClass::Number,
                    S = CharClass::Space, O = CharClass::Other;

/// Non-ASCII codepoints that are not letters, sorted and disjoint; anything
/// outside them is a letter. Whitespace is Unicode's White_Space property
/// (what Python's `regex` module, which GPT-2's encoder used, calls \s).
// Several ranges to a line keep the table readable.
// clang-format off
constexpr ClassRange kRanges[] = {
    // Latin-1: C1 controls, NEL, NBSP, symbols, superscripts, fractions;
    // ª µ º and the accented letters stay letters.
    {0x80, 0x84, O}, {0x85, 0x85, S}, {0x86, 0x9F, O}, {0xA0, 0xA0, S},
    {0xA1, 0xA9, O}, {0xAB, 0xB1, O}, {0xB2, 0xB3, N}, {0xB4, 0xB4, O},
    {0xB6, 0xB8, O}, {0xB9, 0xB9, N}, {0xBB, 0xBB, O}, {0xBC, 0xBE, N},
    {0xBF, 0xBF, O}, {0xD7, 0xD7, O}, {0xF7, 0xF7, O},
    // Modifier symbols and combining diacritics (marks are not \p{L}).
    {0x02C2, 0x02C5, O}, {0x02D2, 0x02DF, O}, {0x02E5, 0x02EB, O},
    {0x02ED, 0x02ED, O}, {0x02EF, 0x036F, O},
    // Greek and Cyrillic punctuation and marks.
    {0x0375, 0x0375, O}, {0x037E, 0x037E, O}, {0x0384, 0x0385, O},
    {0x0387, 0x0387, O}, {0x03F6, 0x03F6, O}, {0x0482, 0x0489, O},
    // Armenian, Hebrew and Arabic punctuation, marks and digits.
    {0x055A, 0x055F, O}, {0x0589, 0x058A, O}, {0x0591, 0x05C7, O},
    {0x05F3, 0x05F4, O}, {0x0600, 0x061F, O}, {0x064B, 0x065F, O},
    {0x0660, 0x0669, N}, {0x066A, 0x066D, O}, {0x0670, 0x0670, O},
    {0x06D4, 0x06D4, O}, {0x06D6, 0x06ED, O}, {0x06F0, 0x06F9, N},
    // Devanagari vowel signs, virama, dandas and digits.
    {0x0900, 0x0903, O}, {0x093A, 0x093C, O}, {0x093E, 0x094F, O},
    {0x0951, 0x0957, O}, {0x0962, 0x0965, O}, {0x0966, 0x096F, N},
    {0x0970, 0x0970, O},
    // Thai vowel signs, tone marks, punctuation and digits.
    {0x0E31, 0x0E31, O}, {0x0E34, 0x0E3F, O}, {0x0E47, 0x0E4F, O},
    {0x0E50, 0x0E59, N}, {0x0E5A, 0x0E5B, O},
    {0x1680, 0x1680, S},
    // General punctuation: spaces, zero-width and format characters,
    // dashes, quotes; then super/subscripts and currency.
    {0x2000, 0x200A, S}, {0x200B, 0x2027, O}, {0x2028, 0x2029, S},
    {0x202A, 0x202E, O}, {0x202F, 0x202F, S}, {0x2030, 0x205E, O},
    {0x205F, 0x205F, S}, {0x2060, 0x206F, O}, {0x2070, 0x2070, N},
    {0x2074, 0x2079, N}, {0x207A, 0x207E, O}, {0x2080, 0x2089, N},
    {0x208A, 0x208E, O}, {0x20A0, 0x20FF, O},
    // Letterlike symbols that are symbols (℃, №, ™, ...), number forms.
    {0x2100, 0x2101, O}, {0x2103, 0x2106, O}, {0x2108, 0x2109, O},
    {0x2114, 0x2114, O}, {0x2116, 0x2118, O}, {0x211E, 0x2123, O},
    {0x2125, 0x2125, O}, {0x2127, 0x2127, O}, {0x2129, 0x2129, O},
    {0x212E, 0x212E, O}, {0x213A, 0x213B, O}, {0x2140, 0x2144, O},
    {0x214A, 0x214D, O}, {0x214F, 0x214F, O}, {0x2150, 0x2182, N},
    {0x2185, 0x2189, N},
    // Arrows, maths, technical, box drawing, shapes, dingbats, braille;
    // with the enclosed and dingbat numbers.
    {0x218A, 0x245F, O}, {0x2460, 0x249B, N}, {0x249C, 0x24E9, O},
    {0x24EA, 0x24FF, N}, {0x2500, 0x2775, O}, {0x2776, 0x2793, N},
    {0x2794, 0x2BFF, O}, {0x2E00, 0x2E7F, O}, {0x2FF0, 0x2FFF, O},
    // CJK punctuation (々 〆 and the kana iteration marks stay letters),
    // Hangzhou numerals, kana voicing marks, ゠ and ・.
    {0x3000, 0x3000, S}, {0x3001, 0x3004, O}, {0x3007, 0x3007, N},
    {0x3008, 0x3020, O}, {0x3021, 0x3029, N}, {0x302A, 0x3030, O},
    {0x3036, 0x3037, O}, {0x3038, 0x303A, N}, {0x303D, 0x303F, O},
    {0x3099, 0x309C, O}, {0x30A0, 0x30A0, O}, {0x30FB, 0x30FB, O},
    // Enclosed CJK and compatibility symbols, Yijing hexagrams.
    {0x3200, 0x33FF, O}, {0x4DC0, 0x4DFF, O},
    // Surrogates and private use; variation selectors, vertical and small
    // forms, the byte order mark; fullwidth punctuation and digits.
    {0xD800, 0xF8FF, O}, {0xFE00, 0xFE19, O}, {0xFE20, 0xFE6F, O},
    {0xFEFF, 0xFEFF, O}, {0xFF01, 0xFF0F, O}, {0xFF10, 0xFF19, N},
    {0xFF1A, 0xFF20, O}, {0xFF3B, 0xFF40, O}, {0xFF5B, 0xFF65, O},
    {0xFFE0, 0xFFFF, O},
    // Musical symbols, mathematical digits, emoji and other pictographs,
    // tags, variation selectors, private use planes.
    {0x1D000, 0x1D24F, O}, {0x1D7CE, 0x1D7FF, N}, {0x1F000, 0x1FAFF, O},
    {0x1FB00, 0x1FBEF, O}, {0x1FBF0, 0x1FBF9, N}, {0xE0000, 0xE007F, O},
    {0xE0100, 0xE01EF, O}, {0xF0000, 0x10FFFF, O},
};
// clang-format on

/// One character of the input: where it starts, its codepoint and class.
struct Unit {
  size_t offset;
  uint32_t cp;
  CharClass cls;
};

/// Decodes `text` into units. A malformed sequence yields its first byte as
/// a unit of class Other, so every byte ends up in exactly one piece.
std::vector<Unit> decodeUnits(std::string_view text) {
  std::vector<Unit> units;
  units.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<uint8_t>(text[i]);
    size_t len = c < 0x80                 ? 1
                 : c >= 0xC2 && c <= 0xDF ? 2
                 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4
                                          : 0;
    uint32_t cp = len == 1   ? c
                  : len == 2 ? c & 0x1F
                  : len == 3 ? c & 0x0F
                             : c & 0x07;
    for (size_t k = 1; k < len; ++k) {
      auto d = i + k < text.size() ? static_cast<uint8_t>(text[i + k]) : 0;
      if ((d & 0xC0) != 0x80) {
        len = 0;
        break;
      }
      cp = cp << 6 | (d & 0x3F);
    }
    if (len == 0) {
      units.push_back({i, c, CharClass::Other});
      ++i;
      continue;
    }
    units.push_back({i, cp, classifyCodepoint(cp)});
    i += len;
  }
  return units;
}

/// The length of the contraction that an apostrophe followed by `a`, `b`
/// starts ('s 't 'm 'd: 2; 're 've 'll: 3), or 0.
size_t contractionLength(uint32_t a, uint32_t b) {
  if (a == 's' || a == 't' || a == 'm' || a == 'd')
    return 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
      (a == 'l' && b == 'l'))
    return 3;
  return 0;
}

} // namespace

CharClass classifyCodepoint(uint32_t cp) {
  if (cp < 0x80) {
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z'))
      return L;
    if (cp >= '0' && cp <= '9')
      return N;
    if (cp == ' ' || (cp >= '\t' && cp <= '\r'))
      return S;
    return O;
  }
  const ClassRange *it = std::upper_bound(
      std::begin(kRanges), std::end(kRanges), cp,
      [](uint32_t v, const ClassRange &r) { return v < r.lo; });
  if (it != std::begin(kRanges) && cp <= std::prev(it)->hi)
    return std::prev(it)->cls;
  return L;
}

std::vector<std::string_view> splitGpt2(std::string_view text) {
  std::vector<Unit> units = decodeUnits(text);
  size_t n = units.size();
  auto cp = [&](size_t j) { return j < n ? units[j].cp : 0; };
  auto runEnd = [&](size_t j, CharClass cls) {
    while (j < n && units[j].cls == cls)
      ++j;
    return j;
  };

  std::vector<std::string_view> pieces;
  for (size_t i = 0; i < n;) {
    size_t end = i;
    // 's 't 'm 'd 're 've 'll, case-sensitive as in GPT-2.
    if (cp(i) == '\'')
      end = i + contractionLength(cp(i + 1), cp(i + 2));
    // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: the three classes
    // cover every non-space character, so the first character after an
    // optional space picks the alternative.
    if (end == i) {
      size_t start = cp(i) == ' ' && i + 1 < n ? i + 1 : i;
      if (units[start].cls != CharClass::Space)
        end = runEnd(start, units[start].cls);
    }
    // `\s+(?!\S)|\s+`: a whitespace run gives its last character to the
    // word after it (which then starts with that space), unless the run is
    // a single character or reaches the end of the text.
    if (end == i) {
      end = runEnd(i, CharClass::Space);
      if (end < n && end - i >= 2)
        --end;
    }
    size_t from = units[i].offset;
    size_t to = end < n ? units[end].offset : text.size();
    pieces.push_back(text.substr(from, to - from));
    i = end;
  }
  return pieces;
}

std::vector<std::string_view> splitLlama3(std::string_view text) {
  std::vector<Unit> units = decodeUnits(text);
  size_t n = units.size();
  auto cp = [&](size_t j) { return j < n ? units[j].cp : 0; };
  auto cls = [&](size_t j) { return j < n ? units[j].cls : CharClass::Space; };
  auto isLineBreak = [&](size_t j) {
    return j < n && (units[j].cp == '\r' || units[j].cp == '\n');
  };
  auto runEnd = [&](size_t j, CharClass c, size_t limit) {
    while (j < n && j < limit && units[j].cls == c)
      ++j;
    return j;
  };
  auto lower = [](uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; };

  std::vector<std::string_view> pieces;
  for (size_t i = 0; i < n;) {
    size_t end = i;
    // (?i:'s|'t|'re|'ve|'m|'ll|'d): contractions in either case.
    if (cp(i) == '\'')
      end = i + contractionLength(lower(cp(i + 1)), lower(cp(i + 2)));
    // [^\r\n\p{L}\p{N}]?\p{L}+: a word, with one leading character that
    // is neither a line break, a letter nor a digit.
    if (end == i) {
      if (cls(i) == CharClass::Letter)
        end = runEnd(i, CharClass::Letter, n);
      else if (cls(i) != CharClass::Number && !isLineBreak(i) &&
               cls(i + 1) == CharClass::Letter && i + 1 < n)
        end = runEnd(i + 1, CharClass::Letter, n);
    }
    // \p{N}{1,3}: digits in groups of at most three.
    if (end == i && cls(i) == CharClass::Number)
      end = runEnd(i, CharClass::Number, i + 3);
    // ` ?[^\s\p{L}\p{N}]+[\r\n]*`: punctuation, the line breaks after it.
    if (end == i) {
      size_t start = cp(i) == ' ' ? i + 1 : i;
      if (start < n && cls(start) == CharClass::Other) {
        end = runEnd(start, CharClass::Other, n);
        while (isLineBreak(end))
          ++end;
      }
    }
    if (end == i) {
      // Here units[i] is whitespace (the classes above cover the rest).
      size_t run = runEnd(i, CharClass::Space, n);
      // \s*[\r\n]+: the whitespace up to and with its last line break.
      for (size_t j = run; j > i; --j)
        if (isLineBreak(j - 1)) {
          end = j;
          break;
        }
      // \s+(?!\S)|\s+: as GPT-2's, the last space goes to the next word.
      if (end == i)
        end = run < n && run - i >= 2 ? run - 1 : run;
    }
    size_t from = units[i].offset;
    size_t to = end < n ? units[end].offset : text.size();
    pieces.push_back(text.substr(from, to - from));
    i = end;
  }
  return pieces;
}

std::vector<std::string_view> splitDigits(std::string_view text,
                                          bool individual) {
  std::vector<Unit> units = decodeUnits(text);
  size_t n = units.size();
  auto offset = [&](size_t j) { return j < n ? units[j].offset : text.size(); };
  std::vector<std::string_view> pieces;
  size_t from = 0; // unit where the current non-number stretch began
  for (size_t i = 0; i < n;) {
    if (units[i].cls != CharClass::Number) {
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (!individual && end < n && units[end].cls == CharClass::Number)
      ++end;
    if (i > from)
      pieces.push_back(text.substr(offset(from), offset(i) - offset(from)));
    pieces.push_back(text.substr(offset(i), offset(end) - offset(i)));
    from = i = end;
  }
  if (from < n)
    pieces.push_back(text.substr(offset(from)));
  return pieces;
}

} // namespace tlm::io
