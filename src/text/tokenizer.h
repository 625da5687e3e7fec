#pragma once
// A Hugging Face `tokenizer.json` byte-level BPE tokenizer that gives the same ids as the `tokenizers`
// library: normalizer, added/special tokens, pre-tokenizers, BPE merges, ByteLevel decoder.
//
// Input text that is not valid UTF-8 is first repaired: each invalid or truncated sequence becomes
// U+FFFD (as Python's bytes.decode(errors="replace") would give HF a str), then encoded.
// All const methods are safe to call from several threads at once.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dcu::text {

class Tokenizer {
 public:
  // `file_or_dir`: a tokenizer.json, or a model folder holding one. Throws dcu::Error naming the problem.
  static Tokenizer load(const std::string& file_or_dir);
  // The same from the text of a tokenizer.json; `origin` names it in error messages.
  static Tokenizer from_json_text(std::string_view json_text, const std::string& origin = "tokenizer.json");

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // As HF `encode(text, add_special_tokens=False).ids`: added and special tokens in the text are recognised.
  std::vector<int32_t> encode(std::string_view text) const;
  // As HF `decode(ids, skip_special_tokens)`: the bytes of all tokens joined, invalid UTF-8 replaced by
  // U+FFFD. Ids the tokenizer does not know are skipped, as HF does.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const;
  // Raw bytes of one token after byte-level decoding (may be part of a UTF-8 character).
  // Throws dcu::Error for an id the tokenizer does not know.
  std::string token_bytes(int32_t id) const;
  // Whether `id` exists in the model vocab or the added tokens.
  bool has_id(int32_t id) const;
  // `token` in vocab form (byte-level characters for model tokens, content for added tokens).
  std::optional<int32_t> token_to_id(std::string_view token) const;
  bool is_special(int32_t id) const;
  // One more than the largest id of the model vocab and the added tokens.
  int32_t vocab_size() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dcu::text
