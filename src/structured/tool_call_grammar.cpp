#include "structured/tool_call_grammar.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "structured/char_encoding.h"
#include "structured/grammar_error.h"
#include "structured/json_formats.h"
#include "structured/regex_parser.h"

namespace dcu::structured {
namespace {

bool is_plain_string(const ojson& schema) {
  return schema.is_object() && schema.contains("type") && schema["type"] == "string";
}

// A raw-text parameter value: the string's own constraints, never containing "</parameter>".
int raw_string_value(Grammar& g, const ojson& schema, const std::string& path) {
  const int any = g.chars({{0, kMaxCodePoint}});
  const int no_close = g.difference(g.star(any), g.seq({g.star(any), g.literal("</parameter>"), g.star(any)}));
  if (schema.contains("enum") || schema.contains("const")) {
    const ojson values = schema.contains("const") ? ojson::array({schema["const"]}) : schema["enum"];
    std::vector<int> alternatives;
    for (const auto& v : values)
      if (v.is_string()) alternatives.push_back(g.literal(v.get<std::string>()));
    return g.intersect(g.alt(std::move(alternatives)), no_close);
  }
  int content = no_close;
  if (schema.contains("pattern"))
    content = g.intersect(content, parse_regex(g, schema["pattern"].get<std::string>(), CharEncoding::Raw, RegexMatch::Search));
  if (schema.contains("format")) {
    auto regex = format_regex(schema["format"].is_string() ? schema["format"].get<std::string>() : "");
    if (!regex) grammar_error("the string format {} (at {}) is not supported", schema["format"].dump(), path);
    content = g.intersect(content, parse_regex(g, *regex, CharEncoding::Raw, RegexMatch::Whole));
  }
  if (schema.contains("minLength") || schema.contains("maxLength")) {
    const int lo = schema.value("minLength", 0), hi = schema.contains("maxLength") ? schema["maxLength"].get<int>() : -1;
    content = g.intersect(content, g.repeat(any, lo, hi));
  }
  return content;
}

int xml_call(Grammar& g, const std::string& name, const ojson& parameters, const JsonGrammarOptions& options,
             const std::string& prefix) {
  JsonSchemaConverter json(g, parameters, options, prefix);
  const ojson schema = json.resolved(parameters, "#");
  const ojson properties = schema.value("properties", ojson::object());
  const ojson required = schema.value("required", ojson::array());
  std::vector<int> items{g.literal("<tool_call>\n<function=" + name + ">\n")};
  for (const auto& [key, property] : properties.items()) {
    const std::string path = "#/properties/" + key;
    const ojson resolved = json.resolved(property, path);
    check_keywords(resolved, path);
    const int value = is_plain_string(resolved) ? raw_string_value(g, resolved, path) : json.value(property, path);
    const int parameter = g.seq({g.literal("<parameter=" + key + ">\n"), value, g.literal("\n</parameter>\n")});
    const bool is_required = std::find(required.begin(), required.end(), key) != required.end();
    items.push_back(is_required ? parameter : g.optional(parameter));
  }
  for (const auto& r : required)
    if (!properties.contains(r.get<std::string>()))
      grammar_error("tool '{}' requires parameter '{}', which its 'properties' do not describe", name, r.get<std::string>());
  items.push_back(g.literal("</function>\n</tool_call>"));
  return g.seq(std::move(items));
}

int hermes_call(Grammar& g, const std::string& name, const ojson& parameters, const JsonGrammarOptions& options,
                const std::string& prefix) {
  JsonSchemaConverter json(g, parameters, options, prefix);
  return g.seq({g.literal("<tool_call>\n{\"name\": " + ojson(name).dump() + ", \"arguments\": "),
                json.value(parameters, "#"), g.literal("}\n</tool_call>")});
}

}  // namespace

Grammar tool_call_grammar(const ojson& tools, const ToolCallOptions& options) {
  Grammar g;
  g.root = g.add_rule("root");
  std::vector<int> calls;
  int index = 0;
  for (const auto& tool : tools) {
    const ojson& fn = tool.at("function");
    const std::string name = fn.at("name").get<std::string>();
    const ojson parameters = fn.contains("parameters") && fn["parameters"].is_object()
                                 ? fn["parameters"]
                                 : ojson{{"type", "object"}, {"properties", ojson::object()}};
    const std::string prefix = "tool" + std::to_string(index++) + "_";
    calls.push_back(options.format == ToolCallFormat::Qwen3CoderXml ? xml_call(g, name, parameters, options.json, prefix)
                                                                    : hermes_call(g, name, parameters, options.json, prefix));
  }
  if (calls.empty()) grammar_error("no tools to call");
  const int call_rule = g.add_rule("tool_call");
  g.set_body(call_rule, g.alt(std::move(calls)));
  const int gap = g.repeat(g.chars({{' ', ' '}, {'\n', '\n'}}), 0, 2);
  const int more = options.parallel ? g.star(g.seq({gap, g.ref(call_rule)})) : g.empty();
  g.set_body(g.root, g.seq({gap, g.ref(call_rule), more, gap}));
  return g;
}

}  // namespace dcu::structured
