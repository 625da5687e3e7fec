#include "text/tokenizer_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"
#include "text/unicode.h"

namespace dcu::text {

namespace {

// Per-thread match state: match data plus a JIT stack large enough for long runs of one class.
struct MatchState {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);

  MatchState() {
    if (!data || !jit_stack || !context) fail("out of memory while preparing a regex match");
    pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~MatchState() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_data_free(data);
  }
};

std::string error_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

Regex::Regex(const std::string& pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                        &error, &offset, nullptr);
  if (!code_) fail("invalid regex /{}/ at offset {}: {}", pattern, offset, error_message(error));
  pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);  // without JIT pcre2_match interprets: slower, same result
}

Regex::Regex(Regex&& other) noexcept : code_(std::exchange(other.code_, nullptr)) {}

Regex& Regex::operator=(Regex&& other) noexcept {
  std::swap(code_, other.code_);
  return *this;
}

Regex::~Regex() { pcre2_code_free(code_); }

void Regex::find_all(std::string_view text, std::vector<Span>& matches) const {
  thread_local MatchState state;
  matches.clear();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  size_t last_end = SIZE_MAX;
  while (start <= text.size()) {
    const int rc = pcre2_match(code_, subject, text.size(), start, PCRE2_NO_UTF_CHECK, state.data, state.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) fail("regex match failed: {}", error_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
    const Span span{ovector[0], ovector[1]};
    size_t next = span.end;
    if (span.start == span.end) {
      // An empty match moves the search on by one character; one right after a match is dropped.
      if (span.end == text.size()) next = text.size() + 1;
      else next = span.end + utf8_step(text, span.end).length;
      if (span.end == last_end) {
        start = next;
        continue;
      }
    }
    matches.push_back(span);
    last_end = span.end;
    start = next;
  }
}

}  // namespace dcu::text
