#include "server/text_adapter.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "text/chat_template.h"
#include "text/detokenizer.h"
#include "text/parsers/chat_output_parser.h"
#include "text/tokenizer.h"
#include "text/tokenizer_config.h"

namespace dcu::server {
namespace {

class DetokenizerStream : public TextStream {
 public:
  DetokenizerStream(const text::Tokenizer& t, bool skip, std::vector<std::string> stop) : d_(t, skip, std::move(stop)) {}
  std::string push(int32_t id) override { return d_.push(id); }
  bool stopped() const override { return d_.stopped(); }
  std::string stop_string() const override { return d_.stop_string().value_or(""); }
  std::string flush() override { return d_.flush(); }

 private:
  text::StreamingDetokenizer d_;
};

ChatDelta convert(text::ChatDelta&& d) {
  ChatDelta out;
  out.content = std::move(d.content);
  out.reasoning_content = std::move(d.reasoning_content);
  for (auto& c : d.tool_calls) out.tool_calls.push_back({c.index, std::move(c.id), std::move(c.name), std::move(c.arguments)});
  return out;
}

class TextChatParser : public ChatOutputParser {
 public:
  explicit TextChatParser(text::ChatOutputParser p) : p_(std::move(p)) {}
  ChatDelta feed(std::string_view t) override { return convert(p_.feed(t)); }
  ChatDelta finish() override { return convert(p_.finish()); }

 private:
  text::ChatOutputParser p_;
};

std::string read_template(const std::string& value) {
  std::ifstream in(value);
  if (in) {
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  if (value.find("{{") != std::string::npos || value.find("{%") != std::string::npos) return value;
  fail("--chat-template {}: no such file, and it does not look like an inline Jinja template", value);
}

class TextLayer : public ModelText {
 public:
  TextLayer(const std::string& model_dir, const TextOptions& o)
      : tokenizer_(text::Tokenizer::load(model_dir)), config_(text::TokenizerConfig::load(model_dir)), options_(o) {
    std::string source;
    if (!o.chat_template.empty()) source = read_template(o.chat_template);
    else if (config_.chat_template) source = *config_.chat_template;
    if (!source.empty()) {
      template_.emplace(source);
      knows_developer_role_ = source.find("developer") != std::string::npos;
    }
    // Fail at start-up, not on the first request, when a parser name is wrong.
    if (!o.reasoning_parser.empty()) text::ReasoningParser::create(o.reasoning_parser, false);
    if (!o.tool_call_parser.empty()) text::ToolCallParser::create(o.tool_call_parser, nullptr);
  }

  std::vector<int32_t> encode(std::string_view t) const override { return tokenizer_.encode(t); }
  std::string decode(std::span<const int32_t> ids, bool skip) const override { return tokenizer_.decode(ids, skip); }
  std::string token_bytes(int32_t id) const override {
    return tokenizer_.has_id(id) ? tokenizer_.token_bytes(id) : std::string();
  }
  int vocab_size() const override { return tokenizer_.vocab_size(); }

  std::string render_chat(const ChatPrompt& p) const override {
    if (!template_) fail("the model has no chat template; start the server with --chat-template");
    ChatRenderInput input;
    input.messages = p.messages;
    // Newer OpenAI clients send `developer` where older ones sent `system`; most templates (Qwen3.5's
    // among them) raise on a role they do not know.
    if (!knows_developer_role_)
      for (auto& m : input.messages)
        if (m["role"] == "developer") m["role"] = "system";
    if (!p.tools.is_null()) input.tools = p.tools;
    input.add_generation_prompt = p.add_generation_prompt;
    input.extra_kwargs = p.extra_kwargs;
    input.bos_token = config_.bos_token.value_or("");
    input.eos_token = config_.eos_token.value_or("");
    return template_->render(input);
  }

  std::unique_ptr<TextStream> open_stream(bool skip, const std::vector<std::string>& stop) const override {
    return std::make_unique<DetokenizerStream>(tokenizer_, skip, stop);
  }

  std::unique_ptr<ChatOutputParser> open_chat_parser(const ChatParserOptions& o) const override {
    std::unique_ptr<text::ReasoningParser> reasoning;
    if (o.parse_reasoning && !options_.reasoning_parser.empty())
      reasoning = text::ReasoningParser::create(options_.reasoning_parser, o.prompt_opened_think);
    std::unique_ptr<text::ToolCallParser> tools;
    if (o.parse_tool_calls && !options_.tool_call_parser.empty())
      tools = text::ToolCallParser::create(options_.tool_call_parser, o.tools);
    return std::make_unique<TextChatParser>(text::ChatOutputParser(std::move(reasoning), std::move(tools)));
  }

 private:
  text::Tokenizer tokenizer_;
  text::TokenizerConfig config_;
  TextOptions options_;
  std::optional<ChatTemplate> template_;
  bool knows_developer_role_ = false;  // the template names the role itself
};

}  // namespace

std::unique_ptr<ModelText> load_model_text(const std::string& model_dir, const TextOptions& options) {
  return std::make_unique<TextLayer>(model_dir, options);
}

}  // namespace dcu::server
