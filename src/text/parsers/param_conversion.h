#pragma once
// Converts a qwen3_coder <parameter=NAME> value (always text in the XML) to the JSON value the
// tool's schema asks for, following vLLM's Qwen3CoderToolParser._convert_param_value.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dcu::text {

// The `parameters.properties` object of the tool named `function_name` in an OpenAI `tools` array;
// an empty object when the tool or its properties are not given (vLLM's find_tool_properties).
nlohmann::ordered_json find_tool_properties(const nlohmann::ordered_json& tools, std::string_view function_name);

// `properties` as returned by find_tool_properties. A parameter it does not describe stays a string.
nlohmann::ordered_json convert_param_value(const std::string& value, const std::string& param_name,
                                           const nlohmann::ordered_json& properties);

}  // namespace dcu::text
