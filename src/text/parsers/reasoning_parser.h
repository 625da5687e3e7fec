#pragma once
// Splits generated text into `reasoning_content` (inside <think>…</think>) and `content`, with the
// semantics of vLLM's `--reasoning-parser qwen3` (and `deepseek_r1`), incrementally.
//
// Behaviour, as vLLM's qwen3_reasoning_parser.py / basic_parsers.py implement it:
// - Nothing is stripped: reasoning is the text between the (optional) <think> and </think> as is,
//   and content is the text after </think> as is ("\n\n" after </think> stays in content; vLLM's
//   extract_reasoning returns `content` from str.partition unchanged). The one-shot message makes an
//   empty field null (vLLM: `content or None`; for empty reasoning before </think> vLLM returns "",
//   we return null, and neither streams a reasoning delta for it).
// - prompt_opened_think (Qwen3.5 generation prompt ends in "<think>\n"): the output starts inside the
//   reasoning. Without </think> everything is reasoning (vLLM: output was truncated).
// - !prompt_opened_think (enable_thinking=false renders "<think>\n\n</think>\n\n" in the prompt, or a
//   template that adds no <think>): the output is content, and vLLM routes it as content without
//   looking for </think>. Only a <think> the model writes itself opens reasoning (old Qwen3
//   templates).
// - A <think> the model writes itself is dropped. We accept it only at the start of the output
//   (after optional whitespace, also dropped), where models write it; vLLM partitions at the first
//   <think> anywhere, which would also drop text before it.
// - qwen3 only: Qwen3.5 sometimes opens a tool call without closing </think>. "<tool_call>" followed
//   (after whitespace) by "<function=" or "<function " ends the reasoning implicitly and goes to
//   content, "<tool_call>" included, for the tool parser. A bare "<tool_call>" mention stays reasoning.
// - A tag split across chunks ("</thi" + "nk>") is held back until it is decided; nothing leaks.

#include <memory>
#include <string>
#include <string_view>

#include "text/parsers/chat_delta.h"

namespace dcu::text {

class ReasoningParser {
 public:
  // name: "qwen3" or "deepseek_r1" (no implicit end at <tool_call>); anything else fails with the list.
  static std::unique_ptr<ReasoningParser> create(std::string_view name, bool prompt_opened_think);

  explicit ReasoningParser(bool prompt_opened_think, bool tool_call_ends_reasoning = true);

  // Only `content` and `reasoning_content` of the result are ever set.
  ChatDelta feed(std::string_view text);
  ChatDelta finish();

 private:
  enum class State { StartInReasoning, StartInContent, Reasoning, Content };

  void process(ChatDelta& out, bool at_end);
  bool process_start(ChatDelta& out, bool at_end);
  bool process_reasoning(ChatDelta& out, bool at_end);

  State state_;
  bool tool_call_ends_reasoning_;
  std::string pending_;  // text received but not yet assigned to a field
};

}  // namespace dcu::text
