#include "text/jinja/interpreter.h"

#include <cmath>

#include "text/jinja/builtins.h"
#include "text/jinja/error.h"
#include "text/jinja/string_ops.h"
#include "text/jinja/unicode.h"

namespace dcu::jinja {
namespace {

struct DepthGuard {
  DepthGuard(int& depth, int max) : depth(depth) {
    if (++depth > max) template_fail("maximum recursion depth exceeded");
  }
  ~DepthGuard() { --depth; }
  int& depth;
};

// Runs `fn`, and gives errors without a line the line of `node`. Only statements do this: jinja2
// compiles each expression onto the line of its statement (or of the `{{ }}` expression), so
// that is the line its errors report.
template <typename F>
auto with_line(int line, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const TemplateError& e) {
    if (e.line() > 0) throw;
    throw TemplateError(line, e.message());
  }
}

[[noreturn]] void unsupported(const char* op, const Value& a, const Value& b) {
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  template_fail("unsupported operand type(s) for {}: '{}' and '{}'", op, a.type_name(), b.type_name());
}

// Python ints do not overflow; ours fail instead of wrapping.
template <typename Op>
int64_t checked(Op op, int64_t a, int64_t b) {
  int64_t r;
  if (op(a, b, &r)) template_fail("integer overflow");
  return r;
}
bool add_overflows(int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); }
bool sub_overflows(int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); }
bool mul_overflows(int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); }

// Python's slice.indices(): normalized start/stop for a sequence of length n.
void slice_indices(int64_t n, const Value& start, const Value& stop, int64_t step, int64_t& lo, int64_t& hi) {
  auto clamp = [&](const Value& v, int64_t def) {
    if (v.is_none()) return def;
    if (!v.is_integral()) template_fail("slice indices must be integers or None or have an __index__ method");
    int64_t x = v.as_int();
    if (x < 0) {
      x += n;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  lo = clamp(start, step < 0 ? n - 1 : 0);
  hi = clamp(stop, step < 0 ? -1 : n);
}

bool is_negative_literal(const Expr& e) {
  return e.kind == Expr::Kind::Literal && e.value.is_number() && e.value.type != Type::Bool && e.value.as_double() < 0;
}

// Whether jinja2's optimizer folds the expression to a constant (no names, calls or filters).
bool is_constant(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Literal:
      return true;
    case Expr::Kind::Unary:
    case Expr::Kind::Binary:
    case Expr::Kind::And:
    case Expr::Kind::Or:
    case Expr::Kind::Not:
    case Expr::Kind::Compare:
    case Expr::Kind::List:
    case Expr::Kind::Tuple:
    case Expr::Kind::Dict:
    case Expr::Kind::Condition:
      for (const Expr* child : {e.a.get(), e.b.get(), e.c.get(), e.d.get()})
        if (child && !is_constant(*child)) return false;
      for (const auto& item : e.items)
        if (!is_constant(*item)) return false;
      return true;
    default:
      return false;
  }
}

}  // namespace

void Interpreter::check_size(size_t bytes) const {
  if (bytes > limits_.max_output_bytes) template_fail("template output exceeds {} bytes", limits_.max_output_bytes);
}

void Interpreter::count_step() {
  if (++steps_ > limits_.max_steps) template_fail("template rendering exceeds {} steps", limits_.max_steps);
}

std::string Interpreter::render(const Body& body, ScopePtr globals) {
  std::string out;
  exec_body(body, globals, out);
  return out;
}

Interpreter::Flow Interpreter::exec_body(const Body& body, const ScopePtr& scope, std::string& out) {
  for (const auto& s : body) {
    Flow f = exec(*s, scope, out);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

std::string Interpreter::render_block(const Body& body, const ScopePtr& scope) {
  std::string out;
  exec_body(body, scope, out);
  return out;
}

Interpreter::Flow Interpreter::exec(const Stmt& s, const ScopePtr& scope, std::string& out) {
  return with_line(s.line, [&]() -> Flow {
    count_step();
    DepthGuard guard(depth_, limits_.max_depth);
    switch (s.kind) {
      case Stmt::Kind::Text:
        out += s.text;
        check_size(out.size());
        return Flow::Normal;
      case Stmt::Kind::Print: {
        Value v = eval(*s.expr, scope);
        if (v.type == Type::String) out += v.text;
        else out += v.str();
        check_size(out.size());
        return Flow::Normal;
      }
      case Stmt::Kind::If:
        return exec_body(eval(*s.condition, scope).truthy() ? s.body : s.else_body, scope, out);
      case Stmt::Kind::For:
        return exec_for(s, scope, out);
      case Stmt::Kind::Set:
        exec_set(s.target, eval(*s.expr, scope), scope, s.line);
        return Flow::Normal;
      case Stmt::Kind::SetBlock: {
        auto inner = std::make_shared<Scope>();
        inner->parent = scope;
        Value text = Value::from_string(render_block(s.body, inner));
        if (s.filter) text = apply_filter_chain(*s.filter, std::move(text), scope);
        exec_set(s.target, std::move(text), scope, s.line);
        return Flow::Normal;
      }
      case Stmt::Kind::Macro:
        scope->vars[s.text] = make_macro(s, scope);
        return Flow::Normal;
      case Stmt::Kind::CallBlock: {
        Value caller = make_macro(s, scope);
        caller.function->name = "caller";
        const Expr& call = *s.expr;
        Value callee = eval(*call.a, scope);
        CallArgs args = eval_args(call, scope);
        args.keyword.emplace_back("caller", caller);
        Value v = this->call(callee, args);
        out += v.str();
        check_size(out.size());
        return Flow::Normal;
      }
      case Stmt::Kind::FilterBlock: {
        auto inner = std::make_shared<Scope>();
        inner->parent = scope;
        Value text = Value::from_string(render_block(s.body, inner));
        out += apply_filter_chain(*s.filter, std::move(text), scope).str();
        check_size(out.size());
        return Flow::Normal;
      }
      case Stmt::Kind::With: {
        auto inner = std::make_shared<Scope>();
        inner->parent = scope;
        for (const auto& [name, expr] : s.params) inner->vars[name] = eval(*expr, scope);
        return exec_body(s.body, inner, out);
      }
      case Stmt::Kind::Break:
        return Flow::Break;
      case Stmt::Kind::Continue:
        return Flow::Continue;
    }
    return Flow::Normal;
  });
}

Value Interpreter::apply_filter_chain(const Expr& filter, Value input, const ScopePtr& scope) {
  const Value* saved = block_input_;
  block_input_ = &input;
  Value result = eval(filter, scope);
  block_input_ = saved;
  return result;
}

void Interpreter::exec_set(const Target& target, Value value, const ScopePtr& scope, int line) {
  if (!target.attribute.empty()) {
    Value ns = lookup(target.names[0], scope);
    if (ns.type != Type::Namespace || ns.dict->class_name != "Namespace")
      throw TemplateError(line, "cannot assign attribute on non-namespace object");
    ns.dict->set(Value::from_string(target.attribute), std::move(value));
    return;
  }
  if (!target.is_tuple) {
    scope->vars[target.names[0]] = std::move(value);
    return;
  }
  std::vector<Value> items = iterate(value);
  if (items.size() != target.names.size())
    template_fail("{} values to unpack (expected {}, got {})", items.size() < target.names.size() ? "not enough" : "too many",
                  target.names.size(), items.size());
  for (size_t i = 0; i < items.size(); ++i) scope->vars[target.names[i]] = std::move(items[i]);
}

Interpreter::Flow Interpreter::exec_for(const Stmt& s, const ScopePtr& scope, std::string& out) {
  Value iterable = eval(*s.expr, scope);
  std::vector<Value> items = iterate(iterable);
  auto bind = [&](const ScopePtr& inner, const Value& item) {
    exec_set(s.target, item, inner, s.line);
  };
  if (s.condition) {  // `for x in y if cond`: filter first, so loop.length counts kept items
    std::vector<Value> kept;
    for (auto& item : items) {
      count_step();
      auto inner = std::make_shared<Scope>();
      inner->parent = scope;
      bind(inner, item);
      if (eval(*s.condition, inner).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    return exec_body(s.else_body, inner, out);  // a break there belongs to an enclosing loop
  }
  const int64_t n = int64_t(items.size());
  Value loop = Value::new_namespace("LoopContext");
  auto& e = loop.dict->entries;
  const char* names[] = {"index", "index0", "revindex", "revindex0", "first", "last", "length", "previtem", "nextitem", "depth", "depth0", "cycle"};
  for (const char* name : names) e.emplace_back(Value::from_string(name), Value());
  std::weak_ptr<Dict> weak = loop.dict;
  e[11].second = Value::func("cycle", [weak](Interpreter&, CallArgs& args) {
    if (args.positional.empty()) template_fail("no items for cycling given");
    auto d = weak.lock();
    int64_t index0 = d ? d->entries[1].second.integer : 0;
    return args.positional[size_t(index0 % int64_t(args.positional.size()))];
  });
  e[6].second = Value::from_int(n);
  e[9].second = Value::from_int(1);
  e[10].second = Value::from_int(0);
  for (int64_t i = 0; i < n; ++i) {
    count_step();
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    bind(inner, items[size_t(i)]);
    e[0].second = Value::from_int(i + 1);
    e[1].second = Value::from_int(i);
    e[2].second = Value::from_int(n - i);
    e[3].second = Value::from_int(n - i - 1);
    e[4].second = Value::from_bool(i == 0);
    e[5].second = Value::from_bool(i == n - 1);
    e[7].second = i > 0 ? items[size_t(i - 1)] : Value::undefined("there is no previous item");
    e[8].second = i + 1 < n ? items[size_t(i + 1)] : Value::undefined("there is no next item");
    inner->vars["loop"] = loop;
    if (exec_body(s.body, inner, out) == Flow::Break) break;
  }
  return Flow::Normal;
}

Value Interpreter::make_macro(const Stmt& s, const ScopePtr& scope) {
  const Stmt* stmt = &s;
  std::weak_ptr<Scope> closure = scope;  // weak: the macro usually lives in the scope it closes over
  return Value::func(s.text, [this, stmt, closure](Interpreter&, CallArgs& args) -> Value {
    auto parent = closure.lock();
    if (!parent) template_fail("macro '{}' called after its scope ended", stmt->text);
    auto inner = std::make_shared<Scope>();
    inner->parent = parent;
    const auto& params = stmt->params;
    if (args.positional.size() > params.size())
      template_fail("macro '{}' takes not more than {} argument(s)", stmt->text, params.size());
    std::vector<bool> bound(params.size(), false);
    for (size_t i = 0; i < args.positional.size(); ++i) {
      inner->vars[params[i].first] = args.positional[i];
      bound[i] = true;
    }
    for (auto& [key, value] : args.keyword) {
      size_t i = 0;
      while (i < params.size() && params[i].first != key) ++i;
      if (i < params.size()) {
        if (bound[i]) template_fail("macro '{}' got multiple values for argument '{}'", stmt->text, key);
        inner->vars[key] = value;
        bound[i] = true;
      } else if (key == "caller") {
        inner->vars["caller"] = value;
      } else {
        template_fail("macro '{}' takes no keyword argument '{}'", stmt->text, key);
      }
    }
    for (size_t i = 0; i < params.size(); ++i) {
      if (bound[i]) continue;
      inner->vars[params[i].first] = params[i].second ? eval(*params[i].second, inner)
                                                      : Value::undefined(fmt::format("parameter '{}' was not provided", params[i].first));
    }
    return Value::from_string(render_block(stmt->body, inner));
  });
}

Value Interpreter::lookup(const std::string& name, const ScopePtr& scope) {
  for (const Scope* s = scope.get(); s; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return it->second;
  }
  Value g = lookup_global(name);
  if (!g.is_undefined()) return g;
  return Value::undefined(fmt::format("'{}' is undefined", name));
}

Value Interpreter::getattr(const Value& obj, const std::string& name) {
  switch (obj.type) {
    case Type::Undefined:
      undefined_error(obj);
    case Type::Namespace:
      if (const Value* v = obj.dict->find(name)) return *v;
      return Value::undefined(fmt::format("'{}' has no attribute '{}'", obj.repr(), name));
    case Type::Dict: {
      Value m = lookup_method(obj, name);
      if (!m.is_undefined() || !m.text.empty()) return m;
      if (const Value* v = obj.dict->find(name)) return *v;
      return Value::undefined(fmt::format("'dict object' has no attribute '{}'", name));
    }
    case Type::String:
    case Type::List:
    case Type::Tuple: {
      Value m = lookup_method(obj, name);
      if (!m.is_undefined() || !m.text.empty()) return m;
      return Value::undefined(fmt::format("'{} object' has no attribute '{}'", obj.type_name(), name));
    }
    case Type::None:
      return Value::undefined(fmt::format("'None' has no attribute '{}'", name));
    default:
      return Value::undefined(fmt::format("'{} object' has no attribute '{}'", obj.type_name(), name));
  }
}

Value Interpreter::getitem(const Value& obj, const Value& key) {
  switch (obj.type) {
    case Type::Undefined:
      undefined_error(obj);
    case Type::Dict:
      if (key.type == Type::List || key.type == Type::Dict) template_fail("unhashable type: '{}'", key.type_name());
      if (const Value* v = obj.dict->find(key)) return *v;
      if (key.type == Type::String) return getattr(obj, key.text);
      return Value::undefined(fmt::format("'dict object' has no attribute {}", key.repr()));
    case Type::List:
    case Type::Tuple:
    case Type::String: {
      if (key.type == Type::String) return getattr(obj, key.text);
      if (!key.is_integral()) return Value::undefined(fmt::format("'{} object' has no attribute {}", obj.type_name(), key.repr()));
      int64_t i = key.as_int();
      if (obj.type == Type::String) {
        std::u32string cps = utf8_decode(obj.text);
        int64_t n = int64_t(cps.size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value::undefined(fmt::format("str object has no element {}", key.as_int()));
        return Value::from_string(utf8_encode(cps.substr(size_t(i), 1)));
      }
      int64_t n = int64_t(obj.items->size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::undefined(fmt::format("{} object has no element {}", obj.type_name(), key.as_int()));
      return (*obj.items)[size_t(i)];
    }
    case Type::Namespace:
      if (key.type == Type::String) return getattr(obj, key.text);
      return Value::undefined(fmt::format("'{}' object is not subscriptable", obj.type_name()));
    default:
      return Value::undefined(fmt::format("'{}' object has no element {}", obj.type_name(), key.repr()));
  }
}

Value Interpreter::eval_slice(const Value& obj, const Value& start, const Value& stop, const Value& step_value) {
  if (obj.is_undefined()) undefined_error(obj);
  int64_t step = 1;
  if (!step_value.is_none()) {
    if (!step_value.is_integral()) template_fail("slice indices must be integers or None or have an __index__ method");
    step = step_value.as_int();
    if (step == 0) template_fail("slice step cannot be zero");
  }
  auto pick = [&](int64_t n, auto&& take) {
    int64_t lo, hi;
    slice_indices(n, start, stop, step, lo, hi);
    if (step > 0)
      for (int64_t i = lo; i < hi; i += step) take(i);
    else
      for (int64_t i = lo; i > hi; i += step) take(i);
  };
  if (obj.type == Type::String) {
    std::u32string cps = utf8_decode(obj.text), out;
    pick(int64_t(cps.size()), [&](int64_t i) { out.push_back(cps[size_t(i)]); });
    return Value::from_string(utf8_encode(out));
  }
  if (obj.is_sequence_type()) {
    std::vector<Value> out;
    pick(int64_t(obj.items->size()), [&](int64_t i) { out.push_back((*obj.items)[size_t(i)]); });
    Value v = Value::list(std::move(out));
    v.type = obj.type;
    return v;
  }
  // jinja2 compiles slices to plain Python subscripts, so a bad one is an error, not Undefined.
  template_fail("'{}' object is not subscriptable", obj.type_name());
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) undefined_error(callee);
  if (callee.type != Type::Function) template_fail("'{}' object is not callable", callee.type_name());
  count_step();
  DepthGuard guard(depth_, limits_.max_depth);
  return callee.function->call(*this, args);
}

CallArgs Interpreter::eval_args(const Expr& e, const ScopePtr& scope) {
  CallArgs args;
  for (const auto& item : e.items) args.positional.push_back(eval(*item, scope));
  if (e.star_args) {
    for (auto& v : iterate(eval(*e.star_args, scope))) args.positional.push_back(std::move(v));
  }
  for (const auto& [key, expr] : e.kwargs) args.keyword.emplace_back(key, eval(*expr, scope));
  if (e.star_kwargs) {
    Value d = eval(*e.star_kwargs, scope);
    if (d.type != Type::Dict) template_fail("argument after ** must be a mapping, not {}", d.type_name());
    for (const auto& [k, v] : d.dict->entries) args.keyword.emplace_back(k.str(), v);
  }
  return args;
}

bool Interpreter::compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "<") return less_than(a, b);
  if (op == ">") return less_than(b, a);
  if (op == "<=") return !less_than(b, a);
  if (op == ">=") return !less_than(a, b);
  if (op == "in") return contains(b, a);
  return !contains(b, a);  // not in
}

Value Interpreter::eval_binary(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string s = a.str() + b.str();
    check_size(s.size());
    return Value::from_string(std::move(s));
  }
  char c = op[0];
  bool both_numbers = a.is_number() && b.is_number();
  bool any_float = a.type == Type::Float || b.type == Type::Float;
  if (op == "+") {
    if (both_numbers) {
      if (any_float) return Value::from_float(a.as_double() + b.as_double());
      return Value::from_int(checked(add_overflows, a.as_int(), b.as_int()));
    }
    if (a.type == Type::String && b.type == Type::String) {
      check_size(a.text.size() + b.text.size());
      return Value::from_string(a.text + b.text);
    }
    if (a.is_sequence_type() && a.type == b.type) {
      std::vector<Value> items = *a.items;
      items.insert(items.end(), b.items->begin(), b.items->end());
      Value v = Value::list(std::move(items));
      v.type = a.type;
      return v;
    }
    unsupported("+", a, b);
  }
  if (op == "-") {
    if (!both_numbers) unsupported("-", a, b);
    if (any_float) return Value::from_float(a.as_double() - b.as_double());
    return Value::from_int(checked(sub_overflows, a.as_int(), b.as_int()));
  }
  if (op == "*") {
    if (both_numbers) {
      if (any_float) return Value::from_float(a.as_double() * b.as_double());
      return Value::from_int(checked(mul_overflows, a.as_int(), b.as_int()));
    }
    const Value* seq = a.is_integral() ? &b : &a;
    const Value* count = a.is_integral() ? &a : &b;
    if (!count->is_integral() || !(seq->type == Type::String || seq->is_sequence_type())) unsupported("*", a, b);
    int64_t n = std::max<int64_t>(0, count->as_int());
    if (seq->type == Type::String) {
      if (n > 0 && !seq->text.empty()) check_size(uint64_t(n) > SIZE_MAX / seq->text.size() ? SIZE_MAX : seq->text.size() * size_t(n));
      std::string s;
      for (int64_t i = 0; i < n; ++i) s += seq->text;
      return Value::from_string(std::move(s));
    }
    if (n > 0 && !seq->items->empty())
      check_size(uint64_t(n) > SIZE_MAX / (seq->items->size() * sizeof(Value)) ? SIZE_MAX : seq->items->size() * size_t(n) * sizeof(Value));
    std::vector<Value> items;
    for (int64_t i = 0; i < n; ++i) items.insert(items.end(), seq->items->begin(), seq->items->end());
    Value v = Value::list(std::move(items));
    v.type = seq->type;
    return v;
  }
  if (!both_numbers) {
    if (op == "%" && a.type == Type::String) {
      std::string s = py_percent_format(a.text, b);
      check_size(s.size());
      return Value::from_string(std::move(s));
    }
    unsupported(op.c_str(), a, b);
  }
  if (op == "/") {
    if (b.as_double() == 0) template_fail("division by zero");
    return Value::from_float(a.as_double() / b.as_double());
  }
  if (op == "**") {
    if (!any_float && b.as_int() >= 0) {
      int64_t base = a.as_int(), result = 1;
      for (int64_t e = b.as_int(); e > 0; --e) {
        result = checked(mul_overflows, result, base);
        if (result == 0 || result == 1) break;
        count_step();
      }
      return Value::from_int(result);
    }
    if (a.as_double() == 0 && b.as_double() < 0) template_fail("0.0 cannot be raised to a negative power");
    double r = std::pow(a.as_double(), b.as_double());
    if (std::isinf(r) && std::isfinite(a.as_double()) && std::isfinite(b.as_double())) template_fail("(34, 'Numerical result out of range')");
    return Value::from_float(r);
  }
  if (c == '/' || c == '%') {  // "//" and "%": Python's floor semantics
    if (b.as_double() == 0) template_fail("integer division or modulo by zero");
    if (any_float) {  // CPython's float_divmod
      double x = a.as_double(), y = b.as_double();
      double mod = std::fmod(x, y);
      double div = (x - mod) / y;
      if (mod != 0) {
        if ((y < 0) != (mod < 0)) {
          mod += y;
          div -= 1.0;
        }
      } else {
        mod = std::copysign(0.0, y);
      }
      double floordiv;
      if (div != 0) {
        floordiv = std::floor(div);
        if (div - floordiv > 0.5) floordiv += 1.0;
      } else {
        floordiv = std::copysign(0.0, x / y);
      }
      return Value::from_float(op == "%" ? mod : floordiv);
    }
    int64_t x = a.as_int(), y = b.as_int();
    if (x == INT64_MIN && y == -1) template_fail("integer overflow");
    int64_t q = x / y, m = x % y;
    if (m != 0 && ((m < 0) != (y < 0))) {
      --q;
      m += y;
    }
    return Value::from_int(op == "%" ? m : q);
  }
  unsupported(op.c_str(), a, b);
}

Value Interpreter::eval(const Expr& e, const ScopePtr& scope) {
  DepthGuard guard(depth_, limits_.max_depth);
  return eval_inner(e, scope);
}

Value Interpreter::eval_inner(const Expr& e, const ScopePtr& scope) {
  switch (e.kind) {
    case Expr::Kind::Literal:
      return e.value;
    case Expr::Kind::Name:
      return lookup(e.name, scope);
    case Expr::Kind::List:
    case Expr::Kind::Tuple: {
      std::vector<Value> items;
      for (const auto& item : e.items) items.push_back(eval(*item, scope));
      return e.kind == Expr::Kind::List ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case Expr::Kind::Dict: {
      Value d = Value::new_dict();
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
        Value key = eval(*e.items[i], scope);
        if (key.type == Type::List || key.type == Type::Dict || key.is_undefined())
          template_fail("unhashable type: '{}'", key.type_name());
        d.dict->set(key, eval(*e.items[i + 1], scope));
      }
      return d;
    }
    case Expr::Kind::Attr:
      return getattr(eval(*e.a, scope), e.name);
    case Expr::Kind::Item:
      return getitem(eval(*e.a, scope), eval(*e.b, scope));
    case Expr::Kind::Slice: {
      Value obj = eval(*e.a, scope);
      Value start = e.b ? eval(*e.b, scope) : Value::none();
      Value stop = e.c ? eval(*e.c, scope) : Value::none();
      Value step = e.d ? eval(*e.d, scope) : Value::none();
      return eval_slice(obj, start, stop, step);
    }
    case Expr::Kind::Call: {
      Value callee = eval(*e.a, scope);
      CallArgs args = eval_args(e, scope);
      return call(callee, args);
    }
    case Expr::Kind::Filter: {
      Value input = e.a ? eval(*e.a, scope) : *block_input_;
      CallArgs args = eval_args(e, scope);
      count_step();
      return apply_filter(*this, e.name, input, args);
    }
    case Expr::Kind::Test: {
      Value input = eval(*e.a, scope);
      CallArgs args = eval_args(e, scope);
      return Value::from_bool(apply_test(*this, e.name, input, args));
    }
    case Expr::Kind::Unary: {
      Value v = eval(*e.a, scope);
      if (v.is_undefined()) undefined_error(v);
      if (!v.is_number()) template_fail("bad operand type for unary {}: '{}'", e.name, v.type_name());
      if (e.name == "+") return v.type == Type::Bool ? Value::from_int(v.as_int()) : v;
      if (v.type == Type::Float) return Value::from_float(-v.real);
      if (v.as_int() == INT64_MIN) template_fail("integer overflow");
      return Value::from_int(-v.as_int());
    }
    case Expr::Kind::Binary:
      if (e.name == "**" && is_negative_literal(*e.a) && !is_constant(*e.b)) {
        // jinja2 writes a folded negative literal into the generated Python unparenthesized, so
        // `-2 ** x` computes -(2 ** x) there (while a fully constant `-2 ** 2` folds to 4).
        Value magnitude = eval_binary("-", Value::from_int(0), e.a->value);
        return eval_binary("-", Value::from_int(0), eval_binary("**", magnitude, eval(*e.b, scope)));
      }
      return eval_binary(e.name, eval(*e.a, scope), eval(*e.b, scope));
    case Expr::Kind::And: {
      Value a = eval(*e.a, scope);
      return a.truthy() ? eval(*e.b, scope) : a;
    }
    case Expr::Kind::Or: {
      Value a = eval(*e.a, scope);
      return a.truthy() ? a : eval(*e.b, scope);
    }
    case Expr::Kind::Not:
      return Value::from_bool(!eval(*e.a, scope).truthy());
    case Expr::Kind::Compare: {
      Value left = eval(*e.a, scope);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.items[i], scope);
        if (!compare(e.ops[i], left, right)) return Value::from_bool(false);
        left = std::move(right);
      }
      return Value::from_bool(true);
    }
    case Expr::Kind::Condition:
      if (eval(*e.a, scope).truthy()) return eval(*e.b, scope);
      if (e.c) return eval(*e.c, scope);
      return Value::undefined("the inline if-expression evaluated to false and no else section was defined");
  }
  return Value();
}

}  // namespace dcu::jinja
