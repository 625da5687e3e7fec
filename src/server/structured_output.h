#pragma once
// The server's structured-output service: the model's vocabulary as a token trie (built on first
// use), the compile cache, and one constraint per engine sequence. Compiling runs on the request's
// thread; a GrammarError becomes a 400 naming the request field.

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sampling/token_constraint.h"
#include "server/model_text.h"
#include "structured/constraint_compiler.h"

namespace dcu::server {

class StructuredOutputs {
 public:
  // `vocab`: the logits row length (the engine's vocabulary, at least the tokenizer's).
  std::shared_ptr<const structured::TokenGrammar> compile(const ModelText& text, int vocab,
                                                          const structured::ConstraintSpec& spec,
                                                          const std::string& param);
  // `end_tokens`: eos and stop ids; `after_think`: free until the think block closes.
  static std::shared_ptr<TokenConstraint> constraint(std::shared_ptr<const structured::TokenGrammar> grammar,
                                                     std::vector<int32_t> end_tokens, bool after_think);

 private:
  std::once_flag built_;
  std::unique_ptr<structured::ConstraintCompiler> compiler_;
};

}  // namespace dcu::server
