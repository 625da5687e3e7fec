#pragma once
// The `normalizer` section of tokenizer.json: none, a Unicode normal form, or a Sequence of them.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "text/unicode.h"

namespace dcu::text {

class Normalizer {
 public:
  static Normalizer from_json(const nlohmann::json& spec);  // null -> identity; throws dcu::Error

  bool empty() const { return forms_.empty(); }
  std::string apply(std::string_view valid_utf8) const;

 private:
  std::vector<NormalForm> forms_;
};

}  // namespace dcu::text
