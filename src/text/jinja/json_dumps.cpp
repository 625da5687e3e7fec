#include "text/jinja/json_dumps.h"

#include <algorithm>
#include <cmath>

#include "text/jinja/error.h"
#include "text/jinja/unicode.h"

namespace dcu::jinja {
namespace {

void dump_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out.push_back('"');
  for (char32_t c : utf8_decode(s)) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || (ensure_ascii && c >= 0x7F)) {
          if (c >= 0x10000) {
            char32_t v = c - 0x10000;
            out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
          } else {
            out += fmt::format("\\u{:04x}", uint32_t(c));
          }
        } else {
          utf8_append(out, c);
        }
    }
  }
  out.push_back('"');
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return float_repr(d);
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o) {}

  void dump(std::string& out, const Value& v, int level) {
    if (level > 200) template_fail("maximum recursion depth exceeded while encoding a JSON object");
    switch (v.type) {
      case Type::None: out += "null"; return;
      case Type::Bool: out += v.boolean ? "true" : "false"; return;
      case Type::Int: out += std::to_string(v.integer); return;
      case Type::Float: out += float_json(v.real); return;
      case Type::String: dump_string(out, v.text, o_.ensure_ascii); return;
      case Type::List:
      case Type::Tuple: {
        if (v.items->empty()) {
          out += "[]";
          return;
        }
        out.push_back('[');
        for (size_t i = 0; i < v.items->size(); ++i) {
          if (i) out += o_.item_separator;
          newline(out, level + 1);
          dump(out, (*v.items)[i], level + 1);
        }
        newline(out, level);
        out.push_back(']');
        return;
      }
      case Type::Dict: {
        if (v.dict->entries.empty()) {
          out += "{}";
          return;
        }
        std::vector<const std::pair<Value, Value>*> entries;
        for (const auto& e : v.dict->entries) entries.push_back(&e);
        if (o_.sort_keys)
          std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return less_than(a->first, b->first); });
        out.push_back('{');
        bool first = true;
        for (const auto* e : entries) {
          if (!first) out += o_.item_separator;
          first = false;
          newline(out, level + 1);
          dump_key(out, e->first);
          out += o_.key_separator;
          dump(out, e->second, level + 1);
        }
        newline(out, level);
        out.push_back('}');
        return;
      }
      default:
        template_fail("Object of type {} is not JSON serializable", v.type_name());
    }
  }

 private:
  void newline(std::string& out, int level) {
    if (!o_.indent) return;
    out.push_back('\n');
    for (int i = 0; i < level; ++i) out += *o_.indent;
  }

  void dump_key(std::string& out, const Value& k) {
    switch (k.type) {
      case Type::String: dump_string(out, k.text, o_.ensure_ascii); return;
      case Type::None: out += "\"null\""; return;
      case Type::Bool: out += k.boolean ? "\"true\"" : "\"false\""; return;
      case Type::Int: out.append(1, '"').append(std::to_string(k.integer)).append(1, '"'); return;
      case Type::Float: out.append(1, '"').append(float_json(k.real)).append(1, '"'); return;
      default:
        template_fail("keys must be str, int, float, bool or None, not {}", k.type_name());
    }
  }

  const JsonDumpOptions& o_;
};

}  // namespace

std::string json_dumps(const Value& value, const JsonDumpOptions& options) {
  std::string out;
  Dumper(options).dump(out, value, 0);
  return out;
}

}  // namespace dcu::jinja
