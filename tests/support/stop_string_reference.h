#pragma once
// The reference cut for stop strings, written the slow way: scan the text byte by byte and stop at the
// first end position where some stop string ends; of those ending there, cut before the longest.
// StreamingDetokenizer's output must equal decode(ids) cut here.
#include <string>
#include <vector>

namespace dcu::test {

inline std::string cut_at_first_completed_stop(const std::string& text, const std::vector<std::string>& stops) {
  for (size_t end = 1; end <= text.size(); ++end) {
    size_t start = end;
    for (const std::string& stop : stops)
      if (!stop.empty() && stop.size() <= end && text.compare(end - stop.size(), stop.size(), stop) == 0)
        start = std::min(start, end - stop.size());
    if (start < end) return text.substr(0, start);
  }
  return text;
}

}  // namespace dcu::test
