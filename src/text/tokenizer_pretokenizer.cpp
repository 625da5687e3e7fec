#include "text/tokenizer_pretokenizer.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/unicode.h"

namespace dcu::text {

namespace {

// The regex GPT-2 splits words with; ByteLevel uses it when use_regex is true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct FlaggedSpan {
  size_t start;
  size_t end;
  bool is_match;
};

// Covers `length` bytes with the given matches and the gaps between them, as HF's Pattern does.
void cover(const std::vector<Span>& matches, size_t length, std::vector<FlaggedSpan>& out) {
  out.clear();
  size_t previous = 0;
  for (const Span& m : matches) {
    if (previous != m.start) out.push_back({previous, m.start, false});
    out.push_back({m.start, m.end, true});
    previous = m.end;
  }
  if (previous != length) out.push_back({previous, length, false});
}

void literal_matches(std::string_view text, std::string_view literal, std::vector<Span>& out) {
  out.clear();
  if (literal.empty()) return;
  for (size_t pos = text.find(literal); pos != std::string_view::npos; pos = text.find(literal, pos))
    out.push_back({pos, pos += literal.size()});
}

// Each numeric character is one match (HF's Pattern for a char predicate).
void numeric_matches(std::string_view text, std::vector<Span>& out) {
  out.clear();
  for (size_t pos = 0; pos < text.size();) {
    const size_t start = pos;
    if (is_numeric(utf8_next(text, pos))) out.push_back({start, pos});
  }
}

// Applies a delimiter behaviour to spans covering a word (HF SplitDelimiterBehavior).
void apply_behavior(std::vector<FlaggedSpan>& spans, SplitBehavior behavior) {
  std::vector<FlaggedSpan> result;
  result.reserve(spans.size());
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::Isolated:
      return;
    case SplitBehavior::Removed:
      for (const auto& s : spans)
        if (!s.is_match) result.push_back(s);
      break;
    case SplitBehavior::MergedWithPrevious:
      for (const auto& s : spans) {
        if (s.is_match && !previous_match && !result.empty()) result.back().end = s.end;
        else result.push_back(s);
        previous_match = s.is_match;
      }
      break;
    case SplitBehavior::MergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !result.empty()) result.back().start = it->start;
        else result.push_back(*it);
        previous_match = it->is_match;
      }
      std::reverse(result.begin(), result.end());
      break;
    case SplitBehavior::Contiguous:
      for (const auto& s : spans) {
        if (s.is_match == previous_match && !result.empty()) result.back().end = s.end;
        else result.push_back(s);
        previous_match = s.is_match;
      }
      break;
  }
  spans = std::move(result);
}

SplitBehavior parse_behavior(const nlohmann::json& spec) {
  const std::string name = spec.value("behavior", std::string("Isolated"));
  if (name == "Removed") return SplitBehavior::Removed;
  if (name == "Isolated") return SplitBehavior::Isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (name == "Contiguous") return SplitBehavior::Contiguous;
  fail("unknown Split behavior \"{}\"", name);
}

}  // namespace

PreTokenizer PreTokenizer::from_json(const nlohmann::json& spec) {
  PreTokenizer result;
  if (!spec.is_null()) add_spec(spec, result);
  return result;
}

void PreTokenizer::add_spec(const nlohmann::json& spec, PreTokenizer& out) {
  if (!spec.is_object() || !spec.contains("type") || !spec["type"].is_string())
    fail("a pre_tokenizer must be an object with a \"type\"");
  const std::string type = spec["type"];
  Step step;
  if (type == "Sequence") {
    if (!spec.contains("pretokenizers") || !spec["pretokenizers"].is_array())
      fail("a Sequence pre_tokenizer needs a \"pretokenizers\" array");
    for (const auto& child : spec["pretokenizers"]) add_spec(child, out);
    return;
  } else if (type == "Split") {
    const auto& pattern = spec.contains("pattern") ? spec["pattern"] : nlohmann::json();
    if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string())
      step.regex = std::make_shared<const Regex>(pattern["Regex"].get<std::string>());
    else if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string())
      step.literal = pattern["String"].get<std::string>();
    else
      fail("a Split pre_tokenizer needs a pattern {{\"Regex\": ...}} or {{\"String\": ...}}");
    step.behavior = parse_behavior(spec);
    step.invert = spec.value("invert", false);
  } else if (type == "ByteLevel") {
    step.kind = Kind::ByteLevel;
    step.add_prefix_space = spec.value("add_prefix_space", true);
    if (spec.value("use_regex", true)) step.regex = std::make_shared<const Regex>(kGpt2Pattern);
    out.byte_level_ = true;
  } else if (type == "Digits") {
    step.kind = Kind::Digits;
    step.behavior = spec.value("individual_digits", false) ? SplitBehavior::Isolated : SplitBehavior::Contiguous;
  } else {
    fail("unsupported pre_tokenizer type \"{}\" (supported: Split, ByteLevel, Digits, Sequence)",
         type);
  }
  out.steps_.push_back(std::move(step));
}

void PreTokenizer::apply(const Step& step, std::string_view word, std::vector<std::string_view>& out,
                         std::deque<std::string>& storage) const {
  std::vector<Span> matches;
  SplitBehavior behavior = step.behavior;
  switch (step.kind) {
    case Kind::ByteLevel:
      if (step.add_prefix_space && word.front() != ' ') {
        std::string& prefixed = storage.emplace_back(1, ' ');
        prefixed.append(word);
        word = prefixed;
      }
      if (!step.regex) {
        out.push_back(word);
        return;
      }
      step.regex->find_all(word, matches);
      behavior = SplitBehavior::Isolated;
      break;
    case Kind::Split:
      if (step.regex) step.regex->find_all(word, matches);
      else literal_matches(word, step.literal, matches);
      break;
    case Kind::Digits:
      numeric_matches(word, matches);
      break;
  }
  std::vector<FlaggedSpan> spans;
  cover(matches, word.size(), spans);
  if (step.invert)
    for (auto& s : spans) s.is_match = !s.is_match;
  apply_behavior(spans, behavior);
  for (const auto& s : spans)
    if (s.end > s.start) out.push_back(word.substr(s.start, s.end - s.start));
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& words,
                         std::deque<std::string>& storage) const {
  if (text.empty()) return;
  std::vector<std::string_view> current{text};
  std::vector<std::string_view> next;
  for (const Step& step : steps_) {
    next.clear();
    for (std::string_view word : current) apply(step, word, next, storage);
    current.swap(next);
  }
  words.insert(words.end(), current.begin(), current.end());
}

}  // namespace dcu::text
