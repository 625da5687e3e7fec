#include "structured/token_grammar.h"

namespace dcu::structured {
namespace {

// Past this the cache stops growing (walks are still computed, just not kept).
constexpr size_t kMaxCachedBytes = size_t(256) << 20;

}  // namespace

TokenGrammar::TokenGrammar(std::shared_ptr<const CompiledGrammar> grammar,
                           std::shared_ptr<const TokenVocabulary> vocabulary)
    : grammar_(std::move(grammar)), vocabulary_(std::move(vocabulary)) {}

std::shared_ptr<PureWalk> TokenGrammar::compute(int32_t state) const {
  const TokenVocabulary& vocab = *vocabulary_;
  std::vector<uint32_t> bits(size_t(mask_words(vocab.size())), 0);
  auto walk = std::make_shared<PureWalk>();
  std::vector<CompiledGrammar::Transitions> stack;
  walk_pure(
      *grammar_, vocab, 0, state, stack,
      [&](size_t node) {
        for (int32_t id : vocab.tokens(node)) bits[size_t(id >> 5)] |= 1u << (id & 31);
      },
      [&](size_t node, int32_t next) { walk->exits.push_back({int32_t(node), next}); });
  walk->accepted = TokenSet(std::move(bits), vocab.size());
  return walk;
}

std::shared_ptr<const PureWalk> TokenGrammar::pure_walk(int32_t state) const {
  {
    std::lock_guard lock(mutex_);
    if (auto it = walks_.find(state); it != walks_.end()) return it->second;
  }
  std::shared_ptr<const PureWalk> walk = compute(state);
  std::lock_guard lock(mutex_);
  const size_t bytes = walk->accepted.bytes() + 8 * walk->exits.size();
  if (cached_bytes_ + bytes <= kMaxCachedBytes) {
    auto [it, fresh] = walks_.emplace(state, walk);
    if (fresh) cached_bytes_ += bytes;
    return it->second;
  }
  return walk;
}

}  // namespace dcu::structured
