#include "support/logit_accuracy.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace dcu::testing {

double kl_divergence(const float* p_logits, const float* q_logits, int64_t V) {
  auto log_softmax = [V](const float* x) {
    const double m = *std::max_element(x, x + V);
    double s = 0;
    for (int64_t i = 0; i < V; ++i) s += std::exp(double(x[i]) - m);
    std::vector<double> out(static_cast<size_t>(V));
    for (int64_t i = 0; i < V; ++i) out[size_t(i)] = double(x[i]) - m - std::log(s);
    return out;
  };
  const std::vector<double> lp = log_softmax(p_logits), lq = log_softmax(q_logits);
  double kl = 0;
  for (int64_t i = 0; i < V; ++i) kl += std::exp(lp[size_t(i)]) * (lp[size_t(i)] - lq[size_t(i)]);
  return std::max(kl, 0.0);
}

KldSummary summarize(std::vector<double> klds) {
  KldSummary s;
  s.positions = klds.size();
  for (double k : klds) s.mean += k;
  s.mean /= double(std::max<size_t>(1, klds.size()));
  std::sort(klds.begin(), klds.end());
  if (!klds.empty()) s.p99 = klds[size_t(0.99 * double(klds.size() - 1))], s.max = klds.back();
  return s;
}

double mean_kld_bound(WeightFormat weights) {
  return weights == WeightFormat::Int8 ? 1e-3 : weights == WeightFormat::Fp8 ? 1e-2 : 0.1;
}

std::vector<float> prompt_logits(LoadedModel& model, const std::vector<int32_t>& ids) {
  auto seq = model.start_sequence(ids);
  std::vector<float> logits = model.step({{&seq, int(ids.size())}}, true);
  model.finish_sequence(seq);
  return logits;
}

KldSummary reference_chat_kld(LoadedModel& model, const std::string& model_dir) {
  Reference ref(model_dir + "/reference.safetensors");
  const int64_t V = model.config.vocab_size;
  std::vector<double> klds;
  for (const ReferenceCase& c : reference_cases(model_dir)) {
    const std::vector<float> expected = ref.floats(c.key + ".logits");
    const std::vector<float> got = prompt_logits(model, c.ids);
    if (got.size() != expected.size())
      fail("{}: {} logits where the reference has {}", c.key, got.size(), expected.size());
    for (size_t p = 0; p < c.ids.size(); ++p) klds.push_back(kl_divergence(&expected[p * V], &got[p * V], V));
  }
  return summarize(klds);
}

}  // namespace dcu::testing
