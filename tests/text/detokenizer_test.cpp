// StreamingDetokenizer: outputs joined must equal Tokenizer::decode of all ids cut before the first stop
// string to complete; checked on hand-picked cases and on random id sequences over the real tokenizers.
#include <filesystem>
#include <random>

#include <gtest/gtest.h>

#include "support/stop_string_reference.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "text/unicode.h"

namespace dcu::text {
namespace {

struct Stream {
  std::string text;
  std::vector<std::string> pieces;
  bool stopped = false;
};

Stream run(const Tokenizer& t, const std::vector<int32_t>& ids, bool skip_special, std::vector<std::string> stops) {
  StreamingDetokenizer detok(t, skip_special, std::move(stops));
  Stream s;
  for (int32_t id : ids) {
    s.pieces.push_back(detok.push(id));
    EXPECT_TRUE(utf8_is_valid(s.pieces.back()));
    s.text += s.pieces.back();
  }
  s.pieces.push_back(detok.flush());
  s.text += s.pieces.back();
  s.stopped = detok.stopped();
  return s;
}

// decode(ids) cut before the first stop string to complete: the reference for the stream.
std::string expected(const Tokenizer& t, const std::vector<int32_t>& ids, bool skip_special,
                     const std::vector<std::string>& stops) {
  return test::cut_at_first_completed_stop(t.decode(ids, skip_special), stops);
}

const Tokenizer& demo() {
  static const Tokenizer t = Tokenizer::load("models/dcuserve-demo");
  return t;
}

TEST(Detokenizer, MultiByteCharacterSplitAcrossTokensIsHeldUntilComplete) {
  const Tokenizer& t = demo();
  // "😀" is four bytes; the demo vocab is small, so it encodes as several byte tokens.
  const auto ids = t.encode("a😀b");
  ASSERT_GT(ids.size(), 3u);
  const Stream s = run(t, ids, false, {});
  EXPECT_EQ(s.text, "a😀b");
  for (const auto& piece : s.pieces) EXPECT_TRUE(piece.empty() || piece == "a" || piece == "😀" || piece == "b") << piece;
}

TEST(Detokenizer, IncompleteCharacterAtTheEndBecomesReplacement) {
  const Tokenizer& t = demo();
  auto ids = t.encode("ok😀");
  ids.pop_back();  // cut the emoji
  const Stream s = run(t, ids, false, {});
  EXPECT_EQ(s.text, t.decode(ids, false));
  EXPECT_EQ(s.text, "ok\uFFFD");
}

TEST(Detokenizer, StopStringAcrossTokensIsNotReturned) {
  const Tokenizer& t = demo();
  const auto ids = t.encode("Hello world. The END is near, END.");
  const Stream s = run(t, ids, false, {"END", "near"});
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.text, "Hello world. The ");
  const Stream none = run(t, ids, false, {"absent", "Hello world. The END is near, END.!"});
  EXPECT_FALSE(none.stopped);
  EXPECT_EQ(none.text, "Hello world. The END is near, END.");
}

// Found by the fuzzer: "ower " began before "e" but "e" completed first, and generation ends there,
// whether the two complete in different tokens or (" power" is one token) in the same one.
TEST(Detokenizer, StopStringThatCompletesFirstWinsOverAnEarlierLongerOne) {
  const Tokenizer& t = demo();
  const auto ids = t.encode(" drink power tri");
  const Stream s = run(t, ids, false, {"ower ", "e"});
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.text, " drink pow");
  EXPECT_EQ(run(t, ids, false, {"ower", "we"}).text, " drink po");
  // Ending at the same byte, the longer (earlier) one cuts.
  EXPECT_EQ(run(t, ids, false, {"r", "power"}).text, " d");
  EXPECT_EQ(run(t, ids, false, {"wer", "power"}).text, " drink ");
}

TEST(Detokenizer, HeldBackPrefixIsReleasedWhenItDoesNotComplete) {
  const Tokenizer& t = demo();
  const auto ids = t.encode("a <|b c");
  StreamingDetokenizer detok(t, false, {"<|im"});
  std::string text;
  for (int32_t id : ids) text += detok.push(id);
  text += detok.flush();
  EXPECT_EQ(text, "a <|b c");
}

TEST(Detokenizer, SpecialTokensSkippedOrStoppedOn) {
  const Tokenizer& t = demo();
  const auto ids = t.encode("<think>\nhm\n</think>\n\nYes.<|im_end|>more");
  EXPECT_EQ(run(t, ids, true, {}).text, t.decode(ids, true));
  EXPECT_EQ(run(t, ids, true, {}).text.find("<|im_end|>"), std::string::npos);
  const Stream stop = run(t, ids, false, {"<|im_end|>"});
  EXPECT_TRUE(stop.stopped);
  EXPECT_EQ(stop.text, "<think>\nhm\n</think>\n\nYes.");
}

void random_property(const Tokenizer& t, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> any_id(-3, t.vocab_size() + 2);
  std::uniform_int_distribution<int> length(0, 40);
  const std::vector<std::vector<std::string>> stop_sets = {
      {}, {"e"}, {"the", "\n\n"}, {"<|im_end|>"}, {"\uFFFD"}, {"ab", "b"}, {"Ġ"}, {" a", "a b c d e"}, {"ower ", "e"}, {"the ", "he"}};
  for (int round = 0; round < 3000; ++round) {
    std::vector<int32_t> ids(length(rng));
    for (auto& id : ids) id = any_id(rng);
    const bool skip = round % 2 == 0;
    const auto& stops = stop_sets[round % stop_sets.size()];
    ASSERT_EQ(run(t, ids, skip, stops).text, expected(t, ids, skip, stops)) << "seed " << seed << " round " << round;
  }
}

TEST(Detokenizer, RandomSequencesEqualDecodeDemoTokenizer) { random_property(demo(), 1); }

TEST(Detokenizer, RandomSequencesEqualDecodeTinyTokenizer) {
  random_property(Tokenizer::load("tests/data/tiny-qwen35"), 2);
}

TEST(Detokenizer, RandomSequencesEqualDecodeQwen3Tokenizer) {
  const char* path = "third_party/downloads/qwen3-tokenizer/tokenizer.json";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent: run scripts/fetch_test_tokenizers.sh";
  random_property(Tokenizer::load(path), 3);
}

}  // namespace
}  // namespace dcu::text
