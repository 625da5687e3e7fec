#pragma once
// The syntax tree. Nodes carry their template line so runtime errors can name it.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.h"

namespace dcu::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,   // value
    Name,      // name
    List,      // items
    Tuple,     // items
    Dict,      // items: key, value, key, value, ...
    Attr,      // a.name
    Item,      // a[b]
    Slice,     // a[b:c:d], absent parts null
    Call,      // a(items, kwargs)
    Filter,    // a|name(items, kwargs); a null inside {% filter %} and {% set x | f %}
    Test,      // a is name(items, kwargs)
    Unary,     // name in {"-", "+"} applied to a
    Binary,    // a name b: + - * / // % ** ~
    And,       // a and b
    Or,        // a or b
    Not,       // not a
    Compare,   // a ops[0] items[0] ops[1] items[1] ...
    Condition  // b if a else c (c may be null)
  };
  Kind kind;
  int line;
  Value value;
  std::string name;
  std::vector<ExprPtr> items;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  ExprPtr a, b, c, d;
  ExprPtr star_args, star_kwargs;  // f(*x, **y)
};

// Left side of for/set: a name, a tuple of names, or namespace.attribute.
struct Target {
  std::vector<std::string> names;
  bool is_tuple = false;
  std::string attribute;  // set ns.attribute = ...
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    Text,        // text
    Print,       // {{ expr }}
    If,          // if expr: body else else_body (elif nests an If in else_body)
    For,         // for target in expr [if condition]: body else else_body
    Set,         // set target = expr
    SetBlock,    // set target [| filter]: body
    Macro,       // macro name(params): body
    CallBlock,   // call(params) expr: body
    FilterBlock, // filter filter: body
    With,        // with assignments: body
    Break,
    Continue
  };
  Kind kind;
  int line;
  std::string text;
  ExprPtr expr;
  ExprPtr condition;
  ExprPtr filter;  // FilterBlock / SetBlock filter chain whose innermost operand is the body
  Target target;
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro / caller parameters, With assignments
  Body body, else_body;
};

}  // namespace dcu::jinja
