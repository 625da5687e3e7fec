#pragma once
// Grammar IR -> CompiledGrammar: Thompson NFAs per rule (non-recursive rules inlined), subset
// construction to DFAs over byte classes, then rules and states that can never finish removed.
// Throws GrammarError when a limit is passed or the grammar matches nothing.

#include <chrono>
#include <cstddef>
#include <memory>

#include "structured/compiled_grammar.h"
#include "structured/grammar.h"

namespace dcu::structured {

struct CompileLimits {
  size_t max_nfa_states = 4'000'000;
  size_t max_dfa_states = 400'000;
  std::chrono::milliseconds time_limit{5000};
};

std::shared_ptr<const CompiledGrammar> compile_grammar(const Grammar& grammar, const CompileLimits& limits = {});

}  // namespace dcu::structured
