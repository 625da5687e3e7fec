#include "server/structured_output.h"

#include "server/errors.h"
#include "structured/grammar_constraint.h"
#include "structured/grammar_error.h"

namespace dcu::server {

std::shared_ptr<const structured::TokenGrammar> StructuredOutputs::compile(const ModelText& text, int vocab,
                                                                           const structured::ConstraintSpec& spec,
                                                                           const std::string& param) {
  std::call_once(built_, [&] {
    // Special tokens (eos, <|im_start|>, ...) never come from a grammar: their bytes are left empty.
    std::vector<std::string> bytes(size_t(std::max(vocab, text.vocab_size())));
    for (int id = 0; id < text.vocab_size(); ++id) {
      const int32_t ids[] = {id};
      std::string b = text.token_bytes(id);
      if (!b.empty() && text.decode(ids, /*skip_special_tokens=*/true).empty()) b.clear();
      bytes[size_t(id)] = std::move(b);
    }
    compiler_ = std::make_unique<structured::ConstraintCompiler>(
        std::make_shared<const structured::TokenVocabulary>(std::move(bytes)));
  });
  try {
    return compiler_->compile(spec);
  } catch (const structured::GrammarError& e) {
    reject(param, "{}", e.what());
  }
}

std::shared_ptr<TokenConstraint> StructuredOutputs::constraint(std::shared_ptr<const structured::TokenGrammar> grammar,
                                                               std::vector<int32_t> end_tokens, bool after_think) {
  return std::make_shared<structured::GrammarConstraint>(std::move(grammar), std::move(end_tokens), after_think);
}

}  // namespace dcu::server
