// Compiles every schema of a corpus file against a real tokenizer's vocabulary and prints random
// token walks through each (allowed tokens drawn uniformly, the end token half the time it is
// allowed), as JSON lines {"name", "seed", "output", "terminated"} or {"name", "error"}; the outputs
// are then judged by an outside validator (validate_corpus.py). Not a test by itself.
//
// usage: structured_corpus_sampler SCHEMAS.jsonl TOKENIZER_DIR SEEDS MAX_TOKENS

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

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: structured_corpus_sampler SCHEMAS.jsonl TOKENIZER_DIR SEEDS MAX_TOKENS\n";
    return 2;
  }
  const auto tokenizer = dcu::text::Tokenizer::load(argv[2]);
  std::vector<std::string> bytes(size_t(tokenizer.vocab_size()) + 1);
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id)
    if (tokenizer.has_id(id) && !tokenizer.is_special(id)) bytes[size_t(id)] = tokenizer.token_bytes(id);
  const int32_t end = tokenizer.vocab_size();  // a stand-in eos: no bytes
  ConstraintCompiler compiler(std::make_shared<const TokenVocabulary>(std::move(bytes)));
  const int seeds = std::stoi(argv[3]), max_tokens = std::stoi(argv[4]);
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
    const int vocab = compiler.vocabulary().size();
    std::vector<uint32_t> mask(size_t((vocab + 31) / 32));
    for (int seed = 0; seed < seeds; ++seed) {
      std::mt19937 rng{static_cast<uint32_t>(seed)};
      GrammarMatcher m(grammar, {end});
      std::string out;
      for (int t = 0; t < max_tokens && !m.terminated(); ++t) {
        m.fill_mask(mask);
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < vocab; ++id)
          if ((mask[size_t(id >> 5)] >> (id & 31)) & 1u) allowed.push_back(id);
        if (allowed.empty()) break;
        int32_t pick = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
        if (m.can_end() && rng() % 2 == 0) pick = end;
        if (!m.accept_token(pick)) {
          std::cerr << "a token from the mask was refused\n";
          return 1;
        }
        if (pick != end) out += compiler.vocabulary().bytes(pick);
      }
      std::cout << nlohmann::ordered_json{{"name", entry["name"]}, {"seed", seed}, {"output", out},
                                          {"terminated", m.terminated()}}
                       .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                << "\n";
    }
  }
  return 0;
}
