#pragma once
// An Earley parser over bytes for a CompiledGrammar. Items are (automaton state, origin position);
// one item set per consumed byte, kept on a stack so that the token-mask walk and rollback pop sets
// as cheaply as they push them. Rules are DFAs, so a byte inside a string or number moves one item.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_set>
#include <vector>

#include "structured/compiled_grammar.h"

namespace dcu::structured {

class EarleyParser {
 public:
  struct Item {
    int32_t state = 0;
    int32_t origin = 0;  // the set where its rule started
  };

  explicit EarleyParser(const CompiledGrammar& grammar);

  // Consumes a byte as a new set; false (and nothing pushed) when the byte cannot come next.
  bool scan(uint8_t byte);
  // Pushes a set holding `item` and its closure: the mask walk's way back from a pure byte run,
  // which consumed bytes without sets (no item can start inside such a run).
  void push_item(Item item);
  void pop() { truncate(sets() - 1); }
  void truncate(size_t sets);
  size_t sets() const { return begins_.size(); }

  bool can_end() const;       // the whole input so far is a complete output
  bool can_continue() const;  // some byte may follow
  // The last set's only item when it is pure (only bytes move it): the mask walk's fast path.
  std::optional<Item> single_pure() const;

 private:
  void open_set();
  void add(Item item);
  void close();
  int32_t position() const { return int32_t(begins_.size()) - 1; }

  const CompiledGrammar& g_;
  std::vector<Item> items_;
  std::vector<uint32_t> begins_;  // first item of each set
  std::unordered_set<uint64_t> seen_;  // the open set's items, once it is too big for a linear search
  bool hashed_ = false;
};

}  // namespace dcu::structured
