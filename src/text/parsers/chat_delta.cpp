#include "text/parsers/chat_delta.h"

#include "core/error.h"

namespace dcu::text {

nlohmann::ordered_json ToolCallDelta::to_json() const {
  nlohmann::ordered_json j;
  j["index"] = index;
  if (is_header()) {
    j["id"] = id;
    j["type"] = "function";
    j["function"] = {{"name", name}, {"arguments", arguments}};
  } else {
    j["function"] = {{"arguments", arguments}};
  }
  return j;
}

void ChatDelta::append(ChatDelta&& later) {
  content += later.content;
  reasoning_content += later.reasoning_content;
  for (auto& call : later.tool_calls) tool_calls.push_back(std::move(call));
}

nlohmann::ordered_json ToolCall::to_json() const {
  return {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}};
}

void MessageAccumulator::add(const ChatDelta& delta) {
  content_ += delta.content;
  reasoning_ += delta.reasoning_content;
  for (const auto& call : delta.tool_calls) {
    if (call.is_header()) {
      DCU_CHECK(call.index == static_cast<int>(calls_.size()));
      calls_.push_back({call.id, call.name, call.arguments});
    } else {
      DCU_CHECK(call.index >= 0 && call.index < static_cast<int>(calls_.size()));
      calls_[call.index].arguments += call.arguments;
    }
  }
}

ParsedMessage MessageAccumulator::message() const {
  ParsedMessage m;
  if (!content_.empty()) m.content = content_;
  if (!reasoning_.empty()) m.reasoning_content = reasoning_;
  m.tool_calls = calls_;
  return m;
}

}  // namespace dcu::text
