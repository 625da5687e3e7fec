#pragma once
// The output side of a chat completion: generated text in, OpenAI message fields out. Chains the
// reasoning parser and the tool-call parser as vLLM does (the tool parser sees only `content`).
// Streaming: feed() each piece of detokenized text, finish() at the end, forward the non-empty
// deltas. Non-streaming: parse_complete(), which runs the same streaming code on the whole text, so
// both paths give the same message (except after malformed tool-call markup, see
// tool_call_parser.h).

#include <memory>
#include <string>
#include <string_view>

#include "text/parsers/chat_delta.h"
#include "text/parsers/reasoning_parser.h"
#include "text/parsers/tool_call_parser.h"

namespace dcu::text {

class ChatOutputParser {
 public:
  // Either parser may be null: without a reasoning parser all text is content; without a tool
  // parser no tool calls are extracted.
  ChatOutputParser(std::unique_ptr<ReasoningParser> reasoning, std::unique_ptr<ToolCallParser> tools);

  ChatDelta feed(std::string_view text);
  ChatDelta finish();

  // The message the deltas so far add up to; after finish(), the final non-streaming message. When
  // the tool-call markup was malformed it is all the content text, with no tool calls (vLLM).
  ParsedMessage message() const;

 private:
  ChatDelta route(ChatDelta&& reasoned, bool at_end);

  std::unique_ptr<ReasoningParser> reasoning_;
  std::unique_ptr<ToolCallParser> tools_;
  std::string tool_input_;  // all content text given to the tool parser
  MessageAccumulator accumulated_;
};

ParsedMessage parse_complete(std::string_view text, std::unique_ptr<ReasoningParser> reasoning,
                             std::unique_ptr<ToolCallParser> tools);

}  // namespace dcu::text
