// quantization_config parsing and the per-module answer, with vLLM's matching rules: GPTQ `dynamic`
// (re.match: anchored at the start, not a full match), compressed-tensors `ignore` and targets, AWQ
// modules_to_not_convert substrings, FP8 modules_to_not_convert by dotted path; unsupported values are
// errors naming them.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/quantization_config.h"

namespace dcu {
namespace {

using nlohmann::json;

QuantizationConfig parse(const json& quantization_config) {
  return parse_quantization_config(json{{"quantization_config", quantization_config}}.dump(), "config.json");
}

std::string error_of(const json& quantization_config) {
  try {
    parse(quantization_config);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The official Qwen3.5-27B-GPTQ-Int4 config (research/quant-mtp.md §1.1).
json official_gptq() {
  return json::parse(R"({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": true, "desc_act": false,
                         "checkpoint_format": "gptq", "dynamic": {"-:.*attn.*": {}}})");
}

const std::string kLayer = "model.language_model.layers.3.";

TEST(QuantizationConfig, NoneWithoutQuantizationConfig) {
  const QuantizationConfig c = parse_quantization_config(R"({"hidden_size": 8})", "config.json");
  EXPECT_EQ(c.method, QuantMethod::None);
  EXPECT_FALSE(c.module_storage(kLayer + "mlp.gate_proj").quantized());
}

TEST(QuantizationConfig, FoundInsideTextConfig) {
  const QuantizationConfig c =
      parse_quantization_config(json{{"text_config", {{"quantization_config", official_gptq()}}}}.dump(), "config.json");
  EXPECT_EQ(c.method, QuantMethod::Gptq);
}

TEST(QuantizationConfig, GptqDynamicExcludesBothAttentionKindsAndKeepsTheMlpQuantized) {
  const QuantizationConfig c = parse(official_gptq());
  EXPECT_FALSE(c.module_storage(kLayer + "self_attn.q_proj").quantized());
  EXPECT_FALSE(c.module_storage(kLayer + "linear_attn.in_proj_qkv").quantized());
  EXPECT_FALSE(c.module_storage(kLayer + "linear_attn.out_proj").quantized());
  for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) {
    const ModuleQuant m = c.module_storage(kLayer + "mlp." + proj);
    EXPECT_EQ(m.format, StoredFormat::Gptq) << proj;
    EXPECT_EQ(m.bits, 4);
    EXPECT_EQ(m.group_size, 128);
    EXPECT_TRUE(m.sym);
    EXPECT_TRUE(m.gptq_v1_zeros);
  }
  EXPECT_FALSE(c.module_storage("lm_head").quantized());  // "lm_head": false
}

TEST(QuantizationConfig, GptqDynamicMatchesAtTheStartOnly) {
  // re.match: "attn" alone does not match a name that only contains it; ".*attn" does.
  json q = official_gptq();
  q["dynamic"] = {{"-:attn", json::object()}};
  EXPECT_TRUE(parse(q).module_storage(kLayer + "self_attn.q_proj").quantized());
  q["dynamic"] = {{"-:model\\.language_model\\.layers\\.3\\.self", json::object()}};  // a prefix, not a full match
  EXPECT_FALSE(parse(q).module_storage(kLayer + "self_attn.q_proj").quantized());
  EXPECT_TRUE(parse(q).module_storage(kLayer + "mlp.up_proj").quantized());
}

TEST(QuantizationConfig, GptqDynamicOverridesAndTheFirstMatchWins) {
  json q = official_gptq();
  q["checkpoint_format"] = "gptq_v2";
  q["dynamic"] = json::parse(R"({"+:.*\\.layers\\.3\\..*": {"bits": 8, "group_size": 32, "sym": false},
                                 "-:.*mlp.*": {}, ".*down_proj": {"group_size": 64}})");
  const QuantizationConfig c = parse(q);
  const ModuleQuant m = c.module_storage(kLayer + "mlp.down_proj");  // the first rule, not the later two
  EXPECT_EQ(m.bits, 8);
  EXPECT_EQ(m.group_size, 32);
  EXPECT_FALSE(m.sym);
  EXPECT_FALSE(m.gptq_v1_zeros);
  EXPECT_FALSE(c.module_storage("model.language_model.layers.4.mlp.down_proj").quantized());
  EXPECT_EQ(c.module_storage("model.language_model.layers.4.self_attn.o_proj").bits, 4);
}

TEST(QuantizationConfig, GptqModulesInBlockToQuantizeAndLmHead) {
  json q = official_gptq();
  q.erase("dynamic");
  q["modules_in_block_to_quantize"] = json::parse(R"([["mlp.gate_proj", "mlp.up_proj"], ["mlp.down_proj"]])");
  q["lm_head"] = true;
  const QuantizationConfig c = parse(q);
  EXPECT_TRUE(c.module_storage(kLayer + "mlp.down_proj").quantized());
  EXPECT_FALSE(c.module_storage(kLayer + "self_attn.q_proj").quantized());
  q.erase("modules_in_block_to_quantize");
  EXPECT_TRUE(parse(q).module_storage("lm_head").quantized());
}

TEST(QuantizationConfig, GptqGroupOfMinusOneIsOnePerRow) {
  json q = official_gptq();
  q["group_size"] = -1;
  EXPECT_EQ(parse(q).module_storage(kLayer + "mlp.up_proj").group_size, -1);
  EXPECT_NE(parse(q).module_storage(kLayer + "mlp.up_proj").describe().find("one group per row"), std::string::npos);
}

TEST(QuantizationConfig, AwqSkipsModulesToNotConvertBySubstring) {
  const QuantizationConfig c = parse(json::parse(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
      "zero_point": true, "version": "GEMM",
      "modules_to_not_convert": ["model.language_model.layers.0.", "in_proj_a", "visual", "mtp"]})"));
  EXPECT_FALSE(c.module_storage("model.language_model.layers.0.mlp.gate_proj").quantized());
  EXPECT_FALSE(c.module_storage(kLayer + "linear_attn.in_proj_a").quantized());
  EXPECT_FALSE(c.module_storage("mtp.layers.0.mlp.gate_proj").quantized());
  EXPECT_FALSE(c.module_storage("lm_head").quantized());
  const ModuleQuant m = c.module_storage(kLayer + "linear_attn.in_proj_qkv");
  EXPECT_EQ(m.format, StoredFormat::AwqGemm);
  EXPECT_EQ(m.group_size, 128);
  EXPECT_FALSE(m.sym);
}

TEST(QuantizationConfig, AwqReadsAutoAwqKeyNames) {
  const QuantizationConfig c =
      parse(json::parse(R"({"quant_method": "awq", "w_bit": 4, "q_group_size": 64, "zero_point": true})"));
  EXPECT_EQ(c.module_storage(kLayer + "mlp.up_proj").group_size, 64);
}

TEST(QuantizationConfig, CompressedTensorsIgnoreAndTargets) {
  const QuantizationConfig c = parse(json::parse(R"({"quant_method": "compressed-tensors", "format": "pack-quantized",
      "config_groups": {
        "group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": true,
                    "strategy": "group", "group_size": 32}},
        "group_1": {"targets": ["re:.*self_attn\\.(q|k|v)_proj$"], "format": "int-quantized",
                    "weights": {"num_bits": 8, "type": "int", "symmetric": true, "strategy": "channel"},
                    "input_activations": {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": true}}},
      "ignore": ["lm_head", "re:.*linear_attn.*", "re:visual.*", "model.language_model.layers.0.mlp.down_proj"]})"));
  const ModuleQuant mlp = c.module_storage(kLayer + "mlp.gate_proj");
  EXPECT_EQ(mlp.format, StoredFormat::CtPackQuantized);
  EXPECT_EQ(mlp.bits, 4);
  EXPECT_EQ(mlp.group_size, 32);
  const ModuleQuant q = c.module_storage(kLayer + "self_attn.q_proj");  // a name target beats "Linear"
  EXPECT_EQ(q.format, StoredFormat::CtIntQuantized);
  EXPECT_EQ(q.bits, 8);
  EXPECT_EQ(q.group_size, -1);
  EXPECT_TRUE(c.ct.schemes[1].input_activations.dynamic);
  EXPECT_EQ(c.module_storage(kLayer + "self_attn.o_proj").format, StoredFormat::CtPackQuantized);
  EXPECT_FALSE(c.module_storage(kLayer + "linear_attn.in_proj_qkv").quantized());
  EXPECT_FALSE(c.module_storage("lm_head").quantized());
  EXPECT_FALSE(c.module_storage("model.language_model.layers.0.mlp.down_proj").quantized());  // exact name
  EXPECT_TRUE(c.module_storage("model.language_model.layers.0.mlp.up_proj").quantized());
  // "re:visual.*" is re.match: it does not reach "model.visual.*".
  EXPECT_TRUE(c.module_storage("model.visual.blocks.0.mlp.fc1").quantized());
}

TEST(QuantizationConfig, CompressedTensorsOlderCompressionConfigKey) {
  const json q = json::parse(R"({"quant_method": "compressed-tensors", "format": "int-quantized",
      "config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "int", "strategy": "channel"}}}})");
  const QuantizationConfig c = parse_quantization_config(json{{"compression_config", q}}.dump(), "config.json");
  EXPECT_EQ(c.module_storage(kLayer + "mlp.up_proj").format, StoredFormat::CtIntQuantized);
}

TEST(QuantizationConfig, Fp8SkipsModulesToNotConvertByDottedPath) {
  const QuantizationConfig c = parse(json::parse(R"({"quant_method": "fp8", "fmt": "e4m3",
      "activation_scheme": "dynamic", "weight_block_size": [128, 128],
      "modules_to_not_convert": ["linear_attn.in_proj_a", "linear_attn.in_proj_b", "mlp.gate", "model.visual.",
                                 "lm_head"]})"));
  EXPECT_FALSE(c.module_storage(kLayer + "linear_attn.in_proj_a").quantized());
  EXPECT_FALSE(c.module_storage(kLayer + "mlp.gate").quantized());
  EXPECT_FALSE(c.module_storage("model.visual.blocks.0.attn.qkv").quantized());
  EXPECT_FALSE(c.module_storage("lm_head").quantized());
  // "mlp.gate" is a whole component: gate_proj stays FP8.
  const ModuleQuant m = c.module_storage(kLayer + "mlp.gate_proj");
  EXPECT_EQ(m.format, StoredFormat::Fp8Block);
  EXPECT_EQ(m.bits, 8);
  EXPECT_EQ(m.group_size, 128);
  EXPECT_TRUE(c.module_storage(kLayer + "linear_attn.in_proj_qkv").quantized());
}

void expect_error(const json& q, std::initializer_list<const char*> parts) {
  const std::string e = error_of(q);
  ASSERT_FALSE(e.empty()) << q.dump();
  for (const char* part : parts) EXPECT_NE(e.find(part), std::string::npos) << e;
}

TEST(QuantizationConfig, UnsupportedValuesAreErrorsNamingThem) {
  expect_error({{"quant_method", "bitsandbytes"}}, {"\"bitsandbytes\"", "supported: gptq, awq, compressed-tensors, fp8"});
  expect_error({{"bits", 4}}, {"no \"quant_method\""});
  json q = official_gptq();
  q["bits"] = 3;
  expect_error(q, {"GPTQ bits 3", "4- and 8-bit"});
  q = official_gptq();
  q["dynamic"] = {{"+:.*mlp.*", {{"bits", 2}}}};
  expect_error(q, {"dynamic \"+:.*mlp.*\" bits 2"});
  q = official_gptq();
  q["checkpoint_format"] = "marlin";
  expect_error(q, {"checkpoint_format \"marlin\"", "gptq, gptq_v2"});
  q = official_gptq();
  q["dynamic"] = {{"-:(?P<name>attn)", json::object()}};
  expect_error(q, {"GPTQ dynamic key", "(?P<name>attn)"});
  expect_error(json::parse(R"({"quant_method": "awq", "bits": 8, "group_size": 128, "zero_point": true})"),
               {"AWQ bits 8", "4-bit"});
  expect_error(json::parse(R"({"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemv"})"),
               {"AWQ version \"gemv\"", "gemm"});
  const json ct = json::parse(R"({"quant_method": "compressed-tensors", "format": "pack-quantized",
      "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int",
                        "strategy": "group", "group_size": 128}}}})");
  json bad = ct;
  bad["format"] = "float-quantized";
  expect_error(bad, {"format \"float-quantized\"", "pack-quantized, int-quantized, naive-quantized"});
  bad = ct;
  bad["config_groups"]["group_0"]["weights"]["num_bits"] = 2;
  expect_error(bad, {"2-bit pack-quantized", "supported: 4, 8"});
  bad = ct;
  bad["format"] = "int-quantized";
  expect_error(bad, {"4-bit int-quantized", "supported: 8"});
  bad = ct;
  bad["config_groups"]["group_0"]["weights"]["type"] = "float";
  expect_error(bad, {"type \"float\"", "supported: int"});
  bad = ct;
  bad["config_groups"]["group_0"]["weights"]["strategy"] = "tensor";
  expect_error(bad, {"strategy \"tensor\"", "group, channel"});
  bad = ct;
  bad["kv_cache_scheme"] = {{"num_bits", 8}};
  expect_error(bad, {"kv_cache_scheme"});
  const json fp8 =
      json::parse(R"({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]})");
  bad = fp8;
  bad["fmt"] = "e5m2";
  expect_error(bad, {"fmt \"e5m2\"", "e4m3"});
  bad = fp8;
  bad.erase("weight_block_size");
  expect_error(bad, {"weight_block_size absent", "[128, 128]"});
  bad = fp8;
  bad["weight_block_size"] = {64, 64};
  expect_error(bad, {"weight_block_size [64, 64]"});
}

}  // namespace
}  // namespace dcu
