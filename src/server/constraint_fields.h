#pragma once
// The request fields that ask for structured output, into one ConstraintSpec: response_format
// (json_object, json_schema), vLLM's structured_outputs {json, regex, choice, grammar, json_object,
// whitespace_pattern} and the older guided_json / guided_regex / guided_choice / guided_grammar /
// guided_whitespace_pattern. More than one way at once, or a malformed one, is a 400.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "structured/constraint_spec.h"

namespace dcu::server {

struct RequestConstraint {
  structured::ConstraintSpec spec;
  std::string param;  // the field it came from, for error messages
};

std::optional<RequestConstraint> parse_constraint_fields(const nlohmann::ordered_json& body);

}  // namespace dcu::server
