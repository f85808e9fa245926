// A grid rank's part of a sharded checkpoint (grid_rank.h, labs/train/checkpoint_tensors.h): the
// tensors are the whole model's, by name, so a checkpoint of one dp × tp × pp grid resumes on any
// other (and in the tensor_parallel lab): each rank reads the rows and columns its stage's tp
// slice holds.
#include "core/memory/device_ops.h"
#include "exercises/zero.h"
#include "labs/grid/grid_rank.h"

namespace dtl {

// ZeRO-1: every dp rank's shard of a moment, all-gathered (through the padded buffer, free
// between steps) into the whole moment of the stage's local_params() elements.
void GridRank::gather_moments(Tensor& shard, std::vector<float>& whole) {
  Comm& dp = topo_.dp_group();
  const std::size_t n = model_->local_params();
  const ex::ShardRange mine = ex::shard_range(n, dp.rank(), dp.size());
  float* padded = padded_.as<float>();
  copy_bytes(padded + std::size_t(dp.rank()) * chunk_, shard.data(), (mine.end - mine.begin) * sizeof(float));
  dp.all_gather(padded + std::size_t(dp.rank()) * chunk_, padded, chunk_, DType::f32);
  whole.resize(n);
  copy_bytes(whole.data(), padded, n * sizeof(float));
}

StagedPieces GridRank::stage_checkpoint() {
  const bool zero = s_.zero == GridZero::optimizer_states;
  HeldState st = model_->host_state(!zero);
  if (zero) gather_moments(adam_m_, st.m), gather_moments(adam_v_, st.v);
  std::vector<HeldTensor> held = model_->held_tensors();
  if (topo_.coord().dp != 0)  // a replica: dp rank 0 of the same tp rank and stage saves the same blocks
    for (HeldTensor& t : held) t.saves = false;
  return stage_held_tensors(held, std::move(st));
}

std::size_t GridRank::load_checkpoint(const Manifest& m) {
  const bool zero = s_.zero == GridZero::optimizer_states;
  HeldState st = model_->host_state(!zero);
  const std::size_t read = load_held_tensors(m, model_->held_tensors(), st);
  model_->set_state(st, !zero);
  if (zero) {  // this rank's shard of the moments
    Comm& dp = topo_.dp_group();
    const ex::ShardRange mine = ex::shard_range(model_->local_params(), dp.rank(), dp.size());
    copy_bytes(adam_m_.data(), st.m.data() + mine.begin, (mine.end - mine.begin) * sizeof(float));
    copy_bytes(adam_v_.data(), st.v.data() + mine.begin, (mine.end - mine.begin) * sizeof(float));
  }
  return read;
}

}  // namespace dtl
