#include "engine/engine_factory.h"

#include <algorithm>
#include <fstream>
#include <unistd.h>

#include "backend/backend.h"
#include "core/error.h"
#include "core/log.h"
#include "engine/cache_plan.h"
#include "backend/gpu_backend_api.h"
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

DType kv_dtype_for(const std::string& dtype, const Backend& backend) {
  if (backend.kind() == DeviceKind::Cpu || dtype == "float32") return DType::F32;  // the CPU attention reads f32
  if (dtype == "float16" || dtype == "half") return DType::F16;
  return DType::BF16;
}

// Bytes for KV pages and state slots: exactly --kv-cache-memory-bytes when given; on a GPU, what is
// left of total * --gpu-memory-utilization once weights (already loaded) and scratch are counted; on
// the CPU, half the available memory up to 4 GiB.
size_t cache_budget(const EngineOptions& o, const Backend& backend, size_t scratch_bytes) {
  if (o.kv_cache_memory_bytes) {
    if (*o.kv_cache_memory_bytes <= 0) fail("--kv-cache-memory-bytes must be positive");
    return size_t(*o.kv_cache_memory_bytes);
  }
  if (auto gpu = gpu_info(backend)) {
    const double usable = double(gpu->total_memory) * o.gpu_memory_utilization;
    const double used = double(gpu->total_memory - gpu->free_memory) + double(scratch_bytes);
    if (usable <= used)
      fail("--gpu-memory-utilization {} allows {} on {} but weights and scratch already take {}; raise it or use "
           "more GPUs (--tensor-parallel-size)",
           o.gpu_memory_utilization, format_bytes(usable), gpu->name, format_bytes(used));
    return size_t(usable - used);
  }
  return std::min(kDefaultCpuCacheBytes, size_t(double(available_host_memory()) * 0.5));
}

ModelConfig config_for(const EngineOptions& o) {
  if (o.random_weights) {
    if (auto builtin = builtin_config(o.model_dir)) return *builtin;
  }
  return load_model_config(o.model_dir);
}

}  // namespace

std::unique_ptr<Engine> create_engine(const EngineOptions& o) {
  if (o.tensor_parallel_size != 1) {
    const size_t gpus = gpu_backend_compiled() ? list_gpu_devices().size() : 0;
    if (gpus < size_t(o.tensor_parallel_size))
      fail("--tensor-parallel-size {} needs {} GPUs; this machine has {}{}", o.tensor_parallel_size,
           o.tensor_parallel_size, gpus, gpu_backend_compiled() ? "" : " usable by this build (CPU only)");
    fail("--tensor-parallel-size {}: tensor parallelism is not available in this version yet; use 1",
         o.tensor_parallel_size);
  }
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
  LlmEngineOptions eo;
  eo.limits.max_num_seqs = o.max_num_seqs;
  eo.limits.max_num_batched_tokens = o.max_num_batched_tokens > 0 ? o.max_num_batched_tokens : 2048;
  eo.limits.block_size = kBlockSize;
  eo.limits.max_logit_rows = std::max(256, eo.limits.max_num_seqs + 1);

  CachePlanRequest plan;
  plan.max_model_len = max_model_len;
  plan.max_num_seqs = o.max_num_seqs;
  plan.block_size = kBlockSize;
  plan.kv_dtype = kv_dtype_for(o.dtype, backend);
  const size_t scratch = ModelRunner::scratch_bytes(backend, config, eo.limits.max_num_batched_tokens,
                                                    eo.limits.max_logit_rows);
  plan.budget_bytes = cache_budget(o, backend, scratch);
  CacheShape shape = plan_cache(config, plan);
  log::info("cache: {} KV pages of {} tokens ({} tokens), {} GDN state slots, {}", shape.num_blocks, shape.block_size,
            int64_t(shape.num_blocks) * shape.block_size, shape.num_state_slots,
            format_bytes(double(CacheStorage::bytes_needed(config, shape))));

  model.cache = std::make_unique<CacheStorage>(backend, config, shape);
  eo.limits.max_num_seqs = std::min(o.max_num_seqs, shape.num_state_slots);
  eo.max_model_len = max_model_len;
  eo.max_waiting_requests = o.max_waiting_requests;
  eo.seed = o.seed;
  eo.eos_token_ids = o.random_weights ? std::vector<int32_t>{} : load_generation_defaults(o.model_dir).eos_token_ids;
  model.runner = std::make_unique<ModelRunner>(backend, config, std::move(weights), *model.cache,
                                               eo.limits.max_num_batched_tokens, eo.limits.max_logit_rows);
  return std::make_unique<LlmEngine>(std::move(model), eo);
}

}  // namespace dcu
