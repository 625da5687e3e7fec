#include "structured/constraint_compiler.h"

namespace dcu::structured {

ConstraintCompiler::ConstraintCompiler(std::shared_ptr<const TokenVocabulary> vocabulary, CompileLimits limits,
                                       size_t capacity)
    : vocabulary_(std::move(vocabulary)), limits_(limits), capacity_(capacity) {}

std::shared_ptr<const TokenGrammar> ConstraintCompiler::compile(const ConstraintSpec& spec) {
  const std::string key = spec.cache_key();
  {
    std::lock_guard lock(mutex_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      order_.splice(order_.begin(), order_, it->second.at);
      return it->second.grammar;
    }
  }
  auto grammar = std::make_shared<const TokenGrammar>(compile_grammar(build_grammar(spec), limits_), vocabulary_);
  std::lock_guard lock(mutex_);
  if (auto it = entries_.find(key); it != entries_.end()) return it->second.grammar;
  order_.push_front(key);
  entries_.emplace(key, Entry{grammar, order_.begin()});
  while (entries_.size() > capacity_) {
    entries_.erase(order_.back());
    order_.pop_back();
  }
  return grammar;
}

}  // namespace dcu::structured
