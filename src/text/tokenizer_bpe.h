#pragma once
// The byte-level BPE model of tokenizer.json: vocab, ranked merges, and the merge loop that turns one
// pre-tokenized word (raw bytes) into token ids, with a cache of recent words.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dcu::text {

class WordCache;

class BpeModel {
 public:
  static BpeModel from_json(const nlohmann::json& model);  // throws dcu::Error with the reason
  BpeModel(BpeModel&&) noexcept;
  BpeModel& operator=(BpeModel&&) noexcept;
  ~BpeModel();

  // Appends the ids of one word given as raw bytes. Bytes whose character is not in the vocab are
  // dropped (or become unk_token when the model has one), as Hugging Face does.
  void encode_word(std::string_view word, std::vector<int32_t>& ids) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The vocab string of an id (byte-level characters), or nullptr when the model has no such id.
  const std::string* id_to_token(int32_t id) const;
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }

 private:
  BpeModel();
  struct Merge {
    uint32_t rank;
    int32_t new_id;
  };
  // Open-addressing map from a pair of token ids to its merge; the merge loop's hot lookup.
  class PairMap {
   public:
    void reserve(size_t count);
    void insert(int32_t left, int32_t right, Merge merge);
    const Merge* find(int32_t left, int32_t right) const;

   private:
    static uint64_t key(int32_t left, int32_t right) {
      return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    }
    size_t slot(uint64_t k) const { return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> shift_); }
    std::vector<uint64_t> keys_;
    std::vector<Merge> values_;
    int shift_ = 64;
  };

  void merge_symbols(std::vector<int32_t>& symbols) const;

  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_id_;
  std::array<int32_t, 256> byte_ids_{};  // id of each byte's single-character token, or -1
  PairMap merges_;
  std::optional<int32_t> unk_id_;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  std::unique_ptr<WordCache> cache_;
};

}  // namespace dcu::text
