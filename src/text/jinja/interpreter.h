#pragma once
// Tree-walking interpreter. One Interpreter renders one template once; it is cheap to create.

#include <memory>
#include <string>
#include <unordered_map>

#include "text/jinja/ast.h"
#include "text/jinja/value.h"

namespace dcu::jinja {

// Guards against templates that never finish or grow without bound.
struct RenderLimits {
  size_t max_output_bytes = size_t(64) << 20;  // also caps any single string value
  uint64_t max_steps = 200'000'000;            // statements, loop iterations and calls
  int max_depth = 256;                         // nested macro calls and expression evaluation
};

struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
};
using ScopePtr = std::shared_ptr<Scope>;

class Interpreter {
 public:
  explicit Interpreter(RenderLimits limits) : limits_(limits) {}

  std::string render(const Body& body, ScopePtr globals);

  // Jinja's attribute and item lookup: Undefined (with a useful message) when missing.
  Value getattr(const Value& obj, const std::string& name);
  Value getitem(const Value& obj, const Value& key);
  Value call(const Value& callee, CallArgs& args);
  // Fails once a produced string would exceed the output limit.
  void check_size(size_t bytes) const;
  void count_step();

 private:
  enum class Flow { Normal, Break, Continue };

  Flow exec_body(const Body& body, const ScopePtr& scope, std::string& out);
  Flow exec(const Stmt& s, const ScopePtr& scope, std::string& out);
  Flow exec_for(const Stmt& s, const ScopePtr& scope, std::string& out);
  void exec_set(const Target& target, Value value, const ScopePtr& scope, int line);
  Value make_macro(const Stmt& s, const ScopePtr& scope);
  std::string render_block(const Body& body, const ScopePtr& scope);
  Value apply_filter_chain(const Expr& filter, Value input, const ScopePtr& scope);

  Value eval(const Expr& e, const ScopePtr& scope);
  Value eval_inner(const Expr& e, const ScopePtr& scope);
  Value lookup(const std::string& name, const ScopePtr& scope);
  CallArgs eval_args(const Expr& e, const ScopePtr& scope);
  Value eval_binary(const std::string& op, const Value& a, const Value& b);
  Value eval_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
  bool compare(const std::string& op, const Value& a, const Value& b);

  RenderLimits limits_;
  uint64_t steps_ = 0;
  int depth_ = 0;
  const Value* block_input_ = nullptr;  // body text for {% filter %} / {% set x | f %}
};

}  // namespace dcu::jinja
