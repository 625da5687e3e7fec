#pragma once
// Building an engine for a model folder. The serve/generate/bench commands use this; they never see the
// scheduler, caches or backends directly.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "comm/communicator.h"
#include "engine/engine_api.h"

namespace dcu {

struct EngineOptions {
  std::string model_dir;
  std::string device = "auto";            // auto | cpu | cuda | hip
  int tensor_parallel_size = 1;           // ranks over all nodes; one worker thread per local rank
  int nnodes = 1;                         // multi-host tensor parallelism (NCCL/RCCL builds)
  int node_rank = 0;                      // 0 runs the engine; the others run_follower_node
  std::string master_addr = "127.0.0.1";  // node 0's address: rendezvous, then its links to the other nodes
  int master_port = 29500;
  int max_model_len = 0;                  // 0: the model's max_position_embeddings
  int max_num_seqs = 256;                 // sequences running at once
  int max_num_batched_tokens = 0;         // token budget per step; 0: 2048
  int max_waiting_requests = 1024;        // beyond this, submit() answers "retry later"
  double gpu_memory_utilization = 0.9;    // fraction of device memory the server may use
  std::optional<int64_t> kv_cache_memory_bytes;  // exact KV + state budget; overrides the fraction
  std::string dtype = "auto";             // auto | bfloat16 | float16 | float32
  std::string matmul_precision = "high";  // high | medium: GPU tensor-core activations hi + lo, or rounded
  std::string activation_quantization = "auto";  // auto | int8 | none: quantized matmuls' activations (engine/device.h)
  std::string kv_cache_dtype = "auto";    // auto | int8 (fp8, fp8_e4m3: the same int8 cache), engine/device.h
  std::string quantization = "none";      // none | int8 | int4 | a checkpoint method (model/quantize.h)
  uint64_t seed = 0;                      // default seed for requests that give none
  bool random_weights = false;            // dimensions from config.json, weights random (benchmarks)
  bool enforce_eager = false;             // no CUDA/HIP graphs for decode steps (debugging)
  int num_speculative_tokens = 0;         // MTP drafts verified per step (--speculative-config); 0: off
  double mask_budget_ms = 5.0;            // structured-output mask wait before its sequence sits out (LlmEngineOptions)
};

// Makes the communicators of this node's ranks: global ranks node_rank * n + i of tensor_parallel_size,
// rank i on local_backends[i] (n = local_backends.size()). By default NCCL/RCCL on GPUs (across nodes:
// node 0's id over the node links), else in-process; tests inject groups spanning simulated nodes.
using CommunicatorFactory =
    std::function<std::vector<std::unique_ptr<Communicator>>(const std::vector<Backend*>& local_backends)>;

// Loads the model and starts the engine thread: on one node, or as node 0 of --nnodes (which waits for
// the other nodes at master_addr:master_port; they run run_follower_node, engine/follower_node.h).
// Throws dcu::Error with a clear message (bad model folder, not enough memory, unsupported device,
// node_rank > 0, nodes that do not agree).
std::unique_ptr<Engine> create_engine(const EngineOptions& options, const CommunicatorFactory& make_communicators = {});

}  // namespace dcu
