#include "structured/grammar_compiler.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

#include "structured/grammar_error.h"
#include "structured/utf8_ranges.h"

namespace dcu::structured {
namespace {

using Clock = std::chrono::steady_clock;

// A rule is inlined when it is not recursive and small, or used once (inlining then copies nothing).
constexpr size_t kInlineSize = 4096;

struct Nfa {
  enum class Kind : uint8_t { Byte, Eps, Ref };
  struct Edge {
    Kind kind;
    uint8_t lo, hi;
    int32_t rule;  // Ref: grammar rule id
    int32_t target;
  };
  std::vector<std::vector<Edge>> out;
  int add() {
    out.emplace_back();
    return int(out.size()) - 1;
  }
  void eps(int from, int to) { out[size_t(from)].push_back({Kind::Eps, 0, 0, -1, to}); }
  void bytes(int from, int to, uint8_t lo, uint8_t hi) { out[size_t(from)].push_back({Kind::Byte, lo, hi, -1, to}); }
  void ref(int from, int to, int rule) { out[size_t(from)].push_back({Kind::Ref, 0, 0, rule, to}); }
};

// A DFA over byte classes with reference edges, as subset construction leaves it (local state ids).
struct LocalDfa {
  std::array<uint8_t, 256> byte_class{};
  int classes = 0;
  std::vector<int32_t> next;  // [states, classes]
  std::vector<bool> final;
  std::vector<std::vector<CompiledGrammar::RefEdge>> refs;  // rule = grammar rule id, target local
  int size() const { return int(final.size()); }
  int32_t step(int32_t s, uint8_t b) const { return next[size_t(s) * size_t(classes) + byte_class[b]]; }
};

}  // namespace

class GrammarCompiler {
 public:
  GrammarCompiler(const Grammar& g, const CompileLimits& limits)
      : g_(g), limits_(limits), deadline_(Clock::now() + limits.time_limit) {}

  std::shared_ptr<const CompiledGrammar> run();

 private:
  void check_rules();
  void find_recursion();
  size_t expanded_size(int node, int depth);
  void build(Nfa& nfa, int node, int from, int to, int depth);
  void build_product(Nfa& nfa, const Node& n, int from, int to, int depth);
  LocalDfa standalone_dfa(int node, int depth);
  LocalDfa determinize(const Nfa& nfa, int start, int accept);
  void check_time() const {
    if (Clock::now() > deadline_)
      grammar_error("the grammar could not be compiled within {} ms", limits_.time_limit.count());
  }
  void assemble(CompiledGrammar& out, std::vector<LocalDfa>& dfas, const std::vector<int>& compiled_rules);
  void trim(CompiledGrammar& out);

  const Grammar& g_;
  CompileLimits limits_;
  Clock::time_point deadline_;
  std::vector<bool> recursive_;
  std::vector<int> uses_;           // Ref nodes naming each rule
  std::vector<size_t> rule_size_;   // expanded size estimate, 0 = unknown
  std::vector<bool> inline_;
  int inside_product_ = 0;          // > 0 while building a part of an Intersect / Difference
  size_t nfa_states_ = 0;
  size_t dfa_states_ = 0;
};

void GrammarCompiler::check_rules() {
  if (g_.root < 0) grammar_error("the grammar has no root rule");
  for (int r = 0; r < g_.rule_count(); ++r)
    if (g_.rule_body(r) < 0) grammar_error("rule '{}' is used but never defined", g_.rule_name(r));
}

// A rule is recursive when it can reach itself through references.
void GrammarCompiler::find_recursion() {
  const int R = g_.rule_count();
  std::vector<std::vector<int>> calls(static_cast<size_t>(R));
  uses_.assign(size_t(R), 0);
  for (int r = 0; r < R; ++r) {
    std::vector<int> stack{g_.rule_body(r)};
    while (!stack.empty()) {
      const Node& n = g_.node(stack.back());
      stack.pop_back();
      if (n.kind == NodeKind::Ref) {
        calls[size_t(r)].push_back(n.rule);
        ++uses_[size_t(n.rule)];
      }
      for (int c : n.children) stack.push_back(c);
    }
  }
  recursive_.assign(size_t(R), false);
  for (int r = 0; r < R; ++r) {
    std::vector<bool> seen(size_t(R), false);
    std::vector<int> stack(calls[size_t(r)].begin(), calls[size_t(r)].end());
    while (!stack.empty()) {
      const int x = stack.back();
      stack.pop_back();
      if (x == r) {
        recursive_[size_t(r)] = true;
        break;
      }
      if (seen[size_t(x)]) continue;
      seen[size_t(x)] = true;
      for (int y : calls[size_t(x)]) stack.push_back(y);
    }
  }
  rule_size_.assign(size_t(R), 0);
  inline_.assign(size_t(R), false);
  for (int r = 0; r < R; ++r)
    inline_[size_t(r)] = r != g_.root && !recursive_[size_t(r)] &&
                         (uses_[size_t(r)] <= 1 || expanded_size(g_.rule_body(r), 0) <= kInlineSize);
}

// NFA states a node would take once inlined, saturating (repeats multiply).
size_t GrammarCompiler::expanded_size(int node, int depth) {
  constexpr size_t kCap = size_t(1) << 40;
  if (depth > 10000) grammar_error("the grammar nests too deeply");
  const Node& n = g_.node(node);
  auto sat = [&](size_t a, size_t b) { return std::min(kCap, a + b); };
  switch (n.kind) {
    case NodeKind::Empty:
    case NodeKind::Nothing: return 1;
    case NodeKind::Bytes: return n.bytes.size() + 1;
    case NodeKind::Chars: return 4 * n.chars.size() + 2;
    case NodeKind::Ref: {
      if (recursive_[size_t(n.rule)]) return 1;
      size_t& s = rule_size_[size_t(n.rule)];
      if (s == 0) s = expanded_size(g_.rule_body(n.rule), depth + 1);
      return s;
    }
    case NodeKind::Repeat: {
      const size_t one = expanded_size(n.children[0], depth + 1);
      const size_t copies = size_t(std::max(n.min, n.max < 0 ? n.min + 1 : n.max)) + 1;
      return std::min(kCap, one * copies + 1);
    }
    default: {
      size_t total = 1;
      for (int c : n.children) total = sat(total, expanded_size(c, depth + 1));
      return total;
    }
  }
}

void GrammarCompiler::build(Nfa& nfa, int node, int from, int to, int depth) {
  if (nfa.out.size() > limits_.max_nfa_states)
    grammar_error("the grammar is too large to compile (more than {} automaton states)", limits_.max_nfa_states);
  if (depth > 10000) grammar_error("the grammar nests too deeply");
  if ((nfa.out.size() & 4095) == 0) check_time();
  const Node& n = g_.node(node);
  switch (n.kind) {
    case NodeKind::Empty: nfa.eps(from, to); return;
    case NodeKind::Nothing: return;
    case NodeKind::Bytes: {
      int at = from;
      for (size_t i = 0; i < n.bytes.size(); ++i) {
        const int next = i + 1 == n.bytes.size() ? to : nfa.add();
        const uint8_t b = uint8_t(n.bytes[i]);
        nfa.bytes(at, next, b, b);
        at = next;
      }
      return;
    }
    case NodeKind::Chars: {
      // Sequences sharing a leading byte range share its state, which keeps subset construction small.
      std::map<std::pair<int, std::pair<uint8_t, uint8_t>>, int> shared;
      for (const CodeRange& r : n.chars)
        for (const Utf8Sequence& seq : utf8_sequences(r)) {
          int at = from;
          for (size_t i = 0; i < seq.size(); ++i) {
            const bool last = i + 1 == seq.size();
            if (last) {
              nfa.bytes(at, to, seq[i].lo, seq[i].hi);
              break;
            }
            auto [it, fresh] = shared.try_emplace({at, {seq[i].lo, seq[i].hi}}, 0);
            if (fresh) {
              it->second = nfa.add();
              nfa.bytes(at, it->second, seq[i].lo, seq[i].hi);
            }
            at = it->second;
          }
        }
      return;
    }
    case NodeKind::Seq: {
      int at = from;
      for (size_t i = 0; i < n.children.size(); ++i) {
        const int next = i + 1 == n.children.size() ? to : nfa.add();
        build(nfa, n.children[i], at, next, depth + 1);
        at = next;
      }
      return;
    }
    case NodeKind::Alt:
      for (int c : n.children) {
        // Each branch gets its own entry so that one branch's loops cannot run into another's.
        const int entry = nfa.add();
        nfa.eps(from, entry);
        build(nfa, c, entry, to, depth + 1);
      }
      return;
    case NodeKind::Repeat: {
      int at = from;
      for (int i = 0; i < n.min; ++i) {
        const int next = nfa.add();
        build(nfa, n.children[0], at, next, depth + 1);
        at = next;
      }
      if (n.max < 0) {
        const int loop = nfa.add();
        nfa.eps(at, loop);
        const int body_end = nfa.add();
        build(nfa, n.children[0], loop, body_end, depth + 1);
        nfa.eps(body_end, loop);
        nfa.eps(loop, to);
        return;
      }
      for (int i = n.min; i < n.max; ++i) {
        nfa.eps(at, to);
        const int next = i + 1 == n.max ? to : nfa.add();
        build(nfa, n.children[0], at, next, depth + 1);
        at = next;
      }
      if (n.max == n.min) nfa.eps(at, to);
      return;
    }
    case NodeKind::Ref:
      if (inline_[size_t(n.rule)] || (inside_product_ > 0 && !recursive_[size_t(n.rule)]))
        build(nfa, g_.rule_body(n.rule), from, to, depth + 1);
      else nfa.ref(from, to, n.rule);
      return;
    case NodeKind::Intersect:
    case NodeKind::Difference: build_product(nfa, n, from, to, depth); return;
  }
}

LocalDfa GrammarCompiler::standalone_dfa(int node, int depth) {
  Nfa nfa;
  const int start = nfa.add(), accept = nfa.add();
  ++inside_product_;
  build(nfa, node, start, accept, depth + 1);
  --inside_product_;
  for (const auto& edges : nfa.out)
    for (const auto& e : edges)
      if (e.kind == Nfa::Kind::Ref)
        grammar_error("rule '{}' is recursive and cannot be combined with a pattern or length", g_.rule_name(e.rule));
  return determinize(nfa, start, accept);
}

// The product automaton of two regular parts, spliced in between `from` and `to`.
void GrammarCompiler::build_product(Nfa& nfa, const Node& n, int from, int to, int depth) {
  const LocalDfa a = standalone_dfa(n.children[0], depth);
  const LocalDfa b = standalone_dfa(n.children[1], depth);
  const bool difference = n.kind == NodeKind::Difference;
  std::map<std::pair<int32_t, int32_t>, int> ids;  // (a, b or -1) -> NFA state
  std::vector<std::pair<int32_t, int32_t>> work;
  auto id = [&](int32_t sa, int32_t sb) {
    auto [it, fresh] = ids.try_emplace({sa, sb}, 0);
    if (fresh) {
      it->second = nfa.add();
      work.push_back({sa, sb});
      if (ids.size() > limits_.max_dfa_states)
        grammar_error("the grammar is too large to compile (more than {} automaton states)", limits_.max_dfa_states);
    }
    return it->second;
  };
  nfa.eps(from, id(0, 0));
  while (!work.empty()) {
    const auto [sa, sb] = work.back();
    work.pop_back();
    const int here = ids.at({sa, sb});
    const bool b_accepts = sb >= 0 && b.final[size_t(sb)];
    if (a.final[size_t(sa)] && (difference ? !b_accepts : b_accepts)) nfa.eps(here, to);
    int run_lo = -1;
    std::pair<int32_t, int32_t> run_target{-1, -1};
    auto close_run = [&](int end) {
      if (run_lo >= 0) nfa.bytes(here, id(run_target.first, run_target.second), uint8_t(run_lo), uint8_t(end - 1));
      run_lo = -1;
    };
    for (int byte = 0; byte < 256; ++byte) {
      const int32_t ta = a.step(sa, uint8_t(byte));
      const int32_t tb = sb >= 0 ? b.step(sb, uint8_t(byte)) : -1;
      const bool ok = ta >= 0 && (difference || tb >= 0);
      const std::pair<int32_t, int32_t> target{ta, tb};
      if (ok && run_lo >= 0 && target == run_target) continue;
      close_run(byte);
      if (ok) run_lo = byte, run_target = target;
    }
    close_run(256);
    check_time();
  }
}

LocalDfa GrammarCompiler::determinize(const Nfa& nfa, int start, int accept) {
  LocalDfa dfa;
  // Byte classes: the bytes no edge boundary separates.
  std::array<bool, 257> cut{};
  cut[0] = cut[256] = true;
  for (const auto& edges : nfa.out)
    for (const auto& e : edges)
      if (e.kind == Nfa::Kind::Byte) cut[e.lo] = cut[size_t(e.hi) + 1] = true;
  int cls = -1;
  std::vector<int> class_lo;
  for (int b = 0; b < 256; ++b) {
    if (cut[size_t(b)]) {
      ++cls;
      class_lo.push_back(b);
    }
    dfa.byte_class[size_t(b)] = uint8_t(cls);
  }
  dfa.classes = cls + 1;

  std::vector<uint32_t> mark(nfa.out.size(), 0);
  uint32_t epoch = 0;
  auto closure = [&](std::vector<int>& set) {
    ++epoch;
    std::vector<int> stack;
    for (int s : set)
      if (mark[size_t(s)] != epoch) mark[size_t(s)] = epoch, stack.push_back(s);
    set.clear();
    while (!stack.empty()) {
      const int s = stack.back();
      stack.pop_back();
      set.push_back(s);
      for (const auto& e : nfa.out[size_t(s)])
        if (e.kind == Nfa::Kind::Eps && mark[size_t(e.target)] != epoch) {
          mark[size_t(e.target)] = epoch;
          stack.push_back(e.target);
        }
    }
    std::sort(set.begin(), set.end());
  };
  std::unordered_map<std::string, int32_t> ids;
  std::vector<std::vector<int>> sets;
  auto id_of = [&](std::vector<int>& set) -> int32_t {
    closure(set);
    std::string key(reinterpret_cast<const char*>(set.data()), set.size() * sizeof(int));
    auto [it, fresh] = ids.try_emplace(std::move(key), int32_t(sets.size()));
    if (fresh) {
      if (++dfa_states_ > limits_.max_dfa_states)
        grammar_error("the grammar is too large to compile (more than {} automaton states)", limits_.max_dfa_states);
      sets.push_back(set);
      dfa.final.push_back(std::binary_search(set.begin(), set.end(), accept));
      dfa.refs.emplace_back();
      dfa.next.resize(dfa.next.size() + size_t(dfa.classes), -1);
    }
    return it->second;
  };
  std::vector<int> first{start};
  id_of(first);
  std::vector<std::vector<int>> buckets(size_t(dfa.classes));
  for (size_t d = 0; d < sets.size(); ++d) {
    if ((d & 255) == 0) check_time();
    for (auto& bucket : buckets) bucket.clear();
    std::map<int32_t, std::vector<int>> by_rule;
    for (int s : sets[d])
      for (const auto& e : nfa.out[size_t(s)]) {
        if (e.kind == Nfa::Kind::Byte)
          for (int c = dfa.byte_class[e.lo]; c <= dfa.byte_class[e.hi]; ++c) buckets[size_t(c)].push_back(e.target);
        else if (e.kind == Nfa::Kind::Ref)
          by_rule[e.rule].push_back(e.target);
      }
    for (int c = 0; c < dfa.classes; ++c) {
      if (buckets[size_t(c)].empty()) continue;
      const int32_t t = id_of(buckets[size_t(c)]);
      dfa.next[d * size_t(dfa.classes) + size_t(c)] = t;
    }
    for (auto& [rule, targets] : by_rule) {
      const int32_t t = id_of(targets);
      dfa.refs[d].push_back({rule, t});
    }
  }
  return dfa;
}

void GrammarCompiler::assemble(CompiledGrammar& out, std::vector<LocalDfa>& dfas, const std::vector<int>& compiled) {
  std::vector<int32_t> index_of(size_t(g_.rule_count()), -1);
  for (size_t i = 0; i < compiled.size(); ++i) index_of[size_t(compiled[i])] = int32_t(i);
  std::vector<int32_t> offset;
  int32_t total = 0;
  for (const auto& d : dfas) {
    offset.push_back(total);
    total += d.size();
  }
  for (size_t r = 0; r < dfas.size(); ++r) {
    LocalDfa& d = dfas[r];
    CompiledGrammar::Rule rule;
    rule.name = g_.rule_name(compiled[r]);
    rule.byte_class = d.byte_class;
    rule.start = offset[r];
    out.rules_.push_back(std::move(rule));
    for (int s = 0; s < d.size(); ++s) {
      CompiledGrammar::State st;
      st.rule = int32_t(r);
      st.row = int32_t(out.next_.size());
      for (int c = 0; c < d.classes; ++c) {
        const int32_t t = d.next[size_t(s) * size_t(d.classes) + size_t(c)];
        out.next_.push_back(t < 0 ? -1 : t + offset[r]);
      }
      st.final = d.final[size_t(s)];
      st.refs_begin = uint32_t(out.refs_.size());
      for (const auto& e : d.refs[size_t(s)]) out.refs_.push_back({index_of[size_t(e.rule)], e.target + offset[r]});
      st.refs_end = uint32_t(out.refs_.size());
      out.states_.push_back(st);
    }
  }
}

// Keeps what can still finish: rules that derive some string, states from which their rule can end.
void GrammarCompiler::trim(CompiledGrammar& out) {
  const size_t S = out.states_.size(), R = out.rules_.size();
  std::vector<std::vector<int32_t>> preds(S);           // byte predecessors
  std::vector<std::vector<std::pair<int32_t, int32_t>>> ref_preds(S);  // (pred, rule)
  for (size_t s = 0; s < S; ++s) {
    const auto& st = out.states_[s];
    const int classes = 1 + *std::max_element(out.rules_[size_t(st.rule)].byte_class.begin(),
                                              out.rules_[size_t(st.rule)].byte_class.end());
    for (int c = 0; c < classes; ++c)
      if (int32_t t = out.next_[size_t(st.row + c)]; t >= 0) preds[size_t(t)].push_back(int32_t(s));
    for (uint32_t e = st.refs_begin; e < st.refs_end; ++e)
      ref_preds[size_t(out.refs_[e].target)].push_back({int32_t(s), out.refs_[e].rule});
  }
  std::vector<bool> productive(R, false), live(S, false);
  for (bool changed = true; changed;) {
    changed = false;
    std::fill(live.begin(), live.end(), false);
    std::vector<int32_t> stack;
    for (size_t s = 0; s < S; ++s)
      if (out.states_[s].final) live[s] = true, stack.push_back(int32_t(s));
    while (!stack.empty()) {
      const int32_t s = stack.back();
      stack.pop_back();
      for (int32_t p : preds[size_t(s)])
        if (!live[size_t(p)]) live[size_t(p)] = true, stack.push_back(p);
      for (auto [p, rule] : ref_preds[size_t(s)])
        if (productive[size_t(rule)] && !live[size_t(p)]) live[size_t(p)] = true, stack.push_back(p);
    }
    for (size_t r = 0; r < R; ++r)
      if (!productive[r] && live[size_t(out.rules_[r].start)]) productive[r] = changed = true;
  }
  if (!productive[0]) grammar_error("the grammar matches no output at all");
  for (auto& t : out.next_)
    if (t >= 0 && !live[size_t(t)]) t = -1;
  std::vector<CompiledGrammar::RefEdge> refs;
  for (auto& st : out.states_) {
    const uint32_t begin = uint32_t(refs.size());
    for (uint32_t e = st.refs_begin; e < st.refs_end; ++e) {
      const auto& edge = out.refs_[e];
      if (productive[size_t(edge.rule)] && live[size_t(edge.target)]) refs.push_back(edge);
    }
    st.refs_begin = begin;
    st.refs_end = uint32_t(refs.size());
  }
  out.refs_ = std::move(refs);
  // Nullable rules: the start reaches an end through references to nullable rules only.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& rule : out.rules_) {
      if (rule.nullable) continue;
      std::vector<int32_t> stack{rule.start};
      std::vector<int32_t> seen{rule.start};
      while (!stack.empty() && !rule.nullable) {
        const int32_t s = stack.back();
        stack.pop_back();
        if (out.states_[size_t(s)].final) rule.nullable = changed = true;
        for (const auto& e : out.refs(s))
          if (out.rules_[size_t(e.rule)].nullable && std::find(seen.begin(), seen.end(), e.target) == seen.end())
            seen.push_back(e.target), stack.push_back(e.target);
      }
    }
  }
  for (size_t s = 0; s < S; ++s) {
    auto& st = out.states_[s];
    const int classes = 1 + *std::max_element(out.rules_[size_t(st.rule)].byte_class.begin(),
                                              out.rules_[size_t(st.rule)].byte_class.end());
    st.scans = false;
    for (int c = 0; c < classes; ++c) st.scans = st.scans || out.next_[size_t(st.row + c)] >= 0;
    st.pure = !st.final && st.refs_begin == st.refs_end;
  }
}

std::shared_ptr<const CompiledGrammar> GrammarCompiler::run() {
  check_rules();
  find_recursion();
  // The rules that get their own automaton: the root and every rule referenced and not inlined.
  std::vector<int> compiled{g_.root};
  std::vector<bool> queued(size_t(g_.rule_count()), false);
  queued[size_t(g_.root)] = true;
  std::vector<LocalDfa> dfas;
  for (size_t i = 0; i < compiled.size(); ++i) {
    Nfa nfa;
    const int start = nfa.add(), accept = nfa.add();
    build(nfa, g_.rule_body(compiled[i]), start, accept, 0);
    nfa_states_ += nfa.out.size();
    if (nfa_states_ > limits_.max_nfa_states)
      grammar_error("the grammar is too large to compile (more than {} automaton states)", limits_.max_nfa_states);
    dfas.push_back(determinize(nfa, start, accept));
    for (const auto& refs : dfas.back().refs)
      for (const auto& e : refs)
        if (!queued[size_t(e.rule)]) queued[size_t(e.rule)] = true, compiled.push_back(e.rule);
  }
  auto out = std::make_shared<CompiledGrammar>();
  assemble(*out, dfas, compiled);
  trim(*out);
  return out;
}

std::shared_ptr<const CompiledGrammar> compile_grammar(const Grammar& grammar, const CompileLimits& limits) {
  return GrammarCompiler(grammar, limits).run();
}

}  // namespace dcu::structured
