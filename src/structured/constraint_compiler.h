#pragma once
// Compiles constraint specs against one vocabulary and keeps the results (with their mask caches)
// by spec text, least recently used out first. Thread-safe; requests compile on their own threads,
// never on the engine's. Throws GrammarError for bad specs and grammars past the limits.

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "structured/constraint_spec.h"
#include "structured/grammar_compiler.h"
#include "structured/token_grammar.h"

namespace dcu::structured {

class ConstraintCompiler {
 public:
  ConstraintCompiler(std::shared_ptr<const TokenVocabulary> vocabulary, CompileLimits limits = {}, size_t capacity = 128);

  std::shared_ptr<const TokenGrammar> compile(const ConstraintSpec& spec);
  const TokenVocabulary& vocabulary() const { return *vocabulary_; }

 private:
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  CompileLimits limits_;
  size_t capacity_;
  std::mutex mutex_;
  std::list<std::string> order_;  // most recently used first
  struct Entry {
    std::shared_ptr<const TokenGrammar> grammar;
    std::list<std::string>::iterator at;
  };
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace dcu::structured
