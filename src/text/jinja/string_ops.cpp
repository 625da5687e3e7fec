#include "text/jinja/string_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "text/jinja/error.h"
#include "text/jinja/unicode.h"

namespace dcu::jinja {

std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right) {
  std::u32string cps = utf8_decode(s);
  std::u32string set = chars ? utf8_decode(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_py_space(c); };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip_it(cps[b])) ++b;
  if (right)
    while (e > b && strip_it(cps[e - 1])) --e;
  return utf8_encode(std::u32string_view(cps).substr(b, e - b));
}

std::vector<std::string> py_split(const std::string& s, const std::optional<std::string>& sep, int64_t maxsplit, bool from_right) {
  std::vector<std::string> parts;
  if (maxsplit < 0) maxsplit = INT64_MAX;
  if (sep) {
    if (sep->empty()) template_fail("empty separator");
    if (!from_right) {
      size_t pos = 0;
      while (maxsplit-- > 0) {
        size_t f = s.find(*sep, pos);
        if (f == std::string::npos) break;
        parts.push_back(s.substr(pos, f - pos));
        pos = f + sep->size();
      }
      parts.push_back(s.substr(pos));
    } else {
      size_t end = s.size();
      while (maxsplit-- > 0 && end >= sep->size()) {
        size_t f = s.rfind(*sep, end - sep->size());
        if (f == std::string::npos) break;
        parts.push_back(s.substr(f + sep->size(), end - f - sep->size()));
        end = f;
      }
      parts.push_back(s.substr(0, end));
      std::reverse(parts.begin(), parts.end());
    }
    return parts;
  }
  std::u32string cps = utf8_decode(s);
  if (!from_right) {
    size_t i = 0, n = cps.size();
    while (true) {
      while (i < n && is_py_space(cps[i])) ++i;
      if (i >= n) break;
      if (maxsplit-- <= 0) {
        parts.push_back(utf8_encode(std::u32string_view(cps).substr(i)));
        break;
      }
      size_t j = i;
      while (j < n && !is_py_space(cps[j])) ++j;
      parts.push_back(utf8_encode(std::u32string_view(cps).substr(i, j - i)));
      i = j;
    }
  } else {
    size_t e = cps.size();
    while (true) {
      while (e > 0 && is_py_space(cps[e - 1])) --e;
      if (e == 0) break;
      if (maxsplit-- <= 0) {
        parts.push_back(utf8_encode(std::u32string_view(cps).substr(0, e)));
        break;
      }
      size_t b = e;
      while (b > 0 && !is_py_space(cps[b - 1])) --b;
      parts.push_back(utf8_encode(std::u32string_view(cps).substr(b, e - b)));
      e = b;
    }
    std::reverse(parts.begin(), parts.end());
  }
  return parts;
}

std::string py_upper(const std::string& s) {
  std::u32string cps = utf8_decode(s);
  for (auto& c : cps) c = to_upper(c);
  return utf8_encode(cps);
}

std::string py_lower(const std::string& s) {
  std::u32string cps = utf8_decode(s);
  for (auto& c : cps) c = to_lower(c);
  return utf8_encode(cps);
}

std::string py_capitalize(const std::string& s) {
  std::u32string cps = utf8_decode(s);
  for (size_t i = 0; i < cps.size(); ++i) cps[i] = i == 0 ? to_upper(cps[i]) : to_lower(cps[i]);
  return utf8_encode(cps);
}

std::string py_title(const std::string& s) {
  std::u32string cps = utf8_decode(s);
  bool previous_cased = false;
  for (auto& c : cps) {
    bool cased = is_cased_upper(c) || is_cased_lower(c);
    c = previous_cased ? to_lower(c) : to_upper(c);
    previous_cased = cased;
  }
  return utf8_encode(cps);
}

std::string jinja_title(const std::string& s) {
  // "".join(item[0].upper() + item[1:].lower() for item in re.split(r"([-\s({\[<]+)", s) if item)
  std::u32string cps = utf8_decode(s), out;
  auto is_sep = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || is_py_space(c); };
  size_t i = 0;
  while (i < cps.size()) {
    size_t j = i;
    bool sep = is_sep(cps[i]);
    while (j < cps.size() && is_sep(cps[j]) == sep) ++j;
    for (size_t k = i; k < j; ++k) out.push_back(k == i ? to_upper(cps[k]) : to_lower(cps[k]));
    i = j;
  }
  return utf8_encode(out);
}

std::string py_replace(const std::string& s, const std::string& old, const std::string& replacement, int64_t count) {
  if (count < 0) count = INT64_MAX;
  std::string out;
  if (old.empty()) {
    std::u32string cps = utf8_decode(s);
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count-- > 0) out += replacement;
      if (i < cps.size()) utf8_append(out, cps[i]);
    }
    return out;
  }
  size_t pos = 0;
  while (count-- > 0) {
    size_t f = s.find(old, pos);
    if (f == std::string::npos) break;
    out.append(s, pos, f - pos);
    out += replacement;
    pos = f + old.size();
  }
  out.append(s, pos);
  return out;
}

static int64_t code_points_before(const std::string& s, size_t byte_pos) {
  int64_t n = 0;
  for (size_t i = 0; i < byte_pos; ++i) n += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
  return n;
}

int64_t py_find(const std::string& s, const std::string& sub, bool from_right) {
  size_t f = from_right ? s.rfind(sub) : s.find(sub);
  return f == std::string::npos ? -1 : code_points_before(s, f);
}

int64_t py_count(const std::string& s, const std::string& sub) {
  if (sub.empty()) return code_points_before(s, s.size()) + 1;
  int64_t n = 0;
  for (size_t f = s.find(sub); f != std::string::npos; f = s.find(sub, f + sub.size())) ++n;
  return n;
}

std::string py_center(const std::string& s, int64_t width) {
  int64_t len = code_points_before(s, s.size());
  if (width <= len) return s;
  int64_t marg = width - len;
  int64_t left = marg / 2 + (marg & width & 1);
  return std::string(size_t(left), ' ') + s + std::string(size_t(marg - left), ' ');
}

std::vector<std::string> py_splitlines(const std::string& s) {
  std::u32string cps = utf8_decode(s);
  std::vector<std::string> lines;
  size_t start = 0, i = 0;
  while (i < cps.size()) {
    char32_t c = cps[i];
    bool brk = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E || c == 0x85 ||
               c == 0x2028 || c == 0x2029;
    if (!brk) {
      ++i;
      continue;
    }
    lines.push_back(utf8_encode(std::u32string_view(cps).substr(start, i - start)));
    i += (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ? 2 : 1;
    start = i;
  }
  if (start < cps.size()) lines.push_back(utf8_encode(std::u32string_view(cps).substr(start)));
  return lines;
}

bool py_is_cased_as(const std::string& s, bool lower) {
  bool cased = false;
  for (char32_t c : utf8_decode(s)) {
    bool lowercase_letter = is_cased_lower(c) && !is_cased_upper(c);
    bool uppercase_letter = is_cased_upper(c) && !is_cased_lower(c);
    if (lower ? uppercase_letter : lowercase_letter) return false;
    cased = cased || lowercase_letter || uppercase_letter;
  }
  return cased;
}

int64_t word_count(const std::string& s) {
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : utf8_decode(s)) {
    bool w = c == '_' || is_alnum(c);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return n;
}

std::string py_format_value(const Value& v, const std::string& spec) {
  if (spec.empty()) return v.str();
  // [[fill]align][sign][0][width][,][.precision][type]
  size_t i = 0;
  std::string fill = " ";
  char align = '\0';
  std::u32string sp = utf8_decode(spec);
  auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (sp.size() >= 2 && is_align(sp[1])) {
    fill = utf8_encode(sp.substr(0, 1));
    align = char(sp[1]);
    i = 2;
  } else if (!sp.empty() && is_align(sp[0])) {
    align = char(sp[0]);
    i = 1;
  }
  char sign = '-';
  if (i < sp.size() && (sp[i] == '+' || sp[i] == '-' || sp[i] == ' ')) sign = char(sp[i++]);
  if (i < sp.size() && sp[i] == '0') {
    if (!align) {
      fill = "0";
      align = '=';
    }
    ++i;
  }
  int64_t width = 0;
  while (i < sp.size() && sp[i] >= '0' && sp[i] <= '9') width = std::min<int64_t>(width * 10 + (sp[i++] - '0'), 100000);
  int precision = -1;
  if (i < sp.size() && sp[i] == '.') {
    ++i;
    precision = 0;
    while (i < sp.size() && sp[i] >= '0' && sp[i] <= '9') precision = std::min(precision * 10 + int(sp[i++] - '0'), 1000);
  }
  char type = i < sp.size() ? char(sp[i++]) : '\0';
  if (i != sp.size()) template_fail("unsupported format specifier '{}'", spec);
  std::string body;
  bool numeric = false;
  if (type == 's' || (type == '\0' && v.type == Type::String)) {
    if (v.type != Type::String) template_fail("Unknown format code 's' for object of type '{}'", v.type_name());
    body = v.text;
    if (precision >= 0) body = utf8_encode(utf8_decode(body).substr(0, size_t(precision)));
  } else if (type == 'd' || (type == '\0' && v.is_integral() && precision < 0)) {
    if (!v.is_integral()) template_fail("Unknown format code 'd' for object of type '{}'", v.type_name());
    body = std::to_string(v.as_int());
    numeric = true;
  } else if (type == 'f' || type == 'F' || type == '%' || type == '\0') {
    if (!v.is_number()) template_fail("unsupported format specifier '{}' for {}", spec, v.type_name());
    double d = v.as_double() * (type == '%' ? 100 : 1);
    if (type == '\0') body = precision < 0 ? float_repr(d) : fmt::format("{:.{}g}", d, precision);
    else body = fmt::format("{:.{}f}", d, precision < 0 ? 6 : precision);
    if (type == '%') body += "%";
    numeric = true;
  } else {
    template_fail("unsupported format specifier '{}'", spec);
  }
  if (numeric && sign != '-' && body[0] != '-') body = std::string(1, sign) + body;
  int64_t len = int64_t(utf8_decode(body).size());
  if (width <= len) return body;
  if (!align) align = numeric ? '>' : '<';
  int64_t pad = width - len;
  auto rep = [&](int64_t n) {
    std::string out;
    for (int64_t k = 0; k < n; ++k) out += fill;
    return out;
  };
  switch (align) {
    case '<': return body + rep(pad);
    case '>': return rep(pad) + body;
    case '^': return rep(pad / 2) + body + rep(pad - pad / 2);
    default:  // '=': padding after the sign
      if (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) return body.substr(0, 1) + rep(pad) + body.substr(1);
      return rep(pad) + body;
  }
}

std::string py_percent_format(const std::string& format, const Value& args) {
  std::vector<Value> positional;
  bool is_tuple = args.type == Type::Tuple;
  // Python counts anything subscriptable but a tuple or str as a mapping: no "not all converted" error.
  bool mapping_like = args.type == Type::Dict || args.type == Type::List || args.is_undefined();
  if (is_tuple) positional = *args.items;
  else positional.push_back(args);
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out.push_back(format[i]);
      continue;
    }
    if (++i >= format.size()) template_fail("incomplete format");
    const Value* value = nullptr;
    if (format[i] == '(') {
      size_t close = format.find(')', i);
      if (close == std::string::npos) template_fail("incomplete format key");
      if (args.type != Type::Dict) template_fail("format requires a mapping");
      const Value* v = args.dict->find(format.substr(i + 1, close - i - 1));
      if (!v) template_fail("KeyError: '{}'", format.substr(i + 1, close - i - 1));
      value = v;
      i = close + 1;
    }
    std::string flags;
    while (i < format.size() && std::strchr("-+ 0#", format[i])) flags.push_back(format[i++]);
    std::string width, precision;
    while (i < format.size() && format[i] >= '0' && format[i] <= '9') width.push_back(format[i++]);
    if (i < format.size() && format[i] == '.') {
      precision = ".";
      ++i;
      while (i < format.size() && format[i] >= '0' && format[i] <= '9') precision.push_back(format[i++]);
    }
    if (i >= format.size()) template_fail("incomplete format");
    char conv = format[i];
    if (conv == '%') {
      out.push_back('%');
      continue;
    }
    if (!value) {
      if (next >= positional.size()) template_fail("not enough arguments for format string");
      value = &positional[next++];
    }
    std::string spec;
    if (flags.find('-') != std::string::npos) spec += '<';
    else if (!width.empty() && std::strchr("sr", conv)) spec += '>';
    if (flags.find('+') != std::string::npos) spec += '+';
    else if (flags.find(' ') != std::string::npos) spec += ' ';
    if (flags.find('0') != std::string::npos && flags.find('-') == std::string::npos && !std::strchr("sr", conv)) spec += '0';
    spec += width.substr(0, 6);
    switch (conv) {
      case 's': out += py_format_value(Value::from_string(value->str()), spec + precision.substr(0, 6)); break;
      case 'r':
      case 'a': out += py_format_value(Value::from_string(value->repr()), spec + precision.substr(0, 6)); break;
      case 'd':
      case 'i':
      case 'u':
        if (!value->is_number()) template_fail("%{} format: a real number is required, not {}", conv, value->type_name());
        out += py_format_value(Value::from_int(value->type == Type::Float ? int64_t(value->real) : value->as_int()), spec + "d");
        break;
      case 'f':
      case 'F':
        if (!value->is_number()) template_fail("must be real number, not {}", value->type_name());
        out += py_format_value(Value::from_float(value->as_double()), spec + (precision.empty() ? ".6" : precision.substr(0, 6)) + "f");
        break;
      default:
        template_fail("unsupported format character '{}'", std::string(1, conv));
    }
  }
  if (next < positional.size() && !mapping_like && args.type != Type::Dict)
    template_fail("not all arguments converted during string formatting");
  return out;
}

std::string py_format(const std::string& format, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') {
        out.push_back('}');
        ++i;
        continue;
      }
      template_fail("Single '}}' encountered in format string");
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out.push_back('{');
      ++i;
      continue;
    }
    size_t close = format.find('}', i);
    if (close == std::string::npos) template_fail("Single '{{' encountered in format string");
    std::string field = format.substr(i + 1, close - i - 1);
    i = close;
    std::string spec, conversion;
    if (size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    if (size_t bang = field.find('!'); bang != std::string::npos) {
      conversion = field.substr(bang + 1);
      field.resize(bang);
    }
    const Value* v = nullptr;
    if (field.empty() || std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      size_t index = field.empty() ? auto_index++ : std::stoul(field.substr(0, 9));
      if (index >= args.positional.size()) template_fail("Replacement index {} out of range for positional args tuple", index);
      v = &args.positional[index];
    } else {
      for (const auto& [k, val] : args.keyword)
        if (k == field) v = &val;
      if (!v) template_fail("format field '{}' is not supported or not given", field);
    }
    if (conversion == "r") {
      out += py_format_value(Value::from_string(v->repr()), spec);
    } else if (conversion == "s" || conversion.empty()) {
      out += conversion.empty() ? py_format_value(*v, spec) : py_format_value(Value::from_string(v->str()), spec);
    } else {
      template_fail("Unknown conversion specifier {}", conversion);
    }
  }
  return out;
}

}  // namespace dcu::jinja
