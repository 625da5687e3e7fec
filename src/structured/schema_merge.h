#pragma once
// allOf as one schema: the conjunction of two schemas written as a single one (types intersected,
// bounds tightened, properties merged, additionalProperties: false honoured on both sides). A pair
// of keywords that cannot be merged this way is a GrammarError naming the keyword.

#include <string>

#include "structured/schema_keywords.h"

namespace dcu::structured {

// `a` and `b` are schema objects without $ref / allOf at their top (the caller resolves those).
ojson merge_schemas(const ojson& a, const ojson& b, const std::string& path);

}  // namespace dcu::structured
