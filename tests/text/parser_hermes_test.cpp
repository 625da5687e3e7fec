// hermes tool-call parser. Expected values follow vLLM's Hermes2ProToolParser: content is the text
// before the first <tool_call>; each call is the JSON between the tags; any JSON error returns the
// whole text as content with no calls; an unterminated last call is parsed to the end of the text.

#include <gtest/gtest.h>

#include <regex>

#include "core/error.h"
#include "parser_test_util.h"

namespace dcu::text {
namespace {

using testing::make_factory;
using testing::one_shot;
using testing::stream_bytewise;

const auto kHermes = make_factory(false, "", "hermes");

TEST(HermesToolParser, ContentThenOneCall) {
  std::string text =
      "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  for (const auto& m : {one_shot(kHermes, text), stream_bytewise(kHermes, text).message}) {
    EXPECT_EQ(m.content, "Sure.\n");
    ASSERT_EQ(m.tool_calls.size(), 1u);
    EXPECT_EQ(m.tool_calls[0].name, "get_weather");
    EXPECT_EQ(m.tool_calls[0].arguments, "{\"city\": \"Paris\"}");
    EXPECT_TRUE(std::regex_match(m.tool_calls[0].id, std::regex("call_[A-Za-z0-9]{24}"))) << m.tool_calls[0].id;
  }
}

TEST(HermesToolParser, StreamingShapeIsOpenAIs) {
  std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, {\"b\": \"}\"}]}}\n</tool_call>\n"
                     "<tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n</tool_call>";
  auto s = stream_bytewise(kHermes, text);
  std::vector<std::string> args(2);
  std::vector<bool> opened(2, false);
  for (const auto& d : s.deltas) {
    EXPECT_EQ(d.content, "");
    for (const auto& tc : d.tool_calls) {
      ASSERT_TRUE(tc.index == 0 || tc.index == 1);
      if (tc.is_header()) {
        EXPECT_FALSE(opened[tc.index]);
        EXPECT_EQ(tc.arguments, "");  // OpenAI: the header carries empty arguments
        EXPECT_EQ(tc.to_json()["type"], "function");
        opened[tc.index] = true;
      } else {
        EXPECT_TRUE(opened[tc.index]);  // fragments only after the header
        EXPECT_FALSE(tc.to_json().contains("id"));
        args[tc.index] += tc.arguments;
      }
    }
  }
  EXPECT_EQ(args[0], "{\"a\": [1, {\"b\": \"}\"}]}");
  EXPECT_EQ(args[1], "{}");
  ASSERT_EQ(s.message.tool_calls.size(), 2u);
  EXPECT_NE(s.message.tool_calls[0].id, s.message.tool_calls[1].id);
  EXPECT_EQ(s.message.content, std::nullopt);  // nothing before the first call: null
  // Arguments really stream: more than one fragment for the first call.
  int fragments = 0;
  for (const auto& d : s.deltas)
    for (const auto& tc : d.tool_calls) fragments += !tc.is_header() && tc.index == 0;
  EXPECT_GT(fragments, 3);
}

TEST(HermesToolParser, TextAfterCallsIsDropped) {
  // vLLM returns model_output[:first <tool_call>] as content.
  std::string text = "A<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>\nB";
  EXPECT_EQ(one_shot(kHermes, text).content, "A");
  EXPECT_EQ(stream_bytewise(kHermes, text).message.content, "A");
}

TEST(HermesToolParser, MalformedJsonIsReturnedAsContent) {
  // vLLM: json.loads raises -> ExtractedToolCallInformation(content=model_output).
  for (std::string text : {"Hi <tool_call>\n{\"name\": \"f\", \"arguments\": {bad}}\n</tool_call>",
                           "<tool_call>oops</tool_call> tail", "x<tool_call>{\"arguments\": {}}</tool_call>",
                           "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1"}) {
    ParsedMessage m = one_shot(kHermes, text);
    EXPECT_EQ(m.content, text);
    EXPECT_TRUE(m.tool_calls.empty()) << text;
  }
  // When no call was announced yet, streaming releases the same text as content.
  std::string text = "<tool_call>oops</tool_call> tail";
  EXPECT_EQ(testing::all_content(stream_bytewise(kHermes, text).deltas), text);
}

TEST(HermesToolParser, UnterminatedCompleteJsonIsACall) {
  // vLLM's regex alternative `<tool_call>(.*)` parses an unclosed last call. We also drop a cut-off
  // "</tool_" after it (vLLM's non-streaming json.loads would fail on it; its streaming path strips it).
  for (std::string text : {"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n",
                           "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_"}) {
    for (const auto& m : {one_shot(kHermes, text), stream_bytewise(kHermes, text).message}) {
      ASSERT_EQ(m.tool_calls.size(), 1u) << text;
      EXPECT_EQ(m.tool_calls[0].arguments, "{\"a\": 1}");
    }
  }
}

TEST(HermesToolParser, SplitOpenTagNeverLeaks) {
  ChatOutputParser parser = kHermes();
  EXPECT_EQ(parser.feed("Sure.<tool_").content, "Sure.");
  ChatDelta d = parser.feed("call>{\"name\": \"f\", \"arguments\": {}}</tool_call>");
  EXPECT_EQ(d.content, "");
  ASSERT_FALSE(d.tool_calls.empty());
  EXPECT_EQ(d.tool_calls[0].name, "f");
  // A "<tool_" that turns out to be text is released.
  ChatOutputParser other = kHermes();
  EXPECT_EQ(other.feed("a <tool_").content, "a ");
  EXPECT_EQ(other.feed("box> b").content, "<tool_box> b");
}

TEST(ToolCallParser, UnknownNameListsKnownOnes) {
  try {
    ToolCallParser::create("mistral", nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hermes, qwen3_coder, qwen3_xml"), std::string::npos) << e.what();
  }
}

TEST(ToolCallParser, SeededIdsAreReproducibleAndRandomOnesDiffer) {
  auto a = seeded_tool_call_ids(1), b = seeded_tool_call_ids(1);
  EXPECT_EQ(a(), b());
  auto r = random_tool_call_ids();
  EXPECT_NE(r(), r());
}

}  // namespace
}  // namespace dcu::text
