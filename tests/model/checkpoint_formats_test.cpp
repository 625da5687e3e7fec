// Checkpoint format decoders against fixtures packed by tools/quant_fixtures.py from each format's
// documented layout (tests/data/quant): every element of the decoded canonical matrix, read through
// Linear::at as the backends read it, equals the packer's dequantized matrix exactly. FP8 blocks as
// requantized to int8 for backends without FP8 matmuls: within half a scale step. Broken checkpoints
// fail naming the tensor.

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backend/linear.h"
#include "core/error.h"
#include "core/fp8_e4m3.h"
#include "model/checkpoint_formats.h"
#include "model/quantize.h"

namespace dcu {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
const fs::path kFixtures = "tests/data/quant";

struct Fixture {
  std::string module;
  json config;  // the quantization_config object
  int64_t N = 0, K = 0;
};

std::vector<Fixture> fixtures() {
  std::vector<Fixture> out;
  for (const auto& f : json::parse(std::ifstream(kFixtures / "fixtures.json")))
    out.push_back({f.at("module").get<std::string>(), f.at("quantization_config"), f.at("N").get<int64_t>(),
                   f.at("K").get<int64_t>()});
  return out;
}

const Fixture& fixture(const std::string& module) {
  static const std::vector<Fixture> all = fixtures();
  for (const auto& f : all)
    if (f.module == module) return f;
  throw std::runtime_error("no fixture " + module);
}

QuantizationConfig config_of(const json& quantization_config) {
  return parse_quantization_config(json{{"quantization_config", quantization_config}}.dump(), "config.json");
}

const Checkpoint& fixture_checkpoint() {
  static const Checkpoint ckpt = Checkpoint::open(kFixtures.string());
  return ckpt;
}

// W[n, k] of the decoded matrix in input-feature order (canonical column j is feature k_order[j]).
std::vector<float> dequantized(const HostLinear& h) {
  const Linear w = linear_view(h);  // checked as the backends' layout
  std::vector<float> out(size_t(h.rows * h.cols));
  for (int64_t n = 0; n < h.rows; ++n)
    for (int64_t j = 0; j < h.cols; ++j) {
      const int64_t k = h.k_order.empty() ? j : h.k_order[size_t(j)];
      out[size_t(n * h.cols + k)] = w.at(n, j);
    }
  return out;
}

std::vector<float> expected_of(const Fixture& f) {
  const StoredTensor* t = fixture_checkpoint().find(f.module + ".expected");
  EXPECT_NE(t, nullptr);
  const auto* p = static_cast<const float*>(t->data);
  return std::vector<float>(p, p + f.N * f.K);
}

HostLinear decode(const Fixture& f) {
  const ModuleQuant q = config_of(f.config).module_storage(f.module);
  EXPECT_TRUE(q.quantized()) << f.module;
  return decode_quantized_linear(fixture_checkpoint(), f.module, q, f.N, f.K);
}

TEST(CheckpointFormats, EveryFixtureDecodesExactly) {
  for (const Fixture& f : fixtures()) {
    SCOPED_TRACE(f.module);
    HostLinear h = decode(f);
    EXPECT_EQ(h.rows, f.N);
    EXPECT_EQ(h.cols, f.K);
    const std::vector<float> got = dequantized(h), want = expected_of(f);
    int64_t mismatches = 0;
    for (size_t i = 0; i < want.size(); ++i)
      if (std::memcmp(&got[i], &want[i], 4) != 0 && ++mismatches <= 3)
        ADD_FAILURE() << "W[" << i / f.K << ", " << i % f.K << "] = " << got[i] << ", want " << want[i];
    EXPECT_EQ(mismatches, 0);
  }
}

TEST(CheckpointFormats, CanonicalFormatGroupAndOrder) {
  struct Want {
    const char* module;
    WeightFormat format;
    int64_t group;
    bool zeros, k_order;
  };
  for (const Want& w : {Want{"gptq_4bit_g32_sym_v1", WeightFormat::Int4, 32, false, false},
                        Want{"gptq_4bit_g128_asym_v1", WeightFormat::Int4, 128, true, false},
                        Want{"gptq_4bit_g32_actorder_v2", WeightFormat::Int4, 32, true, true},
                        Want{"gptq_8bit_g128_sym_v1", WeightFormat::Int8, 128, false, false},
                        Want{"gptq_8bit_channel_asym_v2", WeightFormat::Int8, 256, false, false},
                        Want{"awq_g128", WeightFormat::Int4, 128, true, false},
                        Want{"ct_pack4_g32_sym", WeightFormat::Int4, 32, false, false},
                        Want{"ct_pack4_g128_asym", WeightFormat::Int4, 128, true, false},
                        Want{"ct_pack4_channel_sym", WeightFormat::Int4, 256, false, false},
                        Want{"ct_pack4_g64_actorder", WeightFormat::Int4, 64, false, true},
                        Want{"ct_pack8_g64_asym", WeightFormat::Int8, 64, false, false},
                        Want{"ct_int8_channel", WeightFormat::Int8, 256, false, false},
                        Want{"fp8_block", WeightFormat::Fp8, 128, false, false}}) {
    SCOPED_TRACE(w.module);
    const HostLinear h = decode(fixture(w.module));
    EXPECT_EQ(h.format, w.format);
    EXPECT_EQ(h.group, w.group);
    EXPECT_EQ(!h.zeros.empty(), w.zeros);
    EXPECT_EQ(!h.k_order.empty(), w.k_order);
  }
}

TEST(CheckpointFormats, ActOrderColumnsAreSortedByGroup) {
  const Fixture& f = fixture("gptq_4bit_g32_actorder_v2");
  const HostLinear h = decode(f);
  const StoredTensor* g_idx = fixture_checkpoint().find(f.module + ".g_idx");
  ASSERT_EQ(h.k_order.size(), size_t(f.K));
  std::vector<bool> seen(size_t(f.K));
  for (int64_t j = 0; j < f.K; ++j) {
    const int32_t k = h.k_order[size_t(j)];
    EXPECT_EQ(static_cast<const int32_t*>(g_idx->data)[k], j / h.group) << "column " << j;
    if (j % h.group) {
      EXPECT_LT(h.k_order[size_t(j - 1)], k) << "stable within a group";
    }
    seen[size_t(k)] = true;
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), f.K);
}

TEST(CheckpointFormats, Fp8DecoderMatchesTheFormulaOnEveryByte) {
  const StoredTensor* table = fixture_checkpoint().find("fp8_e4m3_table");
  ASSERT_NE(table, nullptr);
  for (int b = 0; b < 256; ++b) {
    const float want = static_cast<const float*>(table->data)[b], got = fp8_e4m3_to_f32(uint8_t(b));
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << "byte " << b;
    else EXPECT_EQ(std::memcmp(&got, &want, 4), 0) << "byte " << b << ": " << got << ", want " << want;
  }
  EXPECT_EQ(fp8_e4m3_to_f32(0x7E), 448.0f);
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_f32(0xFF)));
}

// Load-time FP8 (model/quantize.cpp): every finite byte's value encodes back to the byte, a value halfway
// between two neighbours goes to the even mantissa and anything nearer to the nearer one, beyond 448
// saturates.
TEST(CheckpointFormats, Fp8EncoderRoundsToNearestEven) {
  for (int b = 0; b < 256; ++b) {
    if ((b & 0x7F) == 0x7F) continue;  // NaN
    EXPECT_EQ(fp8_e4m3_from_f32(fp8_e4m3_to_f32(uint8_t(b))), b) << "byte " << b;
  }
  for (int b = 0; b < 0x7E; ++b) {  // positive neighbours b, b + 1 (the negative side mirrors them)
    const float lo = fp8_e4m3_to_f32(uint8_t(b)), hi = fp8_e4m3_to_f32(uint8_t(b + 1)), mid = (lo + hi) / 2;
    EXPECT_EQ(fp8_e4m3_from_f32(mid), b % 2 == 0 ? b : b + 1) << "between bytes " << b << " and " << b + 1;
    EXPECT_EQ(fp8_e4m3_from_f32(std::nextafter(mid, 0.0f)), b);
    EXPECT_EQ(fp8_e4m3_from_f32(std::nextafter(mid, 1e3f)), b + 1);
    EXPECT_EQ(fp8_e4m3_from_f32(-mid), 0x80 | (b % 2 == 0 ? b : b + 1));
  }
  EXPECT_EQ(fp8_e4m3_from_f32(1000.0f), 0x7E);
  EXPECT_EQ(fp8_e4m3_from_f32(-460.0f), 0xFE);
}

TEST(CheckpointFormats, Fp8BlocksRequantizeWithinHalfAStep) {
  const Fixture& f = fixture("fp8_block");
  HostLinear h = fp8_as_int8(decode(f));
  EXPECT_EQ(h.format, WeightFormat::Int8);
  const std::vector<float> got = dequantized(h), want = expected_of(f);
  for (int64_t n = 0; n < f.N; ++n)
    for (int64_t g = 0; g < f.K / 128; ++g) {
      const float scale = h.scales[size_t(n * (f.K / 128) + g)];
      float amax = 0.0f;
      for (int64_t k = g * 128; k < (g + 1) * 128; ++k) {
        const size_t i = size_t(n * f.K + k);
        amax = std::max(amax, std::fabs(want[i]));
        ASSERT_LE(std::fabs(got[i] - want[i]), scale * (0.5f + 1e-4f)) << "W[" << n << ", " << k << "]";
      }
      EXPECT_EQ(scale, amax > 0 ? amax / 127.0f : 1.0f) << "row " << n << ", group " << g;
    }
  for (int64_t k = 0; k < 128; ++k) EXPECT_EQ(h.codes[size_t(k)], 0);  // the fixture's all-zero group
}

// A model folder written from a tensor table, for the broken-checkpoint tests.
class TempCheckpoint {
 public:
  struct Entry {
    std::string dtype;
    std::vector<int64_t> shape;
    std::string bytes;
  };

  explicit TempCheckpoint(const std::string& tag)
      : dir_(fs::temp_directory_path() / ("dcuserve-quant-" + tag + "-" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~TempCheckpoint() { fs::remove_all(dir_); }

  // Module `from` of the fixtures, renamed `module`.
  void add_fixture(const std::string& from, const std::string& module) {
    const std::string prefix = from + ".";
    for (const auto& name : fixture_checkpoint().names()) {
      if (name.rfind(prefix, 0) != 0 || name == from + ".expected") continue;
      const StoredTensor& t = *fixture_checkpoint().find(name);
      tensors_[module + "." + name.substr(prefix.size())] = {t.dtype_name, t.shape,
                                                             std::string(static_cast<const char*>(t.data), t.bytes)};
    }
  }
  void add(const std::string& name, Entry e) { tensors_[name] = std::move(e); }
  void remove(const std::string& name) { tensors_.erase(name); }
  Entry& at(const std::string& name) { return tensors_.at(name); }

  const Checkpoint& open() {
    json header = json::object();
    std::string data;
    for (const auto& [name, e] : tensors_) {
      header[name] = {{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {data.size(), data.size() + e.bytes.size()}}};
      data += e.bytes;
    }
    std::string text = header.dump();
    text.resize((text.size() + 7) / 8 * 8, ' ');
    const uint64_t n = text.size();
    std::ofstream(dir_ / "model.safetensors", std::ios::binary)
        << std::string(reinterpret_cast<const char*>(&n), 8) << text << data;
    ckpt_ = std::make_unique<Checkpoint>(Checkpoint::open(dir_.string()));
    return *ckpt_;
  }

 private:
  fs::path dir_;
  std::map<std::string, Entry> tensors_;
  std::unique_ptr<Checkpoint> ckpt_;
};

// The error message of decoding `module` of `ckpt` as the fixture `from` ("" when it decodes).
std::string decode_error(const Checkpoint& ckpt, const std::string& from, const std::string& module,
                         const json& config_edit = json::object(), int64_t K = 0) {
  const Fixture& f = fixture(from);
  json config = f.config;
  config.merge_patch(config_edit);
  try {
    decode_quantized_linear(ckpt, module, config_of(config).module_storage(module), f.N, K ? K : f.K);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

TEST(CheckpointFormatErrors, TruncatedPackedTensor) {
  TempCheckpoint t("truncated");
  t.add_fixture("gptq_4bit_g128_asym_v1", "mlp");
  auto& qweight = t.at("mlp.qweight");
  qweight.shape[0] -= 1;
  qweight.bytes.resize(qweight.bytes.size() - 32 * 4);
  const std::string e = decode_error(t.open(), "gptq_4bit_g128_asym_v1", "mlp");
  EXPECT_HAS(e, "tensor mlp.qweight is I32 [31, 32]");
  EXPECT_HAS(e, "needs I32 [32, 32]");
}

TEST(CheckpointFormatErrors, PackedWeightOfTheWrongDtype) {
  TempCheckpoint t("dtype");
  t.add_fixture("ct_pack4_g32_sym", "mlp");
  t.at("mlp.weight_packed").dtype = "F32";
  EXPECT_HAS(decode_error(t.open(), "ct_pack4_g32_sym", "mlp"), "tensor mlp.weight_packed is F32");
}

TEST(CheckpointFormatErrors, WeightShapeDisagreesWithTheModel) {
  TempCheckpoint t("weight-shape");
  t.add_fixture("ct_pack4_g32_sym", "mlp");
  const std::string e = decode_error(t.open(), "ct_pack4_g32_sym", "mlp", json::object(), 224);
  EXPECT_HAS(e, "mlp.weight_packed");  // ceil(224 / 8) words, not 32
  TempCheckpoint u("weight-shape-values");
  u.add_fixture("ct_pack4_g32_sym", "mlp");
  int64_t wrong[2] = {36, 255};
  u.at("mlp.weight_shape").bytes = std::string(reinterpret_cast<const char*>(wrong), 16);
  EXPECT_HAS(decode_error(u.open(), "ct_pack4_g32_sym", "mlp"), "tensor mlp.weight_shape holds [36, 255]");
}

TEST(CheckpointFormatErrors, WrongGroupSize) {
  TempCheckpoint t("group");
  t.add_fixture("gptq_4bit_g128_asym_v1", "mlp");
  const Checkpoint& ckpt = t.open();
  // The config says 32, the checkpoint has scales for groups of 128.
  EXPECT_HAS(decode_error(ckpt, "gptq_4bit_g128_asym_v1", "mlp", {{"group_size", 32}}), "tensor mlp.qzeros is I32 [2, 4]");
  EXPECT_HAS(decode_error(ckpt, "gptq_4bit_g128_asym_v1", "mlp", {{"group_size", 16}}), "multiples of 32");
  EXPECT_HAS(decode_error(ckpt, "gptq_4bit_g128_asym_v1", "mlp", {{"group_size", 96}}), "does not divide K = 256");
}

TEST(CheckpointFormatErrors, GroupIndexWithUnevenGroups) {
  TempCheckpoint t("g-idx");
  t.add_fixture("gptq_4bit_g32_actorder_v2", "mlp");
  auto& g_idx = t.at("mlp.g_idx");
  int32_t g;
  std::memcpy(&g, &g_idx.bytes[0], 4);
  g = (g + 1) % 8;  // one feature moves to the next group
  std::memcpy(&g_idx.bytes[0], &g, 4);
  const std::string e = decode_error(t.open(), "gptq_4bit_g32_actorder_v2", "mlp");
  EXPECT_HAS(e, "tensor mlp.g_idx gives group");
  EXPECT_HAS(e, "input features, not the group size 32");
}

TEST(CheckpointFormatErrors, AsymmetricEightBitOutsideInt8) {
  TempCheckpoint t("int8-range");
  t.add_fixture("ct_int8_g128_asym", "mlp");
  auto& zp = t.at("mlp.weight_zero_point");
  zp.bytes[0] = char(-128);  // row 0, group 0: some q - zp now exceed 127
  auto& w = t.at("mlp.weight");
  w.bytes[0] = char(127);
  EXPECT_HAS(decode_error(t.open(), "ct_int8_g128_asym", "mlp"),
             "mlp.weight row 0, input feature 0: q - zero = 255 does not fit int8");
}

TEST(CheckpointFormatErrors, Fp8NaNWeight) {
  TempCheckpoint t("fp8-nan");
  t.add_fixture("fp8_block", "mlp");
  t.at("mlp.weight").bytes[5 * 256 + 7] = char(0x7F);
  EXPECT_HAS(decode_error(t.open(), "fp8_block", "mlp"), "tensor mlp.weight gives row 5, input feature 7 the value nan");
}

TEST(CheckpointFormatErrors, MissingTensorNamesItAndTheDenseWeight) {
  TempCheckpoint t("missing");
  t.add_fixture("awq_g32", "mlp");
  t.remove("mlp.scales");
  t.add("mlp.weight", {"BF16", {32, 256}, std::string(32 * 256 * 2, '\0')});
  const std::string e = decode_error(t.open(), "awq_g32", "mlp");
  EXPECT_HAS(e, "module mlp is AWQ 4-bit, group 32, asymmetric");
  EXPECT_HAS(e, "no tensor mlp.scales");
  EXPECT_HAS(e, "it has mlp.weight, BF16");
}

// A GPTQ model as the official Qwen3.5 GPTQ-Int4 stores it: attention dense, the MLP quantized.
class QuantizationTensors : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* proj : {"gate_proj", "up_proj"}) t_.add_fixture("gptq_4bit_g128_asym_v1", layer_ + "mlp." + proj);
    t_.add(layer_ + "self_attn.q_proj.weight", {"BF16", {32, 256}, std::string(32 * 256 * 2, '\0')});
    t_.add_fixture("gptq_4bit_g128_asym_v1", "mtp.layers.0.mlp.gate_proj");
  }
  std::string check_error(const std::set<std::string>& extra = {}) {
    std::set<std::string> consumed = {layer_ + "mlp.gate_proj", layer_ + "mlp.up_proj", layer_ + "self_attn.q_proj"};
    consumed.insert(extra.begin(), extra.end());
    json q = fixture("gptq_4bit_g128_asym_v1").config;
    q["dynamic"] = {{"-:.*attn.*", json::object()}};
    try {
      check_quantization_tensors(t_.open(), config_of(q), consumed, {"mtp.", "model.visual."});
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  TempCheckpoint t_{::testing::UnitTest::GetInstance()->current_test_info()->name()};
  const std::string layer_ = "model.language_model.layers.0.";
};

TEST_F(QuantizationTensors, ConsistentCheckpointPasses) { EXPECT_EQ(check_error(), ""); }

TEST_F(QuantizationTensors, UnclaimedScaleOfAnUnreadModule) {
  t_.add(layer_ + "mlp.down_proj.scales", {"F16", {2, 32}, std::string(2 * 32 * 2, '\0')});
  const std::string e = check_error();
  EXPECT_HAS(e, "1 quantization tensor(s) belong to no quantized module the model reads");
  EXPECT_HAS(e, layer_ + "mlp.down_proj.scales");
}

TEST_F(QuantizationTensors, UnclaimedScaleOfADenseModule) {
  t_.add(layer_ + "self_attn.q_proj.weight_scale", {"F32", {32, 1}, std::string(32 * 4, '\0')});
  EXPECT_HAS(check_error(), layer_ + "self_attn.q_proj.weight_scale");
}

TEST_F(QuantizationTensors, MissingScaleOfAConsumedQuantizedModule) {
  t_.remove(layer_ + "mlp.up_proj.scales");
  const std::string e = check_error();
  EXPECT_HAS(e, "lacks 1 tensor(s)");
  EXPECT_HAS(e, layer_ + "mlp.up_proj.scales (the module is GPTQ 4-bit, group 128, asymmetric)");
}

TEST_F(QuantizationTensors, QuantizedModuleTheModelDoesNotReadIsUnclaimed) {
  t_.add_fixture("gptq_4bit_g128_asym_v1", layer_ + "mlp.down_proj");
  const std::string e = check_error();
  EXPECT_HAS(e, "4 quantization tensor(s)");
  EXPECT_HAS(e, layer_ + "mlp.down_proj.g_idx");
  EXPECT_EQ(check_error({layer_ + "mlp.down_proj"}), "");
}

}  // namespace
}  // namespace dcu
