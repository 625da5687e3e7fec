#include "engine/node_agreement.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/dtype.h"
#include "core/error.h"

namespace dcu {
namespace {

// The cache shape as it travels.
struct WireShape {
  int32_t num_blocks, block_size, num_state_slots, kv_dtype;
};

template <typename T>
std::span<const char> bytes_of(const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  return {reinterpret_cast<const char*>(&value), sizeof value};
}

template <typename T>
T value_of(const std::vector<char>& bytes, const NodeLink& from) {
  if (bytes.size() != sizeof(T)) fail("{} sent {} bytes where {} were due: is it running the same dcuserve version?",
                                      from.peer(), bytes.size(), sizeof(T));
  T value;
  std::memcpy(&value, bytes.data(), sizeof value);
  return value;
}

void check_equal(const NodeLink& node, const char* what, int64_t theirs, int64_t own) {
  if (theirs != own)
    fail("{} has {} {}, node 0 has {}: start every node with the same model and flags", node.peer(), what, theirs, own);
}

}  // namespace

void check_follower_settings(std::vector<NodeLink>& followers, const NodeSettings& own) {
  for (NodeLink& f : followers) {
    const auto s = value_of<NodeSettings>(f.receive(MessageType::Settings), f);
    check_equal(f, "--tensor-parallel-size", s.tensor_parallel_size, own.tensor_parallel_size);
    check_equal(f, "a step capacity (--max-num-batched-tokens) of", s.max_tokens_per_step, own.max_tokens_per_step);
    check_equal(f, "a logit row capacity (from --max-num-seqs) of", s.max_logit_rows, own.max_logit_rows);
    check_equal(f, "a model (--model) with parameter count", s.parameter_count, own.parameter_count);
    if (s.kv_dtype != own.kv_dtype)
      fail("{} keeps its KV cache in {}, node 0 in {}: start every node with the same --device and --dtype", f.peer(),
           dtype_name(DType(s.kv_dtype)), dtype_name(DType(own.kv_dtype)));
  }
  for (NodeLink& f : followers) f.send(MessageType::Accept);
}

void offer_settings(NodeLink& node0, const NodeSettings& own) {
  node0.send(MessageType::Settings, bytes_of(own));
  node0.receive(MessageType::Accept);
}

CacheShape agree_cache_shape(std::vector<NodeLink>& followers, size_t own_budget,
                             const std::function<CacheShape(size_t)>& plan) {
  size_t budget = own_budget;
  for (NodeLink& f : followers) budget = std::min(budget, size_t(value_of<uint64_t>(f.receive(MessageType::CacheBudget), f)));
  const CacheShape shape = plan(budget);
  const WireShape wire{shape.num_blocks, shape.block_size, shape.num_state_slots, int32_t(shape.kv_dtype)};
  for (NodeLink& f : followers) f.send(MessageType::CacheShape, bytes_of(wire));
  return shape;
}

CacheShape receive_cache_shape(NodeLink& node0, size_t own_budget) {
  node0.send(MessageType::CacheBudget, bytes_of(uint64_t(own_budget)));
  const auto wire = value_of<WireShape>(node0.receive(MessageType::CacheShape), node0);
  return CacheShape{wire.num_blocks, wire.block_size, wire.num_state_slots, DType(wire.kv_dtype)};
}

}  // namespace dcu
