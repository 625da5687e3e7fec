#pragma once
// `qwen3_coder` tool calls (Qwen3.5 / Qwen3-Coder), the XML the Qwen3.5 chat template renders:
//   <tool_call>\n<function=NAME>\n<parameter=ARG>\nVALUE\n</parameter>\n...</function>\n</tool_call>
//
// As vLLM's qwen3coder_tool_parser.py:
// - The header is sent when "<function=NAME>" is complete; NAME must be non-empty and free of
//   whitespace, quotes and {}<> (vLLM's _is_valid_function_name), else the call is malformed.
// - Arguments stream as "{", then `"ARG": VALUE` per completed parameter (", " between), then "}" at
//   </function>: json.dumps formatting, so the concatenation is the final arguments string.
// - VALUE loses one leading and one trailing "\n" (nothing else), then is converted by the schema
//   type of ARG in the request's tools (see param_conversion.h).
// - A "</parameter>" ends the value only when what follows (after whitespace) is "<parameter=",
//   "</function>", "</tool_call>" or the end of the output, so values may contain the literal tag.
// - Output that ends inside a call (max_tokens) still yields the call: the open value runs to the
//   end (or to a final "</function>"), and the arguments object is closed.
// Not handled (vLLM has fallbacks for them): a "<function=" without "<tool_call>" before it, text
// other than whitespace between "<tool_call>" and "<function=", a missing "</parameter>" (the value
// then runs on to the function's end).

#include <string>

#include "text/parsers/tool_call_parser.h"

namespace dcu::text {

class Qwen3CoderToolParser : public ToolCallParser {
 public:
  Qwen3CoderToolParser(nlohmann::ordered_json tools, ToolCallIdGenerator ids)
      : ToolCallParser(std::move(ids)), tools_(std::move(tools)) {}

 protected:
  CallStatus parse_call(std::string_view call_text, bool at_end, ChatDelta& out, size_t& consumed) override;
  void reset_call() override;

 private:
  enum class Phase { ExpectFunction, Body, Value, AfterFunction };

  void emit_parameter(std::string_view raw_value, ChatDelta& out);

  nlohmann::ordered_json tools_;
  nlohmann::ordered_json properties_;  // of the current function
  Phase phase_ = Phase::ExpectFunction;
  size_t pos_ = 0;          // next unparsed byte of the call text
  std::string param_name_;  // of the open value
  size_t value_start_ = 0;  // first byte of the open value
  size_t value_scan_ = 0;   // where the search for its "</parameter>" resumes
  int params_sent_ = 0;
};

}  // namespace dcu::text
