#include "text/tokenizer.h"

#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/tokenizer_added.h"
#include "text/tokenizer_bpe.h"
#include "text/tokenizer_normalizer.h"
#include "text/tokenizer_pretokenizer.h"
#include "text/unicode.h"

namespace dcu::text {

struct Tokenizer::Impl {
  BpeModel model;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  AddedTokenMatcher raw_added;         // added tokens with normalized=false, matched before normalization
  AddedTokenMatcher normalized_added;  // the others, matched on normalized text
  std::unordered_map<std::string, int32_t> added_ids;
  // Per id: decoded bytes, whether the id exists, whether it is special.
  std::vector<std::string> bytes;
  std::vector<uint8_t> known;
  std::vector<uint8_t> special;

  void encode_plain(std::string_view text, std::vector<int32_t>& ids) const;
};

namespace {

nlohmann::json parse_json(std::string_view text, const std::string& origin) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON: {}", origin, e.what());
  }
}

std::vector<AddedToken> parse_added_tokens(const nlohmann::json& root, const BpeModel& model) {
  std::vector<AddedToken> tokens;
  if (!root.contains("added_tokens") || root["added_tokens"].is_null()) return tokens;
  if (!root["added_tokens"].is_array()) fail("\"added_tokens\" must be an array");
  for (const auto& entry : root["added_tokens"]) {
    if (!entry.is_object() || !entry.contains("content") || !entry["content"].is_string() ||
        !entry.contains("id") || !entry["id"].is_number_integer() || entry["id"].get<int64_t>() < 0 ||
        entry["id"].get<int64_t>() >= INT32_MAX)
      fail("each added token needs a string \"content\" and a valid \"id\", got {}", entry.dump());
    AddedToken token;
    token.content = entry["content"];
    if (token.content.empty()) continue;  // HF ignores empty added tokens
    // A token already in the model vocab keeps the model's id, as HF's AddedVocabulary does.
    token.id = model.token_to_id(token.content).value_or(entry["id"].get<int32_t>());
    token.special = entry.value("special", false);
    token.single_word = entry.value("single_word", false);
    token.lstrip = entry.value("lstrip", false);
    token.rstrip = entry.value("rstrip", false);
    token.normalized = entry.value("normalized", !token.special);
    tokens.push_back(std::move(token));
  }
  return tokens;
}

void check_decoder(const nlohmann::json& root) {
  const auto& decoder = root.contains("decoder") ? root["decoder"] : nlohmann::json();
  if (!decoder.is_object() || decoder.value("type", std::string()) != "ByteLevel")
    fail("unsupported decoder {} (only ByteLevel is supported)", decoder.dump());
}

// HF's ByteLevel decoder: a token made only of byte-level characters gives those bytes; any other
// token (an added token with a space, say) gives its own UTF-8 text.
std::string byte_level_decode(const std::string& token) {
  std::string out;
  out.reserve(token.size());
  for (size_t pos = 0; pos < token.size();) {
    const int byte = char_to_byte(utf8_next(token, pos));
    if (byte < 0) return token;
    out.push_back(static_cast<char>(byte));
  }
  return out;
}

}  // namespace

Tokenizer Tokenizer::from_json_text(std::string_view json_text, const std::string& origin) {
  const nlohmann::json root = parse_json(json_text, origin);
  try {
    if (!root.is_object()) fail("the top level must be an object");
    if (!root.contains("model")) fail("no \"model\" section");
    auto impl = std::make_unique<Impl>(Impl{BpeModel::from_json(root["model"]),
                                            Normalizer::from_json(root.value("normalizer", nlohmann::json())),
                                            PreTokenizer::from_json(root.value("pre_tokenizer", nlohmann::json())),
                                            {}, {}, {}, {}, {}, {}});
    if (!impl->pre_tokenizer.byte_level())
      fail("only byte-level BPE is supported (the pre_tokenizer has no ByteLevel step)");
    check_decoder(root);

    std::vector<AddedToken> raw_tokens, normalized_tokens;
    std::vector<std::string> raw_patterns, normalized_patterns;
    const std::vector<AddedToken> added = parse_added_tokens(root, impl->model);
    int32_t max_id = impl->model.max_id();
    for (const AddedToken& token : added) max_id = std::max(max_id, token.id);
    impl->bytes.resize(max_id + 1);
    impl->known.resize(max_id + 1, 0);
    impl->special.resize(max_id + 1, 0);
    for (int32_t id = 0; id <= impl->model.max_id(); ++id) {
      if (const std::string* token = impl->model.id_to_token(id)) {
        impl->bytes[id] = byte_level_decode(*token);
        impl->known[id] = 1;
      }
    }
    for (const AddedToken& token : added) {
      impl->added_ids[token.content] = token.id;
      impl->bytes[token.id] = byte_level_decode(token.content);
      impl->known[token.id] = 1;
      impl->special[token.id] = token.special;
      if (token.normalized) {
        normalized_tokens.push_back(token);
        normalized_patterns.push_back(impl->normalizer.apply(utf8_replace_invalid(token.content)));
      } else {
        raw_tokens.push_back(token);
        raw_patterns.push_back(token.content);
      }
    }
    impl->raw_added = AddedTokenMatcher(std::move(raw_tokens), std::move(raw_patterns));
    impl->normalized_added = AddedTokenMatcher(std::move(normalized_tokens), std::move(normalized_patterns));
    return Tokenizer(std::move(impl));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: unexpected structure: {}", origin, e.what());
  } catch (const Error& e) {
    fail("{}: {}", origin, e.what());
  }
}

Tokenizer Tokenizer::load(const std::string& file_or_dir) {
  std::filesystem::path path(file_or_dir);
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) path /= "tokenizer.json";
  std::ifstream file(path, std::ios::binary);
  if (!file) fail("cannot open tokenizer file {}", path.string());
  std::ostringstream text;
  text << file.rdbuf();
  return from_json_text(text.str(), path.string());
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

void Tokenizer::Impl::encode_plain(std::string_view text, std::vector<int32_t>& ids) const {
  std::vector<std::string_view> words;
  std::deque<std::string> storage;
  pre_tokenizer.split(text, words, storage);
  for (std::string_view word : words) model.encode_word(word, ids);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::string repaired;
  if (!utf8_is_valid(text)) {
    repaired = utf8_replace_invalid(text);
    text = repaired;
  }
  std::vector<int32_t> ids;
  std::vector<Segment> raw_segments, normalized_segments;
  impl_->raw_added.split(text, raw_segments);
  for (const Segment& raw : raw_segments) {
    if (raw.token_id >= 0) {
      ids.push_back(raw.token_id);
      continue;
    }
    const std::string_view piece = text.substr(raw.start, raw.end - raw.start);
    std::string normalized;
    std::string_view plain = piece;
    if (!impl_->normalizer.empty()) {
      normalized = impl_->normalizer.apply(piece);
      plain = normalized;
    }
    if (impl_->normalized_added.empty()) {
      impl_->encode_plain(plain, ids);
      continue;
    }
    impl_->normalized_added.split(plain, normalized_segments);
    for (const Segment& segment : normalized_segments) {
      if (segment.token_id >= 0) ids.push_back(segment.token_id);
      else impl_->encode_plain(plain.substr(segment.start, segment.end - segment.start), ids);
    }
  }
  return ids;
}

bool Tokenizer::has_id(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->known.size() && impl_->known[id];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string bytes;
  for (int32_t id : ids) {
    if (!has_id(id) || (skip_special_tokens && impl_->special[id])) continue;
    bytes += impl_->bytes[id];
  }
  return utf8_is_valid(bytes) ? bytes : utf8_replace_invalid(bytes);
}

std::string Tokenizer::token_bytes(int32_t id) const {
  if (!has_id(id)) fail("token id {} is not in the tokenizer's vocabulary (size {})", id, vocab_size());
  return impl_->bytes[id];
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const auto it = impl_->added_ids.find(std::string(token)); it != impl_->added_ids.end()) return it->second;
  return impl_->model.token_to_id(token);
}

bool Tokenizer::is_special(int32_t id) const { return has_id(id) && impl_->special[id]; }

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->known.size()); }

}  // namespace dcu::text
