#pragma once
// The kernel self-test of `dcuserve doctor`: every op the model runs, and a tiny random-weight model,
// on a device backend against the CPU backend (the reference every GPU kernel is tested against),
// on small shapes: a few seconds. Tolerances are ten times those of tests/backend/gpu_ops_test.cpp,
// whose kernels meet theirs on the H200: the test asks "does this device compute the model", not
// "is it as precise as it was".

#include <string>
#include <vector>

#include "backend/backend.h"

namespace dcu::doctor {

struct OpResult {
  std::string name;  // "rms_norm", "matmul bf16 T=40"
  double error = 0;  // max |device - reference| / max(1, max |reference|) over the op's outputs
  double tolerance = 0;
  std::string failure;  // what the op threw, if it did
  bool passed() const { return failure.empty() && error <= tolerance; }
};

struct SelfTest {
  std::vector<OpResult> results;
  double seconds = 0;
};

// Each op on random inputs, run on both backends with the same inputs; one result per op and case.
std::vector<OpResult> compare_ops(Backend& reference, Backend& device);

// A tiny Qwen3.5 with random weights (bf16, then int4), its prompt fed in two chunks and then three
// decode steps: the logits of every step on both backends. `tolerance` per the device's precision mode.
std::vector<OpResult> compare_model(Backend& reference, Backend& device, double tolerance);

// The CPU backend alone: the tiny model's logits are finite, and the same whether its sequence is fed
// at once or as two chunks and single decode tokens (the chunked and recurrent GDN forms, the KV cache).
std::vector<OpResult> cpu_smoke(Backend& cpu);

}  // namespace dcu::doctor
