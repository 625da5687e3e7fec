#pragma once
// A compiled grammar bound to a vocabulary, shared by every matcher of that grammar (all requests
// and choices using it). It caches, per pure automaton state, the walk of the whole token trie from
// that state: the tokens that stay inside the state's byte automaton, and the trie nodes where a
// token leaves it (to be finished by the Earley parser). Thread-safe.

#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "structured/compiled_grammar.h"
#include "structured/token_set.h"
#include "structured/token_vocabulary.h"

namespace dcu::structured {

struct PureWalk {
  TokenSet accepted;                                // tokens whose bytes all stay in the automaton
  std::vector<std::pair<int32_t, int32_t>> exits;   // (trie node, state reached there: not pure)
};

class TokenGrammar {
 public:
  TokenGrammar(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const TokenVocabulary> vocabulary);

  const CompiledGrammar& grammar() const { return *grammar_; }
  const TokenVocabulary& vocabulary() const { return *vocabulary_; }

  // The walk from pure state `state`, computed on first use.
  std::shared_ptr<const PureWalk> pure_walk(int32_t state) const;

 private:
  std::shared_ptr<PureWalk> compute(int32_t state) const;

  std::shared_ptr<const CompiledGrammar> grammar_;
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<int32_t, std::shared_ptr<const PureWalk>> walks_;
  mutable size_t cached_bytes_ = 0;
};

// Walks the trie below `node` from pure `state` through byte transitions only, calling
// on_token(node) for each node reached (its tokens match) and on_exit(node, state) where a
// transition reaches a state that is not pure (its subtree is not walked). `stack` holds the
// transitions of the state at each depth below `node` (the walk's hot path: two loads a node).
template <typename OnToken, typename OnExit>
void walk_pure(const CompiledGrammar& g, const TokenVocabulary& vocab, size_t node, int32_t state,
               std::vector<CompiledGrammar::Transitions>& stack, OnToken&& on_token, OnExit&& on_exit) {
  const int base = vocab.depth(node);
  if (stack.size() < size_t(vocab.max_depth() + 1)) stack.resize(size_t(vocab.max_depth() + 1));
  stack[0] = g.transitions(state);
  const size_t end = vocab.subtree_end(node);
  for (size_t j = node + 1; j < end;) {
    const int d = vocab.depth(j) - base;
    const int32_t next = stack[size_t(d - 1)](vocab.byte(j));
    if (next < 0) {
      j = vocab.subtree_end(j);
      continue;
    }
    on_token(j);
    if (g.state(next).pure) {
      if (vocab.subtree_end(j) > j + 1) stack[size_t(d)] = g.transitions(next);  // it has children
      ++j;
      continue;
    }
    on_exit(j, next);
    j = vocab.subtree_end(j);
  }
}

}  // namespace dcu::structured
