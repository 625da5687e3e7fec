#pragma once
// `hermes` tool calls (Qwen2.5 / Qwen3): <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>.
//
// As vLLM's hermes_tool_parser.py: the header is sent once `"name": "..."` is complete; the
// arguments are streamed as the model's own text of the "arguments" value (found by brace matching,
// strings respected), and the final arguments are that same text, so the concatenated deltas always
// equal it. (vLLM's non-streaming path re-serialises with json.dumps instead; for the
// `tojson`-formatted output Qwen models write, the text is the same.) A call is valid when its text
// between the tags is a JSON object with a string "name" and an "arguments" member; an unterminated
// call at the end of the output is accepted when its text is such an object (vLLM's
// `<tool_call>(.*)` fallback; unlike it, we also accept a cut-off "</tool_" after the JSON, as
// vLLM's streaming path does). A non-object "arguments" value is sent, re-serialised, when the call
// closes.

#include <string>

#include "text/parsers/tool_call_parser.h"

namespace dcu::text {

class HermesToolParser : public ToolCallParser {
 public:
  explicit HermesToolParser(ToolCallIdGenerator ids) : ToolCallParser(std::move(ids)) {}

 protected:
  CallStatus parse_call(std::string_view call_text, bool at_end, ChatDelta& out, size_t& consumed) override;
  void reset_call() override;

 private:
  bool header_sent_ = false;
  std::string name_;
  std::string streamed_args_;
};

}  // namespace dcu::text
