#pragma once
// The pieces of an OpenAI chat message that the output parsers produce: streaming deltas and the
// final (non-streaming) message they add up to.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dcu::text {

// One entry of `choices[].delta.tool_calls` in OpenAI's streaming shape. A header (non-empty `id`)
// opens call `index` with its name and empty arguments; every later entry appends `arguments`.
struct ToolCallDelta {
  int index = 0;
  std::string id;         // set only on the header
  std::string name;       // set only on the header
  std::string arguments;  // fragment of the arguments JSON string

  bool is_header() const { return !id.empty(); }
  nlohmann::ordered_json to_json() const;
};

// What one step of parsing adds to the message; empty strings mean "nothing for this field".
struct ChatDelta {
  std::string content;
  std::string reasoning_content;
  std::vector<ToolCallDelta> tool_calls;

  bool empty() const { return content.empty() && reasoning_content.empty() && tool_calls.empty(); }
  void append(ChatDelta&& later);
};

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // a JSON text, as OpenAI sends it

  nlohmann::ordered_json to_json() const;  // {id, type: "function", function: {name, arguments}}
  bool operator==(const ToolCall&) const = default;
};

// The complete assistant message of a non-streaming response. `content` and `reasoning_content` are
// null when empty, as vLLM returns them (`content or None`).
struct ParsedMessage {
  std::optional<std::string> content;
  std::optional<std::string> reasoning_content;
  std::vector<ToolCall> tool_calls;

  bool operator==(const ParsedMessage&) const = default;
};

// Adds streaming deltas up into the message a client would reconstruct from them.
class MessageAccumulator {
 public:
  void add(const ChatDelta& delta);
  ParsedMessage message() const;

 private:
  std::string content_;
  std::string reasoning_;
  std::vector<ToolCall> calls_;
};

}  // namespace dcu::text
