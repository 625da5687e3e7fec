// dcuserve bench: offline prefill and decode speed of a model (real or random weights) on one device,
// with the memory-bandwidth bound beside each decode figure.

#include <cstdio>
#include <sstream>

#include <CLI/CLI.hpp>

#include "backend/gpu_backend_api.h"
#include "cli/commands.h"
#include "cli/model_path.h"
#include "comm/in_process_communicator.h"
#include "comm/nccl_communicator.h"
#include "core/error.h"
#include "engine/cache_plan.h"
#include "engine/device.h"
#include "engine/offline_bench.h"
#include "model/quantize.h"

namespace dcu {
namespace {

struct BenchArgs {
  std::string model, random_weights, device = "auto", dtype = "auto", matmul_precision = "high";
  std::string quantization = "none", kv_cache_dtype = "auto", activation_quantization = "auto";
  std::string prompt_lens = "512", batches = "1,8,32,64", contexts = "128";
  int decode_steps = 8, repeats = 3, tensor_parallel_size = 1, num_speculative_tokens = 0;
  uint64_t seed = 0;
  bool enforce_eager = false;
};

std::vector<int> parse_list(const std::string& text, const char* flag) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      int v = std::stoi(item);
      if (v <= 0) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      fail("{}: \"{}\" is not a positive integer", flag, item);
    }
  }
  if (out.empty()) fail("{}: empty list", flag);
  return out;
}

void run_bench(const BenchArgs& a) {
  const int tp = a.tensor_parallel_size;
  std::vector<std::unique_ptr<Backend>> backends;
  const BackendFlags flags{a.dtype, a.matmul_precision, a.activation_quantization};
  backends.push_back(make_backend(a.device, 0, flags));
  const bool cpu = backends[0]->kind() == DeviceKind::Cpu;
  if (!cpu && tp > int(list_gpu_devices().size()))
    fail("--tensor-parallel-size {} needs {} GPUs; this machine has {}", tp, tp, list_gpu_devices().size());
  for (int r = 1; r < tp; ++r) backends.push_back(make_backend(cpu ? "cpu" : a.device, r, flags));
  auto& backend = backends[0];
  ModelConfig config;
  std::string what, dir;
  if (!a.random_weights.empty()) {
    auto builtin = builtin_config(a.random_weights);
    config = builtin ? *builtin : load_model_config(a.random_weights);
    what = "random weights, " + a.random_weights + " dimensions";
  } else {
    dir = resolve_model_dir(a.model);
    config = load_model_config(dir);
    what = dir;
  }
  check_tensor_parallel(config, tp);
  std::vector<Backend*> raw;
  for (auto& b : backends) raw.push_back(b.get());
  std::vector<std::unique_ptr<Communicator>> comms;
  if (tp > 1) {
    if (!cpu && nccl_compiled()) {
      NcclGroupOptions g;
      for (int r = 0; r < tp; ++r) g.devices.push_back(r);
      g.world_size = tp;
      comms = make_nccl_communicators(g, raw);
    } else {
      comms = make_in_process_communicators(raw);
    }
  }
  // --dtype float16: f16 weight matrices (converted while loading, or generated so).
  const std::optional<DType> weight_dtype = a.dtype == "float16" ? std::optional(DType::F16) : std::nullopt;
  const QuantMethod shipped = dir.empty() ? QuantMethod::None : load_quantization_config(dir).method;
  const WeightFormat quantize = load_time_quantization(a.quantization, shipped);
  std::vector<BenchRank> ranks(static_cast<size_t>(tp));
  for (int r = 0; r < tp; ++r) {
    const ShardPlan plan = shard_plan(config, r, tp);
    ranks[size_t(r)].backend = raw[size_t(r)];
    ranks[size_t(r)].comm = tp > 1 ? comms[size_t(r)].get() : nullptr;
    ranks[size_t(r)].weights =
        a.random_weights.empty()
            ? load_weights(dir, config, *raw[size_t(r)], plan, {}, {weight_dtype, quantize, a.num_speculative_tokens > 0})
            : random_weights(config, *raw[size_t(r)], weight_dtype.value_or(DType::BF16), a.seed, plan, {}, quantize,
                             a.num_speculative_tokens > 0);
  }
  BenchOptions o;
  o.prompt_lens = parse_list(a.prompt_lens, "--prompt-len");
  o.batches = parse_list(a.batches, "--batch");
  o.contexts = parse_list(a.contexts, "--context");
  o.decode_steps = a.decode_steps;
  o.repeats = a.repeats;
  o.enforce_eager = a.enforce_eager;
  o.speculative_tokens = a.num_speculative_tokens;
  o.kv_dtype = kv_cache_dtype(backend->kind(), a.dtype, a.kv_cache_dtype);
  std::printf("model: %s (%.3fB parameters), device: %s%s\n", what.c_str(), double(config.parameter_count()) / 1e9,
              backend->name().c_str(),
              tp > 1 ? fmt::format(" x {} ranks ({})", tp, comms[0]->name()).c_str() : "");
  BenchReport r = run_offline_bench(std::move(ranks), config, o);
  std::printf("copy bandwidth (read + write): %.1f GB/s\n", r.copy_bandwidth / 1e9);
  std::printf("\n%-12s %14s %18s %22s\n", "prefill", "tokens/s", "GFLOP/s (matmul)", "GFLOP/s (+ attention)");
  for (const auto& p : r.prefill)
    std::printf("%-12d %14.1f %18.1f %22.1f\n", p.prompt_len, p.tokens_per_s, p.tokens_per_s * p.flops_per_token / 1e9,
                p.tokens_per_s * (p.flops_per_token + p.attention_flops_per_token) / 1e9);
  std::printf("\n%-6s %-8s %12s %14s %14s %8s\n", "batch", "context", "tokens/s", "bytes/step", "bound tok/s", "of bound");
  for (const auto& d : r.decode)
    std::printf("%-6d %-8d %12.1f %14s %14.1f %7.1f%%\n", d.batch, d.context, d.tokens_per_s,
                format_bytes(d.bytes_per_step).c_str(), d.bound_tokens_per_s, 100.0 * d.tokens_per_s / d.bound_tokens_per_s);
  if (tp > 1) {
    // "collective us": each collective timed on its own, summed over a step; "step cost us": what the
    // collectives add to an op-by-op step (its time minus that of the step without them).
    std::printf("\n%-6s %-8s %14s %16s %18s %14s\n", "batch", "context", "collectives", "collective us",
                "us per collective", "step cost us");
    for (const auto& d : r.decode)
      std::printf("%-6d %-8d %14d %16.1f %18.2f %14.1f\n", d.batch, d.context, d.collectives_per_step,
                  d.collective_s_per_step * 1e6, d.collective_s_per_step * 1e6 / std::max(1, d.collectives_per_step),
                  d.collective_cost_s_per_step * 1e6);
  }
  if (r.speculative.empty()) return;
  // Random weights draw the drafts but do not decide acceptance: tokens/s at each forced acceptance.
  const int k = a.num_speculative_tokens;
  std::printf("\nspeculative decoding, k = %d (tokens/s at a FORCED acceptance of a drafts per round)\n", k);
  std::printf("%-6s %-8s %10s %10s %8s %10s %10s", "batch", "context", "1-row ms", "verify ms", "ratio", "draft ms",
              "chained ms");
  for (int accepted = 0; accepted <= k; ++accepted) std::printf(" %9s", fmt::format("a={}", accepted).c_str());
  std::printf("\n");
  for (const auto& sr : r.speculative) {
    std::printf("%-6d %-8d %10.3f %10.3f %8.3f %10.3f %10.3f", sr.batch, sr.context, sr.one_row_s * 1e3,
                sr.verify_s * 1e3, sr.verify_s / sr.one_row_s, sr.draft_s * 1e3, sr.chained_draft_s * 1e3);
    for (double t : sr.tokens_per_s) std::printf(" %9.1f", t);
    std::printf("\n");
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "Offline prefill and decode speed of the model on one device or split over several");
  cmd->add_option("--model", args->model, "Model folder (default: the bundled demo model)");
  cmd->add_option("--random-weights", args->random_weights,
                  "Random weights with built-in dimensions (0.8B, 2B, 4B, 9B, 27B) or a config.json folder");
  cmd->add_option("--device", args->device, "auto | cpu | cuda | hip");
  cmd->add_option("--dtype", args->dtype, "auto | bfloat16 | float16 | float32 (float32: exact f32 matmuls on GPUs)")
      ->check(CLI::IsMember({"auto", "bfloat16", "float16", "float32"}));
  cmd->add_option("--quantization,-q", args->quantization, kQuantizationHelp)->check(CLI::IsMember(kQuantizationChoices));
  cmd->add_option("--matmul-precision", args->matmul_precision, kMatmulPrecisionHelp)
      ->check(CLI::IsMember({"high", "medium"}));
  cmd->add_option("--activation-quantization", args->activation_quantization, kActivationQuantizationHelp)
      ->check(CLI::IsMember({"auto", "int8", "none"}));
  cmd->add_option("--kv-cache-dtype", args->kv_cache_dtype, kKvCacheDtypeHelp)
      ->check(CLI::IsMember(kKvCacheDtypeChoices));
  cmd->add_option("--prompt-len", args->prompt_lens, "Prefill lengths, comma separated");
  cmd->add_option("--batch", args->batches, "Decode batch sizes, comma separated");
  cmd->add_option("--context", args->contexts, "Cached tokens before each decode step, comma separated");
  cmd->add_option("--decode-steps", args->decode_steps, "Decode steps timed per figure")->check(CLI::Range(1, 100000));
  cmd->add_option("--repeats", args->repeats, "Runs per figure; the best is reported")->check(CLI::Range(1, 1000));
  cmd->add_flag("--enforce-eager", args->enforce_eager, "No CUDA/HIP graphs for decode steps");
  add_speculative_config_option(cmd, args->num_speculative_tokens);
  cmd->add_option("--seed", args->seed, "Seed of the random weights");
  cmd->add_option("--tensor-parallel-size", args->tensor_parallel_size,
                  "Ranks to split the model over (GPUs, or simulated ranks with --device cpu)")
      ->check(CLI::Range(1, 64));
  cmd->callback([args] { run_bench(*args); });
}

}  // namespace dcu
