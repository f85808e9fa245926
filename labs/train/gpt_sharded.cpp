#include "labs/train/gpt_sharded.h"

#include "core/error.h"
#include "core/memory/device_ops.h"

namespace dtl {

namespace {

// This rank's elements of `t` as runs of the full tensor: its local rows one after the other,
// each mapped by Gpt::full_element, and joined where they continue one another in both.
std::vector<HeldRun> runs_of(const Gpt& model, const GptTensor& t) {
  // (a row of a vector is one element, as Gpt::full_index counts it: a qkv bias is three runs)
  const std::size_t n = t.range.size(), row = t.local_shape.size() >= 2 ? std::size_t(t.local_shape.back()) : 1;
  std::vector<HeldRun> runs;
  for (std::size_t local = 0; local < n; local += row) {
    const std::size_t begin = model.full_element(t, local), width = std::min(row, n - local);
    if (!runs.empty() && runs.back().end == begin &&
        runs.back().local + (runs.back().end - runs.back().begin) == t.range.begin + local)
      runs.back().end += width;
    else
      runs.push_back({begin, begin + width, t.range.begin + local});
  }
  return runs;
}

void require_fp32(const Gpt& model) {
  if (model.precision() != DType::f32)
    throw UsageError(
        "the GPT's sharded checkpoints are fp32 only (its 16-bit copy and fp32 master are not saved yet): "
        "use --precision fp32");
}

}  // namespace

std::vector<HeldTensor> gpt_held_tensors(const Gpt& model, bool saves) {
  std::vector<HeldTensor> held;
  for (const GptTensor& t : model.tensors()) {
    HeldTensor h{t.name, t.full_shape};
    h.runs = runs_of(model, t);
    h.saves = saves && (t.split != GptSplit::replicated || model.tp_rank() == 0);
    held.push_back(std::move(h));
  }
  return held;
}

HeldState gpt_host_state(Gpt& model, const Optimizer& opt) {
  require_fp32(model);
  const std::size_t n = model.num_params();
  HeldState st;
  st.params.resize(n);
  copy_bytes(st.params.data(), model.params(), n * sizeof(float));
  OptimizerState os = opt.save_state();
  if (os.m.size() != n)
    throw Error("gpt checkpoint: the optimizer updates " + std::to_string(os.m.size()) + " elements, the model has " +
                std::to_string(n));
  st.m = std::move(os.m), st.v = std::move(os.v);
  return st;
}

void set_gpt_state(Gpt& model, Optimizer& opt, const HeldState& st, int step) {
  require_fp32(model);
  copy_bytes(model.params(), st.params.data(), st.params.size() * sizeof(float));
  OptimizerState os;
  os.steps = step;
  os.m = st.m, os.v = st.v;
  opt.load_state(os);
}

ResumeRules counting_gpt_resume_rules(int batch, int train_steps) {
  return {{"tensor_parallel", "context_parallel", "grid"},
          {std::uint64_t(batch), 0, "--batch " + std::to_string(batch)},
          train_steps};
}

StagedPieces stage_gpt_checkpoint(Gpt& model, const Optimizer& opt, bool saves) {
  return stage_held_tensors(gpt_held_tensors(model, saves), gpt_host_state(model, opt));
}

std::size_t load_gpt_sharded(const Manifest& m, Gpt& model, Optimizer& opt) {
  HeldState st = gpt_host_state(model, opt);
  const std::size_t read = load_held_tensors(m, gpt_held_tensors(model), st);
  set_gpt_state(model, opt, st, m.position.step);
  return read;
}

}  // namespace dtl
