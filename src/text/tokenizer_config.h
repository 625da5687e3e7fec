#pragma once
// What dcuserve needs from a model's tokenizer_config.json: the chat template and the named special
// tokens. A `chat_template.jinja` beside it (the newer Hugging Face layout) replaces its chat_template.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace dcu::text {

struct TokenizerConfig {
  struct AddedTokenEntry {
    std::string content;
    bool special = false;
  };

  std::optional<std::string> chat_template;                // the default template
  std::map<std::string, std::string> named_chat_templates;  // the list form, by name (includes "default")
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::optional<std::string> pad_token;
  bool add_bos_token = false;
  std::map<int32_t, AddedTokenEntry> added_tokens_decoder;

  // `file_or_dir`: a tokenizer_config.json or a model folder. A folder without tokenizer_config.json
  // gives an empty config (plus chat_template.jinja if present). Throws dcu::Error on malformed files.
  static TokenizerConfig load(const std::string& file_or_dir);
  static TokenizerConfig from_json_text(const std::string& json_text, const std::string& origin);
};

}  // namespace dcu::text
