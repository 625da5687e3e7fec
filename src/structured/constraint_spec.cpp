#include "structured/constraint_spec.h"

#include "structured/ebnf_parser.h"
#include "structured/grammar_error.h"
#include "structured/regex_parser.h"

namespace dcu::structured {
namespace {

std::string json_key(const JsonGrammarOptions& o) {
  return std::to_string(o.max_whitespace) + "|" + (o.whitespace_pattern ? "p" + *o.whitespace_pattern : "-") + "|" +
         (o.strict ? "s" : "l");
}

}  // namespace

std::string ConstraintSpec::cache_key() const {
  switch (kind) {
    case Kind::JsonSchema: return "json|" + json_key(json) + "|" + schema.dump();
    case Kind::Regex: return "regex|" + text;
    case Kind::Choice: return "choice|" + ojson(choices).dump();
    case Kind::Grammar: return "grammar|" + text;
    case Kind::ToolCalls:
      return "tools|" + std::to_string(int(tool_options.format)) + (tool_options.parallel ? "|p|" : "|1|") +
             json_key(tool_options.json) + "|" + tools.dump();
  }
  return {};
}

Grammar build_grammar(const ConstraintSpec& spec) {
  switch (spec.kind) {
    case ConstraintSpec::Kind::JsonSchema: return json_schema_grammar(spec.schema, spec.json);
    case ConstraintSpec::Kind::Grammar: return parse_ebnf(spec.text);
    case ConstraintSpec::Kind::ToolCalls: return tool_call_grammar(spec.tools, spec.tool_options);
    case ConstraintSpec::Kind::Regex: {
      Grammar g;
      g.root = g.add_rule("root");
      g.set_body(g.root, parse_regex(g, spec.text, CharEncoding::Raw, RegexMatch::Whole));
      return g;
    }
    case ConstraintSpec::Kind::Choice: {
      if (spec.choices.empty()) grammar_error("'choice' needs at least one string");
      Grammar g;
      g.root = g.add_rule("root");
      std::vector<int> options;
      for (const auto& c : spec.choices) options.push_back(g.literal(c));
      g.set_body(g.root, g.alt(std::move(options)));
      return g;
    }
  }
  grammar_error("unknown constraint");
}

}  // namespace dcu::structured
