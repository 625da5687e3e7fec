// Single-thread encode/decode throughput of dcu::text::Tokenizer on a large mixed text: the golden
// strings (code, CJK, emoji, combining marks) repeated, plus the license texts under
// /usr/share/common-licenses. Build and run from the repository root:
//   g++ -std=c++20 -O2 -Isrc bench/tokenizer_bench.cpp build/<dir>/src/text/libdcuserve_text.a
//       build/<dir>/src/core/libdcuserve_core.a -lfmt -lpcre2-8 -lutf8proc -o /tmp/tokenizer_bench   (one line)
//   build/cpu/bench/tokenizer_bench [tokenizer.json] [corpus-out.txt]
// (default tokenizer: the Qwen3 one of scripts/fetch_test_tokenizers.sh). With corpus-out, the text is
// also written there, so tools/tokenizer_bench_hf.py can time Hugging Face tokenizers on the same bytes.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "text/tokenizer.h"

namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string build_corpus() {
  const auto golden = nlohmann::json::parse(read_file("tests/data/tokenizer/qwen3-tokenizer-golden.json"));
  std::string mixed;
  for (const auto& entry : golden["encode"]) mixed += entry["text"].get<std::string>() + "\n";
  std::string corpus;
  for (int i = 0; i < 40; ++i) corpus += mixed;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/share/common-licenses", error))
    if (entry.is_regular_file()) corpus += read_file(entry.path());
  return corpus;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "third_party/downloads/qwen3-tokenizer/tokenizer.json";
  auto start = std::chrono::steady_clock::now();
  const dcu::text::Tokenizer tokenizer = dcu::text::Tokenizer::load(path);
  std::printf("load %s: %.3f s\n", path.c_str(), seconds_since(start));

  const std::string corpus = build_corpus();
  if (argc > 2) std::ofstream(argv[2], std::ios::binary) << corpus;
  const double megabytes = double(corpus.size()) / 1e6;
  std::printf("corpus: %.2f MB\n", megabytes);

  // The first pass fills the word cache; later passes show the steady state of a busy server.
  std::vector<int32_t> ids;
  for (int pass = 0; pass < 3; ++pass) {
    start = std::chrono::steady_clock::now();
    ids = tokenizer.encode(corpus);
    const double s = seconds_since(start);
    std::printf("encode pass %d: %.3f s, %.1f MB/s, %zu tokens (%.2f bytes/token)\n", pass, s, megabytes / s,
                ids.size(), double(corpus.size()) / double(ids.size()));
  }
  start = std::chrono::steady_clock::now();
  const std::string text = tokenizer.decode(ids, false);
  const double s = seconds_since(start);
  std::printf("decode: %.3f s, %.1f MB/s, round trip %s\n", s, megabytes / s, text == corpus ? "exact" : "differs (NFC)");
  return 0;
}
