// Reference solutions of the DDP exercises (exercises/ddp.h).
#include "exercises/ddp.h"

#include <algorithm>

namespace dtl::ex {

std::vector<GradBucket> assign_buckets(const std::vector<std::size_t>& layer_floats, std::size_t capacity_floats) {
  std::vector<std::size_t> begin(layer_floats.size() + 1, 0);  // prefix sums: where each layer starts
  for (std::size_t l = 0; l < layer_floats.size(); ++l) begin[l + 1] = begin[l] + layer_floats[l];
  std::vector<GradBucket> buckets;
  for (int l = int(layer_floats.size()) - 1; l >= 0; --l) {
    if (buckets.empty() || buckets.back().end - buckets.back().begin >= capacity_floats)
      buckets.push_back({l, l, begin[std::size_t(l)], begin[std::size_t(l) + 1]});
    buckets.back().first_layer = l;  // grows toward the front of the buffer
    buckets.back().begin = begin[std::size_t(l)];
  }
  return buckets;
}

void launch_ready_buckets(Comm& comm, const GradBuffer& grads, const std::vector<GradBucket>& buckets, int layer,
                          std::vector<Request>& pending) {
  for (const GradBucket& b : buckets)
    if (b.first_layer == layer)
      pending.push_back(
          comm.iall_reduce(grads.at(b.begin), grads.at(b.begin), b.end - b.begin, grads.dtype, ReduceOp::avg));
}

void wait_for_buckets(std::vector<Request>& pending) {
  for (Request& r : pending) r.wait();
  pending.clear();
}

void average_gradients(Comm& comm, const GradBuffer& grads, std::size_t n) {
  comm.all_reduce(grads.data, grads.data, n, grads.dtype, ReduceOp::sum);
  scale_in_place(grads.data, n, grads.dtype, 1.0 / comm.size());
}

bool sync_this_micro_batch(int micro_batch, int k) { return micro_batch == k - 1; }

}  // namespace dtl::ex
