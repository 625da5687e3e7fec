#pragma once
// Tokenizer with jinja2's whitespace rules as transformers configures them: trim_blocks and
// lstrip_blocks on, `-`/`+` markers, comments dropped, raw blocks kept verbatim, one trailing
// newline of the source removed.

#include <string>
#include <vector>

#include "text/jinja/value.h"

namespace dcu::jinja {

// Error: the lexer failed here (text is the message). jinja2 lexes lazily, so the parser reports
// it only when it reaches this point; an earlier parse error wins, as in jinja2.
enum class TokenType { Data, VariableBegin, VariableEnd, BlockBegin, BlockEnd, Name, String, Integer, Float, Operator, End, Error };

struct Token {
  TokenType type;
  std::string text;  // data text, name, operator, or the decoded string literal
  Value number;      // Integer / Float
  int line;
};

std::vector<Token> tokenize(const std::string& source);

}  // namespace dcu::jinja
