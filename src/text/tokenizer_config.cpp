#include "text/tokenizer_config.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace dcu::text {

namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) fail("cannot open {}", path.string());
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// A special token is written either as a string or as an AddedToken object {"content": ...}.
std::optional<std::string> token_text(const nlohmann::json& root, const char* key) {
  if (!root.contains(key) || root[key].is_null()) return std::nullopt;
  const auto& value = root[key];
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string())
    return value["content"].get<std::string>();
  fail("\"{}\" must be a string or an object with \"content\"", key);
}

}  // namespace

TokenizerConfig TokenizerConfig::from_json_text(const std::string& json_text, const std::string& origin) {
  TokenizerConfig config;
  try {
    const nlohmann::json root = nlohmann::json::parse(json_text);
    if (!root.is_object()) fail("the top level must be an object");
    if (root.contains("chat_template") && !root["chat_template"].is_null()) {
      const auto& templates = root["chat_template"];
      if (templates.is_string()) {
        config.chat_template = templates.get<std::string>();
      } else if (templates.is_array()) {
        for (const auto& entry : templates) {
          if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
              !entry.contains("template") || !entry["template"].is_string())
            fail("each entry of the chat_template list needs a string \"name\" and \"template\"");
          config.named_chat_templates[entry["name"]] = entry["template"];
        }
        if (const auto it = config.named_chat_templates.find("default"); it != config.named_chat_templates.end())
          config.chat_template = it->second;
      } else {
        fail("\"chat_template\" must be a string or a list of {{\"name\", \"template\"}}");
      }
    }
    config.bos_token = token_text(root, "bos_token");
    config.eos_token = token_text(root, "eos_token");
    config.pad_token = token_text(root, "pad_token");
    if (root.contains("add_bos_token") && root["add_bos_token"].is_boolean())
      config.add_bos_token = root["add_bos_token"].get<bool>();
    if (root.contains("added_tokens_decoder") && root["added_tokens_decoder"].is_object()) {
      for (const auto& [id_text, entry] : root["added_tokens_decoder"].items()) {
        size_t used = 0;
        int32_t id = -1;
        try {
          id = std::stoi(id_text, &used);
        } catch (const std::exception&) {
        }
        if (id < 0 || used != id_text.size()) fail("added_tokens_decoder key \"{}\" is not a token id", id_text);
        if (!entry.is_object() || !entry.contains("content") || !entry["content"].is_string())
          fail("added_tokens_decoder entry {} needs a string \"content\"", id_text);
        config.added_tokens_decoder[id] = {entry["content"].get<std::string>(), entry.value("special", false)};
      }
    }
  } catch (const nlohmann::json::exception& e) {
    fail("{}: malformed tokenizer config: {}", origin, e.what());
  } catch (const Error& e) {
    fail("{}: {}", origin, e.what());
  }
  return config;
}

TokenizerConfig TokenizerConfig::load(const std::string& file_or_dir) {
  std::filesystem::path path(file_or_dir);
  std::error_code error;
  const bool is_dir = std::filesystem::is_directory(path, error);
  const std::filesystem::path dir = is_dir ? path : path.parent_path();
  if (is_dir) path /= "tokenizer_config.json";
  TokenizerConfig config;
  if (!is_dir || std::filesystem::exists(path, error)) config = from_json_text(read_file(path), path.string());
  const std::filesystem::path jinja = dir / "chat_template.jinja";
  if (std::filesystem::exists(jinja, error)) config.chat_template = read_file(jinja);
  return config;
}

}  // namespace dcu::text
