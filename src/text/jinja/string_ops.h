#pragma once
// Python str methods over UTF-8 strings (code point semantics).

#include <optional>
#include <string>
#include <vector>

#include "text/jinja/value.h"

namespace dcu::jinja {

std::string py_strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right);
std::vector<std::string> py_split(const std::string& s, const std::optional<std::string>& sep, int64_t maxsplit, bool from_right);
std::string py_upper(const std::string& s);
std::string py_lower(const std::string& s);
std::string py_capitalize(const std::string& s);
std::string py_title(const std::string& s);       // str.title()
std::string jinja_title(const std::string& s);    // the |title filter (splits on whitespace, -, brackets)
std::string py_replace(const std::string& s, const std::string& old, const std::string& replacement, int64_t count);
int64_t py_find(const std::string& s, const std::string& sub, bool from_right = false);
int64_t py_count(const std::string& s, const std::string& sub);
std::string py_center(const std::string& s, int64_t width);
std::vector<std::string> py_splitlines(const std::string& s);
// str.islower() (lower=true) / str.isupper().
bool py_is_cased_as(const std::string& s, bool lower);
int64_t word_count(const std::string& s);
// str.format with positional and keyword fields, conversions !s/!r and common format specs.
std::string py_format(const std::string& format, const CallArgs& args);
// Python's printf-style `format % args` (args: a tuple, a mapping for %(name)s, or one value).
std::string py_percent_format(const std::string& format, const Value& args);
// format(value, spec) for one value.
std::string py_format_value(const Value& v, const std::string& spec);

}  // namespace dcu::jinja
