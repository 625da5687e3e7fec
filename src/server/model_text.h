#pragma once
// Everything the server needs from the model's text side (tokenizer, chat template, streaming
// detokenizer with stop strings, reasoning/tool-call parsers), behind one narrow interface so the
// handlers do not depend on how src/text implements them. text_adapter.cpp binds it to dcu::text;
// tests bind it to a byte-level fake.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace dcu::server {

// Incremental detokenization of one generated sequence, with stop strings.
class TextStream {
 public:
  virtual ~TextStream() = default;
  // Appends a token; returns the text that became final (never part of a possible stop string).
  virtual std::string push(int32_t id) = 0;
  // True once a stop string appeared; the text returned so far ends right before it.
  virtual bool stopped() const = 0;
  // The stop string that appeared, once stopped().
  virtual std::string stop_string() const = 0;
  // The text held back at the end of the sequence (no stop string followed).
  virtual std::string flush() = 0;
};

struct ToolCallDelta {
  int index = 0;            // position of the call in the message
  std::string id;           // set on the call's first delta
  std::string name;         // set on the call's first delta
  std::string arguments;    // a piece of the JSON arguments text
};

struct ChatDelta {
  std::string content;
  std::string reasoning_content;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return content.empty() && reasoning_content.empty() && tool_calls.empty(); }
};

// Splits generated chat text into content, reasoning and tool calls as it streams.
class ChatOutputParser {
 public:
  virtual ~ChatOutputParser() = default;
  virtual ChatDelta feed(std::string_view text) = 0;
  virtual ChatDelta finish() = 0;
};

struct ChatParserOptions {
  bool parse_reasoning = false;    // a --reasoning-parser is configured
  bool prompt_opened_think = false;  // the rendered prompt ends inside <think>
  bool parse_tool_calls = false;   // tools given, tool_choice auto, --tool-call-parser configured
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
};

struct ChatPrompt {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // OpenAI messages, content normalised to strings
  nlohmann::ordered_json tools;                               // null or array of {type, function}
  bool add_generation_prompt = true;
  nlohmann::ordered_json extra_kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs
};

class ModelText {
 public:
  virtual ~ModelText() = default;
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const = 0;
  virtual std::string token_bytes(int32_t id) const = 0;   // the raw bytes of one token
  virtual int vocab_size() const = 0;
  // Throws dcu::Error when the template fails (for example raise_exception on bad roles).
  virtual std::string render_chat(const ChatPrompt& prompt) const = 0;
  virtual std::unique_ptr<TextStream> open_stream(bool skip_special_tokens,
                                                  const std::vector<std::string>& stop) const = 0;
  virtual std::unique_ptr<ChatOutputParser> open_chat_parser(const ChatParserOptions& options) const = 0;
};

}  // namespace dcu::server
