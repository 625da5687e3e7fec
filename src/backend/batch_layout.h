#pragma once
// How the packed token rows of one model step map to sequences, KV pages and GDN state slots.
// Built on the host by the model runner, mirrored to the backend's memory once per step.

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dcu {

// Host-side description (S sequences, T tokens in all).
struct BatchHost {
  std::vector<int32_t> seq_row_begin;       // [S+1] first packed row of each sequence; last = T
  std::vector<int32_t> seq_context_before;  // [S] tokens already cached before this step
  std::vector<int32_t> positions;           // [T] position of each token in its sequence
  std::vector<int32_t> slot_mapping;        // [T] KV slot = block * block_size + offset
  std::vector<int32_t> block_tables;        // [S, max_blocks_per_seq], -1 padded
  std::vector<int32_t> state_slots;         // [S] GDN state slot each sequence reads
  // [T] the slot that receives the GDN state after each row, -1 for none. Usually only a sequence's last
  // row writes, into the slot it read; a speculative verify step writes every row's state into its own
  // slot so that the state after the last accepted row is kept without a copy. Only the last row of a
  // sequence may write the slot the sequence reads.
  std::vector<int32_t> state_write_slots;
  int max_blocks_per_seq = 0;
  // Every position of the step is below this. Sizes the GPU attention's context splits; a step graph
  // uses a power of two so that the steps after it still fit.
  int position_limit = 0;

  int num_seqs() const { return int(state_slots.size()); }
  int num_tokens() const { return int(positions.size()); }
  int seq_rows(int s) const { return seq_row_begin[s + 1] - seq_row_begin[s]; }
  int max_seq_rows() const {
    int most = 0;
    for (int s = 0; s < num_seqs(); ++s) most = std::max(most, seq_rows(s));
    return most;
  }
};

// The same arrays in backend memory (host memory for the CPU backend), plus the host copy for
// decisions made before launching (sizes, which GDN form to use).
struct BatchLayout {
  const BatchHost* host = nullptr;
  const int32_t* seq_row_begin = nullptr;
  const int32_t* seq_context_before = nullptr;
  const int32_t* positions = nullptr;
  const int32_t* slot_mapping = nullptr;
  const int32_t* block_tables = nullptr;
  const int32_t* state_slots = nullptr;
  const int32_t* state_write_slots = nullptr;

  int num_seqs() const { return host->num_seqs(); }
  int num_tokens() const { return host->num_tokens(); }
  int max_blocks_per_seq() const { return host->max_blocks_per_seq; }
};

}  // namespace dcu
