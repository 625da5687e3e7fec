#include "text/parsers/chat_output_parser.h"

namespace dcu::text {

ChatOutputParser::ChatOutputParser(std::unique_ptr<ReasoningParser> reasoning, std::unique_ptr<ToolCallParser> tools)
    : reasoning_(std::move(reasoning)), tools_(std::move(tools)) {}

ChatDelta ChatOutputParser::route(ChatDelta&& reasoned, bool at_end) {
  ChatDelta out;
  out.reasoning_content = std::move(reasoned.reasoning_content);
  if (tools_) {
    tool_input_ += reasoned.content;
    out.append(tools_->feed(reasoned.content));
    if (at_end) out.append(tools_->finish());
  } else {
    out.content = std::move(reasoned.content);
  }
  accumulated_.add(out);
  return out;
}

ChatDelta ChatOutputParser::feed(std::string_view text) {
  ChatDelta reasoned;
  if (reasoning_) reasoned = reasoning_->feed(text);
  else reasoned.content = std::string(text);
  return route(std::move(reasoned), false);
}

ChatDelta ChatOutputParser::finish() {
  ChatDelta reasoned;
  if (reasoning_) reasoned = reasoning_->finish();
  return route(std::move(reasoned), true);
}

ParsedMessage ChatOutputParser::message() const {
  ParsedMessage m = accumulated_.message();
  if (tools_ && tools_->failed()) {
    m.tool_calls.clear();
    m.content = tool_input_.empty() ? std::nullopt : std::optional<std::string>(tool_input_);
  }
  return m;
}

ParsedMessage parse_complete(std::string_view text, std::unique_ptr<ReasoningParser> reasoning,
                             std::unique_ptr<ToolCallParser> tools) {
  ChatOutputParser parser(std::move(reasoning), std::move(tools));
  parser.feed(text);
  parser.finish();
  return parser.message();
}

}  // namespace dcu::text
