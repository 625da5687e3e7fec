// qwen3_coder tool-call parser and its parameter conversion. Expected values follow vLLM's
// Qwen3CoderToolParser: values lose one leading and one trailing "\n" and are converted by the
// schema type (_convert_param_value); arguments are json.dumps(dict, ensure_ascii=False); streaming
// sends the header, "{", one `"k": v` fragment per finished parameter, "}".

#include <gtest/gtest.h>

#include "parser_test_util.h"
#include "text/parsers/param_conversion.h"

namespace dcu::text {
namespace {

using Json = nlohmann::ordered_json;
using testing::make_factory;
using testing::one_shot;
using testing::stream_bytewise;

Json tools() {
  return Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "days": {"type": "integer"}, "hot": {"type": "boolean"}}}}}
  ])");
}

std::string call(std::string name, std::vector<std::pair<std::string, std::string>> params) {
  std::string s = "<tool_call>\n<function=" + name + ">\n";
  for (auto& [k, v] : params) s += "<parameter=" + k + ">\n" + v + "\n</parameter>\n";
  return s + "</function>\n</tool_call>";
}

TEST(Qwen3CoderToolParser, OneCallWithTypes) {
  auto factory = make_factory(false, "", "qwen3_coder", tools());
  std::string text = "Checking.\n\n" + call("get_weather", {{"city", "Paris"}, {"days", "3"}, {"hot", "True"}});
  for (const auto& m : {one_shot(factory, text), stream_bytewise(factory, text).message}) {
    EXPECT_EQ(m.content, "Checking.\n\n");
    ASSERT_EQ(m.tool_calls.size(), 1u);
    EXPECT_EQ(m.tool_calls[0].name, "get_weather");
    EXPECT_EQ(m.tool_calls[0].arguments, R"({"city": "Paris", "days": 3, "hot": true})");
  }
}

TEST(Qwen3CoderToolParser, StreamingSendsOneFragmentPerFinishedParameter) {
  auto factory = make_factory(false, "", "qwen3_coder", tools());
  std::string text = call("get_weather", {{"city", "Paris"}, {"days", "3"}});
  auto s = stream_bytewise(factory, text);
  std::vector<std::string> fragments;
  for (const auto& d : s.deltas)
    for (const auto& tc : d.tool_calls) {
      EXPECT_EQ(tc.index, 0);
      fragments.push_back(tc.is_header() ? "HEADER " + tc.name + " args=" + tc.arguments : tc.arguments);
    }
  // A "</parameter>" counts once what follows it shows it is structural; for the last parameter that
  // is "</function>", which also closes the object, so both arrive in one fragment (as in vLLM,
  // whose streaming path applies the same lookahead).
  std::vector<std::string> expected = {"HEADER get_weather args=", "{", R"("city": "Paris")", R"(, "days": 3})"};
  EXPECT_EQ(fragments, expected);
}

TEST(Qwen3CoderToolParser, ValueNewlinesAndLiteralTags) {
  auto factory = make_factory(false, "", "qwen3_coder");
  // One "\n" is removed at each end, no more; a "</parameter>" followed by other text is literal.
  std::string text =
      "<tool_call>\n<function=w>\n<parameter=body>\n\nx </parameter> y\n\n</parameter>\n</function>\n</tool_call>";
  for (const auto& m : {one_shot(factory, text), stream_bytewise(factory, text).message}) {
    ASSERT_EQ(m.tool_calls.size(), 1u);
    EXPECT_EQ(Json::parse(m.tool_calls[0].arguments), Json({{"body", "\nx </parameter> y\n"}}));
  }
}

TEST(Qwen3CoderToolParser, TruncatedCallIsCompleted) {
  // vLLM's non-streaming regex `<tool_call>(.*?)$` / `<function=(.*)$` / parameter-to-end fallbacks
  // still produce the call when max_tokens cuts the output.
  auto factory = make_factory(false, "", "qwen3_coder", tools());
  for (std::string text : {"<tool_call>\n<function=get_weather>\n<parameter=city>\nPar",
                           "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar\n</parameter>\n<parameter=da",
                           "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar\n</parameter>\n</function>"}) {
    for (const auto& m : {one_shot(factory, text), stream_bytewise(factory, text).message}) {
      ASSERT_EQ(m.tool_calls.size(), 1u) << text;
      EXPECT_EQ(m.tool_calls[0].arguments, R"({"city": "Par"})") << text;
    }
  }
}

TEST(Qwen3CoderToolParser, MalformedMarkupIsContent) {
  auto factory = make_factory(false, "", "qwen3_coder", tools());
  // No <function=...> inside (vLLM: whole text is content), an invalid (unrendered template) name,
  // or an unfinished header. For the last two vLLM drops the call and keeps only the text before
  // it; we keep the whole text (see tool_call_parser.h).
  for (std::string text : {"A <tool_call> is how I call tools.</tool_call>",
                           "<tool_call>\n<function={{ tc.name }}>\n</function>\n</tool_call>",
                           "x\n<tool_call>\n<function=get_wea"}) {
    ParsedMessage m = one_shot(factory, text);
    EXPECT_EQ(m.content, text);
    EXPECT_TRUE(m.tool_calls.empty());
    EXPECT_EQ(stream_bytewise(factory, text).message, m) << text;
  }
}

TEST(Qwen3CoderToolParser, SeveralCallsAndTextBetweenIsDropped) {
  auto factory = make_factory(false, "", "qwen3_coder", tools());
  std::string text = call("get_weather", {{"days", "1"}}) + "\nand\n" + call("get_weather", {{"days", "2"}}) + "\nbye";
  for (const auto& m : {one_shot(factory, text), stream_bytewise(factory, text).message}) {
    EXPECT_EQ(m.content, std::nullopt);
    ASSERT_EQ(m.tool_calls.size(), 2u);
    EXPECT_EQ(m.tool_calls[0].arguments, R"({"days": 1})");
    EXPECT_EQ(m.tool_calls[1].arguments, R"({"days": 2})");
  }
}

// _convert_param_value, case by case.
TEST(ParamConversion, FollowsVllmRules) {
  Json props = Json::parse(R"({
    "s": {"type": "string"}, "i": {"type": "integer"}, "n": {"type": "number"}, "b": {"type": "boolean"},
    "o": {"type": "object"}, "a": {"type": "array"}, "ns": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "ni": {"anyOf": [{"type": "null"}, {"type": "integer"}]}, "u": {"description": "no type"}, "x": {"type": "any"}
  })");
  auto conv = [&](const std::string& v, const std::string& k) { return convert_param_value(v, k, props); };
  EXPECT_EQ(conv("42", "s"), Json("42"));
  EXPECT_EQ(conv("null", "s"), Json("null"));          // string type keeps "null"
  EXPECT_EQ(conv(" 42 ", "i"), Json(42));              // Python int() strips whitespace
  EXPECT_EQ(conv("1_000", "i"), Json(1000));           // and accepts digit underscores
  EXPECT_EQ(conv("4.0", "i"), Json("4.0"));            // int("4.0") fails: degenerate to string
  EXPECT_EQ(conv("None", "i"), Json(nullptr));         // non-string types: null/None -> null
  EXPECT_EQ(conv("1.5", "n"), Json(1.5));
  EXPECT_TRUE(conv("3.0", "n").is_number_integer());   // integral floats become ints
  EXPECT_EQ(conv("3.0", "n"), Json(3));
  EXPECT_EQ(conv("1e3", "n"), Json(1000));
  EXPECT_EQ(conv("abc", "n"), Json("abc"));
  EXPECT_EQ(conv("True", "b"), Json(true));
  EXPECT_EQ(conv("false", "b"), Json(false));
  EXPECT_EQ(conv("yes", "b"), Json(false));            // not true/false: degenerates to false
  EXPECT_EQ(conv(R"({"k": [1, "v"]})", "o"), Json::parse(R"({"k": [1, "v"]})"));
  EXPECT_EQ(conv("not json", "o"), Json("not json"));
  EXPECT_EQ(conv("[1, 2]", "a"), Json::parse("[1, 2]"));
  EXPECT_EQ(conv("None", "ns"), Json(nullptr));        // nullable string: None -> null
  EXPECT_EQ(conv("text", "ns"), Json("text"));
  EXPECT_EQ(conv("5", "ni"), Json(5));                 // first non-null anyOf type
  EXPECT_EQ(conv("5", "u"), Json("5"));                // no type: string
  EXPECT_EQ(conv("5", "x"), Json(5));                  // other types: literal_eval
  EXPECT_EQ(conv("true", "x"), Json("true"));          // ... which rejects JSON's true
  EXPECT_EQ(conv("5", "undeclared"), Json("5"));       // unknown parameter: string
  EXPECT_EQ(convert_param_value("5", "i", Json::object()), Json("5"));
}

TEST(ParamConversion, FindToolProperties) {
  EXPECT_EQ(find_tool_properties(tools(), "get_weather")["days"]["type"], "integer");
  EXPECT_TRUE(find_tool_properties(tools(), "other").empty());
  EXPECT_TRUE(find_tool_properties(nullptr, "get_weather").empty());
}

}  // namespace
}  // namespace dcu::text
