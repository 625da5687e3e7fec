#pragma once
// Turns the content a Qwen model generates into OpenAI `tool_calls`, incrementally, with the
// semantics of vLLM's `--tool-call-parser hermes` and `qwen3_coder`.
//
// Shared rules (vLLM's extract_tool_calls):
// - Text before the first <tool_call> is content. Text after it, outside tool calls, is dropped:
//   vLLM's non-streaming parsers return only the text before the first call, and the Qwen3.5
//   template tells the model to write nothing after its calls. (vLLM's qwen3_coder streaming path
//   forwards such text; we do not, so streaming and one-shot results agree.)
// - A <tool_call> tag split across chunks never leaks into content: a suffix that could start the
//   tag is held back until the next chunk decides.
// - Malformed tool-call markup never throws. It sets failed(); the one-shot message then returns
//   the whole text as content and no calls, as vLLM does when parsing raises (hermes: bad JSON).
//   vLLM's qwen3_coder instead drops a call whose function name is missing or invalid and returns
//   only the text before it; we return the whole text, so nothing the model wrote is lost. When
//   streaming, if no call has been announced yet, the held-back markup is released as content and
//   the rest of the output is plain content; after an announced call, the rest is dropped.
// - Tool call ids: "call_" + 24 random alphanumerics from the id generator.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/parsers/chat_delta.h"

namespace dcu::text {

using ToolCallIdGenerator = std::function<std::string()>;

// "call_" + 24 alphanumerics from a generator seeded with `seed` (tests) ...
ToolCallIdGenerator seeded_tool_call_ids(uint64_t seed);
// ... or from std::random_device.
ToolCallIdGenerator random_tool_call_ids();

class ToolCallParser {
 public:
  // name: "hermes" | "qwen3_coder" (alias "qwen3_xml", as in vLLM). tools: the request's OpenAI
  // `tools` array (qwen3_coder reads parameter types from it; may be null). Empty `ids`: random ids.
  static std::unique_ptr<ToolCallParser> create(std::string_view name, const nlohmann::ordered_json& tools,
                                                ToolCallIdGenerator ids = {});
  static const std::vector<std::string>& known_names();

  virtual ~ToolCallParser() = default;

  // Only `content` and `tool_calls` of the result are ever set.
  ChatDelta feed(std::string_view content_text);
  ChatDelta finish();

  bool failed() const { return failed_; }

 protected:
  explicit ToolCallParser(ToolCallIdGenerator ids);

  enum class CallStatus { NeedMore, Closed, Malformed };

  // Parses the text after "<tool_call>" of the current call, which grows between calls; `at_end`:
  // no more text will come. On Closed, `consumed` is the length of the call including
  // "</tool_call>" (everything, when it ends unterminated at_end); later text goes back to the base.
  virtual CallStatus parse_call(std::string_view call_text, bool at_end, ChatDelta& out, size_t& consumed) = 0;
  // Forget the per-call state before the next call.
  virtual void reset_call() = 0;

  // Appends the header of the next tool call (index = number of calls so far).
  void open_call(std::string name, ChatDelta& out);
  // Appends an arguments fragment to the call opened last.
  void add_arguments(std::string_view fragment, ChatDelta& out);

 private:
  enum class State { Content, InCall, BetweenCalls, PlainContent, Dropping };

  void process(ChatDelta& out, bool at_end);

  ToolCallIdGenerator ids_;
  State state_ = State::Content;
  std::string pending_;    // outside calls: text not yet decided
  std::string call_text_;  // inside a call: its text after "<tool_call>"
  int calls_opened_ = 0;
  bool failed_ = false;
};

}  // namespace dcu::text
