#pragma once
// Binds the server's ModelText interface to src/text: the model folder's tokenizer.json,
// tokenizer_config.json chat template (or --chat-template), and the configured parsers.

#include <memory>
#include <string>

#include "server/model_text.h"

namespace dcu::server {

struct TextOptions {
  std::string chat_template;     // "" (the model's), a file path, or an inline Jinja template
  std::string reasoning_parser;  // "" | qwen3 | deepseek_r1
  std::string tool_call_parser;  // "" | hermes | qwen3_coder
};

// Throws dcu::Error with a clear message (missing tokenizer, bad template, unknown parser name).
std::unique_ptr<ModelText> load_model_text(const std::string& model_dir, const TextOptions& options);

}  // namespace dcu::server
