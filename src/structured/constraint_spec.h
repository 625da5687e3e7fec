#pragma once
// What one request asks its output to match, from any of the API's ways to say it (response_format,
// structured_outputs / guided_*, a forced tool choice), and the grammar it stands for.

#include <string>
#include <vector>

#include "structured/grammar.h"
#include "structured/json_schema_grammar.h"
#include "structured/tool_call_grammar.h"

namespace dcu::structured {

struct ConstraintSpec {
  enum class Kind { JsonSchema, Regex, Choice, Grammar, ToolCalls } kind = Kind::JsonSchema;
  ojson schema;                      // JsonSchema (json_object: {"type": "object"} with strict off)
  std::string text;                  // Regex, Grammar
  std::vector<std::string> choices;  // Choice
  ojson tools;                       // ToolCalls: the callable tools
  ToolCallOptions tool_options;      // ToolCalls; its .json applies to every JSON part
  JsonGrammarOptions json;

  // Equal keys mean equal grammars (the compile cache's key).
  std::string cache_key() const;
};

Grammar build_grammar(const ConstraintSpec& spec);

}  // namespace dcu::structured
