// Host sampling cost per token on a vocabulary-sized row (Qwen3.5: 248,320 logits) for the common
// parameter sets; the row is copied before each draw as the engine's buffer would be refilled.
//   build/cpu/bench/sampler_bench

#include <chrono>
#include <cstdio>
#include <random>

#include "sampling/sampler.h"

int main() {
  std::vector<float> base(248320);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 3.0f);  // flatter than a trained model: a worst case
  for (float& x : base) x = normal(rng);
  struct Case {
    const char* name;
    float temperature;
    int top_k;
    float top_p;
    int logprobs;
  };
  const Case cases[] = {{"greedy", 0.0f, -1, 1.0f, -1},
                        {"Qwen3.5 defaults: t 0.7, top_k 20, top_p 0.8", 0.7f, 20, 0.8f, -1},
                        {"t 0.7, top_p 0.95", 0.7f, -1, 0.95f, -1},
                        {"t 1.0 (whole vocabulary)", 1.0f, -1, 1.0f, -1},
                        {"greedy + logprobs 5", 0.0f, -1, 1.0f, 5}};
  for (const Case& c : cases) {
    dcu::SamplingParams p;
    p.temperature = c.temperature;
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    p.logprobs = c.logprobs;
    dcu::Sampler sampler(p, {}, 1);
    const int draws = 50;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < draws; ++i) {
      std::vector<float> row = base;
      sampler.sample(row);
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / draws;
    std::printf("%-48s %7.3f ms per token\n", c.name, ms);
  }
  return 0;
}
