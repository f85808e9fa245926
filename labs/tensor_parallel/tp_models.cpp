// The models the tensor-parallel lab drives (TpModelRun): the MLP of tp_mlp.h on teacher
// data, and the tiny GPT of labs/train/gpt.h on text.
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "labs/tensor_parallel/tp_lab.h"
#include "labs/tensor_parallel/tp_mlp.h"
#include "labs/train/data.h"
#include "labs/train/gpt.h"
#include "labs/train/gpt_sharded.h"
#include "labs/train/optimizer.h"

namespace dtl {

namespace {

// n fp32 parameters on the model's device, each moved one ulp up or down (a fixed LCG's sign).
void nudge_by_one_ulp(void* device_params, std::size_t n) {
  std::vector<float> host(n);
  copy_bytes(host.data(), device_params, n * sizeof(float));
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  for (float& x : host) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;  // Knuth's MMIX LCG
    x = std::nextafter(x, (state >> 63) ? INFINITY : -INFINITY);
  }
  copy_bytes(device_params, host.data(), n * sizeof(float));
}

// The MLP on its regression task (mlp_task_batch), the same full batch on every rank; under
// sequence parallelism a rank takes its rows.
class TpMlpRun final : public TpModelRun {
 public:
  TpMlpRun(const TpSettings& s, const ex::TpGroup& tp, MemoryTracker& mem, Device device)
      : s_(s),
        tp_(tp),
        model_({s.hidden, s.layers, s.rows()}, tp, mem, 7, train_ops(device)),
        y_(mem, {std::int64_t(model_.local_rows()) * s.hidden}, DType::f32, MemTag::data, device) {}

  float train_step(int step) override {
    const std::size_t h = std::size_t(s_.hidden), rows = std::size_t(s_.rows());
    std::vector<float> x, y;
    mlp_task_batch(step, rows * h, x, y);
    const std::size_t first = std::size_t(tp_.comm.rank()) * std::size_t(model_.local_rows()) * h;
    const bool sp = tp_.mode == ex::TpMode::sequence_parallel;
    copy_bytes(y_.data(), y.data() + (sp ? first : 0), y_.bytes());               // this rank's targets onto its device
    return model_.forward_backward(x.data() + (sp ? first : 0), y_.as<float>());  // (forward copies x to the device)
  }
  void adamw_step(const kernels::AdamWConfig& c, int step) override { model_.adamw_step(c, step); }
  std::vector<std::string> names() const override { return model_.names(); }
  std::vector<float> full_params(const std::string& name) override { return model_.full_params(name); }
  std::vector<float> full_grads(const std::string& name) override { return model_.full_grads(name); }
  void nudge_params() override { nudge_by_one_ulp(model_.params(), model_.local_params()); }
  int regions_per_block() const override { return 1; }
  bool regathers_input() const override { return tp_.mode == ex::TpMode::sequence_parallel; }
  // Per block the residual input (rows/T rows under sequence parallelism, else all rows)
  // and c_fc's output before and after GELU (all rows, 4h/T wide); the model's output.
  double activation_bytes() const override {
    const double R = s_.rows(), h = s_.hidden, T = tp_.comm.size();
    const double stream = tp_.mode == ex::TpMode::sequence_parallel ? R * h / T : R * h;
    return 4.0 * (s_.layers * (stream + 2 * R * 4 * h / T) + stream);
  }
  std::string activation_formula() const override {
    return tp_.mode == ex::TpMode::sequence_parallel ? "4·bsh/T·(9L+1)" : "4·bsh·(L(1+8/T)+1)";
  }
  std::size_t local_params() const override { return model_.local_params(); }
  StagedPieces stage_checkpoint() override { return stage_held_tensors(model_.held_tensors(), model_.host_state()); }
  std::size_t load_checkpoint(const Manifest& m) override {
    HeldState st = model_.host_state();
    const std::size_t read = load_held_tensors(m, model_.held_tensors(), st);
    model_.set_state(st);
    return read;
  }

 private:
  TpSettings s_;
  ex::TpGroup tp_;
  TpMlp model_;
  Tensor y_;  // this rank's rows of the targets on its device
};

GptConfig gpt_config(const TpSettings& s) { return {s.vocab, s.seq, s.hidden, s.heads, s.layers, s.batch}; }

// The tiny GPT on the counting task of labs/train/data.h (next tokens of sequences that
// count up by a random stride), rows ordered [s, b] as the model takes them.
class TpGptRun final : public TpModelRun {
 public:
  TpGptRun(const TpSettings& s, const ex::TpGroup& tp, MemoryTracker& mem, Device device)
      : s_(s), tp_(tp), model_(gpt_config(s), tp, mem, 7, device), opt_(model_.whole_params(), device, mem, s.adamw) {
    model_.set_recompute(s.recompute);
  }
  void publish_activation_lines() const override {
    const GptConfig c = gpt_config(s_);
    const int T = tp_.comm.size();
    publish_activation_formula(tp_.comm, gpt_activation_parts(c, T, tp_.mode, {}, s_.recompute), s_.recompute, 1,
                               korthikanti_layer_bytes(c, T, tp_.mode, s_.recompute));
  }

  float train_step(int step) override {
    std::vector<int> tokens, targets;
    counting_batch(step, s_.seq, s_.batch, s_.vocab, tokens, targets);
    return model_.forward_backward(tokens.data(), targets.data());
  }
  // AdamW with the lab's settings (s.adamw), its step count its own (1, 2, ...).
  void adamw_step(const kernels::AdamWConfig&, int) override { opt_.step(model_.whole_params()); }
  std::vector<std::string> names() const override {
    std::vector<std::string> n;
    for (const GptTensor& t : model_.tensors()) n.push_back(t.name);
    return n;
  }
  std::vector<float> full_params(const std::string& name) override {
    return model_.full_tensor(name, GptBuffer::params);
  }
  std::vector<float> full_grads(const std::string& name) override { return model_.full_tensor(name, GptBuffer::grads); }
  void nudge_params() override {
    const ParamSlice p = model_.whole_params();
    if (p.dtype != DType::f32) throw Error("nudge_params: the tensor-parallel GPT trains in fp32");
    nudge_by_one_ulp(p.params, p.count);
  }
  std::size_t partial_replicated_grads() const override { return model_.sequence_partial_numel(); }
  int regions_per_block() const override { return 2; }  // attention and MLP
  bool regathers_input() const override { return tp_.mode == ex::TpMode::sequence_parallel; }
  double activation_bytes() const override {
    return gpt_activation_bytes(gpt_config(s_), tp_.comm.size(), tp_.mode, {}, s_.recompute);
  }
  bool activation_figures(Comm& comm, GptActivationFigures& f) const override {
    f = gpt_activation_figures(comm, model_);
    return true;
  }
  std::string activation_formula() const override { return "labs/train/gpt.h"; }
  std::size_t activation_cache_bytes() const override { return model_.activation_cache_bytes(); }
  std::size_t local_params() const override { return model_.num_params(); }
  // Its slices of GPT-2's tensors and AdamW's moments of them (labs/train/gpt_sharded.h).
  StagedPieces stage_checkpoint() override { return stage_gpt_checkpoint(model_, opt_); }
  std::size_t load_checkpoint(const Manifest& m) override { return load_gpt_sharded(m, model_, opt_); }

 private:
  TpSettings s_;
  ex::TpGroup tp_;
  Gpt model_;
  AdamW opt_;
};

}  // namespace

std::unique_ptr<TpModelRun> make_tp_model(const TpSettings& s, const ex::TpGroup& tp, MemoryTracker& mem,
                                          Device device) {
  if (s.model == TpModelKind::mlp) return std::make_unique<TpMlpRun>(s, tp, mem, device);
  return std::make_unique<TpGptRun>(s, tp, mem, device);
}

}  // namespace dtl
