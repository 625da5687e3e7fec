// JSON Schema -> grammar: which texts a schema's grammar accepts, the whitespace cap, and the 400s
// for keywords and constructs the converter does not implement. Outputs of random walks are checked
// by an outside validator in corpus_validation_test.py.

#include <gtest/gtest.h>

#include "structured/grammar_error.h"
#include "structured/json_schema_grammar.h"
#include "structured_test_util.h"

namespace dcu::structured {
namespace {

using namespace testing;

struct Schema {
  explicit Schema(const char* text, JsonGrammarOptions options = {}) {
    grammar = std::make_shared<TokenGrammar>(compile_grammar(json_schema_grammar(ojson::parse(text), options)),
                                             synthetic_vocabulary());
  }
  bool accepts(const std::string& s) const {
    GrammarMatcher m(grammar, {});
    return m.accept_bytes(s) && m.can_end();
  }
  std::shared_ptr<TokenGrammar> grammar;
};

std::string error_of(const char* schema) {
  try {
    compile_grammar(json_schema_grammar(ojson::parse(schema), {}));
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "no error";
}

TEST(JsonSchemaGrammar, ObjectsInSchemaOrderWithOptionalProperties) {
  Schema s(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
               "c": {"type": "boolean"}}, "required": ["b"]})");
  EXPECT_TRUE(s.accepts(R"({"b": "x"})"));
  EXPECT_TRUE(s.accepts(R"({"a": 1, "b": "x", "c": true})"));
  EXPECT_TRUE(s.accepts(R"({ "a":-5,"b":"","c":false })"));
  EXPECT_FALSE(s.accepts(R"({"a": 1})"));                 // b required
  EXPECT_FALSE(s.accepts(R"({"b": "x", "a": 1})"));       // schema order
  EXPECT_FALSE(s.accepts(R"({"b": "x", "d": 1})"));       // strict: no unlisted keys
  EXPECT_FALSE(s.accepts(R"({"a": 1.5, "b": "x"})"));
}

TEST(JsonSchemaGrammar, AdditionalPropertiesAfterTheListedOnes) {
  Schema s(R"({"properties": {"id": {"type": "integer"}}, "required": ["id"],
               "additionalProperties": {"type": "string"}})");
  EXPECT_TRUE(s.accepts(R"({"id": 1, "x": "y", "z": ""})"));
  EXPECT_FALSE(s.accepts(R"({"id": 1, "x": 2})"));
  EXPECT_FALSE(s.accepts(R"({"id": 1, "id": "again"})"));  // a listed key is not an additional one
  JsonGrammarOptions loose;
  loose.strict = false;
  Schema open(R"({"properties": {"id": {"type": "integer"}}})", loose);
  EXPECT_TRUE(open.accepts(R"({"id": 1, "more": [1, {"deep": null}]})"));
}

TEST(JsonSchemaGrammar, ArraysTuplesAndBounds) {
  Schema s(R"({"type": "array", "items": {"enum": ["x", 2, null]}, "minItems": 1, "maxItems": 3})");
  EXPECT_TRUE(s.accepts(R"(["x"])"));
  EXPECT_TRUE(s.accepts(R"([2, null, "x"])"));
  EXPECT_FALSE(s.accepts("[]"));
  EXPECT_FALSE(s.accepts(R"([2, 2, 2, 2])"));
  EXPECT_FALSE(s.accepts(R"(["y"])"));
  Schema t(R"({"prefixItems": [{"type": "string"}, {"type": "number"}], "items": false, "minItems": 1})");
  EXPECT_TRUE(t.accepts(R"(["a"])"));
  EXPECT_TRUE(t.accepts(R"(["a", 1e5])"));
  EXPECT_FALSE(t.accepts(R"(["a", 1, 2])"));
}

TEST(JsonSchemaGrammar, StringsPatternFormatLength) {
  Schema p(R"({"type": "string", "pattern": "^[a-z]+-[0-9]{2}$", "maxLength": 5})");
  EXPECT_TRUE(p.accepts(R"("ab-12")"));
  EXPECT_FALSE(p.accepts(R"("abc-12")"));  // 6 characters
  Schema unanchored(R"({"type": "string", "pattern": "ab"})");
  EXPECT_TRUE(unanchored.accepts(R"("xxabyy")"));
  EXPECT_FALSE(unanchored.accepts(R"("xxa")"));
  Schema quote(R"({"type": "string", "pattern": "^a\"b$"})");
  EXPECT_TRUE(quote.accepts(R"("a\"b")"));
  Schema len(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  EXPECT_TRUE(len.accepts("\"\xc3\xa9\\n\""));  // two characters: é and an escaped newline
  EXPECT_FALSE(len.accepts(R"("a")"));
  Schema date(R"({"type": "string", "format": "date-time"})");
  EXPECT_TRUE(date.accepts(R"("2024-02-28T13:45:00Z")"));
  EXPECT_FALSE(date.accepts(R"("2024-02-30T13:45:00Z")"));
  // Year 0000 is four digits but no date to validators (the model-corpus run found it); 0001 is one.
  for (const char* year : {"0001", "0010", "0999", "1000", "9999"})
    EXPECT_TRUE(date.accepts(std::string("\"") + year + "-01-31T00:00:00Z\"")) << year;
  EXPECT_FALSE(date.accepts(R"("0000-01-31T00:00:00Z")"));
  EXPECT_FALSE(Schema(R"({"type": "string", "format": "date"})").accepts(R"("0000-12-01")"));
  Schema email(R"({"format": "email"})");
  EXPECT_TRUE(email.accepts(R"("a.b@example.com")"));
  EXPECT_FALSE(email.accepts(R"("a@b")"));
  Schema ip(R"({"format": "ipv4"})");
  EXPECT_TRUE(ip.accepts(R"("192.168.0.255")"));
  EXPECT_FALSE(ip.accepts(R"("256.1.1.1")"));
}

TEST(JsonSchemaGrammar, NumericBounds) {
  Schema i(R"({"type": "integer", "minimum": -12, "exclusiveMaximum": 105})");
  for (const char* ok : {"-12", "0", "7", "99", "104"}) EXPECT_TRUE(i.accepts(ok)) << ok;
  for (const char* bad : {"-13", "105", "0105", "1.0", "-0"}) EXPECT_FALSE(i.accepts(bad)) << bad;
  Schema n(R"({"type": "number", "exclusiveMinimum": 0, "maximum": 1})");
  for (const char* ok : {"0.5", "1", "1.000", "0.0001"}) EXPECT_TRUE(n.accepts(ok)) << ok;
  for (const char* bad : {"0", "0.0", "1.5", "-0.5", "1.01"}) EXPECT_FALSE(n.accepts(bad)) << bad;
  Schema neg(R"({"type": "number", "minimum": -3, "exclusiveMaximum": -1})");
  for (const char* ok : {"-3", "-2.5", "-1.5", "-3.0"}) EXPECT_TRUE(neg.accepts(ok)) << ok;
  for (const char* bad : {"-1", "-3.5", "0", "-1.0"}) EXPECT_FALSE(neg.accepts(bad)) << bad;
}

// Found by the comparison with xgrammar (xgrammar_masks.test.mjs): an unbounded number had no -0.x.
TEST(JsonSchemaGrammar, UnboundedNumbersOfEverySign) {
  Schema n(R"({"type": "number"})");
  for (const char* ok : {"-0.5", "-0", "-0e3", "0.25", "-12.5e-3", "7"}) EXPECT_TRUE(n.accepts(ok)) << ok;
  for (const char* bad : {"--1", "-", "-01", "00", "-.5"}) EXPECT_FALSE(n.accepts(bad)) << bad;
}

TEST(JsonSchemaGrammar, RefsRecursionAnyOfAllOf) {
  Schema tree(R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                  "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}},
                  "$ref": "#/$defs/node"})");
  EXPECT_TRUE(tree.accepts(R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": [{"v": 4, "kids": []}]}]})"));
  EXPECT_FALSE(tree.accepts(R"({"v": 1, "kids": [{"w": 2}]})"));
  Schema any(R"({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "null"}, {"const": {"k": [1]}}]})");
  EXPECT_TRUE(any.accepts(R"("ab")"));
  EXPECT_TRUE(any.accepts("null"));
  EXPECT_TRUE(any.accepts(R"({"k":[1]})"));
  EXPECT_FALSE(any.accepts(R"("abc")"));
  Schema all(R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                 {"properties": {"a": {"minimum": 5}, "b": {"type": "string"}}}]})");
  EXPECT_TRUE(all.accepts(R"({"a": 7, "b": "x"})"));
  EXPECT_FALSE(all.accepts(R"({"a": 3})"));
}

TEST(JsonSchemaGrammar, WhitespaceIsCapped) {
  JsonGrammarOptions two;
  two.max_whitespace = 2;
  Schema s(R"({"type": "array", "items": {"type": "integer"}})", two);
  EXPECT_TRUE(s.accepts("[ 1,\n 2 ]"));
  EXPECT_FALSE(s.accepts("[   1]"));
  // An empty array or object is one gap, not the gap before its contents and the one after (found
  // comparing masks with xgrammar's over the Qwen3 vocabulary: 16 spaces fit in "[" "]").
  const std::pair<const char*, char> empties[] = {
      {R"({"type": "array", "items": {"type": "integer"}})", '['}, {R"({"type": "array", "prefixItems": [{}]})", '['},
      {R"({"type": "array", "maxItems": 0})", '['}, {R"({"type": "object", "properties": {"a": {}}})", '{'},
      {R"({"type": "object", "additionalProperties": true})", '{'}, {R"({})", '{'}, {R"({})", '['}};
  for (const auto& [text, open] : empties) {
    const std::string close = open == '[' ? "]" : "}";
    Schema e(text, two);
    EXPECT_TRUE(e.accepts(std::string(1, open) + "  " + close)) << text;
    EXPECT_FALSE(e.accepts(std::string(1, open) + "   " + close)) << text;
  }
  JsonGrammarOptions pattern;
  pattern.whitespace_pattern = "[ ]?";
  Schema p(R"({"type": "array", "items": {"type": "integer"}})", pattern);
  EXPECT_TRUE(p.accepts("[ 1, 2]"));
  EXPECT_FALSE(p.accepts("[\n1]"));
}

// What zod 4 (LangChain, the AI SDK) writes: z.record's propertyNames, the format of startsWith /
// endsWith / includes beside the pattern that states it, and z.ipv6().
TEST(JsonSchemaGrammar, ZodSchemas) {
  Schema record(R"({"type": "object", "propertyNames": {"type": "string"}, "additionalProperties": {"type": "number"}})");
  EXPECT_TRUE(record.accepts(R"({"a": 1, "b": 2.5})"));
  EXPECT_FALSE(record.accepts(R"({"a": "x"})"));
  EXPECT_TRUE(Schema(R"({"type": "object", "propertyNames": true})").accepts("{}"));
  EXPECT_NE(error_of(R"({"type": "object", "propertyNames": {"pattern": "^a"}})").find("'propertyNames'"), std::string::npos);
  Schema starts(R"({"type": "string", "format": "starts_with", "pattern": "^ab.*"})");
  EXPECT_TRUE(starts.accepts(R"("abc")"));
  EXPECT_FALSE(starts.accepts(R"("xbc")"));
  EXPECT_NE(error_of(R"({"type": "string", "format": "starts_with"})").find("'starts_with'"), std::string::npos);
  Schema ip(R"({"type": "string", "format": "ipv6"})");
  for (const char* ok : {"::", "::1", "fe80::", "2001:db8::8a2e:370:7334", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7::"})
    EXPECT_TRUE(ip.accepts(std::string("\"") + ok + "\"")) << ok;
  for (const char* bad : {"1::2::3", "12345::", ":1", "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8:9"})
    EXPECT_FALSE(ip.accepts(std::string("\"") + bad + "\"")) << bad;
}

TEST(JsonSchemaGrammar, UnsupportedKeywordsAreNamed) {
  EXPECT_NE(error_of(R"({"type": "string", "contentSchema": {}, "minContains": 1})").find("'contentSchema'"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "array", "uniqueItems": true})").find("'uniqueItems'"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "object", "patternProperties": {"a": {}}})").find("'patternProperties'"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "number", "multipleOf": 2})").find("'multipleOf'"), std::string::npos);
  EXPECT_NE(error_of(R"({"not": {"type": "null"}})").find("'not'"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "string", "format": "duration"})").find("'duration'"), std::string::npos);
  EXPECT_NE(error_of(R"({"$ref": "http://example.com/s.json"})").find("local"), std::string::npos);
  EXPECT_NE(error_of(R"J({"type": "string", "pattern": "(?=a)"})J").find("lookahead"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "number", "minimum": 0.5})").find("whole-number"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "objekt"})").find("objekt"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "object", "required": ["a"], "additionalProperties": false})").find("'a'"), std::string::npos);
  EXPECT_NE(error_of(R"({"$ref": "#/$defs/missing"})").find("points to nothing"), std::string::npos);
  EXPECT_NE(error_of(R"({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})").find("no output"), std::string::npos);
}

TEST(JsonSchemaGrammar, RandomWalksKeepFastMasksExact) {
  auto v = synthetic_vocabulary();
  std::mt19937 rng(11);
  for (const char* text : {R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 4},
                              "n": {"type": "integer", "minimum": 0, "maximum": 300}}, "required": ["name"]})",
                           R"({"type": "array", "items": {"type": "number"}, "maxItems": 3})",
                           R"({"$defs": {"t": {"anyOf": [{"type": "null"}, {"type": "array", "items": {"$ref": "#/$defs/t"}}]}},
                              "$ref": "#/$defs/t"})"}) {
    auto tg = std::make_shared<TokenGrammar>(compile_grammar(json_schema_grammar(ojson::parse(text), {})), v);
    for (int walk = 0; walk < 5; ++walk) {
      GrammarMatcher m(tg, {end_token(*v)});
      int mismatches = 0;
      random_walk(m, *v, rng, 30, true, &mismatches);
      EXPECT_EQ(mismatches, 0) << text;
    }
  }
}

}  // namespace
}  // namespace dcu::structured
