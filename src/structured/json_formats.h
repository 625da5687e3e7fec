#pragma once
// JSON Schema `format`s as regexes over the string's characters. Each describes a subset of what the
// format allows (for example dates only with days that exist in every year), so whatever is
// generated passes a validator that checks the format.

#include <optional>
#include <string>
#include <string_view>

namespace dcu::structured {

// The regex (whole-string match) for `format`, or nullopt when the format is not supported.
std::optional<std::string> format_regex(std::string_view format);

// zod's string checks (startsWith, endsWith, includes) written as a `format` beside the `pattern`
// that states the same check: with that pattern, the format adds nothing.
bool is_pattern_format(std::string_view format);

}  // namespace dcu::structured
