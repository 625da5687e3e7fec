#include "structured/grammar.h"

#include <algorithm>

#include "core/error.h"

namespace dcu::structured {

std::vector<CodeRange> normalize_ranges(std::vector<CodeRange> ranges, bool negated) {
  std::sort(ranges.begin(), ranges.end(), [](const CodeRange& a, const CodeRange& b) { return a.lo < b.lo; });
  std::vector<CodeRange> merged;
  for (const CodeRange& r : ranges) {
    if (r.lo > r.hi) continue;
    if (!merged.empty() && r.lo <= merged.back().hi + 1) merged.back().hi = std::max(merged.back().hi, r.hi);
    else merged.push_back(r);
  }
  if (!negated) return merged;
  std::vector<CodeRange> out;
  uint32_t next = 0;
  for (const CodeRange& r : merged) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return out;
}

int Grammar::add_rule(std::string name) {
  rules_.push_back({std::move(name), -1});
  return int(rules_.size()) - 1;
}

void Grammar::set_body(int rule, int node) { rules_.at(size_t(rule)).body = node; }

int Grammar::find_rule(const std::string& name) const {
  for (size_t i = 0; i < rules_.size(); ++i)
    if (rules_[i].name == name) return int(i);
  return -1;
}

int Grammar::add(Node node) {
  nodes_.push_back(std::move(node));
  return int(nodes_.size()) - 1;
}

int Grammar::empty() { return add({}); }

int Grammar::nothing() {
  Node n;
  n.kind = NodeKind::Nothing;
  return add(std::move(n));
}

int Grammar::literal(std::string bytes) {
  if (bytes.empty()) return empty();
  Node n;
  n.kind = NodeKind::Bytes;
  n.bytes = std::move(bytes);
  return add(std::move(n));
}

int Grammar::chars(std::vector<CodeRange> ranges, bool negated) {
  Node n;
  n.kind = NodeKind::Chars;
  n.chars = normalize_ranges(std::move(ranges), negated);
  if (n.chars.empty()) return nothing();
  return add(std::move(n));
}

int Grammar::seq(std::vector<int> children) {
  if (children.size() == 1) return children[0];
  Node n;
  n.kind = children.empty() ? NodeKind::Empty : NodeKind::Seq;
  n.children = std::move(children);
  return add(std::move(n));
}

int Grammar::alt(std::vector<int> children) {
  if (children.size() == 1) return children[0];
  Node n;
  n.kind = children.empty() ? NodeKind::Nothing : NodeKind::Alt;
  n.children = std::move(children);
  return add(std::move(n));
}

int Grammar::repeat(int child, int min, int max) {
  DCU_CHECK(min >= 0 && (max < 0 || max >= min));
  if (min == 1 && max == 1) return child;
  if (max == 0) return empty();
  Node n;
  n.kind = NodeKind::Repeat;
  n.children = {child};
  n.min = min;
  n.max = max;
  return add(std::move(n));
}

int Grammar::ref(int rule) {
  Node n;
  n.kind = NodeKind::Ref;
  n.rule = rule;
  return add(std::move(n));
}

int Grammar::intersect(int a, int b) {
  Node n;
  n.kind = NodeKind::Intersect;
  n.children = {a, b};
  return add(std::move(n));
}

int Grammar::difference(int a, int b) {
  Node n;
  n.kind = NodeKind::Difference;
  n.children = {a, b};
  return add(std::move(n));
}

}  // namespace dcu::structured
