#pragma once
// How a set of characters is written into the output: raw (regex and grammar outputs) or as the
// content of a JSON string, where '"', '\' and control characters must be escaped.

#include <string>
#include <vector>

#include "structured/grammar.h"

namespace dcu::structured {

enum class CharEncoding { Raw, JsonString };

// A node matching one character of `ranges` written in `encoding` (JSON: the canonical escape for
// the characters that need one, the character itself for the others).
int encoded_chars(Grammar& g, const std::vector<CodeRange>& ranges, CharEncoding encoding);
// The same for a literal string.
int encoded_literal(Grammar& g, const std::string& utf8, CharEncoding encoding);
// Any one character inside a JSON string: a raw character or any escape sequence JSON allows.
int json_string_char(Grammar& g);

}  // namespace dcu::structured
