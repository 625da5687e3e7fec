#pragma once
// Parser from tokens to the syntax tree, following jinja2's grammar (parser.py) rule for rule.

#include <string>

#include "text/jinja/ast.h"

namespace dcu::jinja {

Body parse_template(const std::string& source);

}  // namespace dcu::jinja
