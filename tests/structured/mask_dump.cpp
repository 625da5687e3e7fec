// Random token walks through every schema of a corpus file (allowed tokens drawn uniformly, the end
// token half the time it is allowed), printing the engine's mask before every step so that another
// engine can replay the same tokens and compare its masks (xgrammar_masks.test.mjs). One JSON line per
// walk: {"name", "seed", "tokens": [ids], "masks": [base64 of the mask's little-endian words]}, masks[i]
// being the mask before tokens[i] (one more mask than tokens unless the walk ended); {"name", "error"}
// for a schema that does not compile. Not a test by itself.
//
// usage: structured_mask_dump SCHEMAS.jsonl TOKENIZER_DIR END_TOKEN SEEDS MAX_TOKENS
//   END_TOKEN: the token text of the end token (e.g. <|im_end|>); special tokens never match otherwise.

#include <algorithm>
#include <fstream>
#include <iostream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "structured/constraint_compiler.h"
#include "structured/grammar_error.h"
#include "structured/grammar_matcher.h"
#include "text/tokenizer.h"

using namespace dcu::structured;

namespace {

std::string base64(const std::vector<uint32_t>& words) {
  static constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> bytes;
  for (uint32_t w : words)
    for (int i = 0; i < 4; ++i) bytes.push_back(uint8_t(w >> (8 * i)));
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);  // bytes in this group
    uint32_t group = 0;
    for (size_t k = 0; k < 3; ++k) group = (group << 8) | (k < n ? bytes[i + k] : 0);
    for (size_t k = 0; k < 4; ++k) out.push_back(k <= n ? kDigits[(group >> (18 - 6 * k)) & 63] : '=');
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: structured_mask_dump SCHEMAS.jsonl TOKENIZER_DIR END_TOKEN SEEDS MAX_TOKENS\n";
    return 2;
  }
  const auto tokenizer = dcu::text::Tokenizer::load(argv[2]);
  const auto end = tokenizer.token_to_id(argv[3]);
  if (!end) {
    std::cerr << "no token " << argv[3] << "\n";
    return 2;
  }
  std::vector<std::string> bytes(size_t(tokenizer.vocab_size()));
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id)
    if (tokenizer.has_id(id) && !tokenizer.is_special(id)) bytes[size_t(id)] = tokenizer.token_bytes(id);
  ConstraintCompiler compiler(std::make_shared<const TokenVocabulary>(std::move(bytes)));
  const int seeds = std::stoi(argv[4]), max_tokens = std::stoi(argv[5]);
  const int vocab = compiler.vocabulary().size();
  std::ifstream in(argv[1]);
  for (std::string line; std::getline(in, line);) {
    const auto entry = nlohmann::ordered_json::parse(line);
    ConstraintSpec spec;
    spec.schema = entry["schema"];
    std::shared_ptr<const TokenGrammar> grammar;
    try {
      grammar = compiler.compile(spec);
    } catch (const GrammarError& e) {
      std::cout << nlohmann::ordered_json{{"name", entry["name"]}, {"error", e.what()}}.dump() << "\n";
      continue;
    }
    std::vector<uint32_t> mask(size_t(mask_words(vocab)));
    for (int seed = 0; seed < seeds; ++seed) {
      std::mt19937 rng{static_cast<uint32_t>(seed)};
      GrammarMatcher m(grammar, {*end});
      auto walk = nlohmann::ordered_json{{"name", entry["name"]}, {"seed", seed},
                                         {"tokens", nlohmann::ordered_json::array()},
                                         {"masks", nlohmann::ordered_json::array()}};
      for (int t = 0; t <= max_tokens && !m.terminated(); ++t) {
        m.fill_mask(mask);
        walk["masks"].push_back(base64(mask));
        if (t == max_tokens) break;
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < vocab; ++id)
          if ((mask[size_t(id >> 5)] >> (id & 31)) & 1u) allowed.push_back(id);
        if (allowed.empty()) break;
        int32_t pick = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
        if (m.can_end() && rng() % 2 == 0) pick = *end;
        if (!m.accept_token(pick)) {
          std::cerr << "a token from the mask was refused\n";
          return 1;
        }
        walk["tokens"].push_back(pick);
      }
      std::cout << walk.dump() << "\n";
    }
  }
  return 0;
}
