#pragma once
// A grammar compiled for matching: every rule one deterministic automaton over bytes whose edges are
// byte classes or references to other rules (regular right-hand sides). Rules that are not recursive
// are inlined into their callers, so most of a JSON schema ends up in a few large automata and the
// Earley parser (earley_parser.h) only steps in at recursion. Immutable once built.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dcu::structured {

class CompiledGrammar {
 public:
  struct RefEdge {
    int32_t rule = 0;    // compiled rule index
    int32_t target = 0;  // state after the referenced rule
  };
  struct State {
    int32_t rule = 0;        // compiled rule index
    int32_t row = 0;         // offset of its transitions in next_ (one per byte class of its rule)
    uint32_t refs_begin = 0, refs_end = 0;
    bool final = false;      // the rule may end here
    bool scans = false;      // some byte leads on
    bool pure = false;       // !final and no references: only bytes move it (the fast mask walk)
  };
  struct Rule {
    std::string name;
    std::array<uint8_t, 256> byte_class{};
    int32_t start = 0;       // global state id
    bool nullable = false;   // derives the empty string
  };

  // A state's byte transitions, looked up once for walks that step from it many times.
  struct Transitions {
    const int32_t* next = nullptr;        // per byte class of the state's rule; -1: none
    const uint8_t* byte_class = nullptr;  // per byte
    int32_t operator()(uint8_t byte) const { return next[byte_class[byte]]; }
  };
  Transitions transitions(int32_t state) const {
    const State& s = states_[size_t(state)];
    return {next_.data() + s.row, rules_[size_t(s.rule)].byte_class.data()};
  }
  int32_t next(int32_t state, uint8_t byte) const { return transitions(state)(byte); }
  const State& state(int32_t id) const { return states_[size_t(id)]; }
  std::span<const RefEdge> refs(int32_t state) const {
    const State& s = states_[size_t(state)];
    return {refs_.data() + s.refs_begin, s.refs_end - s.refs_begin};
  }
  const Rule& rule(int32_t id) const { return rules_[size_t(id)]; }
  int32_t root() const { return 0; }  // compiled rule 0 is the grammar's root
  size_t state_count() const { return states_.size(); }
  size_t rule_count() const { return rules_.size(); }

 private:
  friend class GrammarCompiler;
  std::vector<Rule> rules_;
  std::vector<State> states_;
  std::vector<int32_t> next_;  // -1: no transition
  std::vector<RefEdge> refs_;
};

}  // namespace dcu::structured
