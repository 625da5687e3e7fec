// Loading a broken model folder fails with a message that names the problem, never a crash.

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "core/error.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "model/weights.h"

namespace dcu {
namespace {

namespace fs = std::filesystem;
const fs::path kModel = "tests/data/tiny-qwen35";

// A scratch copy of the tiny model that each test breaks in its own way.
class BrokenModel : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dcuserve-broken-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const char* f : {"config.json", "model.safetensors", "generation_config.json"})
      fs::copy_file(kModel / f, dir_ / f);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Loads config and weights; returns the error message ("" when it loaded).
  std::string load_error() {
    try {
      auto backend = make_cpu_backend();
      ModelConfig c = load_model_config(dir_.string());
      load_weights(dir_.string(), c, *backend);
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  }
  nlohmann::json config() { return nlohmann::json::parse(std::ifstream(dir_ / "config.json")); }
  void write_config(const nlohmann::json& j) { std::ofstream(dir_ / "config.json") << j.dump(); }
  std::string read_weights() {
    std::ifstream in(dir_ / "model.safetensors", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void write_weights(const std::string& bytes) {
    std::ofstream(dir_ / "model.safetensors", std::ios::binary) << bytes;
  }
  // Rewrites the safetensors header with `edit` applied; the data section is kept.
  void edit_header(const std::function<void(nlohmann::json&)>& edit) {
    std::string bytes = read_weights();
    uint64_t n;
    std::memcpy(&n, bytes.data(), 8);
    auto header = nlohmann::json::parse(bytes.substr(8, n));
    edit(header);
    std::string text = header.dump();
    text.resize((text.size() + 7) / 8 * 8, ' ');
    uint64_t m = text.size();
    std::string out(reinterpret_cast<const char*>(&m), 8);
    write_weights(out + text + bytes.substr(8 + n));
  }

  fs::path dir_;
};

TEST_F(BrokenModel, IntactCopyLoads) { EXPECT_EQ(load_error(), ""); }

TEST_F(BrokenModel, MissingFolder) {
  fs::remove_all(dir_);
  EXPECT_NE(load_error().find("no config.json"), std::string::npos);
}

TEST_F(BrokenModel, MissingWeights) {
  fs::remove(dir_ / "model.safetensors");
  EXPECT_NE(load_error().find("no model.safetensors"), std::string::npos);
}

TEST_F(BrokenModel, TruncatedWeights) {
  std::string bytes = read_weights();
  write_weights(bytes.substr(0, bytes.size() / 2));
  EXPECT_NE(load_error().find("truncated or corrupt"), std::string::npos) << load_error();
}

TEST_F(BrokenModel, TruncatedHeader) {
  write_weights(read_weights().substr(0, 100));
  EXPECT_NE(load_error().find("truncated or corrupt"), std::string::npos) << load_error();
}

TEST_F(BrokenModel, GarbageHeader) {
  std::string bytes = read_weights();
  for (size_t i = 8; i < 40; ++i) bytes[i] = '\x01';
  write_weights(bytes);
  EXPECT_NE(load_error().find("corrupt safetensors header"), std::string::npos) << load_error();
}

TEST_F(BrokenModel, WrongShape) {
  edit_header([](nlohmann::json& h) { h["model.language_model.norm.weight"]["shape"] = {128, 2}; });
  EXPECT_NE(load_error().find("has shape [128, 2] but the config needs [256]"), std::string::npos) << load_error();
}

TEST_F(BrokenModel, WrongDtype) {
  edit_header([](nlohmann::json& h) {
    auto& t = h["model.language_model.norm.weight"];
    t["dtype"] = "I16";
  });
  EXPECT_NE(load_error().find("dtype I16"), std::string::npos) << load_error();
}

TEST_F(BrokenModel, MissingTensor) {
  edit_header([](nlohmann::json& h) { h.erase("model.language_model.layers.3.self_attn.k_norm.weight"); });
  EXPECT_NE(load_error().find("layers.3.self_attn.k_norm.weight is missing"), std::string::npos) << load_error();
}

TEST_F(BrokenModel, UnknownModelType) {
  auto c = config();
  c["text_config"]["model_type"] = "llama";
  write_config(c);
  EXPECT_NE(load_error().find("unsupported model_type \"llama\""), std::string::npos) << load_error();
}

TEST_F(BrokenModel, MissingConfigField) {
  auto c = config();
  c["text_config"].erase("hidden_size");
  write_config(c);
  EXPECT_NE(load_error().find("missing required field \"hidden_size\""), std::string::npos) << load_error();
}

TEST_F(BrokenModel, WrongFieldType) {
  auto c = config();
  c["text_config"]["num_hidden_layers"] = "eight";
  write_config(c);
  EXPECT_NE(load_error().find("\"num_hidden_layers\" has the wrong type"), std::string::npos) << load_error();
}

TEST_F(BrokenModel, InconsistentHeads) {
  auto c = config();
  c["text_config"]["linear_num_value_heads"] = 5;
  write_config(c);
  EXPECT_NE(load_error().find("not a multiple of linear_num_key_heads"), std::string::npos) << load_error();
}

TEST_F(BrokenModel, ConfigNotJson) {
  std::ofstream(dir_ / "config.json") << "{ not json";
  EXPECT_NE(load_error().find("not valid JSON"), std::string::npos) << load_error();
}

// Found reading the parser for fuzz/model_config_fuzz: numbers that do not fit their field were cast
// unchecked (undefined behaviour), and sizes computed from huge dimensions could overflow.
TEST_F(BrokenModel, ConfigNumbersOutOfTheirRange) {
  const nlohmann::json intact = config();
  for (const auto& [field, value] : std::vector<std::pair<const char*, nlohmann::json>>{
           {"num_hidden_layers", 1e300}, {"num_attention_heads", 3.5}, {"head_dim", -1e12}, {"vocab_size", 1e30}}) {
    auto c = intact;
    c["text_config"][field] = value;
    write_config(c);
    EXPECT_NE(load_error().find(std::string("\"") + field + "\" has the wrong type or is out of range"), std::string::npos)
        << field << ": " << load_error();
  }
  auto c = intact;
  c["text_config"]["hidden_size"] = int64_t(1) << 40;
  write_config(c);
  EXPECT_NE(load_error().find("\"hidden_size\" is 1099511627776, more than the 1048576 dcuserve accepts"), std::string::npos)
      << load_error();
  c = intact;
  c["text_config"]["num_hidden_layers"] = 2000000000;  // was 2e9 layer types pushed before any check
  write_config(c);
  EXPECT_NE(load_error().find("num_hidden_layers must be in 1..4096"), std::string::npos) << load_error();
  c = intact;
  c["text_config"]["rope_parameters"]["partial_rotary_factor"] = 1e30;
  write_config(c);
  EXPECT_NE(load_error().find("partial_rotary_factor must be in (0, 1]"), std::string::npos) << load_error();
}

// Found reading the parser for fuzz/model_config_fuzz: out-of-range sampling defaults were cast unchecked.
TEST(GenerationConfig, OutOfRangeValuesAreIgnored) {
  const GenerationDefaults d = parse_generation_defaults(
      R"({"temperature": 1e300, "top_k": 1e20, "max_new_tokens": -1e19, "top_p": 0.5, "eos_token_id": [-1, 7, 5e9, 8]})",
      "", "m");
  EXPECT_FALSE(d.temperature);
  EXPECT_FALSE(d.top_k);
  EXPECT_FALSE(d.max_new_tokens);
  EXPECT_EQ(d.top_p, 0.5f);
  EXPECT_EQ(d.eos_token_ids, (std::vector<int32_t>{7, 8}));
  EXPECT_THROW(parse_generation_defaults("[]", "", "m"), Error);
  try {
    parse_generation_defaults("", "{bad", "m");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("m/config.json: not valid JSON"), std::string::npos) << e.what();
  }
}

// Found reading the parser for fuzz/safetensors_header_fuzz: a shape whose byte count wraps around
// 64 bits passed as a tensor of a few bytes, and float or negative shapes were cast unchecked.
TEST_F(BrokenModel, ShapeWhoseSizeWrapsAroundIsRefused) {
  edit_header([](nlohmann::json& h) {
    auto& t = h["model.language_model.norm.weight"];
    t["shape"] = {uint64_t(1) << 32, uint64_t(1) << 32};  // x 4 bytes = 2^66, 0 modulo 2^64
    t["data_offsets"][1] = t["data_offsets"][0];
  });
  EXPECT_NE(load_error().find("holds 0 bytes but its shape and dtype need more than the file"), std::string::npos)
      << load_error();
  for (const nlohmann::json& bad : {nlohmann::json{1e20}, nlohmann::json{-4}, nlohmann::json{2.5}}) {
    edit_header([&](nlohmann::json& h) { h["model.language_model.norm.weight"]["shape"] = bad; });
    EXPECT_NE(load_error().find("is not a size or an offset"), std::string::npos) << bad << ": " << load_error();
  }
}

TEST_F(BrokenModel, ShardedCheckpointLoadsAndMissingShardIsNamed) {
  // Split into two shards with an index, as Hugging Face saves large models.
  std::string bytes = read_weights();
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  auto header = nlohmann::json::parse(bytes.substr(8, n));
  const std::string data = bytes.substr(8 + n);
  nlohmann::json parts[2] = {nlohmann::json::object(), nlohmann::json::object()};
  std::string blobs[2];
  nlohmann::json weight_map;
  int i = 0;
  for (auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    int shard = i++ % 2;
    auto off = entry["data_offsets"].get<std::vector<uint64_t>>();
    nlohmann::json e = entry;
    e["data_offsets"] = {blobs[shard].size(), blobs[shard].size() + (off[1] - off[0])};
    blobs[shard] += data.substr(off[0], off[1] - off[0]);
    parts[shard][name] = e;
    weight_map[name] = "model-0000" + std::to_string(shard + 1) + "-of-00002.safetensors";
  }
  for (int s = 0; s < 2; ++s) {
    std::string text = parts[s].dump();
    uint64_t m = text.size();
    std::ofstream(dir_ / ("model-0000" + std::to_string(s + 1) + "-of-00002.safetensors"), std::ios::binary)
        << std::string(reinterpret_cast<const char*>(&m), 8) << text << blobs[s];
  }
  std::ofstream(dir_ / "model.safetensors.index.json") << nlohmann::json{{"weight_map", weight_map}}.dump();
  fs::remove(dir_ / "model.safetensors");
  EXPECT_EQ(load_error(), "");
  fs::remove(dir_ / "model-00002-of-00002.safetensors");
  EXPECT_NE(load_error().find("shard model-00002-of-00002.safetensors listed in the index is missing"),
            std::string::npos) << load_error();
}

TEST(GenerationDefaults, ReadsEosIdsAndSampling) {
  GenerationDefaults d = load_generation_defaults("tests/data/tiny-qwen35");
  EXPECT_EQ(d.eos_token_ids, (std::vector<int32_t>{1000, 998}));  // generation_config.json of the fixture
  ASSERT_TRUE(d.top_k.has_value());
  EXPECT_EQ(*d.top_k, 20);
  EXPECT_FLOAT_EQ(*d.temperature, 0.7f);
}

TEST(ModelConfig, NestedAndTopLevelTextConfigsAgree) {
  auto root = nlohmann::json::parse(std::ifstream(kModel / "config.json"));
  ModelConfig nested = parse_model_config(root.dump(), "nested");
  ModelConfig flat = parse_model_config(root["text_config"].dump(), "flat");
  EXPECT_EQ(nested.hidden_size, 256);
  EXPECT_EQ(flat.hidden_size, nested.hidden_size);
  EXPECT_EQ(flat.num_full_attention_layers(), 2);
  EXPECT_EQ(nested.rotary_dim, 16);  // head_dim 64 * partial_rotary_factor 0.25
  EXPECT_EQ(nested.linear_conv_dim(), 2 * 2 * 32 + 6 * 32);
}

TEST(ModelConfig, BuiltinFamilyParameterCounts) {
  // Published sizes: 27B has ~26.9B text parameters (no vision, no MTP); 0.8B ~0.75B.
  EXPECT_NEAR(double(builtin_config("27B")->parameter_count()) / 1e9, 26.9, 0.3);
  EXPECT_NEAR(double(builtin_config("0.8B")->parameter_count()) / 1e9, 0.75, 0.06);
  EXPECT_EQ(builtin_config("27B")->kv_bytes_per_token(DType::BF16), 64 * 1024);  // spec §4.4
  EXPECT_EQ(builtin_config("27B")->kv_bytes_per_token(DType::I8), 32 * 1024 + 16 * 2 * 4 * 4);  // + scales
  EXPECT_FALSE(builtin_config("3B").has_value());
}

}  // namespace
}  // namespace dcu
