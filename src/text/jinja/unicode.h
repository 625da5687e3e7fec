#pragma once
// UTF-8 helpers so that string operations count code points, as Python's str does.

#include <string>
#include <string_view>

namespace dcu::jinja {

std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);
void utf8_append(std::string& out, char32_t c);
bool is_ascii(std::string_view s);
// Python str.isspace() for one code point.
bool is_py_space(char32_t c);
// Python str.isprintable() for one code point (decides repr escaping).
bool is_py_printable(char32_t c);
char32_t to_upper(char32_t c);
char32_t to_lower(char32_t c);
bool is_alnum(char32_t c);
bool is_alpha(char32_t c);
bool is_cased_upper(char32_t c);
bool is_cased_lower(char32_t c);

}  // namespace dcu::jinja
