#include "text/tokenizer_bpe.h"

#include <functional>
#include <mutex>
#include <queue>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/unicode.h"

namespace dcu::text {

// Recently encoded words, split in shards so request threads rarely wait on each other. A full shard
// is simply emptied: the cache only saves time, it never changes results.
class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 64;

  bool find(std::string_view word, std::vector<int32_t>& ids) const {
    Shard& shard = shard_for(word);
    std::lock_guard lock(shard.mutex);
    const auto it = shard.words.find(word);
    if (it == shard.words.end()) return false;
    ids.insert(ids.end(), it->second.begin(), it->second.end());
    return true;
  }

  void insert(std::string_view word, std::vector<int32_t> ids) const {
    Shard& shard = shard_for(word);
    std::lock_guard lock(shard.mutex);
    if (shard.words.size() >= kWordsPerShard) shard.words.clear();
    shard.words.emplace(std::string(word), std::move(ids));
  }

 private:
  static constexpr size_t kShards = 32;
  static constexpr size_t kWordsPerShard = 2048;
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Shard {
    std::mutex mutex;
    std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> words;
  };
  Shard& shard_for(std::string_view word) const { return shards_[StringHash{}(word) % kShards]; }
  mutable std::array<Shard, kShards> shards_;
};

void BpeModel::PairMap::reserve(size_t count) {
  size_t capacity = 16;
  shift_ = 60;
  while (capacity < count * 2) {
    capacity *= 2;
    --shift_;
  }
  keys_.assign(capacity, UINT64_MAX);
  values_.assign(capacity, Merge{});
}

void BpeModel::PairMap::insert(int32_t left, int32_t right, Merge merge) {
  const uint64_t k = key(left, right);
  const size_t mask = keys_.size() - 1;
  size_t i = slot(k);
  while (keys_[i] != UINT64_MAX && keys_[i] != k) i = (i + 1) & mask;
  keys_[i] = k;
  values_[i] = merge;  // a repeated pair keeps its last rank, as HF's map does
}

const BpeModel::Merge* BpeModel::PairMap::find(int32_t left, int32_t right) const {
  const uint64_t k = key(left, right);
  const size_t mask = keys_.size() - 1;
  for (size_t i = slot(k);; i = (i + 1) & mask) {
    if (keys_[i] == k) return &values_[i];
    if (keys_[i] == UINT64_MAX) return nullptr;
  }
}

BpeModel::BpeModel() : cache_(std::make_unique<WordCache>()) {}
BpeModel::BpeModel(BpeModel&&) noexcept = default;
BpeModel& BpeModel::operator=(BpeModel&&) noexcept = default;
BpeModel::~BpeModel() = default;

namespace {

std::pair<std::string, std::string> parse_merge(const nlohmann::json& merge, size_t index) {
  if (merge.is_string()) {
    const std::string& line = merge.get_ref<const std::string&>();
    const size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size())
      fail("merge #{} \"{}\" is not two tokens separated by a space", index, line);
    return {line.substr(0, space), line.substr(space + 1)};
  }
  if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string())
    return {merge[0].get<std::string>(), merge[1].get<std::string>()};
  fail("merge #{} must be \"a b\" or [\"a\", \"b\"], got {}", index, merge.dump());
}

bool is_set_string(const nlohmann::json& model, const char* key) {
  return model.contains(key) && model[key].is_string() && !model[key].get_ref<const std::string&>().empty();
}

}  // namespace

BpeModel BpeModel::from_json(const nlohmann::json& model) {
  if (!model.is_object()) fail("\"model\" is missing or not an object");
  const std::string type = model.value("type", std::string("BPE"));
  if (type != "BPE") fail("unsupported model type \"{}\" (only BPE is supported)", type);
  if (!model.contains("vocab") || !model["vocab"].is_object())
    fail("the BPE model has no \"vocab\" object");
  if (!model.contains("merges") || !model["merges"].is_array())
    fail("the BPE model has no \"merges\" array");
  if (is_set_string(model, "continuing_subword_prefix") || is_set_string(model, "end_of_word_suffix"))
    fail("BPE continuing_subword_prefix / end_of_word_suffix are not supported");
  if (model.contains("dropout") && model["dropout"].is_number() && model["dropout"].get<double>() > 0)
    fail("BPE dropout is not supported");
  if (model.value("byte_fallback", false)) fail("BPE byte_fallback is not supported");

  BpeModel bpe;
  for (const auto& [token, id_json] : model["vocab"].items()) {
    if (!id_json.is_number_integer() || id_json.get<int64_t>() < 0 || id_json.get<int64_t>() >= INT32_MAX)
      fail("vocab entry \"{}\" has an invalid id {}", token, id_json.dump());
    const auto id = id_json.get<int32_t>();
    bpe.vocab_[token] = id;
    if (static_cast<size_t>(id) >= bpe.id_to_token_.size()) {
      bpe.id_to_token_.resize(id + 1);
      bpe.has_id_.resize(id + 1, false);
    }
    bpe.id_to_token_[id] = token;
    bpe.has_id_[id] = true;
  }

  const auto& merges = model["merges"];
  bpe.merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto [left, right] = parse_merge(merges[rank], rank);
    const auto left_id = bpe.token_to_id(left);
    const auto right_id = bpe.token_to_id(right);
    const auto merged_id = bpe.token_to_id(left + right);
    if (!left_id || !right_id || !merged_id)
      fail("merge #{} \"{} {}\" uses a token missing from the vocab (\"{}\")", rank, left, right,
           !left_id ? left : !right_id ? right : left + right);
    bpe.merges_.insert(*left_id, *right_id, Merge{static_cast<uint32_t>(rank), *merged_id});
  }

  for (int b = 0; b < 256; ++b) {
    std::string character;
    utf8_append(character, byte_to_char()[b]);
    bpe.byte_ids_[b] = bpe.token_to_id(character).value_or(-1);
  }
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    const std::string unk = model["unk_token"];
    bpe.unk_id_ = bpe.token_to_id(unk);
    if (!bpe.unk_id_) fail("unk_token \"{}\" is not in the vocab", unk);
  }
  bpe.fuse_unk_ = model.value("fuse_unk", false);
  bpe.ignore_merges_ = model.value("ignore_merges", false);
  return bpe;
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  const auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || !has_id_[id]) return nullptr;
  return &id_to_token_[id];
}

// Repeatedly merges the adjacent pair of lowest rank (leftmost first) until none is left. Short words
// (nearly all) rescan a small array; long ones use a priority queue over a linked list, O(n log n).
void BpeModel::merge_symbols(std::vector<int32_t>& symbols) const {
  constexpr size_t kShortWord = 24;
  if (symbols.size() < 2) return;
  if (symbols.size() <= kShortWord) {
    for (;;) {
      const Merge* best = nullptr;
      size_t best_pos = 0;
      for (size_t i = 0; i + 1 < symbols.size(); ++i) {
        const Merge* m = merges_.find(symbols[i], symbols[i + 1]);
        if (m && (!best || m->rank < best->rank)) {
          best = m;
          best_pos = i;
        }
      }
      if (!best) return;
      symbols[best_pos] = best->new_id;
      symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best_pos) + 1);
    }
  }
  const auto n = static_cast<int32_t>(symbols.size());
  struct Candidate {
    uint32_t rank;
    int32_t pos;
    int32_t left;
    int32_t right;
    int32_t new_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::vector<int32_t> next(n), prev(n);
  for (int32_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  std::vector<Candidate> storage;
  storage.reserve(n);
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue(std::greater<>{}, std::move(storage));
  auto consider = [&](int32_t pos) {
    const int32_t right = next[pos];
    if (right < 0) return;
    if (const Merge* m = merges_.find(symbols[pos], symbols[right]))
      queue.push({m->rank, pos, symbols[pos], symbols[right], m->new_id});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    const int32_t right = next[c.pos];
    // Stale when either side has been merged since the candidate was queued (merged-away symbols
    // are marked by prev == -2).
    if (prev[c.pos] == -2 || right < 0 || symbols[c.pos] != c.left || symbols[right] != c.right) continue;
    symbols[c.pos] = c.new_id;
    next[c.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.pos;
    prev[right] = -2;
    if (prev[c.pos] >= 0) consider(prev[c.pos]);
    consider(c.pos);
  }
  size_t out = 0;
  for (int32_t i = 0; i >= 0; i = next[i]) symbols[out++] = symbols[i];
  symbols.resize(out);
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& ids) const {
  const bool cacheable = word.size() <= WordCache::kMaxWordBytes;
  if (cacheable && cache_->find(word, ids)) return;
  std::vector<int32_t> symbols;
  if (ignore_merges_) {
    std::string token;
    for (unsigned char b : word) utf8_append(token, byte_to_char()[b]);
    if (const auto id = token_to_id(token)) symbols.push_back(*id);
  }
  if (symbols.empty()) {
    symbols.reserve(word.size());
    for (unsigned char b : word) {
      if (byte_ids_[b] >= 0) {
        symbols.push_back(byte_ids_[b]);
      } else if (unk_id_ && !(fuse_unk_ && !symbols.empty() && symbols.back() == *unk_id_)) {
        symbols.push_back(*unk_id_);
      }
    }
    merge_symbols(symbols);
  }
  ids.insert(ids.end(), symbols.begin(), symbols.end());
  if (cacheable) cache_->insert(word, std::move(symbols));
}

}  // namespace dcu::text
