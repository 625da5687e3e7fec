#include "structured/earley_parser.h"

namespace dcu::structured {
namespace {

constexpr size_t kLinearSearchItems = 24;

uint64_t key(EarleyParser::Item item) { return (uint64_t(uint32_t(item.state)) << 32) | uint32_t(item.origin); }

}  // namespace

EarleyParser::EarleyParser(const CompiledGrammar& grammar) : g_(grammar) {
  open_set();
  add({g_.rule(g_.root()).start, 0});
  close();
}

void EarleyParser::open_set() {
  begins_.push_back(uint32_t(items_.size()));
  seen_.clear();
  hashed_ = false;
}

void EarleyParser::add(Item item) {
  const size_t begin = begins_.back();
  if (!hashed_) {
    for (size_t i = begin; i < items_.size(); ++i)
      if (items_[i].state == item.state && items_[i].origin == item.origin) return;
    items_.push_back(item);
    if (items_.size() - begin > kLinearSearchItems) {
      hashed_ = true;
      for (size_t i = begin; i < items_.size(); ++i) seen_.insert(key(items_[i]));
    }
    return;
  }
  if (seen_.insert(key(item)).second) items_.push_back(item);
}

// Prediction and completion until the open set stops growing. A nullable rule advances its caller
// at prediction time (Aycock and Horspool), so completion only looks at earlier sets.
void EarleyParser::close() {
  const int32_t here = position();
  for (size_t i = begins_.back(); i < items_.size(); ++i) {
    const Item item = items_[i];
    for (const auto& edge : g_.refs(item.state)) {
      const auto& rule = g_.rule(edge.rule);
      add({rule.start, here});
      if (rule.nullable) add({edge.target, item.origin});
    }
    const auto& st = g_.state(item.state);
    if (!st.final || item.origin == here) continue;
    const size_t from = begins_[size_t(item.origin)], to = begins_[size_t(item.origin) + 1];
    for (size_t j = from; j < to; ++j) {
      const Item caller = items_[j];
      for (const auto& edge : g_.refs(caller.state))
        if (edge.rule == st.rule) add({edge.target, caller.origin});
    }
  }
}

bool EarleyParser::scan(uint8_t byte) {
  const size_t begin = begins_.back(), end = items_.size();
  open_set();
  for (size_t i = begin; i < end; ++i) {
    const int32_t next = g_.next(items_[i].state, byte);
    if (next >= 0) add({next, items_[i].origin});
  }
  if (items_.size() == begins_.back()) {
    begins_.pop_back();
    return false;
  }
  close();
  return true;
}

void EarleyParser::push_item(Item item) {
  open_set();
  add(item);
  close();
}

void EarleyParser::truncate(size_t sets) {
  if (sets >= begins_.size() || sets == 0) return;
  items_.resize(begins_[sets]);
  begins_.resize(sets);
  hashed_ = false;  // no set is open for adding once it has been closed
}

bool EarleyParser::can_end() const {
  for (size_t i = begins_.back(); i < items_.size(); ++i) {
    const auto& st = g_.state(items_[i].state);
    if (st.final && st.rule == g_.root() && items_[i].origin == 0) return true;
  }
  return false;
}

bool EarleyParser::can_continue() const {
  for (size_t i = begins_.back(); i < items_.size(); ++i)
    if (g_.state(items_[i].state).scans) return true;
  return false;
}

std::optional<EarleyParser::Item> EarleyParser::single_pure() const {
  if (items_.size() - begins_.back() != 1) return std::nullopt;
  const Item item = items_.back();
  if (!g_.state(item.state).pure) return std::nullopt;
  return item;
}

}  // namespace dcu::structured
