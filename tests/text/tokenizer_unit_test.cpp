// Tokenizer behaviour on small hand-built tokenizer.json files: Hugging Face's documented split
// behaviours and added-token rules (expected splits taken from the tokenizers docs and unit tests),
// invalid UTF-8 input, and clear errors for broken files.
#include <cstdlib>
#include <random>

#include <gtest/gtest.h>
#include <utf8proc.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/tokenizer.h"
#include "text/tokenizer_pretokenizer.h"
#include "text/unicode.h"

namespace dcu::text {
namespace {

using nlohmann::json;

// A byte-level tokenizer whose vocab is the 256 byte characters (id = byte value) and no merges,
// so each byte of plain text becomes one id equal to that byte.
json byte_tokenizer() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) {
    std::string character;
    utf8_append(character, byte_to_char()[b]);
    vocab[character] = b;
  }
  return json{{"version", "1.0"},
              {"normalizer", nullptr},
              {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}},
              {"decoder", {{"type", "ByteLevel"}}},
              {"added_tokens", json::array()},
              {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}}};
}

std::vector<int32_t> bytes_of(std::string_view text) {
  return std::vector<int32_t>(reinterpret_cast<const unsigned char*>(text.data()),
                              reinterpret_cast<const unsigned char*>(text.data()) + text.size());
}

std::vector<int32_t> join(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Tokenizer with_mask(bool single_word, bool lstrip, bool rstrip) {
  json spec = byte_tokenizer();
  spec["added_tokens"].push_back({{"id", 300}, {"content", "<mask>"}, {"single_word", single_word},
                                  {"lstrip", lstrip}, {"rstrip", rstrip}, {"normalized", false}, {"special", true}});
  return Tokenizer::from_json_text(spec.dump());
}

// tokenizers added_vocabulary.rs test_lstrip_unicode_space.
TEST(TokenizerAddedTokens, LstripRstripTakeUnicodeSpaces) {
  const Tokenizer t = with_mask(true, true, true);
  EXPECT_EQ(t.encode("Hi <mask> there\t<mask>\t<mask>\u2000"),
            join({bytes_of("Hi"), {300}, bytes_of("there"), {300, 300}}));
}

// tokenizers added_vocabulary.rs test_single_word_is_correct.
TEST(TokenizerAddedTokens, SingleWordOnlyMatchesWholeWords) {
  const Tokenizer t = with_mask(true, false, false);
  EXPECT_EQ(t.encode("<mask> My name <mask> A<mask> <mask>ony <mask>"),
            join({{300}, bytes_of(" My name "), {300}, bytes_of(" A<mask> <mask>ony "), {300}}));
}

// tokenizers added_vocabulary.rs test_single_word_is_unicode_correct.
TEST(TokenizerAddedTokens, SingleWordUsesUnicodeWordCharacters) {
  const Tokenizer t = with_mask(true, false, false);
  EXPECT_EQ(t.encode("<mask>, <mask>- \u25CC\u0330<mask>"),
            join({{300}, bytes_of(", "), {300}, bytes_of("- \u25CC\u0330<mask>")}));
}

TEST(TokenizerAddedTokens, LongestMatchWinsAndSpecialSkipsInDecode) {
  json spec = byte_tokenizer();
  spec["added_tokens"].push_back({{"id", 300}, {"content", "<a>"}, {"special", true}, {"normalized", false}});
  spec["added_tokens"].push_back({{"id", 301}, {"content", "<a><b>"}, {"special", false}, {"normalized", false}});
  const Tokenizer t = Tokenizer::from_json_text(spec.dump());
  EXPECT_EQ(t.encode("x<a><b><a>"), join({bytes_of("x"), {301, 300}}));
  EXPECT_EQ(t.decode(t.encode("x<a><b><a>y"), true), "x<a><b>y");
  EXPECT_TRUE(t.is_special(300));
  EXPECT_FALSE(t.is_special(301));
  EXPECT_EQ(t.vocab_size(), 302);
}

TEST(TokenizerAddedTokens, NormalizedTokensMatchAfterNfc) {
  json spec = byte_tokenizer();
  spec["normalizer"] = {{"type", "NFC"}};
  spec["added_tokens"].push_back({{"id", 300}, {"content", "e\u0301"}, {"special", false}, {"normalized", true}});
  const Tokenizer t = Tokenizer::from_json_text(spec.dump());
  // "é" typed precomposed or decomposed is the token once both sides are NFC.
  EXPECT_EQ(t.encode("a\u00E9"), join({bytes_of("a"), {300}}));
  EXPECT_EQ(t.encode("ae\u0301"), join({bytes_of("a"), {300}}));
}

std::vector<std::string> split_words(const json& spec, std::string_view text) {
  const PreTokenizer pre = PreTokenizer::from_json(spec);
  std::vector<std::string_view> words;
  std::deque<std::string> storage;
  pre.split(text, words, storage);
  return {words.begin(), words.end()};
}

// The SplitDelimiterBehavior documentation of tokenizers, on "the-final--countdown" split by '-'.
TEST(TokenizerPreTokenizer, SplitBehavioursAsDocumented) {
  auto split = [](const char* behavior, bool regex) {
    json pattern = regex ? json{{"Regex", "-"}} : json{{"String", "-"}};
    return split_words({{"type", "Split"}, {"pattern", pattern}, {"behavior", behavior}, {"invert", false}},
                       "the-final--countdown");
  };
  for (bool regex : {true, false}) {
    using V = std::vector<std::string>;
    EXPECT_EQ(split("Removed", regex), (V{"the", "final", "countdown"}));
    EXPECT_EQ(split("Isolated", regex), (V{"the", "-", "final", "-", "-", "countdown"}));
    EXPECT_EQ(split("MergedWithPrevious", regex), (V{"the-", "final-", "-", "countdown"}));
    EXPECT_EQ(split("MergedWithNext", regex), (V{"the", "-final", "-", "-countdown"}));
    EXPECT_EQ(split("Contiguous", regex), (V{"the", "-", "final", "--", "countdown"}));
  }
}

// tokenizers pre_tokenizers/digits.rs tests.
TEST(TokenizerPreTokenizer, Digits) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split_words({{"type", "Digits"}, {"individual_digits", false}}, "Hey 123 friend!"),
            (V{"Hey ", "123", " friend!"}));
  EXPECT_EQ(split_words({{"type", "Digits"}, {"individual_digits", true}}, "Hey 123 friend!"),
            (V{"Hey ", "1", "2", "3", " friend!"}));
}

// tokenizers pre_tokenizers/byte_level.rs: GPT-2 regex with a prefix space.
TEST(TokenizerPreTokenizer, ByteLevelRegexAndPrefixSpace) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split_words({{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}},
                        "Hello my friend, how is your day going?"),
            (V{" Hello", " my", " friend", ",", " how", " is", " your", " day", " going", "?"}));
}

TEST(TokenizerInput, InvalidUtf8IsReplacedNotFatal) {
  const Tokenizer t = Tokenizer::from_json_text(byte_tokenizer().dump());
  // Each maximal invalid subpart becomes one U+FFFD, as Python's decode(errors="replace") gives HF.
  EXPECT_EQ(t.encode("a\xFF" "b"), bytes_of("a\uFFFDb"));
  EXPECT_EQ(t.encode("a\xE2\x82"), bytes_of("a\uFFFD"));
  EXPECT_EQ(t.encode("\xF0\x9F\x98"), bytes_of("\uFFFD"));
  EXPECT_EQ(t.encode("\xED\xA0\x80"), bytes_of("\uFFFD\uFFFD\uFFFD"));  // a surrogate is three subparts
  EXPECT_EQ(t.encode(std::string("x\0y", 3)), bytes_of(std::string("x\0y", 3)));
  EXPECT_TRUE(t.encode("").empty());
}

TEST(TokenizerInput, DecodeReplacesBrokenUtf8AndSkipsUnknownIds) {
  const Tokenizer t = Tokenizer::from_json_text(byte_tokenizer().dump());
  const std::vector<int32_t> ids = {'a', 0xE2, 0x82, 'b', 999999, -5, 0xF0};
  EXPECT_EQ(t.decode(ids, false), "a\uFFFDb\uFFFD");
  EXPECT_THROW(t.token_bytes(999999), Error);
  EXPECT_EQ(t.token_bytes(0xE2), "\xE2");
}

void expect_load_error(const json& spec, const std::string& phrase) {
  try {
    Tokenizer::from_json_text(spec.dump());
    ADD_FAILURE() << "loaded without error, expected: " << phrase;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
  }
}

TEST(TokenizerErrors, BrokenFilesGiveClearErrors) {
  json spec = byte_tokenizer();
  spec.erase("model");
  expect_load_error(spec, "no \"model\"");

  spec = byte_tokenizer();
  spec["model"]["type"] = "WordPiece";
  expect_load_error(spec, "unsupported model type \"WordPiece\"");

  spec = byte_tokenizer();
  spec["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  expect_load_error(spec, "invalid regex");

  spec = byte_tokenizer();
  spec["model"]["merges"] = json::array({"a"});
  expect_load_error(spec, "merge #0");

  spec = byte_tokenizer();
  spec["model"]["merges"] = json::array({json::array({"a", "zz"})});
  expect_load_error(spec, "missing from the vocab");

  spec = byte_tokenizer();
  spec["model"]["merges"] = json::array({42});
  expect_load_error(spec, "merge #0");

  spec = byte_tokenizer();
  spec["pre_tokenizer"] = {{"type", "Metaspace"}};
  expect_load_error(spec, "unsupported pre_tokenizer type \"Metaspace\"");

  spec = byte_tokenizer();
  spec["normalizer"] = {{"type", "Lowercase"}};
  expect_load_error(spec, "unsupported normalizer type \"Lowercase\"");

  spec = byte_tokenizer();
  spec["model"]["vocab"] = "oops";
  expect_load_error(spec, "no \"vocab\"");

  EXPECT_THROW(Tokenizer::from_json_text("{not json"), Error);
  EXPECT_THROW(Tokenizer::from_json_text("[]"), Error);
  EXPECT_THROW(Tokenizer::load("tests/data/no-such-tokenizer.json"), Error);
}

TEST(TokenizerMerges, BothMergeFormsAndLowestRankFirst) {
  for (bool pairs : {false, true}) {
    json spec = byte_tokenizer();
    spec["model"]["vocab"]["ab"] = 256;
    spec["model"]["vocab"]["bc"] = 257;
    spec["model"]["vocab"]["abc"] = 258;
    // "b c" outranks "a b", so "abc" merges as a + bc, and "a bc" is not a merge: result [a, bc].
    spec["model"]["merges"] = pairs ? json::array({json::array({"b", "c"}), json::array({"a", "b"})})
                                    : json::array({"b c", "a b"});
    const Tokenizer t = Tokenizer::from_json_text(spec.dump());
    EXPECT_EQ(t.encode("abc"), (std::vector<int32_t>{'a', 257}));
    EXPECT_EQ(t.encode("abab"), (std::vector<int32_t>{256, 256}));
    EXPECT_EQ(t.token_to_id("bc"), 257);
  }
}

// normalize() cuts text into pieces for speed; the result must equal utf8proc on the whole string.
TEST(TokenizerNormalizer, PiecewiseNormalizationEqualsWholeString) {
  const std::vector<char32_t> pool = {'a', 'e', 'Z', ' ', '\n', 0xE9, 0xC5, 0x212B, 0x301, 0x308, 0x330, 0x0327,
                                      0x1100, 0x1161, 0x11A8, 0xAC00, 0xD7A3, 0x4E16, 0x304B, 0x3099, 0x30AB,
                                      0x3B1, 0x1F71, 0xBD, 0xFB01, 0x133, 0x17F, 0x1F600, 0x1F3FD, 0x200B, 0xA0};
  std::mt19937 rng(7);
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1), length(0, 12);
  const std::pair<NormalForm, int> forms[] = {{NormalForm::NFC, UTF8PROC_COMPOSE},
                                              {NormalForm::NFD, UTF8PROC_DECOMPOSE},
                                              {NormalForm::NFKC, UTF8PROC_COMPOSE | UTF8PROC_COMPAT},
                                              {NormalForm::NFKD, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT}};
  for (int round = 0; round < 4000; ++round) {
    std::string text;
    for (size_t i = length(rng); i > 0; --i) utf8_append(text, pool[pick(rng)]);
    for (const auto& [form, options] : forms) {
      utf8proc_uint8_t* expected = nullptr;
      const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), text.size(), &expected,
                                  static_cast<utf8proc_option_t>(UTF8PROC_STABLE | options));
      ASSERT_GE(n, 0);
      EXPECT_EQ(normalize(text, form), std::string(reinterpret_cast<char*>(expected), n)) << text;
      std::free(expected);
    }
  }
}

}  // namespace
}  // namespace dcu::text
