#pragma once
// The grammar IR every front end (JSON Schema, regex, choice, EBNF, tool calls) produces and the
// compiler (grammar_compiler.h) turns into byte automata. Rules are named; a rule body is a tree of
// nodes over Unicode code points (encoded as UTF-8 by the compiler) and byte strings.

#include <cstdint>
#include <string>
#include <vector>

namespace dcu::structured {

struct CodeRange {
  uint32_t lo = 0, hi = 0;  // inclusive
};

enum class NodeKind {
  Empty,       // the empty string
  Nothing,     // no string at all
  Bytes,       // a literal byte string
  Chars,       // one code point of a set
  Seq,         // children in order
  Alt,         // any one child
  Repeat,      // child repeated [min, max] times (max -1: unbounded)
  Ref,         // another rule
  Intersect,   // strings both children match (regular children only)
  Difference,  // strings the first child matches and the second does not (regular children only)
};

struct Node {
  NodeKind kind = NodeKind::Empty;
  std::string bytes;             // Bytes
  std::vector<CodeRange> chars;  // Chars: sorted, disjoint, merged
  std::vector<int> children;     // Seq, Alt, Repeat (one), Intersect / Difference (two)
  int min = 0, max = -1;         // Repeat
  int rule = -1;                 // Ref
};

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

class Grammar {
 public:
  // Rule ids are stable; a rule's body is set once it is known (recursion refers to it before).
  int add_rule(std::string name);
  void set_body(int rule, int node);
  int find_rule(const std::string& name) const;  // -1 when absent
  int rule_count() const { return int(rules_.size()); }
  const std::string& rule_name(int rule) const { return rules_[size_t(rule)].name; }
  int rule_body(int rule) const { return rules_[size_t(rule)].body; }
  int root = -1;  // the rule a whole output must match

  const Node& node(int id) const { return nodes_[size_t(id)]; }

  int empty();
  int nothing();
  int literal(std::string bytes);
  int chars(std::vector<CodeRange> ranges, bool negated = false);
  int seq(std::vector<int> children);
  int alt(std::vector<int> children);
  int repeat(int child, int min, int max);
  int optional(int child) { return repeat(child, 0, 1); }
  int star(int child) { return repeat(child, 0, -1); }
  int plus(int child) { return repeat(child, 1, -1); }
  int ref(int rule);
  int intersect(int a, int b);
  int difference(int a, int b);

 private:
  struct Rule {
    std::string name;
    int body = -1;
  };
  int add(Node node);
  std::vector<Node> nodes_;
  std::vector<Rule> rules_;
};

// Sorts and merges ranges; with `negated`, the complement within [0, kMaxCodePoint].
std::vector<CodeRange> normalize_ranges(std::vector<CodeRange> ranges, bool negated);

}  // namespace dcu::structured
