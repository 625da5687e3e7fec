#pragma once
// Regular expressions (the ECMAScript / Python subset JSON Schema `pattern`s and vLLM's `regex` use)
// into grammar nodes. Literals, classes, escapes (\d \w \s \xHH \uHHHH ...), groups, alternation and
// greedy or lazy quantifiers are supported; lookaround, backreferences, word boundaries, inline
// flags and Unicode properties are a GrammarError naming the construct.

#include <string_view>

#include "structured/char_encoding.h"
#include "structured/grammar.h"

namespace dcu::structured {

enum class RegexMatch {
  Whole,   // the output is one match (vLLM's regex); ^ and $ are accepted and change nothing
  Search,  // JSON Schema `pattern`: the regex may match anywhere unless anchored with ^ / $
};

// A node matching the strings the regex describes, each character written in `encoding`.
int parse_regex(Grammar& g, std::string_view regex, CharEncoding encoding, RegexMatch match);

}  // namespace dcu::structured
