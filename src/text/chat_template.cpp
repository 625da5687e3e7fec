#include "text/chat_template.h"

#include "core/error.h"
#include "text/jinja/template.h"

namespace dcu {

ChatTemplate::ChatTemplate(std::string source)
    : source_(std::move(source)), template_(std::make_unique<jinja::Template>(source_)) {}
ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const ChatRenderInput& input) const {
  if (!input.messages.is_array()) fail("chat messages must be a JSON array");
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = input.messages;
  context["tools"] = input.tools;
  context["documents"] = nullptr;
  context["add_generation_prompt"] = input.add_generation_prompt;
  context["bos_token"] = input.bos_token;
  context["eos_token"] = input.eos_token;
  if (!input.extra_kwargs.is_null()) {
    if (!input.extra_kwargs.is_object()) fail("chat template kwargs must be a JSON object");
    for (const auto& [key, value] : input.extra_kwargs.items()) context[key] = value;
  }
  return template_->render(context);
}

}  // namespace dcu
