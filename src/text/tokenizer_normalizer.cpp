#include "text/tokenizer_normalizer.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace dcu::text {

namespace {

void add_spec(const nlohmann::json& spec, std::vector<NormalForm>& forms) {
  if (!spec.is_object() || !spec.contains("type") || !spec["type"].is_string())
    fail("a normalizer must be an object with a \"type\"");
  const std::string type = spec["type"];
  if (type == "NFC") forms.push_back(NormalForm::NFC);
  else if (type == "NFD") forms.push_back(NormalForm::NFD);
  else if (type == "NFKC") forms.push_back(NormalForm::NFKC);
  else if (type == "NFKD") forms.push_back(NormalForm::NFKD);
  else if (type == "Sequence") {
    if (!spec.contains("normalizers") || !spec["normalizers"].is_array())
      fail("a Sequence normalizer needs a \"normalizers\" array");
    for (const auto& child : spec["normalizers"]) add_spec(child, forms);
  } else {
    fail("unsupported normalizer type \"{}\" (supported: NFC, NFD, NFKC, NFKD, Sequence)", type);
  }
}

}  // namespace

Normalizer Normalizer::from_json(const nlohmann::json& spec) {
  Normalizer normalizer;
  if (!spec.is_null()) add_spec(spec, normalizer.forms_);
  return normalizer;
}

std::string Normalizer::apply(std::string_view text) const {
  std::string out(text);
  for (NormalForm form : forms_) out = normalize(out, form);
  return out;
}

}  // namespace dcu::text
