#pragma once
// Which JSON Schema keywords the converter implements, which it may ignore because they never
// constrain an instance (annotations, and vacuous values of others), and the check that refuses every
// other keyword by name.

#include <string>

#include <nlohmann/json.hpp>

namespace dcu::structured {

using ojson = nlohmann::ordered_json;

bool is_annotation_keyword(const std::string& key);
// A keyword whose value no instance can fail (propertyNames that every string satisfies).
bool is_vacuous_keyword(const std::string& key, const ojson& value);
// Throws GrammarError naming the first keyword of `schema` that is neither implemented nor an
// annotation; `path` locates the schema in messages.
void check_keywords(const ojson& schema, const std::string& path);
// Keywords other than annotations and those in `except`.
bool has_constraints_besides(const ojson& schema, std::initializer_list<const char*> except);

}  // namespace dcu::structured
