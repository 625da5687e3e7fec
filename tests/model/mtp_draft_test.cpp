// The MTP block of the demo model against its draft references (models/dcuserve-demo/reference_mtp.*,
// transformers' building blocks in float32 following vLLM's Qwen3.5 MTP forward): the draft logits of
// every row within 1e-3, fed one row per draft step as the engine does after each decode step, and all
// rows in one step as after a prefill; the first and the chained second draft at every answer position.

#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/model_fixture.h"

namespace dcu::testing {
namespace {

constexpr const char* kDemo = "models/dcuserve-demo";
constexpr float kLogitTolerance = 1e-3f;

struct MtpCase {
  std::string key;
  std::vector<int32_t> sequence;
  int first_answer_row = 0;
  std::vector<int32_t> draft1, draft2;
};

std::vector<MtpCase> mtp_cases() {
  std::ifstream in(std::string(kDemo) + "/reference_mtp.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<MtpCase> out;
  for (const auto& c : j.at("chats"))
    out.push_back({c.at("key"), c.at("sequence"), c.at("first_answer_row"), c.at("draft1"), c.at("draft2")});
  return out;
}

// The demo model with its MTP block; the target step over a whole sequence leaves every row's hidden state.
struct DraftFixture {
  LoadedModel model{kDemo, 1024, 512, 8, make_cpu_backend(), WeightOptions{std::nullopt, WeightFormat::Dense, true}};
  int64_t V = model.config.vocab_size;

  // Row `row`'s draft logits [V] (token sequence[row + 1], position row, the target's hidden row), on top
  // of the block's cache of rows before it.
  std::vector<float> draft_row(const std::vector<int32_t>& blocks, const std::vector<int32_t>& sequence, int row,
                               std::span<const int32_t> tokens, DraftInput from, int32_t source_row) {
    const SequenceStep step{tokens, row, blocks};
    const int32_t rows[] = {source_row};
    return download(model.runner->draft({&step, 1}, rows, from));
  }
  std::vector<float> download(const Tensor& logits) {
    std::vector<float> out(size_t(logits.numel()));
    model.backend->download(out.data(), logits.data, logits.bytes());
    return out;
  }
};

TEST(MtpDraft, EveryRowsLogitsMatchTheReferenceOneRowPerStep) {
  DraftFixture f;
  Reference ref(std::string(kDemo) + "/reference_mtp.safetensors");
  for (const MtpCase& c : mtp_cases()) {
    std::vector<int64_t> shape;
    const std::vector<float> expected = ref.floats(c.key + ".mtp_logits", &shape);  // [n - 1, V]
    const int n = int(c.sequence.size());
    ASSERT_EQ(shape[0], n - 1) << c.key;
    auto seq = f.model.start_sequence(c.sequence);
    f.model.step({{&seq, n}}, false);  // leaves every row's normed hidden state
    float worst = 0;
    size_t next = 0;
    for (int row = 0; row + 1 < n; ++row) {
      const std::vector<float> logits = f.draft_row(seq.blocks, c.sequence, row,
                                                    std::span<const int32_t>(c.sequence).subspan(size_t(row) + 1, 1),
                                                    DraftInput::TargetHidden, row);
      worst = std::max(worst, max_abs_diff(logits.data(), &expected[size_t(row) * f.V], size_t(f.V)));
      // Answer positions: the first draft, then the chained second one from (draft1, this row's MTP output).
      if (row < c.first_answer_row || next >= c.draft1.size()) continue;
      const int32_t d1 = argmax(logits.data(), f.V);
      EXPECT_EQ(d1, c.draft1[next]) << c.key << " draft1 at row " << row;
      const std::vector<float> second = f.draft_row(seq.blocks, c.sequence, row + 1, {&d1, 1}, DraftInput::DraftHidden, 0);
      EXPECT_EQ(argmax(second.data(), f.V), c.draft2[next]) << c.key << " draft2 at row " << row;
      ++next;
    }
    EXPECT_EQ(next, c.draft1.size()) << c.key;
    EXPECT_LT(worst, kLogitTolerance) << c.key;
    f.model.finish_sequence(seq);
  }
}

// After a prefill the engine drafts every row at once: the last row's logits are the reference's.
TEST(MtpDraft, AllRowsInOneDraftStepMatchTheReference) {
  DraftFixture f;
  Reference ref(std::string(kDemo) + "/reference_mtp.safetensors");
  for (const MtpCase& c : mtp_cases()) {
    const std::vector<float> expected = ref.floats(c.key + ".mtp_logits");
    const int n = int(c.sequence.size());
    auto seq = f.model.start_sequence(c.sequence);
    f.model.step({{&seq, n}}, false);
    const SequenceStep step{std::span<const int32_t>(c.sequence).subspan(1), 0, seq.blocks};
    std::vector<int32_t> rows(size_t(n - 1));
    for (int i = 0; i + 1 < n; ++i) rows[size_t(i)] = i;
    const std::vector<float> last = f.download(f.model.runner->draft({&step, 1}, rows, DraftInput::TargetHidden));
    ASSERT_EQ(int64_t(last.size()), f.V);
    EXPECT_LT(max_abs_diff(last.data(), &expected[size_t(n - 2) * f.V], size_t(f.V)), kLogitTolerance) << c.key;
    f.model.finish_sequence(seq);
  }
}

}  // namespace
}  // namespace dcu::testing
