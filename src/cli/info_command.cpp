// dcuserve info: what a model needs (parameters, memory per token and per sequence) and which devices
// this build can use.

#include <cstdio>
#include <filesystem>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/ranges.h>

#include "backend/gpu_backend_api.h"
#include "cli/commands.h"
#include "cli/model_path.h"
#include "engine/cache_plan.h"
#include "model/config.h"
#include "model/quantize.h"
#include "model/safetensors.h"
#include "model/sharding.h"

namespace dcu {
namespace {

struct InfoArgs {
  std::string model, random_weights;
  int max_model_len = 0;
};

// What each --quantization makes of a 16-bit checkpoint: its bytes, the bytes a decode step reads
// (every matrix; the embedding is only gathered), and one GPU's share at each tensor-parallel size.
void print_quantization_choices(const ModelConfig& c) {
  const std::vector<int> sizes = valid_tensor_parallel_sizes(c, 8);
  std::printf("--quantization       weights     read per token   per GPU at --tensor-parallel-size %s\n",
              fmt::format("{}", fmt::join(sizes, " / ")).c_str());
  const double table = 2.0 * double(c.vocab_size) * double(c.hidden_size);
  for (const char* flag : {"none", "int8", "int4", "fp8"}) {
    const WeightFormat f = load_time_quantization(flag);
    const double bytes = weight_bytes(c, f);
    const double read = bytes - table + (f == WeightFormat::Dense && c.tie_word_embeddings ? table : 0.0);
    std::vector<std::string> shares;
    for (int n : sizes) shares.push_back(format_bytes(bytes / n));
    std::printf("  %-18s %-11s %-16s %s\n", f == WeightFormat::Dense ? "none (16-bit)" : flag,
                format_bytes(bytes).c_str(), format_bytes(read).c_str(), fmt::format("{}", fmt::join(shares, " / ")).c_str());
  }
}

// `shipped`: the checkpoint's quant_method (None: 16-bit), whose matrices load as stored.
void print_model(const ModelConfig& c, const std::string& source, double weight_bytes, int max_model_len,
                 QuantMethod shipped = QuantMethod::None) {
  std::printf("model:               %s\n", source.c_str());
  std::printf("model_type:          %s\n", c.model_type.c_str());
  std::printf("parameters:          %.3fB (text model)\n", double(c.parameter_count()) / 1e9);
  std::printf("weights:             %s\n", format_bytes(weight_bytes).c_str());
  std::printf("hidden / layers:     %lld / %d (%d Gated DeltaNet, %d full attention)\n", (long long)c.hidden_size,
              c.num_layers, c.num_linear_attention_layers(), c.num_full_attention_layers());
  std::printf("attention:           %d q heads, %d kv heads, head dim %d, rotary dim %d, theta %g\n", c.num_heads,
              c.num_kv_heads, c.head_dim, c.rotary_dim, double(c.rope_theta));
  std::printf("gated deltanet:      %d key heads / %d value heads of %d / %d, conv %d\n", c.linear_num_key_heads,
              c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim, c.linear_conv_kernel);
  std::printf("mlp / vocab:         %lld / %lld, tied embeddings: %s\n", (long long)c.intermediate_size,
              (long long)c.vocab_size, c.tie_word_embeddings ? "yes" : "no");
  const double kv16 = double(c.kv_bytes_per_token(DType::BF16)), kv32 = double(c.kv_bytes_per_token(DType::F32));
  const double kv8 = double(c.kv_bytes_per_token(DType::I8));
  const double state = double(c.state_bytes_per_sequence(4));
  std::printf("tensor-parallel:     %s (the sizes that divide its heads and widths)\n",
              fmt::format("{}", fmt::join(valid_tensor_parallel_sizes(c, 64), ", ")).c_str());
  std::printf("KV cache per token:  %s (bf16/f16), %s (int8, --kv-cache-dtype int8), %s (f32, CPU backend)\n",
              format_bytes(kv16).c_str(), format_bytes(kv8).c_str(), format_bytes(kv32).c_str());
  std::printf("GDN state per seq:   %s (f32)\n", format_bytes(state).c_str());
  std::printf("one sequence of %d tokens: %s (bf16 KV) + weights\n", max_model_len,
              format_bytes(state + kv16 * max_model_len).c_str());
  if (c.mtp_num_hidden_layers > 0) {
    // --speculative-config: k more state slots per sequence (each verified row keeps its state) and the
    // MTP block's own KV cache.
    const double mtp_kv = 2.0 * c.num_kv_heads * c.head_dim * 2;
    std::printf("MTP block:           %d layer(s); with --speculative-config k: + k x %s of GDN state and + %s of KV "
                "per token per sequence\n",
                c.mtp_num_hidden_layers, format_bytes(state).c_str(), format_bytes(mtp_kv).c_str());
    for (int k : {1, 2, 3})
      std::printf("  k = %d: one sequence of %d tokens: %s (bf16 KV)\n", k, max_model_len,
                  format_bytes(state * (1 + k) + (kv16 + mtp_kv) * max_model_len).c_str());
  }
  if (shipped == QuantMethod::None) {
    print_quantization_choices(c);
    return;
  }
  std::printf("quantization:        %s checkpoint, loaded as shipped (--quantization int8 | int4 also quantizes "
              "the matrices it keeps in 16 bits)\n",
              std::string(quant_method_name(shipped)).c_str());
}

void run_info(const InfoArgs& a) {
  if (!a.random_weights.empty()) {
    auto c = builtin_config(a.random_weights);
    if (!c) fail("--random-weights: unknown size \"{}\"", a.random_weights);
    print_model(*c, "built-in " + a.random_weights + " dimensions", double(c->parameter_count()) * 2,
                a.max_model_len ? a.max_model_len : int(c->max_position_embeddings));
  } else {
    const std::string dir = resolve_model_dir(a.model);
    ModelConfig c = load_model_config(dir);
    // A folder without weights (a --load-format dummy folder) reports the bf16 size of its parameters.
    bool has_weights = false;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      has_weights |= entry.path().extension() == ".safetensors";
    const double weight_bytes = has_weights ? double(Checkpoint::open(dir).total_bytes()) : double(c.parameter_count()) * 2;
    print_model(c, dir + (has_weights ? "" : " (no weights: bf16 size shown)"), weight_bytes,
                a.max_model_len ? a.max_model_len : int(c.max_position_embeddings), load_quantization_config(dir).method);
  }
  std::printf("devices:\n  cpu: %u threads\n", std::thread::hardware_concurrency());
  if (!gpu_backend_compiled()) {
    std::printf("  gpu: this build has no GPU backend (build the cuda or hip-gfx906 preset)\n");
    return;
  }
  const auto gpus = list_gpu_devices();
  if (gpus.empty()) std::printf("  gpu: none found\n");
  for (const auto& g : gpus)
    std::printf("  gpu %d: %s, arch %s, %s total, %s free\n", g.index, g.name.c_str(), g.arch.c_str(),
                format_bytes(double(g.total_memory)).c_str(), format_bytes(double(g.free_memory)).c_str());
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto args = std::make_shared<InfoArgs>();
  CLI::App* cmd = app.add_subcommand("info", "Model dimensions, memory needs and available devices");
  cmd->add_option("--model", args->model, "Model folder (default: the bundled demo model)");
  cmd->add_option("--random-weights", args->random_weights, "A built-in size instead: 0.8B, 2B, 4B, 9B, 27B");
  cmd->add_option("--max-model-len", args->max_model_len, "Context length for the memory figures");
  cmd->callback([args] { run_info(*args); });
}

}  // namespace dcu
