#include "engine/local_ranks.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

#include <omp.h>

#include "backend/gpu_backend_api.h"
#include "comm/in_process_communicator.h"
#include "comm/nccl_communicator.h"
#include "comm/rendezvous.h"
#include "core/error.h"
#include "core/log.h"
#include "engine/cache_plan.h"
#include "engine/device.h"
#include "engine/host_memory.h"
#include "model/quantization_config.h"
#include "model/quantize.h"
#include "model/safetensors.h"

namespace dcu {
namespace {

constexpr size_t kDefaultCpuCacheBytes = size_t(4) << 30;

// --dtype float16 stores weight matrices as f16 (the fast path of gfx906's v_dot2_f32_f16); otherwise
// they stay as the checkpoint has them.
std::optional<DType> weight_dtype_for(const std::string& dtype) {
  if (dtype == "float16") return DType::F16;
  return std::nullopt;
}

// Bytes for KV pages and state slots: exactly --kv-cache-memory-bytes when given; on a GPU, what is
// left of total * --gpu-memory-utilization once weights (already loaded) and scratch are counted; on
// the CPU, half the available memory up to 4 GiB.
size_t cache_budget_of(const EngineOptions& o, const Backend& backend, size_t scratch_bytes, int device_index) {
  if (o.kv_cache_memory_bytes) {
    if (*o.kv_cache_memory_bytes <= 0) fail("--kv-cache-memory-bytes must be positive");
    return size_t(*o.kv_cache_memory_bytes);
  }
  if (auto gpu = gpu_info(backend, device_index)) return gpu_cache_budget(*gpu, o.gpu_memory_utilization, scratch_bytes);
  return std::min(kDefaultCpuCacheBytes, size_t(double(available_host_memory().value_or(0)) * 0.5));
}

// A start-up step that may touch GPUs: its errors end with the hint to run `dcuserve doctor`, unless
// --device cpu keeps GPUs out of it.
template <typename F> decltype(auto) on_devices(const EngineOptions& o, F&& step) {
  if (o.device == "cpu") return step();
  return with_doctor_hint(std::forward<F>(step));
}

// One backend per local rank, all CPUs or all GPUs (GPU i for local rank i).
std::vector<std::unique_ptr<Backend>> make_rank_backends(const EngineOptions& o, int local_ranks) {
  std::vector<std::unique_ptr<Backend>> out;
  const BackendFlags flags{o.dtype, o.matmul_precision, o.activation_quantization};
  out.push_back(make_backend(o.device, 0, flags));
  // Simulated CPU ranks only on request: `auto` on a machine without enough GPUs is an error, as in vLLM.
  if (local_ranks > 1 && o.device == "auto" && out[0]->kind() == DeviceKind::Cpu)
    fail("--tensor-parallel-size {} needs {} GPUs; this machine has {}{} (add --device cpu to simulate the ranks on "
         "the CPU)",
         o.tensor_parallel_size, local_ranks, gpu_backend_compiled() ? list_gpu_devices().size() : 0,
         gpu_backend_compiled() ? "" : " usable by this build");
  if (local_ranks > 1 && out[0]->kind() != DeviceKind::Cpu) {
    const int gpus = int(list_gpu_devices().size());
    if (gpus < local_ranks)
      fail("--tensor-parallel-size {} needs {} GPUs on this node; it has {} (use --device cpu to simulate ranks on "
           "the CPU)",
           o.tensor_parallel_size, local_ranks, gpus);
  }
  for (int r = 1; r < local_ranks; ++r)
    out.push_back(make_backend(out[0]->kind() == DeviceKind::Cpu ? "cpu" : o.device, r, flags));
  return out;
}

// The bytes the weights take once loaded: a quantized checkpoint's files (its matrices load as shipped,
// FP8 one byte a weight as FP8 or int8, whose scale per row and 128 k adds 3 %; what --quantization
// int8 | int4 shrinks further is not subtracted), else the estimate of model/quantize.h.
double loaded_weight_bytes(const EngineOptions& o, const ModelConfig& config, QuantMethod shipped, WeightFormat rest) {
  if (shipped != QuantMethod::None) return double(Checkpoint::open(o.model_dir).total_bytes());
  return weight_bytes(config, rest);
}

// Fails before loading when one GPU's share of the weights cannot fit, saying what would.
void check_weights_fit(const EngineOptions& o, const ModelConfig& config, const std::vector<std::unique_ptr<Backend>>& backends,
                       double weight_bytes) {
  const int tp = o.tensor_parallel_size;
  for (size_t r = 0; r < backends.size(); ++r) {
    auto gpu = gpu_info(*backends[r], int(r));
    if (!gpu) return;
    if (gpu->memory_problem) {
      log::warn("GPU {} ({}): {}; not checking that the weights fit", gpu->index, gpu->name, *gpu->memory_problem);
      continue;
    }
    const double usable = double(gpu->total_memory) * o.gpu_memory_utilization -
                          double(gpu->total_memory - gpu->free_memory);
    if (weight_bytes / tp <= usable) continue;
    std::string advice;
    for (int n : valid_tensor_parallel_sizes(config, 64))
      if (n > tp && weight_bytes / n <= usable) {
        advice = fmt::format("use --tensor-parallel-size {} ({} GPUs like this one, {} of weights each)", n, n,
                             format_bytes(weight_bytes / n));
        break;
      }
    if (advice.empty()) advice = "no tensor-parallel size of this model makes them fit GPUs like this one";
    fail("the weights need about {} per GPU at --tensor-parallel-size {} ({} in all), but GPU {} ({}) has {} usable "
         "at --gpu-memory-utilization {}; {}, or use GPUs with at least {} free",
         format_bytes(weight_bytes / tp), tp, format_bytes(weight_bytes), gpu->index, gpu->name,
         format_bytes(std::max(0.0, usable)), o.gpu_memory_utilization, advice,
         format_bytes(weight_bytes / tp / o.gpu_memory_utilization));
  }
}

// Runs `make`, which allocates `bytes` on `backend` for `what`; an allocation failure becomes an error
// that names the size, the memory and what to change.
template <typename F> auto allocating(const Backend& backend, size_t bytes, const char* what, const char* advice, F&& make) {
  try {
    return make();
  } catch (const Error& e) {
    fail("cannot allocate {} of {} memory for {} ({}); {}", format_bytes(double(bytes)),
         backend.kind() == DeviceKind::Cpu ? "host" : "device", what, e.what(), advice);
  }
}

// What the start-up log says of step graphs, on backends that have them.
std::string graph_mode(const ModelRunner& runner, bool enforce_eager) {
  if (runner.records_graphs())
    return fmt::format("decode steps of up to {} sequences are recorded as graphs the second time each shape "
                       "(batch size, block-table width, context bucket) runs, and replayed after",
                       ModelRunner::kGraphMaxSeqs);
  if (enforce_eager) return "off (--enforce-eager): decode steps launch their ops one by one";
  return "off: this communicator's collectives cannot be recorded; decode steps launch their ops one by one";
}

}  // namespace

StepCapacity step_capacity(const EngineOptions& o) {
  // Verified drafts need a logit row each: room for k of them for up to a graph's worth of sequences.
  const int draft_rows = o.num_speculative_tokens * std::min(o.max_num_seqs, ModelRunner::kGraphMaxSeqs);
  return {o.max_num_batched_tokens > 0 ? o.max_num_batched_tokens : 2048,
          std::max(256, o.max_num_seqs + 1) + draft_rows};
}

ModelConfig model_config_for(const EngineOptions& o) {
  if (o.random_weights) {
    if (auto builtin = builtin_config(o.model_dir)) return *builtin;
  }
  return load_model_config(o.model_dir);
}

void check_group_options(const EngineOptions& o, const ModelConfig& config) {
  check_tensor_parallel(config, o.tensor_parallel_size);
  if (o.nnodes < 1 || o.node_rank < 0 || o.node_rank >= o.nnodes)
    fail("--node-rank {} must be in 0..--nnodes - 1 ({})", o.node_rank, o.nnodes - 1);
  if (o.tensor_parallel_size % o.nnodes != 0)
    fail("--tensor-parallel-size {} must be a multiple of --nnodes {}", o.tensor_parallel_size, o.nnodes);
}

LocalRanks::LocalRanks(const EngineOptions& o, ModelConfig config, CommunicatorFactory make_communicators)
    : options_(o), config_(std::move(config)), make_communicators_(std::move(make_communicators)) {
  // --quantization against the checkpoint's quantization_config, before any device is set up.
  const QuantMethod shipped = o.random_weights ? QuantMethod::None : load_quantization_config(o.model_dir).method;
  quantize_ = load_time_quantization(o.quantization, shipped);
  const int local_ranks = o.tensor_parallel_size / o.nnodes;
  check_backend_flags({o.dtype, o.matmul_precision, o.activation_quantization});
  (void)kv_cache_dtype(DeviceKind::Cpu, o.dtype, o.kv_cache_dtype);  // a bad name fails before any loading
  backends_ = on_devices(o, [&] { return make_rank_backends(o, local_ranks); });
  const bool gpu = backends_[0]->kind() != DeviceKind::Cpu;
  if (o.nnodes > 1 && !make_communicators_ && !(gpu && nccl_compiled()))
    fail("--nnodes {}: the ranks of several hosts meet through NCCL (CUDA) or RCCL (HIP); {}", o.nnodes,
         gpu ? "this build has neither" : "simulated CPU ranks cannot span hosts (use --device cuda or hip)");
  if (o.num_speculative_tokens > 0 && config_.mtp_num_hidden_layers < 1)
    fail("--speculative-config: {} has no MTP block (mtp_num_hidden_layers is 0 or missing in config.json), "
         "so it cannot draft tokens; serve it without --speculative-config",
         o.model_dir);
  const double weights = loaded_weight_bytes(o, config_, shipped, quantize_);
  on_devices(o, [&] { check_weights_fit(o, config_, backends_, weights); });
  // On the CPU the weights stay in host memory; on GPUs they pass through it a tensor at a time.
  if (backends_[0]->kind() == DeviceKind::Cpu)
    check_host_memory({weights, o.kv_cache_memory_bytes ? size_t(std::max<int64_t>(0, *o.kv_cache_memory_bytes)) : 0},
                      available_host_memory());
  for (int r = 0; r < local_ranks; ++r)
    plans_.push_back(shard_plan(config_, o.node_rank * local_ranks + r, o.tensor_parallel_size));
  local_config_ = dcu::local_config(config_, plans_[0]);
}

DType LocalRanks::kv_dtype() const {
  return kv_cache_dtype(backends_[0]->kind(), options_.dtype, options_.kv_cache_dtype);
}

NodeSettings LocalRanks::settings(const StepCapacity& capacity) const {
  return {options_.tensor_parallel_size, capacity.max_tokens, capacity.max_logit_rows, int32_t(kv_dtype()),
          config_.parameter_count()};
}

void LocalRanks::make_communicators(std::vector<NodeLink>& links) {
  if (options_.tensor_parallel_size == 1) return;
  std::vector<Backend*> raw;
  for (auto& b : backends_) raw.push_back(b.get());
  const bool gpu = backends_[0]->kind() != DeviceKind::Cpu;
  if (make_communicators_) {
    comms_ = make_communicators_(raw);
  } else if (gpu && nccl_compiled()) {
    NcclGroupOptions g;
    for (int r = 0; r < size(); ++r) g.devices.push_back(r);
    g.first_rank = options_.node_rank * size();
    g.world_size = options_.tensor_parallel_size;
    if (!links.empty())
      g.share_id = [&links, node_rank = options_.node_rank](const std::vector<char>& id) {
        return share_from_node0(links, node_rank, id);
      };
    comms_ = with_doctor_hint([&] { return make_nccl_communicators(g, raw); });
  } else {
    if (gpu) log::warn("this build has no NCCL/RCCL: tensor-parallel collectives go through host memory (slow)");
    comms_ = make_in_process_communicators(raw);
  }
  DCU_CHECK(int(comms_.size()) == size());
}

void LocalRanks::load_weights() {
  const EngineOptions& o = options_;
  const auto start = std::chrono::steady_clock::now();
  size_t bytes = 0;
  for (int r = 0; r < size(); ++r) {
    Backend& backend = *backends_[size_t(r)];
    if (o.tensor_parallel_size > 1) log::info("loading rank {} of {}", plans_[size_t(r)].rank, o.tensor_parallel_size);
    log::Progress bar(o.random_weights ? "generating weights" : "reading weights");
    size_t rank_bytes = 0;
    const LoadProgress progress = [&](size_t done, size_t total) {
      bar.update(done, total);
      rank_bytes = total;
    };
    const DType random_dtype = weight_dtype_for(o.dtype).value_or(DType::BF16);
    const bool mtp = o.num_speculative_tokens > 0;
    weights_.push_back(o.random_weights ? random_weights(config_, backend, random_dtype, o.seed, plans_[size_t(r)],
                                                         progress, quantize_, mtp)
                                        : dcu::load_weights(o.model_dir, config_, backend, plans_[size_t(r)], progress,
                                                            {weight_dtype_for(o.dtype), quantize_, mtp}));
    bytes += rank_bytes;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const char* what = o.random_weights ? "of random values generated" : "read";
  log::info("weights: {} {} in {:.2f} s ({:.2f} GB/s){}", log::gigabytes(double(bytes)), what, seconds,
            double(bytes) / 1e9 / std::max(seconds, 1e-9), size() > 1 ? fmt::format(" for {} ranks", size()) : "");
}

size_t LocalRanks::cache_budget(const StepCapacity& capacity) const {
  const bool cpu = backends_[0]->kind() == DeviceKind::Cpu;
  const size_t scratch =
      ModelRunner::scratch_bytes(*backends_[0], config_, capacity.max_tokens, capacity.max_logit_rows,
                                 options_.tensor_parallel_size, options_.num_speculative_tokens > 0);
  // Every rank holds the same blocks and slots, so the smallest budget decides; CPU ranks share one host.
  size_t budget = SIZE_MAX;
  for (int r = 0; r < size(); ++r)
    budget = std::min(budget, on_devices(options_, [&] { return cache_budget_of(options_, *backends_[size_t(r)], scratch, r); }) /
                                  (cpu ? size_t(size()) : 1));
  return budget;
}

ModelInstance LocalRanks::finish(const CacheShape& shape, const StepCapacity& capacity) {
  DCU_CHECK(int(weights_.size()) == size());
  const int tp = options_.tensor_parallel_size;
  const int per_seq = 1 + options_.num_speculative_tokens;
  log::info("cache: {} KV pages of {} tokens ({} tokens{}, {} KV), {} GDN state slots ({} per sequence), {}{}",
            shape.num_blocks, shape.block_size, int64_t(shape.num_blocks) * shape.block_size,
            shape.draft_layers ? ", the MTP block's layer included" : "",
            shape.kv_dtype == DType::I8 ? std::string("int8") : std::string(dtype_name(shape.kv_dtype)),
            shape.num_state_slots, per_seq,
            format_bytes(double(CacheStorage::bytes_needed(local_config_, shape))), tp > 1 ? " per rank" : "");
  ModelInstance model;
  model.ranks.resize(size_t(size()));
  const bool cpu = backends_[0]->kind() == DeviceKind::Cpu;
  for (int r = 0; r < size(); ++r) {
    RankInstance& rank = model.ranks[size_t(r)];
    rank.backend = std::move(backends_[size_t(r)]);
    if (tp > 1) rank.comm = std::move(comms_[size_t(r)]);
    const ModelConfig rank_config = dcu::local_config(config_, plans_[size_t(r)]);
    rank.cache = allocating(*rank.backend, CacheStorage::bytes_needed(rank_config, shape), "the KV cache and GDN state",
                            "give it less with --kv-cache-memory-bytes or a lower --gpu-memory-utilization", [&] {
                              return std::make_unique<CacheStorage>(*rank.backend, rank_config, shape);
                            });
    const size_t scratch = ModelRunner::scratch_bytes(*rank.backend, config_, capacity.max_tokens, capacity.max_logit_rows,
                                                      tp, options_.num_speculative_tokens > 0);
    rank.runner = allocating(*rank.backend, scratch, "the step's activations", "lower --max-num-batched-tokens", [&] {
      return std::make_unique<ModelRunner>(*rank.backend, config_, std::move(weights_[size_t(r)]), *rank.cache,
                                           capacity.max_tokens, capacity.max_logit_rows, rank.comm.get());
    });
    rank.runner->set_use_graphs(!options_.enforce_eager);
  }
  if (model.ranks[0].backend->supports_graphs())
    log::info("step graphs: {}", graph_mode(*model.ranks[0].runner, options_.enforce_eager));
  if (size() > 1) {
    // CPU ranks share the host's cores: each gets its part of the OpenMP threads.
    const int per_rank = cpu ? std::max(1, omp_get_max_threads() / size()) : omp_get_max_threads();
    model.threads = std::make_unique<RankThreads>(size(), [per_rank](int) { omp_set_num_threads(per_rank); });
  }
  return model;
}

}  // namespace dcu
