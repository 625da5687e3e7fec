#pragma once
// vLLM's grammar dialect (xgrammar's EBNF, the GBNF of llama.cpp): `name ::= body` rules, "..." and
// '...' literals with escapes, [...] classes (ranges, ^), '.', ( ), |, * + ? {n} {n,} {n,m} and #
// comments; `root` is the whole output. Errors name the line and column.

#include <string_view>

#include "structured/grammar.h"

namespace dcu::structured {

Grammar parse_ebnf(std::string_view text);

}  // namespace dcu::structured
