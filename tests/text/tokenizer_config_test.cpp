// TokenizerConfig against the real tokenizer_config.json files of the fixtures and hand-written variants.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/tokenizer_config.h"

namespace dcu::text {
namespace {

TEST(TokenizerConfig, ReadsFixtureModel) {
  const TokenizerConfig config = TokenizerConfig::load("tests/data/tiny-qwen35");
  std::ifstream file("tests/data/tiny-qwen35/tokenizer_config.json");
  const auto raw = nlohmann::json::parse(file);
  ASSERT_TRUE(config.chat_template.has_value());
  EXPECT_EQ(*config.chat_template, raw["chat_template"].get<std::string>());
  EXPECT_EQ(config.eos_token, "<|im_end|>");
  EXPECT_EQ(config.pad_token, "<|endoftext|>");
  EXPECT_FALSE(config.bos_token.has_value());
  EXPECT_FALSE(config.add_bos_token);
  EXPECT_EQ(config.added_tokens_decoder.size(), raw["added_tokens_decoder"].size());
  EXPECT_EQ(config.added_tokens_decoder.at(1000).content, "<|im_end|>");
  EXPECT_TRUE(config.added_tokens_decoder.at(1000).special);
}

TEST(TokenizerConfig, TemplateListObjectTokensAndJinjaFile) {
  const auto dir = std::filesystem::temp_directory_path() / "dcu_tokenizer_config_test";
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / "chat_template.jinja");
  {
    std::ofstream(dir / "tokenizer_config.json") << R"({
      "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}],
      "bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>", "pad_token": null,
      "add_bos_token": true})";
  }
  TokenizerConfig config = TokenizerConfig::load(dir.string());
  EXPECT_EQ(config.chat_template, "D");
  EXPECT_EQ(config.named_chat_templates.at("tool_use"), "T");
  EXPECT_EQ(config.bos_token, "<s>");
  EXPECT_EQ(config.eos_token, "</s>");
  EXPECT_FALSE(config.pad_token.has_value());
  EXPECT_TRUE(config.add_bos_token);

  std::ofstream(dir / "chat_template.jinja") << "J";
  config = TokenizerConfig::load((dir / "tokenizer_config.json").string());
  EXPECT_EQ(config.chat_template, "J");

  std::ofstream(dir / "tokenizer_config.json") << R"({"chat_template": 5})";
  EXPECT_THROW(TokenizerConfig::load(dir.string()), Error);
  std::ofstream(dir / "tokenizer_config.json") << "{broken";
  EXPECT_THROW(TokenizerConfig::load(dir.string()), Error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dcu::text
