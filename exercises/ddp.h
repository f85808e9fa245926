// The DDP exercise API: the pieces of PyTorch's DistributedDataParallel that the DDP lab
// (labs/ddp/ddp_lab.cpp) calls. Built from solutions/ddp.cpp or your exercises/ddp.cpp.
//
// The gradient buffer is one contiguous array (float, or bf16/f16 in mixed precision);
// layer l owns elements [begin_l, end_l) and the layers are laid out in forward order, so
// a run of consecutive layers is one range.
#pragma once

#include <cstddef>
#include <vector>

#include "core/comm/comm.h"

namespace dtl::ex {

struct GradBucket {
  int first_layer = 0, last_layer = 0;  // the layers it covers (first_layer <= last_layer)
  std::size_t begin = 0, end = 0;       // its range of the gradient buffer, in elements
};

// The gradient buffer: elements of `dtype` at `data`. grads.at(i) is the address of
// element i, what `grads + i` is for a float*.
struct GradBuffer {
  void* data = nullptr;
  DType dtype = DType::f32;
  void* at(std::size_t i) const { return static_cast<std::byte*>(data) + i * dtype_size(dtype); }
};

// Exercise 8: assign layers to buckets. layer_floats[l] is layer l's gradient size in
// floats (forward order). Buckets are filled in REVERSE layer order (the order backward
// finishes them), whole layers at a time; a bucket is closed once it holds at least
// `capacity_floats`, and the next layer starts a new one. Return them in the order they
// fill (the bucket holding the last layer first).
std::vector<GradBucket> assign_buckets(const std::vector<std::size_t>& layer_floats, std::size_t capacity_floats);

// Exercise 9: called by backward right after layer `layer`'s gradients are final. Every
// bucket that this layer completes (backward runs last layer to first) must start its
// reduction now, without waiting: once its Request, appended to `pending`, completes, the
// bucket's range of `grads` holds, in place and in the buffer's dtype, the average of that
// range over the ranks. Buckets not yet complete are left alone; backward goes on.
void launch_ready_buckets(Comm& comm, const GradBuffer& grads, const std::vector<GradBucket>& buckets, int layer,
                          std::vector<Request>& pending);

// Exercise 10: before the optimizer step, wait for every launched bucket; leave `pending` empty.
void wait_for_buckets(std::vector<Request>& pending);

// Exercise 11: average the first `n` gradients over the ranks with a SUM all-reduce and
// one scaling by 1/P (what ReduceOp::avg does inside; naive DDP does this per tensor).
// scale_in_place (core/comm/dtype.h) scales a buffer of any floating dtype.
void average_gradients(Comm& comm, const GradBuffer& grads, std::size_t n);

// Exercise 12: gradient accumulation with no_sync. Of k micro-batches per step, only the
// last one (index k-1) may synchronize gradients; the others accumulate locally.
bool sync_this_micro_batch(int micro_batch, int k);

}  // namespace dtl::ex
