// The tensor-parallel MLP's part of a sharded checkpoint (tp_mlp.h, labs/train/checkpoint_tensors.h):
// the blocks of the full model's tensors this rank holds, and its state on the host.
#include "core/memory/device_ops.h"
#include "labs/tensor_parallel/tp_mlp.h"

namespace dtl {

DataOrder mlp_task_order(int batch, int seq) {
  return {std::uint64_t(batch) * std::uint64_t(seq), kMlpTaskSeed,
          "--batch " + std::to_string(batch) + " --seq " + std::to_string(seq)};
}

ResumeRules tp_mlp_resume_rules(int batch, int seq, int train_steps) {
  return {{"tensor_parallel", "grid"}, mlp_task_order(batch, seq), train_steps};
}

namespace {

// Rows × columns `s` of the full [out × in] tensor `name`, held from element `offset`.
HeldTensor slice_of(const std::string& name, int out, int in, const ex::LinearSlice& s, std::size_t offset) {
  HeldTensor t{name, {out, in}};
  t.row_begin = std::size_t(s.row_begin), t.row_end = std::size_t(s.row_end);
  t.col_begin = std::size_t(s.col_begin), t.col_end = std::size_t(s.col_end);
  t.offset = offset;
  return t;
}

// The bias elements [bias_begin, bias_end) of `s`: columns of a one-row tensor [out].
HeldTensor bias_of(const std::string& name, int out, const ex::LinearSlice& s, std::size_t offset) {
  HeldTensor t{name, {out}};
  t.col_begin = std::size_t(s.bias_begin), t.col_end = std::size_t(s.bias_end);
  t.offset = offset;
  return t;
}

// layer_stack: block k's tensors (c_fc.weight, c_fc.bias, c_proj.weight, c_proj.bias) as the MLP
// labs' flat "params" holds them: layer j = 2k or 2k+1 from element j·(h² + h), weight then bias.
std::vector<HeldTensor> in_mlp_layout(const std::vector<HeldTensor>& block, int k, int h, int layers) {
  const std::size_t hh = std::size_t(h) * std::size_t(h), layer = hh + std::size_t(h);
  const std::size_t psi = 2 * std::size_t(layers) * layer, fc = 2 * std::size_t(k) * layer, proj = fc + layer;
  const std::size_t at[] = {fc, fc + hh, proj, proj + hh};
  std::vector<HeldTensor> out;
  for (std::size_t i = 0; i < block.size(); ++i)
    out.push_back(within_flat(block[i], "params", psi, at[i], "adam.m", "adam.v"));
  return out;
}

}  // namespace

std::vector<HeldTensor> TpMlp::held_tensors() const {
  const int h = shape_.hidden, ff = shape_.ff();
  const std::vector<std::string> n = names();  // four per block: c_fc.weight, c_fc.bias, c_proj.weight, c_proj.bias
  std::vector<HeldTensor> held;
  for (std::size_t k = 0; k < blocks_.size(); ++k) {
    const Block& b = blocks_[k];
    // The slices init_params placed (exercise tp_slices; one rank: the whole layers).
    const ex::LinearSlice fc = plain() ? ex::LinearSlice{0, ff, 0, h, 0, ff} : ex::column_parallel_slice(ff, h, r_, T_);
    const ex::LinearSlice proj = plain() ? ex::LinearSlice{0, h, 0, ff, 0, h} : ex::row_parallel_slice(h, ff, r_, T_);
    std::vector<HeldTensor> block = {slice_of(n[4 * k], ff, h, fc, b.fc_w), bias_of(n[4 * k + 1], ff, fc, b.fc_b),
                                     slice_of(n[4 * k + 2], h, ff, proj, b.proj_w),
                                     whole_tensor(n[4 * k + 3], {h}, b.proj_b)};
    block.back().saves = r_ == 0;  // c_proj's bias: every rank's copy, the same
    if (shape_.form == TpMlpForm::layer_stack) block = in_mlp_layout(block, first_ + int(k), h, shape_.layers);
    held.insert(held.end(), block.begin(), block.end());
  }
  return held;
}

HeldState TpMlp::host_state(bool with_optimizer) {
  const std::size_t n = params_.numel();
  HeldState st{std::vector<float>(n), std::vector<float>(n), std::vector<float>(n)};
  copy_bytes(st.params.data(), params_.data(), n * sizeof(float));
  if (!with_optimizer) return st;
  make_optimizer_state();
  copy_bytes(st.m.data(), adam_m_.data(), n * sizeof(float));
  copy_bytes(st.v.data(), adam_v_.data(), n * sizeof(float));
  return st;
}

void TpMlp::set_state(const HeldState& st, bool with_optimizer) {
  const std::size_t n = params_.numel();
  if (st.params.size() != n || st.m.size() != n || st.v.size() != n)
    throw Error("TpMlp::set_state: " + std::to_string(st.params.size()) + " parameters for a rank of " +
                std::to_string(n));
  copy_bytes(params_.data(), st.params.data(), n * sizeof(float));
  if (!with_optimizer) return;
  make_optimizer_state();
  copy_bytes(adam_m_.data(), st.m.data(), n * sizeof(float));
  copy_bytes(adam_v_.data(), st.v.data(), n * sizeof(float));
}

}  // namespace dtl
