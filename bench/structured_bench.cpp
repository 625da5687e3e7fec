// Structured-output cost with a real vocabulary: compile time per schema, and mask time per token along
// a token walk through each schema of the corpus. The walk draws allowed tokens at random (the end token
// half the time it is allowed, so most walks end: valid instances) on a freshly compiled grammar: those
// masks are "cold" (the per-state walks of the token trie are computed on first use). The same
// tokens are then replayed on the same grammar: "warm" masks, from the cache, as every later request
// with that schema gets them. Logits rows of 248,320 (Qwen3.5); ids past the tokenizer never match.
//
//   build/cpu/bench/structured_bench SCHEMAS.jsonl TOKENIZER_DIR [WALKS] [MAX_TOKENS]
//   (docs/PERFORMANCE.md has the command line with the corpus and the Qwen3 tokenizer)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "structured/constraint_compiler.h"
#include "structured/grammar_error.h"
#include "structured/grammar_matcher.h"
#include "text/tokenizer.h"

using namespace dcu::structured;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kRow = 248320;  // Qwen3.5's logits

double micros(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p / 100.0 * double(v.size())))];
}

void report(const char* what, const std::vector<double>& us) {
  std::printf("%-28s n %7zu  p50 %9.1f us  p99 %9.1f us  p99.9 %9.1f us  max %10.1f us\n", what, us.size(),
              percentile(us, 50), percentile(us, 99), percentile(us, 99.9), percentile(us, 100));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 5) {
    std::fprintf(stderr, "usage: structured_bench SCHEMAS.jsonl TOKENIZER_DIR [WALKS] [MAX_TOKENS]\n");
    return 2;
  }
  const int walks = argc > 3 ? std::stoi(argv[3]) : 1, max_tokens = argc > 4 ? std::stoi(argv[4]) : 200;
  const auto tokenizer = dcu::text::Tokenizer::load(argv[2]);
  const auto end = tokenizer.token_to_id("<|im_end|>");
  if (!end || tokenizer.vocab_size() > kRow) {
    std::fprintf(stderr, "need a Qwen tokenizer (<|im_end|>, at most %d ids)\n", kRow);
    return 2;
  }
  std::vector<std::string> bytes(kRow);
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id)
    if (tokenizer.has_id(id) && !tokenizer.is_special(id)) bytes[size_t(id)] = tokenizer.token_bytes(id);
  auto t0 = Clock::now();
  auto vocabulary = std::make_shared<const TokenVocabulary>(std::move(bytes));
  std::printf("vocabulary: %d tokens of the tokenizer, rows of %d, trie of %zu nodes built in %.0f ms\n",
              tokenizer.vocab_size(), kRow, vocabulary->node_count(), micros(t0, Clock::now()) / 1000);

  std::vector<double> compile_us, cold_us, warm_us;
  std::vector<uint32_t> mask(size_t(mask_words(kRow)));
  std::ifstream in(argv[1]);
  int schemas = 0, failed = 0, finished = 0;
  for (std::string line; std::getline(in, line);) {
    const auto entry = nlohmann::ordered_json::parse(line);
    ConstraintSpec spec;
    spec.schema = entry["schema"];
    ConstraintCompiler compiler(vocabulary);  // a fresh cache: every schema compiled cold
    std::shared_ptr<const TokenGrammar> grammar;
    t0 = Clock::now();
    try {
      grammar = compiler.compile(spec);
    } catch (const GrammarError&) {
      ++failed;
      continue;
    }
    compile_us.push_back(micros(t0, Clock::now()));
    ++schemas;
    for (int w = 0; w < walks; ++w) {
      std::mt19937 rng{uint32_t(w)};
      std::vector<int32_t> tokens;
      GrammarMatcher m(grammar, {*end});
      for (int t = 0; t < max_tokens && !m.terminated(); ++t) {
        t0 = Clock::now();
        m.fill_mask(mask);
        cold_us.push_back(micros(t0, Clock::now()));
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < kRow; ++id)
          if ((mask[size_t(id >> 5)] >> (id & 31)) & 1u) allowed.push_back(id);
        if (allowed.empty()) break;
        int32_t pick = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
        if (m.can_end() && rng() % 2 == 0) pick = *end;
        m.accept_token(pick);
        tokens.push_back(pick);
      }
      finished += m.terminated();
      GrammarMatcher replay(grammar, {*end});
      for (int32_t token : tokens) {
        t0 = Clock::now();
        replay.fill_mask(mask);
        warm_us.push_back(micros(t0, Clock::now()));
        replay.accept_token(token);
      }
    }
  }
  std::printf("%d schemas compiled (%d refused), %d walk(s) each, at most %d tokens, %d walks ended\n", schemas,
              failed, walks, max_tokens, finished);
  report("compile per schema", compile_us);
  report("mask, cold (first walk)", cold_us);
  report("mask, warm (replayed)", warm_us);
  return 0;
}
