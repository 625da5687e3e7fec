#pragma once
// JSON Schema -> grammar. Objects are generated with their properties in schema order (required ones
// always, optional ones possibly left out), arrays within their item bounds, strings within their
// pattern / format / length, numbers within whole-number bounds. Whitespace between tokens is capped.
// A keyword or construct it does not implement is a GrammarError that names it.

#include <map>
#include <optional>
#include <string>

#include "structured/grammar.h"
#include "structured/schema_keywords.h"

namespace dcu::structured {

struct JsonGrammarOptions {
  int max_whitespace = 8;                         // whitespace characters between two JSON tokens
  std::optional<std::string> whitespace_pattern;  // a regex for that whitespace instead
  // Strict (vLLM's and xgrammar's default): properties and array items a schema does not list are
  // not generated unless it allows them explicitly (additionalProperties: true or a schema, items).
  bool strict = true;
};

// A grammar whose root is one JSON value valid for `schema` (surrounding whitespace allowed).
Grammar json_schema_grammar(const ojson& schema, const JsonGrammarOptions& options);

// Builds JSON values into an existing grammar (tool-call grammars embed several schemas).
class JsonSchemaConverter {
 public:
  // `root` is what local $refs point into; `rule_prefix` keeps rule names of several converters apart.
  JsonSchemaConverter(Grammar& g, const ojson& root, const JsonGrammarOptions& options, std::string rule_prefix);

  int value(const ojson& schema, const std::string& path);
  int whitespace();
  int any_value();
  int string_value(const ojson& schema, const std::string& path);
  // The schema with its top-level $ref and allOf folded in.
  ojson resolved(const ojson& schema, const std::string& path, int depth = 0) const;

 private:
  const ojson& resolve_pointer(const std::string& ref, const std::string& path) const;
  int typed_value(const std::string& type, const ojson& schema, const std::string& path);
  int literal_values(const ojson& values, const ojson& schema, const std::string& path);
  int object_value(const ojson& schema, const std::string& path);
  int array_value(const ojson& schema, const std::string& path);
  int number_value(const ojson& schema, bool integer, const std::string& path);
  int plain_string();
  int bracketed(const char* open, int content, bool may_be_empty, const char* close);
  int new_rule(const std::string& what);

  Grammar& g_;
  const ojson& root_;
  JsonGrammarOptions options_;
  std::string prefix_;
  std::map<std::string, int> ref_rules_;
  int whitespace_rule_ = -1, value_rule_ = -1;
  int depth_ = 0;
};

}  // namespace dcu::structured
