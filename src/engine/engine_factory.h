#pragma once
// Building an engine for a model folder. The serve/generate/bench commands use this; they never see the
// scheduler, caches or backends directly.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "engine/engine_api.h"

namespace dcu {

struct EngineOptions {
  std::string model_dir;
  std::string device = "auto";            // auto | cpu | cuda | hip
  int tensor_parallel_size = 1;           // ranks over all nodes; one worker thread per local rank
  int nnodes = 1;                         // multi-host tensor parallelism (NCCL/RCCL builds)
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";  // node 0's address for the rendezvous
  int master_port = 29500;
  int max_model_len = 0;                  // 0: the model's max_position_embeddings
  int max_num_seqs = 256;                 // sequences running at once
  int max_num_batched_tokens = 0;         // token budget per step; 0: max(2048, max_model_len) capped at 8192
  int max_waiting_requests = 1024;        // beyond this, submit() answers "retry later"
  double gpu_memory_utilization = 0.9;    // fraction of device memory the server may use
  std::optional<int64_t> kv_cache_memory_bytes;  // exact KV + state budget; overrides the fraction
  std::string dtype = "auto";             // auto | bfloat16 | float16 | float32
  uint64_t seed = 0;                      // default seed for requests that give none
  bool random_weights = false;            // dimensions from config.json, weights random (benchmarks)
};

// Loads the model and starts the engine thread. Throws dcu::Error with a clear message (bad model
// folder, not enough memory, unsupported device).
std::unique_ptr<Engine> create_engine(const EngineOptions& options);

}  // namespace dcu
