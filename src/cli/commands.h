#pragma once
// Each subcommand registers itself on the application; its callback runs after parsing.

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace dcu {

void add_serve_command(CLI::App& app);     // serve_command.cpp
void add_generate_command(CLI::App& app);  // generate_command.cpp
void add_bench_command(CLI::App& app);     // bench_command.cpp
void add_info_command(CLI::App& app);      // info_command.cpp
void add_tokenize_command(CLI::App& app);  // tokenize_command.cpp
void add_doctor_command(CLI::App& app);    // doctor_command.cpp

// --matmul-precision, shared by serve, generate and bench.
inline constexpr const char* kMatmulPrecisionHelp =
    "high | medium (GPU, 16-bit --dtype: tensor-core matmuls take the activations as hi + lo 16-bit parts, "
    "or rounded to one: faster prefill, the precision of vLLM and llama.cpp)";

// --activation-quantization, shared by serve, generate and bench (engine/device.h BackendFlags).
inline constexpr const char* kActivationQuantizationHelp =
    "auto | int8 | none: matmuls with quantized weights (--quantization, quantized checkpoints) round their "
    "activations to int8, one scale per 32 values, and the decode GEMVs multiply int8 by int8 (dp4a, "
    "v_dot4_i32_i8); none keeps them f32. auto: int8 on GPUs, none on the CPU";

// --kv-cache-dtype, shared by serve, generate and bench (engine/device.h kv_cache_dtype).
inline const std::vector<std::string> kKvCacheDtypeChoices = {"auto", "int8", "fp8", "fp8_e4m3"};
inline constexpr const char* kKvCacheDtypeHelp =
    "auto | int8: 8-bit KV cache (int8 codes, one scale per token and KV head: half the bytes of bf16). "
    "fp8 and fp8_e4m3 (vLLM's names) give the same int8 cache";

// --quantization, shared by serve, generate and bench (model/quantize.h load_time_quantization says
// what each value does).
inline const std::vector<std::string> kQuantizationChoices = {
    "none", "int8", "int4", "gptq", "gptq_marlin", "awq", "awq_marlin", "compressed-tensors", "fp8"};
inline constexpr const char* kQuantizationHelp =
    "none | int8 | int4 | gptq | gptq_marlin | awq | awq_marlin | compressed-tensors | fp8. A checkpoint with a "
    "quantization_config loads as shipped; a method name must match it (as in vLLM). int8 | int4 quantize the "
    "matrices stored in 16 bits while loading (symmetric, one scale per 128 inputs of a row), on a quantized "
    "checkpoint those it left in 16 bits; fp8 on a 16-bit checkpoint quantizes it to FP8 E4M3 the same way (int8 on "
    "HIP GPUs)";

// --speculative-config '{"method": "mtp", "num_speculative_tokens": k}' (vLLM's flag), checked while
// the command line is parsed (engine/speculative_config.h); shared by serve, generate and bench.
void add_speculative_config_option(CLI::App* cmd, int& num_speculative_tokens);  // speculative_option.cpp

}  // namespace dcu
