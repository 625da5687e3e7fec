#pragma once
// Chat rendering with a model's Jinja chat template, as transformers' apply_chat_template does.

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace dcu::jinja {
class Template;
}

namespace dcu {

struct ChatRenderInput {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null when the request has no tools
  bool add_generation_prompt = true;
  nlohmann::ordered_json extra_kwargs = nlohmann::ordered_json::object();  // e.g. {"enable_thinking": false}
  std::string bos_token;
  std::string eos_token;
};

class ChatTemplate {
 public:
  // Parses the template once; a syntax error is a dcu::Error naming the line.
  explicit ChatTemplate(std::string source);
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // The context is {messages, tools, documents: null, add_generation_prompt, bos_token, eos_token}
  // with extra_kwargs merged over it, as apply_chat_template passes them to jinja2.
  std::string render(const ChatRenderInput& input) const;

  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::unique_ptr<jinja::Template> template_;
};

}  // namespace dcu
