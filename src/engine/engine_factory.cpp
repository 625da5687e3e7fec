#include "engine/engine_factory.h"

#include <algorithm>
#include <fstream>
#include <unistd.h>

#include "backend/backend.h"
#include "core/error.h"
#include "core/log.h"
#include "engine/cache_plan.h"
#include "engine/device.h"
#include "engine/llm_engine.h"
#include "model/weights.h"

namespace dcu {
namespace {

constexpr int kBlockSize = 16;
constexpr size_t kDefaultCpuCacheBytes = size_t(4) << 30;

// Host memory the kernel reports as available (MemAvailable), 0 when unknown.
size_t available_host_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  size_t kib;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

// A progress line on a terminal, redrawn in place; nothing when stderr is not a terminal.
LoadProgress terminal_progress() {
  if (!::isatty(STDERR_FILENO)) return {};
  return [last = -1](size_t done, size_t total) mutable {
    const int percent = total ? int(100.0 * double(done) / double(total)) : 100;
    if (percent == last) return;
    last = percent;
    std::fprintf(stderr, "\rloading weights: %3d%% (%s of %s)%s", percent, format_bytes(double(done)).c_str(),
                 format_bytes(double(total)).c_str(), done == total ? "\n" : "");
  };
}

ModelConfig config_for(const EngineOptions& o) {
  if (o.random_weights) {
    if (auto builtin = builtin_config(o.model_dir)) return *builtin;
  }
  return load_model_config(o.model_dir);
}

}  // namespace

std::unique_ptr<Engine> create_engine(const EngineOptions& o) {
  if (o.tensor_parallel_size != 1)
    fail("--tensor-parallel-size {} needs {} GPUs; this build runs on the CPU only", o.tensor_parallel_size,
         o.tensor_parallel_size);
  ModelInstance model;
  model.backend = make_backend(o.device);
  Backend& backend = *model.backend;
  ModelConfig config = config_for(o);
  const int max_model_len = o.max_model_len > 0 ? o.max_model_len : int(config.max_position_embeddings);
  if (o.max_model_len > config.max_position_embeddings)
    log::warn("--max-model-len {} exceeds the model's max_position_embeddings {}", o.max_model_len,
              config.max_position_embeddings);

  ModelWeights weights = o.random_weights ? random_weights(config, backend, DType::BF16, o.seed)
                                          : load_weights(o.model_dir, config, backend, terminal_progress());
  CachePlanRequest plan;
  plan.max_model_len = max_model_len;
  plan.max_num_seqs = o.max_num_seqs;
  plan.block_size = kBlockSize;
  plan.kv_dtype = DType::F32;
  plan.budget_bytes = o.kv_cache_memory_bytes
                          ? size_t(*o.kv_cache_memory_bytes)
                          : std::min(kDefaultCpuCacheBytes, size_t(double(available_host_memory()) * 0.5));
  CacheShape shape = plan_cache(config, plan);
  log::info("cache: {} KV pages of {} tokens ({} tokens), {} GDN state slots, {}", shape.num_blocks, shape.block_size,
            int64_t(shape.num_blocks) * shape.block_size, shape.num_state_slots,
            format_bytes(double(CacheStorage::bytes_needed(config, shape))));

  model.cache = std::make_unique<CacheStorage>(backend, config, shape);
  LlmEngineOptions eo;
  eo.limits.max_num_seqs = std::min(o.max_num_seqs, shape.num_state_slots);
  eo.limits.max_num_batched_tokens = o.max_num_batched_tokens > 0 ? o.max_num_batched_tokens : 2048;
  eo.limits.block_size = kBlockSize;
  eo.limits.max_logit_rows = std::max(256, eo.limits.max_num_seqs + 1);
  eo.max_model_len = max_model_len;
  eo.max_waiting_requests = o.max_waiting_requests;
  eo.seed = o.seed;
  eo.eos_token_ids = o.random_weights ? std::vector<int32_t>{} : load_generation_defaults(o.model_dir).eos_token_ids;
  model.runner = std::make_unique<ModelRunner>(backend, config, std::move(weights), *model.cache,
                                               eo.limits.max_num_batched_tokens, eo.limits.max_logit_rows);
  return std::make_unique<LlmEngine>(std::move(model), eo);
}

}  // namespace dcu
