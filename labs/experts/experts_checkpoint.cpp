// The experts lab's part of a sharded checkpoint (labs/train/checkpoint_tensors.h): every
// block's router, equal on every rank (rank 0 saves it), and this rank's experts, each tensor
// whole by its name ("block 0 expert 5 w1"), so a checkpoint of E experts over EP ranks resumes
// on any EP that divides E: a rank reads the experts it holds there. With --model gpt the GPT
// around the blocks too (labs/train/gpt_sharded.h), every rank's copy equal, rank 0 saving it.
#include <memory>
#include <utility>

#include "labs/experts/experts_internal.h"
#include "labs/train/checkpoint_tensors.h"

namespace dtl {

namespace {

// The model's canonical list: per block its router, then 4 tensors per expert (moe_model.cpp).
bool is_router(const moe::Param& p, const ExpertsSettings& s) { return p.index % (1 + 4 * s.shape.experts) == 0; }

// Each parameter as a vector, one after the other in the flat host state.
std::vector<HeldTensor> held_of(const std::vector<moe::Param>& params, const ExpertsSettings& s, int rank) {
  std::vector<HeldTensor> held;
  std::size_t at = 0;
  for (const moe::Param& p : params) {
    held.push_back(whole_tensor(p.name, {std::int64_t(p.w.size())}, at));
    held.back().saves = rank == 0 || !is_router(p, s);
    at += p.w.size();
  }
  return held;
}

HeldState host_state(const std::vector<moe::Param>& params) {
  HeldState st;
  for (const moe::Param& p : params) {
    st.params.insert(st.params.end(), p.w.begin(), p.w.end());
    st.m.insert(st.m.end(), p.m.begin(), p.m.end());
    st.v.insert(st.v.end(), p.v.begin(), p.v.end());
  }
  return st;
}

}  // namespace

ResumeRules experts_resume_rules(const ExpertsSettings& s) {
  // The MoE blocks train on the same T tokens every step (moe_model.cpp draws them from the seed).
  return {{"experts"},
          {std::uint64_t(s.shape.tokens), s.shape.seed, "--tokens " + std::to_string(s.shape.tokens)},
          s.steps};
}

StagedPieces stage_experts_checkpoint(Comm& comm, const ExpertsSettings& s, ExpertsModel& model) {
  const std::vector<moe::Param>& params = model.moe().params();
  StagedPieces out = stage_held_tensors(held_of(params, s, comm.rank()), host_state(params));
  StagedPieces dense = model.stage_dense(comm.rank() == 0);
  out.pieces.insert(out.pieces.end(), dense.pieces.begin(), dense.pieces.end());
  out.bytes += dense.bytes;
  using Both = std::pair<std::shared_ptr<const void>, std::shared_ptr<const void>>;  // the two staged copies
  out.holder = std::make_shared<Both>(out.holder, dense.holder);
  return out;
}

std::size_t load_experts_checkpoint(Comm& comm, const ExpertsSettings& s, ExpertsModel& model, const Manifest& m) {
  std::vector<moe::Param>& params = model.moe().params();
  HeldState st = host_state(params);
  std::size_t read = load_held_tensors(m, held_of(params, s, comm.rank()), st);
  read += model.load_dense(m);
  std::size_t at = 0;
  for (moe::Param& p : params) {
    const auto from = std::ptrdiff_t(at), to = std::ptrdiff_t(at + p.w.size());
    std::copy(st.params.begin() + from, st.params.begin() + to, p.w.begin());
    std::copy(st.m.begin() + from, st.m.begin() + to, p.m.begin());
    std::copy(st.v.begin() + from, st.v.begin() + to, p.v.begin());
    at += p.w.size();
  }
  return read;
}

}  // namespace dtl
