#include "text/jinja/parser.h"

#include <initializer_list>
#include <optional>

#include "text/jinja/builtins.h"
#include "text/jinja/error.h"
#include "text/jinja/lexer.h"

namespace dcu::jinja {
namespace {

constexpr int kMaxDepth = 200;  // nesting of expressions and blocks; deeper templates are rejected

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Body parse() {
    check_error(cur());
    Body body = subparse({});
    // jinja2 looks filters and tests up when compiling, after parsing: syntax errors come first.
    if (unknown_name_) throw *unknown_name_;
    return body;
  }

 private:
  // --- token stream -------------------------------------------------------------------------
  const Token& cur() const { return tokens_[pos_]; }
  static void check_error(const Token& t) {
    if (t.type == TokenType::Error) throw TemplateError(t.line, t.text);
  }
  const Token& look() const {
    const Token& t = tokens_[pos_ + 1 < tokens_.size() ? pos_ + 1 : pos_];
    check_error(t);
    return t;
  }
  const Token& next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    check_error(tokens_[pos_]);
    return t;
  }
  static bool is_op(const Token& t, const char* op) { return t.type == TokenType::Operator && t.text == op; }
  static bool is_name(const Token& t, const char* name) { return t.type == TokenType::Name && t.text == name; }
  bool skip_op(const char* op) {
    if (!is_op(cur(), op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(cur(), name)) return false;
    next();
    return true;
  }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case TokenType::Data: return "template data";
      case TokenType::VariableBegin: return "begin of print statement";
      case TokenType::VariableEnd: return "end of print statement";
      case TokenType::BlockBegin: return "begin of statement block";
      case TokenType::BlockEnd: return "end of statement block";
      case TokenType::End: return "end of template";
      case TokenType::String: return "string";
      case TokenType::Integer: return "integer";
      case TokenType::Float: return "float";
      default: return t.text;
    }
  }
  [[noreturn]] void fail(const std::string& message) const { throw TemplateError(cur().line, message); }
  [[noreturn]] void fail_eof(const std::string& what) const {
    throw TemplateError(cur().line, "unexpected end of template, expected " + what);
  }
  void expect_op(const char* op) {
    if (cur().type == TokenType::End) fail_eof(fmt::format("'{}'", op));
    if (!skip_op(op)) fail(fmt::format("expected token '{}', got '{}'", op, describe(cur())));
  }
  void expect_name(const char* name) {
    if (cur().type == TokenType::End) fail_eof(fmt::format("'{}'", name));
    if (!skip_name(name)) fail(fmt::format("expected token '{}', got '{}'", name, describe(cur())));
  }
  std::string expect_any_name() {
    if (cur().type == TokenType::End) fail_eof("a name");
    if (cur().type != TokenType::Name) fail(fmt::format("expected token 'name', got '{}'", describe(cur())));
    return next().text;
  }
  void expect(TokenType type) {
    if (cur().type == type) {
      next();
      return;
    }
    if (cur().type == TokenType::End) fail_eof(describe(Token{type, "", {}, 0}));
    fail(fmt::format("expected token '{}', got '{}'", describe(Token{type, "", {}, 0}), describe(cur())));
  }

  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p(p) {
      if (++p.depth_ > kMaxDepth) p.fail("template nesting too deep");
    }
    ~DepthGuard() { --p.depth_; }
    Parser& p;
  };

  ExprPtr make(Expr::Kind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }
  StmtPtr make_stmt(Stmt::Kind kind, int line) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = line;
    return s;
  }

  // --- statements -----------------------------------------------------------------------------
  Body subparse(std::initializer_list<const char*> end_tokens) {
    DepthGuard guard(*this);
    Body body;
    while (cur().type != TokenType::End) {
      const Token& t = cur();
      if (t.type == TokenType::Data) {
        auto s = make_stmt(Stmt::Kind::Text, t.line);
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.type == TokenType::VariableBegin) {
        next();
        auto s = make_stmt(Stmt::Kind::Print, cur().line);
        s->expr = parse_tuple(false, true, {}, false);
        s->line = s->expr->line;  // jinja2 reports errors of a {{ }} at its expression node's line
        expect(TokenType::VariableEnd);
        body.push_back(std::move(s));
      } else if (t.type == TokenType::BlockBegin) {
        next();
        for (const char* end : end_tokens)
          if (is_name(cur(), end)) return body;
        body.push_back(parse_statement());
        expect(TokenType::BlockEnd);
      } else {
        fail("internal parsing error");
      }
    }
    if (end_tokens.size() > 0) {
      std::string names;
      for (const char* e : end_tokens) names += (names.empty() ? "'" : " or '") + std::string(e) + "'";
      fail_eof(names);
    }
    return body;
  }

  Body parse_statements(std::initializer_list<const char*> end_tokens, bool drop_needle) {
    skip_op(":");
    expect(TokenType::BlockEnd);
    Body body = subparse(end_tokens);
    if (drop_needle) next();
    return body;
  }

  StmtPtr parse_statement() {
    const Token& t = cur();
    if (t.type != TokenType::Name) fail("tag name expected");
    const std::string& n = t.text;
    if (n == "for") return parse_for();
    if (n == "if") return parse_if();
    if (n == "set") return parse_set();
    if (n == "macro") return parse_macro();
    if (n == "call") return parse_call_block();
    if (n == "filter") return parse_filter_block();
    if (n == "with") return parse_with();
    if (n == "generation") {  // transformers' AssistantTracker: the body renders as is
      auto s = make_stmt(Stmt::Kind::With, next().line);
      s->body = parse_statements({"endgeneration"}, true);
      return s;
    }
    if (n == "break" || n == "continue") {
      // jinja2 emits a Python break/continue, which Python rejects outside a loop.
      if (loop_depth_ == 0) fail(fmt::format("'{}' outside loop", n));
      return make_stmt(n == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, next().line);
    }
    if (n == "block" || n == "extends" || n == "include" || n == "import" || n == "from" || n == "autoescape" || n == "print" || n == "do")
      fail(fmt::format("the '{}' tag is not supported in chat templates", n));
    fail(fmt::format("Encountered unknown tag '{}'.", n));
  }

  StmtPtr parse_for() {
    auto s = make_stmt(Stmt::Kind::For, next().line);
    s->target = parse_assign_target(true, false, "in", false);
    expect_name("in");
    s->expr = parse_tuple(false, false, "recursive", false);
    if (skip_name("if")) s->condition = parse_expression(true);
    if (is_name(cur(), "recursive")) fail("recursive loops are not supported");
    ++loop_depth_;
    s->body = parse_statements({"endfor", "else"}, false);
    --loop_depth_;
    if (next().text == "else") s->else_body = parse_statements({"endfor"}, true);
    return s;
  }

  StmtPtr parse_if() {
    auto s = make_stmt(Stmt::Kind::If, next().line);
    s->condition = parse_tuple(false, false, {}, false);
    s->body = parse_statements({"elif", "else", "endif"}, false);
    Stmt* node = s.get();
    while (true) {
      const Token& t = next();
      if (t.text == "elif") {
        auto elif = make_stmt(Stmt::Kind::If, cur().line);
        elif->condition = parse_tuple(false, false, {}, false);
        elif->body = parse_statements({"elif", "else", "endif"}, false);
        Stmt* raw = elif.get();
        node->else_body.push_back(std::move(elif));
        node = raw;
      } else if (t.text == "else") {
        node->else_body = parse_statements({"endif"}, true);
        break;
      } else {
        break;
      }
    }
    return s;
  }

  StmtPtr parse_set() {
    int line = next().line;
    Target target = parse_assign_target(true, false, {}, true);
    if (skip_op("=")) {
      auto s = make_stmt(Stmt::Kind::Set, line);
      s->target = std::move(target);
      s->expr = parse_tuple(false, true, {}, false);
      return s;
    }
    auto s = make_stmt(Stmt::Kind::SetBlock, line);
    s->target = std::move(target);
    if (is_op(cur(), "|")) s->filter = parse_filter(nullptr, false);
    s->body = parse_statements({"endset"}, true);
    return s;
  }

  StmtPtr parse_macro() {
    auto s = make_stmt(Stmt::Kind::Macro, next().line);
    s->text = expect_any_name();
    parse_signature(*s);
    s->body = parse_function_body("endmacro");
    return s;
  }

  // Macro and caller bodies compile to Python functions: loops around them do not count.
  Body parse_function_body(const char* end) {
    int saved = loop_depth_;
    loop_depth_ = 0;
    Body body = parse_statements({end}, true);
    loop_depth_ = saved;
    return body;
  }

  void parse_signature(Stmt& s) {
    expect_op("(");
    bool has_default = false;
    while (!is_op(cur(), ")")) {
      if (!s.params.empty()) expect_op(",");
      std::string name = expect_any_name();
      ExprPtr def;
      if (skip_op("=")) {
        def = parse_expression(true);
        has_default = true;
      } else if (has_default) {
        fail("non-default argument follows default argument");
      }
      s.params.emplace_back(std::move(name), std::move(def));
    }
    expect_op(")");
  }

  StmtPtr parse_call_block() {
    auto s = make_stmt(Stmt::Kind::CallBlock, next().line);
    if (is_op(cur(), "(")) parse_signature(*s);
    s->expr = parse_expression(true);
    if (s->expr->kind != Expr::Kind::Call) fail("expected call");
    s->body = parse_function_body("endcall");
    return s;
  }

  StmtPtr parse_filter_block() {
    auto s = make_stmt(Stmt::Kind::FilterBlock, next().line);
    s->filter = parse_filter(nullptr, true);
    s->body = parse_statements({"endfilter"}, true);
    return s;
  }

  StmtPtr parse_with() {
    auto s = make_stmt(Stmt::Kind::With, next().line);
    while (cur().type != TokenType::BlockEnd) {
      if (!s->params.empty()) expect_op(",");
      std::string name = expect_any_name();
      expect_op("=");
      s->params.emplace_back(std::move(name), parse_expression(true));
    }
    s->body = parse_statements({"endwith"}, true);
    return s;
  }

  Target parse_assign_target(bool with_tuple, bool name_only, const char* extra_end, bool with_namespace) {
    Target target;
    if (with_namespace && cur().type == TokenType::Name && is_op(look(), ".")) {
      target.names.push_back(next().text);
      next();
      target.attribute = expect_any_name();
      return target;
    }
    if (name_only) {
      target.names.push_back(expect_any_name());
      return target;
    }
    ExprPtr e = with_tuple ? parse_tuple(true, true, extra_end, false) : parse_primary();
    if (e->kind == Expr::Kind::Name) {
      target.names.push_back(e->name);
    } else if (e->kind == Expr::Kind::Tuple) {
      target.is_tuple = true;
      for (auto& item : e->items) {
        if (item->kind != Expr::Kind::Name) throw TemplateError(e->line, "can't assign to this expression");
        target.names.push_back(item->name);
      }
    } else {
      throw TemplateError(e->line, "can't assign to this expression");
    }
    return target;
  }

  // --- expressions ----------------------------------------------------------------------------
  ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

  ExprPtr parse_condexpr() {
    DepthGuard guard(*this);
    int line = cur().line;
    ExprPtr expr1 = parse_or();
    while (skip_name("if")) {
      auto node = make(Expr::Kind::Condition, line);
      node->a = parse_or();
      if (skip_name("else")) node->c = parse_condexpr();
      node->b = std::move(expr1);
      expr1 = std::move(node);
      line = cur().line;
    }
    return expr1;
  }

  ExprPtr parse_or() {
    int line = cur().line;
    ExprPtr left = parse_and();
    while (skip_name("or")) {
      auto node = make(Expr::Kind::Or, line);
      node->a = std::move(left);
      node->b = parse_and();
      left = std::move(node);
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_and() {
    int line = cur().line;
    ExprPtr left = parse_not();
    while (skip_name("and")) {
      auto node = make(Expr::Kind::And, line);
      node->a = std::move(left);
      node->b = parse_not();
      left = std::move(node);
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_not() {
    DepthGuard guard(*this);
    if (is_name(cur(), "not")) {
      auto node = make(Expr::Kind::Not, next().line);
      node->a = parse_not();
      return node;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    int line = cur().line;
    ExprPtr expr = parse_math1();
    ExprPtr node;
    while (true) {
      std::string op;
      const Token& t = cur();
      if (t.type == TokenType::Operator && (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">=")) {
        op = t.text;
        next();
      } else if (skip_name("in")) {
        op = "in";
      } else if (is_name(t, "not") && is_name(look(), "in")) {
        next();
        next();
        op = "not in";
      } else {
        break;
      }
      if (!node) {
        node = make(Expr::Kind::Compare, line);
        node->a = std::move(expr);
      }
      node->ops.push_back(op);
      node->items.push_back(parse_math1());
    }
    return node ? std::move(node) : std::move(expr);
  }

  ExprPtr binary(const std::string& op, ExprPtr left, ExprPtr right, int line) {
    auto node = make(Expr::Kind::Binary, line);
    node->name = op;
    node->a = std::move(left);
    node->b = std::move(right);
    return node;
  }

  ExprPtr parse_math1() {
    int line = cur().line;
    ExprPtr left = parse_concat();
    while (is_op(cur(), "+") || is_op(cur(), "-")) {
      std::string op = next().text;
      left = binary(op, std::move(left), parse_concat(), line);
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_concat() {
    int line = cur().line;
    ExprPtr left = parse_math2();
    while (skip_op("~")) left = binary("~", std::move(left), parse_math2(), line);
    return left;
  }

  ExprPtr parse_math2() {
    int line = cur().line;
    ExprPtr left = parse_pow();
    while (is_op(cur(), "*") || is_op(cur(), "/") || is_op(cur(), "//") || is_op(cur(), "%")) {
      std::string op = next().text;
      left = binary(op, std::move(left), parse_pow(), line);
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_pow() {
    int line = cur().line;
    ExprPtr left = parse_unary(true);
    while (skip_op("**")) {
      left = binary("**", std::move(left), parse_unary(true), line);
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    int line = cur().line;
    ExprPtr node;
    if (is_op(cur(), "-") || is_op(cur(), "+")) {
      node = make(Expr::Kind::Unary, line);
      node->name = next().text;
      node->a = parse_unary(false);
      // jinja2's optimizer folds a sign on a number literal into the literal (see `**` in the
      // interpreter for why that is visible).
      const Value& v = node->a->value;
      if (node->a->kind == Expr::Kind::Literal && (v.type == Type::Int || v.type == Type::Float) &&
          !(v.type == Type::Int && v.integer == INT64_MIN) && node->name == "-") {
        ExprPtr literal = std::move(node->a);
        literal->value = v.type == Type::Int ? Value::from_int(-v.integer) : Value::from_float(-v.real);
        literal->line = line;
        node = std::move(literal);
      }
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    DepthGuard guard(*this);
    const Token& t = cur();
    if (t.type == TokenType::Name) {
      next();
      auto node = make(Expr::Kind::Literal, t.line);
      if (t.text == "true" || t.text == "True") node->value = Value::from_bool(true);
      else if (t.text == "false" || t.text == "False") node->value = Value::from_bool(false);
      else if (t.text == "none" || t.text == "None") node->value = Value::none();
      else {
        node->kind = Expr::Kind::Name;
        node->name = t.text;
      }
      return node;
    }
    if (t.type == TokenType::String) {
      auto node = make(Expr::Kind::Literal, t.line);
      std::string s;
      while (cur().type == TokenType::String) s += next().text;
      node->value = Value::from_string(std::move(s));
      return node;
    }
    if (t.type == TokenType::Integer || t.type == TokenType::Float) {
      auto node = make(Expr::Kind::Literal, t.line);
      node->value = next().number;
      return node;
    }
    if (is_op(t, "(")) {
      next();
      ExprPtr node = parse_tuple(false, true, {}, true);
      expect_op(")");
      return node;
    }
    if (is_op(t, "[")) return parse_list();
    if (is_op(t, "{")) return parse_dict();
    if (t.type == TokenType::End) fail_eof("an expression");
    fail(fmt::format("unexpected '{}'", describe(t)));
  }

  bool is_tuple_end(const char* extra_end) const {
    const Token& t = cur();
    if (t.type == TokenType::VariableEnd || t.type == TokenType::BlockEnd || is_op(t, ")")) return true;
    return extra_end && is_name(t, extra_end);
  }

  // simplified: primaries only (assignment targets); with_condexpr: allow `a if b else c`.
  ExprPtr parse_tuple(bool simplified, bool with_condexpr, const char* extra_end, bool explicit_parentheses) {
    int line = cur().line;
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
      if (!args.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      args.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
      if (is_op(cur(), ",")) is_tuple = true;
      else break;
      line = cur().line;
    }
    if (!is_tuple) {
      if (!args.empty()) return std::move(args[0]);
      if (!explicit_parentheses) {
        if (cur().type == TokenType::End) fail_eof("an expression");
        fail(fmt::format("Expected an expression, got '{}'", describe(cur())));
      }
    }
    auto node = make(Expr::Kind::Tuple, line);
    node->items = std::move(args);
    return node;
  }

  ExprPtr parse_list() {
    auto node = make(Expr::Kind::List, next().line);
    while (!is_op(cur(), "]")) {
      if (!node->items.empty()) expect_op(",");
      if (is_op(cur(), "]")) break;
      node->items.push_back(parse_expression(true));
    }
    expect_op("]");
    return node;
  }

  ExprPtr parse_dict() {
    auto node = make(Expr::Kind::Dict, next().line);
    while (!is_op(cur(), "}")) {
      if (!node->items.empty()) expect_op(",");
      if (is_op(cur(), "}")) break;
      node->items.push_back(parse_expression(true));
      expect_op(":");
      node->items.push_back(parse_expression(true));
    }
    expect_op("}");
    return node;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(cur(), ".") || is_op(cur(), "[")) node = parse_subscript(std::move(node));
      else if (is_op(cur(), "(")) node = parse_call(std::move(node));
      else return node;
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op(cur(), "|")) node = parse_filter(std::move(node), false);
      else if (is_name(cur(), "is")) node = parse_test(std::move(node));
      else if (is_op(cur(), "(")) node = parse_call(std::move(node));
      else return node;
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    DepthGuard guard(*this);
    const Token& t = next();
    if (t.text == ".") {
      const Token& attr = next();
      if (attr.type == TokenType::Name) {
        auto e = make(Expr::Kind::Attr, t.line);
        e->a = std::move(node);
        e->name = attr.text;
        return e;
      }
      if (attr.type != TokenType::Integer) throw TemplateError(attr.line, "expected name or number");
      auto e = make(Expr::Kind::Item, t.line);
      e->a = std::move(node);
      e->b = make(Expr::Kind::Literal, attr.line);
      e->b->value = attr.number;
      return e;
    }
    std::vector<ExprPtr> args;
    while (!is_op(cur(), "]")) {
      if (!args.empty()) expect_op(",");
      args.push_back(parse_subscribed());
    }
    expect_op("]");
    ExprPtr key;
    if (args.size() == 1) {
      key = std::move(args[0]);
    } else {
      // jinja2 compiles `x[1:, 2]` to invalid Python and fails; so do we, at parse time.
      for (const auto& arg : args)
        if (arg->kind == Expr::Kind::Slice) throw TemplateError(arg->line, "a slice cannot be part of a subscript tuple");
      key = make(Expr::Kind::Tuple, t.line);
      key->items = std::move(args);
    }
    if (key->kind == Expr::Kind::Slice) {
      key->a = std::move(node);
      return key;
    }
    auto e = make(Expr::Kind::Item, t.line);
    e->a = std::move(node);
    e->b = std::move(key);
    return e;
  }

  ExprPtr parse_subscribed() {
    int line = cur().line;
    auto slice = make(Expr::Kind::Slice, line);
    if (skip_op(":")) {
      // start omitted
    } else {
      ExprPtr node = parse_expression(true);
      if (!is_op(cur(), ":")) return node;
      next();
      slice->b = std::move(node);
    }
    if (!is_op(cur(), ":") && !is_op(cur(), "]") && !is_op(cur(), ",")) slice->c = parse_expression(true);
    if (skip_op(":")) {
      if (!is_op(cur(), "]") && !is_op(cur(), ",")) slice->d = parse_expression(true);
    }
    return slice;
  }

  void parse_call_args(Expr& node) {
    expect_op("(");
    bool require_comma = false;
    while (!is_op(cur(), ")")) {
      if (require_comma) {
        expect_op(",");
        if (is_op(cur(), ")")) break;
      }
      if (skip_op("*")) {
        node.star_args = parse_expression(true);
      } else if (skip_op("**")) {
        node.star_kwargs = parse_expression(true);
      } else if (cur().type == TokenType::Name && is_op(look(), "=")) {
        std::string key = next().text;
        next();
        node.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        node.items.push_back(parse_expression(true));
      }
      require_comma = true;
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr callee) {
    DepthGuard guard(*this);
    auto node = make(Expr::Kind::Call, cur().line);
    node->a = std::move(callee);
    parse_call_args(*node);
    return node;
  }

  std::string parse_dotted_name() {
    std::string name = expect_any_name();
    while (skip_op(".")) name.append(1, '.').append(expect_any_name());
    return name;
  }

  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
    while (is_op(cur(), "|") || start_inline) {
      DepthGuard guard(*this);
      if (!start_inline) next();
      start_inline = false;
      int line = cur().line;
      auto f = make(Expr::Kind::Filter, line);
      f->name = parse_dotted_name();
      if (!is_known_filter(f->name) && !unknown_name_) unknown_name_ = TemplateError(line, fmt::format("No filter named '{}'.", f->name));
      if (is_op(cur(), "(")) parse_call_args(*f);
      f->a = std::move(node);
      node = std::move(f);
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    DepthGuard guard(*this);
    int line = next().line;
    bool negated = skip_name("not");
    auto test = make(Expr::Kind::Test, line);
    test->name = parse_dotted_name();
    if (!is_known_test(test->name) && !unknown_name_) unknown_name_ = TemplateError(line, fmt::format("No test named '{}'.", test->name));
    const Token& t = cur();
    if (is_op(t, "(")) {
      parse_call_args(*test);
    } else if ((t.type == TokenType::Name || t.type == TokenType::String || t.type == TokenType::Integer || t.type == TokenType::Float ||
                is_op(t, "(") || is_op(t, "[") || is_op(t, "{")) &&
               !is_name(t, "else") && !is_name(t, "or") && !is_name(t, "and")) {
      if (is_name(t, "is")) fail("You cannot chain multiple tests with is");
      test->items.push_back(parse_postfix(parse_primary()));
    }
    test->a = std::move(node);
    if (!negated) return test;
    auto n = make(Expr::Kind::Not, line);
    n->a = std::move(test);
    return n;
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;  // enclosing for-loop bodies, for break/continue
  std::optional<TemplateError> unknown_name_;  // first unknown filter or test
};

}  // namespace

Body parse_template(const std::string& source) { return Parser(tokenize(source)).parse(); }

}  // namespace dcu::jinja
