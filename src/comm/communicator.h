#pragma once
// The collectives tensor parallelism needs, on tensors in one rank's backend memory. Every rank of a
// group calls the same collectives in the same order; a call returns when this rank's result is ready.

#include <memory>
#include <string>

#include "core/tensor.h"

namespace dcu {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;

  // x (f32) = the sum of every rank's x, in place. All ranks end with the same values.
  virtual void all_reduce_sum(Tensor x) = 0;
  // out = the `local` tensors (f32, the same element count on every rank) of ranks 0..size-1, back to
  // back: out holds size * local.numel() elements.
  virtual void all_gather(const Tensor& local, Tensor out) = 0;
  // Makes every blocked or later collective of the group fail with dcu::Error instead of waiting for a
  // rank that will never arrive (that rank failed). The group cannot be used afterwards.
  virtual void abort() = 0;
  // Whether the collectives can be recorded into a CUDA/HIP graph with the ops around them: they are
  // enqueued on the backend's stream and never wait on the host.
  virtual bool records_in_graphs() const { return false; }
};

}  // namespace dcu
