#include "structured/char_encoding.h"

#include <algorithm>

#include <fmt/format.h>

#include "structured/utf8_ranges.h"

namespace dcu::structured {
namespace {

bool needs_escape(uint32_t cp) { return cp < 0x20 || cp == '"' || cp == '\\'; }

std::string json_escape(uint32_t cp) {
  switch (cp) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: return fmt::format("\\u{:04x}", cp);
  }
}

}  // namespace

int encoded_chars(Grammar& g, const std::vector<CodeRange>& ranges, CharEncoding encoding) {
  if (encoding == CharEncoding::Raw) return g.chars(ranges);
  // Characters 0x00-0x1F, '"' and '\' are escaped; the rest stay as they are.
  std::vector<CodeRange> plain;
  std::vector<int> escaped;
  for (const CodeRange& r : ranges) {
    for (uint32_t cp = r.lo; cp <= std::min<uint32_t>(r.hi, 0x5C); ++cp)
      if (needs_escape(cp)) escaped.push_back(g.literal(json_escape(cp)));
    // The plain part: r without [0, 0x1F], 0x22 and 0x5C.
    for (CodeRange piece : {CodeRange{0x20, 0x21}, CodeRange{0x23, 0x5B}, CodeRange{0x5D, kMaxCodePoint}}) {
      const uint32_t lo = std::max(piece.lo, r.lo), hi = std::min(piece.hi, r.hi);
      if (lo <= hi) plain.push_back({lo, hi});
    }
  }
  if (!plain.empty()) escaped.push_back(g.chars(plain));
  return g.alt(std::move(escaped));
}

int encoded_literal(Grammar& g, const std::string& utf8, CharEncoding encoding) {
  if (encoding == CharEncoding::Raw) return g.literal(utf8);
  std::string out;
  for (unsigned char c : utf8) {
    if (needs_escape(c)) out += json_escape(c);
    else out.push_back(char(c));
  }
  return g.literal(out);
}

int json_string_char(Grammar& g) {
  const int plain = g.chars({{0x20, 0x21}, {0x23, 0x5B}, {0x5D, kMaxCodePoint}});
  const int hex = g.chars({{'0', '9'}, {'A', 'F'}, {'a', 'f'}});
  const int simple = g.seq({g.literal("\\"), g.chars({{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'}, {'f', 'f'},
                                                      {'n', 'n'}, {'r', 'r'}, {'t', 't'}})});
  // \uXXXX except surrogates, which validators count differently (a pair is one character).
  const int not_d = g.chars({{'0', '9'}, {'A', 'C'}, {'E', 'F'}, {'a', 'c'}, {'e', 'f'}});
  const int unicode = g.alt({g.seq({g.literal("\\u"), not_d, hex, hex, hex}),
                             g.seq({g.literal("\\u"), g.chars({{'D', 'D'}, {'d', 'd'}}), g.chars({{'0', '7'}}), hex, hex})});
  return g.alt({plain, simple, unicode});
}

}  // namespace dcu::structured
