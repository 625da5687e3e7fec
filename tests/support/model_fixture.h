#pragma once
// Test support: a model loaded on the CPU backend with its own caches, and a helper that feeds one or
// more sequences through the runner in chosen chunk sizes.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "cache/block_allocator.h"
#include "cache/cache_storage.h"
#include "model/config.h"
#include "model/model_runner.h"
#include "model/safetensors.h"
#include "model/weights.h"

namespace dcu::testing {

// Reference tensors (f32 / i32) from a reference.safetensors file.
class Reference {
 public:
  explicit Reference(const std::string& path) : file_(path) {}
  std::vector<float> floats(const std::string& name, std::vector<int64_t>* shape = nullptr) const;
  std::vector<int32_t> ints(const std::string& name) const;
  bool has(const std::string& name) const { return file_.tensors().count(name) > 0; }

 private:
  SafetensorsFile file_;
};

// One prompt or chat of a fixture's reference.json: its ids and transformers' greedy continuation.
struct ReferenceCase {
  std::string key;
  std::vector<int32_t> ids;
  std::vector<int32_t> greedy;
};
// Prompts, then chats, of <model_dir>/reference.json; those of max_ids or more ids are left out.
std::vector<ReferenceCase> reference_cases(const std::string& model_dir, size_t max_ids = SIZE_MAX);

// Sequence bookkeeping over some model: KV pages and state slots from pools, chunks fed in steps.
class SteppedModel {
 public:
  virtual ~SteppedModel() = default;

  // A sequence being fed: its cache handles and how much of it has been computed.
  struct Sequence {
    std::vector<int32_t> tokens;
    std::vector<int32_t> blocks;
    int slot = 0;
    int computed = 0;
  };
  Sequence start_sequence(std::vector<int32_t> tokens);
  void finish_sequence(Sequence& s);
  // One step: for each (sequence, count) pair, its next `count` tokens; returns logits rows (all rows
  // of each chunk when all_logits).
  std::vector<float> step(std::vector<std::pair<Sequence*, int>> work, bool all_logits);
  // Greedy continuation of `prompt`: the prompt in one step, then one token per step.
  std::vector<int32_t> greedy(const std::vector<int32_t>& prompt, size_t count);

  ModelConfig config;

 protected:
  SteppedModel(ModelConfig config, int num_blocks, int num_slots);
  static constexpr int kBlockSize = 16;
  // The model step itself (one runner, or every rank of a tensor-parallel group).
  virtual std::vector<float> run(std::span<const SequenceStep> steps) = 0;

 private:
  IdPool blocks_;
  IdPool slots_;
};

// A model on one backend (the CPU by default) with its own caches.
class LoadedModel final : public SteppedModel {
 public:
  explicit LoadedModel(const std::string& model_dir, int max_tokens_per_step = 1024, int num_blocks = 512,
                       int slots = 8, std::unique_ptr<Backend> backend = make_cpu_backend(),
                       const WeightOptions& weights = {}, DType kv_dtype = DType::F32);

  std::unique_ptr<Backend> backend;
  std::unique_ptr<CacheStorage> cache;
  std::unique_ptr<ModelRunner> runner;

 private:
  std::vector<float> run(std::span<const SequenceStep> steps) override { return runner->step_to_host(steps); }
};

float max_abs_diff(const float* a, const float* b, size_t n);
int argmax(const float* row, int64_t n);

}  // namespace dcu::testing
