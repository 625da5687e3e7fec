// The parsers `dcuserve serve` picks when the flags leave them out: the model family's, with "none"
// restoring vLLM's raw behaviour and explicit flags keeping vLLM's meaning.
#include "server/parser_defaults.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace dcu::server {
namespace {

TEST(ParserDefaults, Qwen35WithoutFlagsGetsItsOwnParsersAndAutoToolChoice) {
  for (const char* type : {"qwen3_5_text", "qwen3_5"}) {
    const auto c = choose_parsers(type, {});
    EXPECT_EQ(c.reasoning_parser, "qwen3");
    EXPECT_EQ(c.tool_call_parser, "qwen3_coder");
    EXPECT_TRUE(c.enable_auto_tool_choice);
    ASSERT_EQ(c.notes.size(), 2u);  // both defaults are logged
    EXPECT_NE(c.notes[0].find("from the model"), std::string::npos);
  }
}

TEST(ParserDefaults, NoneKeepsVllmsRawBehaviour) {
  ParserFlags f;
  f.reasoning_parser = "none";
  f.tool_call_parser = "none";
  const auto c = choose_parsers("qwen3_5_text", f);
  EXPECT_EQ(c.reasoning_parser, "");
  EXPECT_EQ(c.tool_call_parser, "");
  EXPECT_FALSE(c.enable_auto_tool_choice);
  EXPECT_TRUE(c.notes.empty());
}

TEST(ParserDefaults, ExplicitFlagsMeanWhatTheyMeanInVllm) {
  ParserFlags f;
  f.tool_call_parser = "hermes";
  auto c = choose_parsers("qwen3_5_text", f);
  EXPECT_EQ(c.tool_call_parser, "hermes");
  EXPECT_FALSE(c.enable_auto_tool_choice);  // vLLM: "auto" needs --enable-auto-tool-choice
  EXPECT_EQ(c.reasoning_parser, "qwen3");   // the other one still comes from the model
  f.enable_auto_tool_choice = true;
  f.reasoning_parser = "deepseek_r1";
  c = choose_parsers("qwen3_5_text", f);
  EXPECT_TRUE(c.enable_auto_tool_choice);
  EXPECT_EQ(c.reasoning_parser, "deepseek_r1");
}

TEST(ParserDefaults, AutoToolChoiceWithoutAParserIsAnError) {
  ParserFlags f;
  f.tool_call_parser = "none";
  f.enable_auto_tool_choice = true;
  EXPECT_THROW(choose_parsers("qwen3_5_text", f), Error);
}

TEST(ParserDefaults, UnknownFamiliesGetNoParsers) {
  const auto c = choose_parsers("llama", {});
  EXPECT_EQ(c.reasoning_parser, "");
  EXPECT_EQ(c.tool_call_parser, "");
  EXPECT_FALSE(c.enable_auto_tool_choice);
}

}  // namespace
}  // namespace dcu::server
