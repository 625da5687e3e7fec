// Scheduler policy: token budget and chunking, sequence and memory limits, preemption when KV pages
// run out, and release of everything a finished or cancelled sequence held.

#include <gtest/gtest.h>

#include "engine/scheduler.h"

namespace dcu {
namespace {

std::unique_ptr<Sequence> make_seq(RequestId id, int prompt_len, int max_tokens = 16, int prompt_logprobs = -1) {
  GenerationRequest r;
  r.prompt.assign(size_t(prompt_len), 1);
  r.sampling.max_tokens = max_tokens;
  r.sampling.prompt_logprobs = prompt_logprobs;
  return std::make_unique<Sequence>(id, std::move(r), [](GenerationEvent&&) {}, 0);
}

// Applies a step's work as the engine would: computed catches up, finished prompts get a token.
void apply(const std::vector<ScheduledWork>& work) {
  for (const auto& w : work) {
    w.seq->computed += w.num_tokens;
    if (w.seq->computed == int(w.seq->tokens.size())) w.seq->tokens.push_back(2);
  }
}

int tokens_of(const std::vector<ScheduledWork>& work) {
  int n = 0;
  for (const auto& w : work) n += w.num_tokens;
  return n;
}

TEST(Scheduler, ChunksLongPromptsUnderTheTokenBudget) {
  IdPool blocks(1000), slots(8);
  Scheduler s({8, 64, 16, 256}, blocks, slots);
  auto a = make_seq(1, 150);
  s.add(a.get());
  std::vector<int> chunks;
  while (a->computed < a->prompt_len) {
    auto work = s.schedule();
    ASSERT_EQ(work.size(), 1u);
    chunks.push_back(work[0].num_tokens);
    apply(work);
  }
  EXPECT_EQ(chunks, (std::vector<int>{64, 64, 22}));
  EXPECT_EQ(a->blocks.size(), 10u);  // pages for the 150 computed tokens
}

TEST(Scheduler, SkipsSequencesWhoseNextTokenWaitsForItsMask) {
  IdPool blocks(1000), slots(8);
  Scheduler s({8, 32, 16, 256}, blocks, slots);
  auto a = make_seq(1, 10), b = make_seq(2, 10), c = make_seq(3, 10);
  s.add(a.get());
  s.add(b.get());
  apply(s.schedule());  // both prompts
  a->tokens.pop_back();  // a's token is not chosen yet: its mask is late
  a->late_choice = LateChoice{};
  s.add(c.get());
  c->late_choice = LateChoice{};  // waiting, and late: not admitted either
  auto work = s.schedule();
  ASSERT_EQ(work.size(), 1u);
  EXPECT_EQ(work[0].seq, b.get());
  a->late_choice.reset(), c->late_choice.reset();
  a->tokens.push_back(2);
  work = s.schedule();
  ASSERT_EQ(work.size(), 3u);
  EXPECT_EQ(work[0].seq, a.get());
  EXPECT_EQ(work[2].seq, c.get());
}

TEST(Scheduler, DecodesFirstThenFillsTheBudgetWithWaitingPrompts) {
  IdPool blocks(1000), slots(8);
  Scheduler s({8, 32, 16, 256}, blocks, slots);
  auto a = make_seq(1, 10), b = make_seq(2, 100);
  s.add(a.get());
  apply(s.schedule());  // a's prompt
  s.add(b.get());
  auto work = s.schedule();
  ASSERT_EQ(work.size(), 2u);
  EXPECT_EQ(work[0].seq, a.get());
  EXPECT_EQ(work[0].num_tokens, 1);  // decode
  EXPECT_EQ(work[1].seq, b.get());
  EXPECT_EQ(work[1].num_tokens, 31);  // the rest of the budget
  EXPECT_EQ(tokens_of(work), 32);
}

TEST(Scheduler, RespectsMaxNumSeqsAndStateSlots) {
  IdPool blocks(1000), slots(2);
  Scheduler s({3, 1000, 16, 256}, blocks, slots);
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < 4; ++i) seqs.push_back(make_seq(RequestId(i + 1), 5)), s.add(seqs.back().get());
  auto work = s.schedule();
  EXPECT_EQ(work.size(), 2u);  // two state slots
  EXPECT_EQ(s.num_waiting(), 2);
  s.remove(seqs[0].get());
  EXPECT_EQ(slots.free_count(), 1);
  apply(work);
  work = s.schedule();
  EXPECT_EQ(work.size(), 2u);  // seqs[1] decodes, seqs[2] admitted
  EXPECT_EQ(work[1].seq, seqs[2].get());
}

TEST(Scheduler, PreemptsTheNewestSequenceWhenPagesRunOut) {
  IdPool blocks(4), slots(4);  // 64 tokens of KV in all
  Scheduler s({4, 1000, 16, 256}, blocks, slots);
  auto a = make_seq(1, 31), b = make_seq(2, 31);
  s.add(a.get());
  s.add(b.get());
  apply(s.schedule());  // both prompts: 2 pages each, pool empty
  EXPECT_EQ(blocks.free_count(), 0);
  // a's next token (position 31) still fits its second page; b's too. Then position 32 needs a page.
  apply(s.schedule());
  auto work = s.schedule();
  ASSERT_EQ(work.size(), 1u);
  EXPECT_EQ(work[0].seq, a.get());
  EXPECT_EQ(s.preemptions(), 1u);
  EXPECT_EQ(b->computed, 0);  // recomputed later from its tokens
  EXPECT_EQ(b->state_slot, -1);
  EXPECT_TRUE(b->blocks.empty());
  EXPECT_EQ(s.num_waiting(), 1);
  // Once a finishes, b comes back and recomputes prompt and generated token in one step.
  apply(work);
  s.remove(a.get());
  work = s.schedule();
  ASSERT_EQ(work.size(), 1u);
  EXPECT_EQ(work[0].seq, b.get());
  EXPECT_EQ(work[0].num_tokens, int(b->tokens.size()));
}

TEST(Scheduler, RemovingReturnsEveryPageAndSlot) {
  IdPool blocks(100), slots(4);
  Scheduler s({4, 1000, 16, 256}, blocks, slots);
  auto a = make_seq(1, 70), b = make_seq(2, 5);
  s.add(a.get());
  s.add(b.get());
  apply(s.schedule());
  s.remove(a.get());
  s.remove(b.get());
  EXPECT_EQ(blocks.free_count(), 100);
  EXPECT_EQ(slots.free_count(), 4);
  EXPECT_EQ(s.num_running() + s.num_waiting(), 0);
}

TEST(Scheduler, PromptLogprobChunksStayWithinTheLogitRowLimit) {
  IdPool blocks(100), slots(4);
  Scheduler s({4, 1000, 16, 40}, blocks, slots);
  auto a = make_seq(1, 100, 1, 0);
  s.add(a.get());
  auto work = s.schedule();
  ASSERT_EQ(work.size(), 1u);
  EXPECT_TRUE(work[0].all_logits);
  EXPECT_LE(work[0].num_tokens, 39);
}

}  // namespace
}  // namespace dcu
