#pragma once
// Helpers for the structured-output tests: grammars from text, a synthetic byte vocabulary, and the
// mask the matcher's fast walk must agree with (every token tried one by one through accept_token).

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "structured/ebnf_parser.h"
#include "structured/grammar_compiler.h"
#include "structured/grammar_matcher.h"
#include "structured/regex_parser.h"

namespace dcu::structured::testing {

inline std::shared_ptr<const CompiledGrammar> compile_ebnf(const std::string& text) {
  return compile_grammar(parse_ebnf(text));
}

inline std::shared_ptr<const CompiledGrammar> compile_regex(const std::string& regex) {
  Grammar g;
  g.root = g.add_rule("root");
  g.set_body(g.root, parse_regex(g, regex, CharEncoding::Raw, RegexMatch::Whole));
  return compile_grammar(g);
}

// Every single byte, every pair of printable ASCII bytes, some longer pieces, and a few UTF-8 pieces;
// the last id is the end token.
inline std::shared_ptr<const TokenVocabulary> synthetic_vocabulary(std::vector<std::string> extra = {}) {
  std::vector<std::string> tokens;
  for (int b = 1; b < 256; ++b) tokens.push_back(std::string(1, char(b)));
  for (char a = ' '; a <= '~'; ++a)
    for (char b : std::string("\"{}[],: 0123456789abcnrtuelsfx-.\\\n"))
      tokens.push_back(std::string{a, b});
  for (const char* s : {"true", "false", "null", "\": ", "\", \"", "{\"", "\"}", "  ", "    ", "\n  ", "123", "1.5",
                        "e+", "\\u00", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98", "\x80", "abc\"", "\"a\"", "]}", "},{"})
    tokens.push_back(s);
  for (auto& s : extra) tokens.push_back(std::move(s));
  tokens.push_back("");  // the end token: no bytes
  return std::make_shared<TokenVocabulary>(std::move(tokens));
}

inline int32_t end_token(const TokenVocabulary& v) { return v.size() - 1; }

inline std::vector<uint32_t> mask_of(GrammarMatcher& m, int vocab) {
  std::vector<uint32_t> mask(size_t(mask_words(vocab)));
  m.fill_mask(mask);
  return mask;
}

inline bool allowed(const std::vector<uint32_t>& mask, int32_t id) { return (mask[size_t(id >> 5)] >> (id & 31)) & 1u; }

// The mask by brute force: each token accepted and rolled back.
inline std::vector<uint32_t> brute_force_mask(GrammarMatcher& m, int vocab) {
  std::vector<uint32_t> mask(size_t(mask_words(vocab)), 0);
  for (int32_t id = 0; id < vocab; ++id)
    if (m.accept_token(id)) {
      mask[size_t(id >> 5)] |= 1u << (id & 31);
      m.rollback(1);
    }
  return mask;
}

// Samples allowed tokens at random until the matcher terminates or `max_tokens` pass; returns the text.
inline std::string random_walk(GrammarMatcher& m, const TokenVocabulary& v, std::mt19937& rng, int max_tokens,
                               bool check_masks, int* mismatches = nullptr) {
  std::string out;
  for (int t = 0; t < max_tokens && !m.terminated(); ++t) {
    std::vector<uint32_t> mask = mask_of(m, v.size());
    if (check_masks && mismatches && mask != brute_force_mask(m, v.size())) ++*mismatches;
    std::vector<int32_t> ids;
    for (int32_t id = 0; id < v.size(); ++id)
      if (allowed(mask, id)) ids.push_back(id);
    if (ids.empty()) break;
    // Prefer ending once possible half of the time, so walks finish.
    int32_t pick = ids[std::uniform_int_distribution<size_t>(0, ids.size() - 1)(rng)];
    if (m.can_end() && rng() % 2 == 0) pick = end_token(v);
    if (!m.accept_token(pick)) break;
    out += v.bytes(pick);
  }
  return out;
}

}  // namespace dcu::structured::testing
