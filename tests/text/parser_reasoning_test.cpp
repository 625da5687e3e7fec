// Reasoning parser (vLLM --reasoning-parser qwen3 / deepseek_r1). Expected values follow vLLM's
// Qwen3ReasoningParser.extract_reasoning: strip a generated <think>, partition at </think>, return
// both sides unchanged, `content or None`; no </think> with thinking on: all reasoning.

#include <gtest/gtest.h>

#include "core/error.h"
#include "parser_test_util.h"

namespace dcu::text {
namespace {

using testing::make_factory;
using testing::one_shot;
using testing::stream_bytewise;

ParsedMessage msg(std::optional<std::string> reasoning, std::optional<std::string> content) {
  return {std::move(content), std::move(reasoning), {}};
}

// One-shot and byte-by-byte streaming must both give `expected`.
void expect_both(bool prompt_opened, std::string_view text, const ParsedMessage& expected,
                 std::string reasoning_parser = "qwen3") {
  auto factory = make_factory(prompt_opened, reasoning_parser, "");
  EXPECT_EQ(one_shot(factory, text), expected) << "one-shot: " << text;
  EXPECT_EQ(stream_bytewise(factory, text).message, expected) << "streaming: " << text;
}

TEST(ReasoningParser, Qwen35PromptOpenedThink) {
  // Qwen3.5 with thinking: the prompt ends in "<think>\n"; the output has only </think>. vLLM keeps
  // the "\n" before </think> in the reasoning and the "\n\n" after it in the content.
  expect_both(true, "Let me think.\n</think>\n\nThe answer is 4.", msg("Let me think.\n", "\n\nThe answer is 4."));
}

TEST(ReasoningParser, GeneratedThinkIsStripped) {
  // Older templates: the model writes <think> itself (vLLM strips it).
  expect_both(true, "<think>\nabc</think>def", msg("\nabc", "def"));
  expect_both(false, "<think>\nabc\n</think>\n\ndef", msg("\nabc\n", "\n\ndef"));
}

TEST(ReasoningParser, NoEndTagMeansAllReasoningWhenThinkingWasOpened) {
  // vLLM: "Thinking enabled but no </think>: output was truncated. Everything is reasoning."
  expect_both(true, "still thinking about", msg("still thinking about", std::nullopt));
  expect_both(false, "<think>still thinking", msg("still thinking", std::nullopt));
}

TEST(ReasoningParser, ThinkingDisabledIsPlainContent) {
  // enable_thinking=false: the prompt closed the think block; vLLM routes everything as content.
  expect_both(false, "Hello there.", msg(std::nullopt, "Hello there."));
  expect_both(false, "x</think>y", msg(std::nullopt, "x</think>y"));
}

TEST(ReasoningParser, EmptyFieldsAreNull) {
  // vLLM: `content or None` when generation stops right after </think>.
  expect_both(true, "r</think>", msg("r", std::nullopt));
  expect_both(true, "</think>c", msg(std::nullopt, "c"));
  expect_both(true, "", msg(std::nullopt, std::nullopt));
}

TEST(ReasoningParser, ToolCallEndsReasoningImplicitlyForQwen3Only) {
  // vLLM qwen3: "<tool_call>" followed by "<function=" ends reasoning without </think>; the tool
  // call goes to content. A bare mention of <tool_call> does not.
  std::string call = "<tool_call>\n<function=f>\n</function>\n</tool_call>";
  expect_both(true, "Need f.\n" + call, msg("Need f.\n", call));
  expect_both(true, "the <tool_call> tag is\nfine", msg("the <tool_call> tag is\nfine", std::nullopt));
  // deepseek_r1 (BaseThinkingReasoningParser) has no such rule.
  expect_both(true, "Need f.\n" + call, msg("Need f.\n" + call, std::nullopt), "deepseek_r1");
}

TEST(ReasoningParser, SplitTagsNeverLeak) {
  auto factory = make_factory(true, "qwen3", "");
  for (std::string text : {"abc</think>def", "<think>abc</think>def", "a<b</think>c<d"}) {
    auto s = stream_bytewise(factory, text);
    for (const auto& d : s.deltas) {
      EXPECT_EQ(d.reasoning_content.find("think"), std::string::npos) << text;
      EXPECT_EQ(d.content.find("think"), std::string::npos) << text;
      EXPECT_EQ(d.reasoning_content.find('/'), std::string::npos) << text;
    }
  }
  // An explicit split in the middle of the tag.
  ReasoningParser parser(true);
  ChatDelta a = parser.feed("reason</thi");
  EXPECT_EQ(a.reasoning_content, "reason");
  EXPECT_EQ(a.content, "");
  ChatDelta b = parser.feed("nk>answer");
  EXPECT_EQ(b.reasoning_content, "");
  EXPECT_EQ(b.content, "answer");
}

TEST(ReasoningParser, HeldBackTextIsReleasedAtFinish) {
  // A prefix of </think> that never completes is ordinary text.
  expect_both(true, "abc</thi", msg("abc</thi", std::nullopt));
  expect_both(false, "  <thi", msg(std::nullopt, "  <thi"));
  expect_both(true, "x<tool_call>\n", msg("x<tool_call>\n", std::nullopt));
}

TEST(ReasoningParser, UnknownNameListsKnownOnes) {
  try {
    ReasoningParser::create("qwen4", true);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("qwen3, deepseek_r1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dcu::text
