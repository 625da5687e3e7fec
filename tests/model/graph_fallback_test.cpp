// Decode-step graphs when the backend cannot record one (a driver without stream capture): the
// runner keeps serving with ops launched one by one, with the logits of a runner that never tried,
// and does not try again. The CPU backend stands in for a GPU that claims graph support.

#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "support/model_fixture.h"

namespace dcu::testing {
namespace {

class UnrecordableGraphs final : public CpuBackend {
 public:
  bool supports_graphs() const override { return true; }
  void capture_graph(uint64_t, const std::function<void()>&) override {
    ++captures;
    fail("stream capture is not supported by this driver");
  }
  int captures = 0;
};

TEST(DecodeGraphs, ARecordingFailureFallsBackToStepsOpByOp) {
  auto backend = std::make_unique<UnrecordableGraphs>();
  UnrecordableGraphs* unrecordable = backend.get();
  LoadedModel with_graphs("tests/data/tiny-qwen35", 1024, 512, 8, std::move(backend));
  LoadedModel eager("tests/data/tiny-qwen35");
  const std::vector<int32_t> prompt = {11, 22, 33, 44, 55, 66, 77};
  auto a = with_graphs.start_sequence(prompt), b = eager.start_sequence(prompt);
  EXPECT_EQ(with_graphs.step({{&a, int(prompt.size())}}, false), eager.step({{&b, int(prompt.size())}}, false));
  for (int step = 0; step < 6; ++step) {  // the first decode step warms up, the second tries to record
    a.tokens.push_back(int32_t(100 + step)), b.tokens.push_back(int32_t(100 + step));
    EXPECT_EQ(with_graphs.step({{&a, 1}}, false), eager.step({{&b, 1}}, false)) << "step " << step;
  }
  EXPECT_EQ(unrecordable->captures, 1);
}

}  // namespace
}  // namespace dcu::testing
