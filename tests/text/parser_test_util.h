#pragma once
// Helpers for the output-parser tests: run a parser over text cut into given chunks.

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "text/parsers/chat_output_parser.h"

namespace dcu::text::testing {

using ParserFactory = std::function<ChatOutputParser()>;

inline ParserFactory make_factory(bool prompt_opened_think, std::string reasoning, std::string tool_parser,
                                  nlohmann::ordered_json tools = nlohmann::ordered_json::array()) {
  return [=] {
    std::unique_ptr<ReasoningParser> r;
    if (!reasoning.empty()) r = ReasoningParser::create(reasoning, prompt_opened_think);
    std::unique_ptr<ToolCallParser> t;
    if (!tool_parser.empty()) t = ToolCallParser::create(tool_parser, tools, seeded_tool_call_ids(7));
    return ChatOutputParser(std::move(r), std::move(t));
  };
}

struct Streamed {
  ParsedMessage message;
  std::vector<ChatDelta> deltas;  // the non-empty ones, in order
};

// Feeds `text` cut at the sorted positions `cuts`, then finishes.
inline Streamed stream(const ParserFactory& factory, std::string_view text, const std::vector<size_t>& cuts) {
  ChatOutputParser parser = factory();
  Streamed s;
  size_t from = 0;
  auto keep = [&](ChatDelta d) {
    if (!d.empty()) s.deltas.push_back(std::move(d));
  };
  for (size_t cut : cuts) {
    keep(parser.feed(text.substr(from, cut - from)));
    from = cut;
  }
  keep(parser.feed(text.substr(from)));
  keep(parser.finish());
  s.message = parser.message();
  return s;
}

inline Streamed stream_bytewise(const ParserFactory& factory, std::string_view text) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < text.size(); ++i) cuts.push_back(i);
  return stream(factory, text, cuts);
}

inline ParsedMessage one_shot(const ParserFactory& factory, std::string_view text) {
  return stream(factory, text, {}).message;
}

inline std::vector<size_t> random_cuts(std::mt19937& rng, size_t size) {
  if (size < 2) return {};
  std::uniform_int_distribution<size_t> count_dist(0, std::min<size_t>(size - 1, 40));
  std::uniform_int_distribution<size_t> pos_dist(1, size - 1);
  std::vector<size_t> cuts(count_dist(rng));
  for (auto& c : cuts) c = pos_dist(rng);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return cuts;
}

inline std::string all_content(const std::vector<ChatDelta>& deltas) {
  std::string s;
  for (const auto& d : deltas) s += d.content;
  return s;
}

inline std::string all_reasoning(const std::vector<ChatDelta>& deltas) {
  std::string s;
  for (const auto& d : deltas) s += d.reasoning_content;
  return s;
}

}  // namespace dcu::text::testing
