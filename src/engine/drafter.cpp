#include "engine/drafter.h"

#include <algorithm>

#include "core/error.h"

namespace dcu {

void Drafter::propose(std::span<const DraftRequest> requests) {
  if (requests.empty()) return;
  steps_.clear();
  source_rows_.clear();
  for (const DraftRequest& r : requests) {
    Sequence& s = *r.seq;
    const int rows = std::min(s.computed, int(s.tokens.size()) - 1) - r.first_position;
    DCU_CHECK(rows >= 1 && (r.num_drafts == 0 || s.computed < int(s.tokens.size())));
    // Row i: the token after position first_position + i, with that position's hidden state.
    steps_.push_back({std::span<const int32_t>(s.tokens).subspan(size_t(r.first_position) + 1, size_t(rows)),
                      r.first_position, s.blocks});
    for (int i = 0; i < rows; ++i) source_rows_.push_back(r.first_row + i);
    s.drafts.clear();
    s.drafts.reserve(size_t(r.num_drafts));
  }
  Tensor logits = model_.draft(steps_, source_rows_, DraftInput::TargetHidden);
  std::vector<int32_t> ids = sampler_.argmax(logits, int(steps_.size()));

  // The sequences still drafting, and the row of the last draft batch each continues from.
  std::vector<const DraftRequest*> active;
  std::vector<int32_t> last_row;
  int row = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    row += int(steps_[i].tokens.size());
    if (requests[i].num_drafts == 0) continue;
    requests[i].seq->drafts.push_back(ids[i]);
    active.push_back(&requests[i]);
    last_row.push_back(row - 1);
  }
  for (int d = 1;; ++d) {  // draft d reads draft d - 1 at position computed - 1 + d
    size_t kept = 0;
    for (size_t j = 0; j < active.size(); ++j)
      if (active[j]->num_drafts > d) {
        active[kept] = active[j];
        last_row[kept++] = last_row[j];
      }
    active.resize(kept);
    last_row.resize(kept);
    if (active.empty()) return;
    steps_.clear();
    for (const DraftRequest* r : active) {
      Sequence& s = *r->seq;
      steps_.push_back({std::span<const int32_t>(s.drafts).subspan(size_t(d) - 1, 1), s.computed - 1 + d, s.blocks});
    }
    logits = model_.draft(steps_, last_row, DraftInput::DraftHidden);
    ids = sampler_.argmax(logits, int(steps_.size()));
    for (size_t j = 0; j < active.size(); ++j) {
      active[j]->seq->drafts.push_back(ids[j]);
      last_row[j] = int32_t(j);
    }
  }
}

}  // namespace dcu
