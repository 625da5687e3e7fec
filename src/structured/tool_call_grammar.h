#pragma once
// Forced tool calls in the model's own syntax, so the configured tool parser reads them back:
// - Qwen3-Coder XML: <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...
//   </function>\n</tool_call>, string values raw text (never "</parameter>"), other values JSON valid
//   for the parameter's schema, required parameters always, in schema order;
// - Hermes / Qwen3 JSON: <tool_call>\n{"name": NAME, "arguments": ARGS}\n</tool_call>.

#include "structured/grammar.h"
#include "structured/json_schema_grammar.h"

namespace dcu::structured {

enum class ToolCallFormat { Qwen3CoderXml, HermesJson };

struct ToolCallOptions {
  ToolCallFormat format = ToolCallFormat::Qwen3CoderXml;
  bool parallel = true;  // one call or more; false: exactly one
  JsonGrammarOptions json;
};

// `tools`: OpenAI tools ({"type": "function", "function": {"name", "parameters"}}), the ones the
// model may call (one for a named tool_choice).
Grammar tool_call_grammar(const ojson& tools, const ToolCallOptions& options);

}  // namespace dcu::structured
