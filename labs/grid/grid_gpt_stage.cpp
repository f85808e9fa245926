// The grid lab's GPT stage (grid_stage.h): blocks first..last of the tiny GPT
// (labs/train/gpt.h), tensor-parallel over the tp group; the first stage also holds the
// embeddings (wte, wpe), the last ln_f and the LM head, on the counting task of
// labs/train/data.h.
//
// Micro-batches split the batch dimension: the B sequences of a step go to the D replicas
// and M micro-batches in order, b = B/(D·M) whole sequences each, so attention never
// crosses a micro-batch. A micro-batch's tokens are laid out [S][b] (row s·b + j), the
// GPT's own order for a batch of b, so its rows are contiguous for every kernel and the
// activation sent to the next stage is one [S·b × h] block.
//
// The tied head (Megatron-LM's embedding group): the LM head multiplies by wte, which
// lives on the first stage. With P > 1 the last stage keeps its own copy of wte, drawn
// identical; after backward the two copies' gradients — the embedding's lookups on the
// first stage, the head's on the last — are summed by an all-reduce between the first
// and last stage of the same (dp, tp) coordinates, so both take the same AdamW step and
// stay equal, as one tied tensor would. Its bytes are counted apart from the pp sends.
#include <algorithm>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "labs/grid/grid_stage.h"
#include "labs/train/data.h"
#include "labs/train/gpt.h"
#include "labs/train/gpt_sharded.h"
#include "labs/train/optimizer.h"

namespace dtl {

namespace {

GptConfig micro_config(const GridSettings& s) {  // the GPT of one micro-batch: b sequences
  return {s.vocab, s.seq, s.hidden, s.heads, s.layers, s.micro_sequences()};
}

GptSpan span_of(Topology& topo, StageBlocks b) {
  return {b.first, b.last, topo.is_first_stage(), topo.is_last_stage()};
}

// The embedding group: the first and the last stage of one pipeline (null on the other
// stages, and when P = 1: one stage holds both ends). A collective over the world.
std::unique_ptr<Comm> embedding_group(Topology& topo) {
  const GridCoord c = topo.coord();
  const bool end = topo.shape().pp > 1 && (topo.is_first_stage() || topo.is_last_stage());
  std::unique_ptr<Comm> group = topo.world().split(end ? c.dp * topo.shape().tp + c.tp : -1, c.pp);
  if (group) group->set_group_axis(GroupAxis::pp);  // a pair of the pp group's ranks
  return group;
}

class GridGptStage final : public GridStage {
 public:
  GridGptStage(Topology& topo, const GridSettings& s, MemoryTracker& mem, StageBlocks b, Device device)
      : topo_(topo),
        s_(s),
        blocks_(b),
        model_(micro_config(s), {topo.tp_group(), ex::TpMode::plain}, mem, 7, device, {}, DType::f32, span_of(topo, b)),
        embedding_(embedding_group(topo)),
        mem_(mem),
        acts_(std::size_t(s.micro_batches)),
        tokens_(std::size_t(s.micro_batches)),
        targets_(std::size_t(s.micro_batches)) {
    model_.set_recompute(s.recompute);
  }

  void begin_step(int step) override {
    std::vector<int> tokens, targets;
    counting_batch(step, s_.seq, s_.batch, s_.vocab, tokens, targets);
    const int S = s_.seq, B = s_.batch, b = s_.micro_sequences();
    for (int m = 0; m < s_.micro_batches; ++m) {
      const int first = (topo_.coord().dp * s_.micro_batches + m) * b;  // the micro-batch's first sequence
      std::vector<int>& tok = tokens_[std::size_t(m)];
      std::vector<int>& tgt = targets_[std::size_t(m)];
      tok.resize(std::size_t(S) * std::size_t(b));
      tgt.resize(tok.size());
      for (int t = 0; t < S; ++t)
        for (int j = 0; j < b; ++j) {  // global row t·B + first + j → micro-batch row t·b + j
          tok[std::size_t(t * b + j)] = tokens[std::size_t(t * B + first + j)];
          tgt[std::size_t(t * b + j)] = targets[std::size_t(t * B + first + j)];
        }
    }
    model_.zero_grads();
  }

  const float* forward(int m, const float* x, float*, double& loss) override {
    // The step's loss is the mean over all B·S tokens; a micro-batch's mean weighs
    // b·S/(B·S) = 1/(D·M), and so does its gradient.
    const float weight = 1.0f / float(s_.grid.dp * s_.micro_batches);
    GptActivations& a = acts_[std::size_t(m)];
    a = model_.make_activations();
    float part = 0;
    const float* y =
        model_.forward_stage(tokens_[std::size_t(m)].data(), x, targets_[std::size_t(m)].data(), a, &part, weight);
    loss += double(part) * weight;
    return y;
  }

  const float* backward(int m, const float* dy) override {
    const float* dx = model_.backward_stage(tokens_[std::size_t(m)].data(), dy, acts_[std::size_t(m)]);
    acts_[std::size_t(m)] = GptActivations{};  // freed: what 1F1B saves over GPipe
    return dx;
  }

  // The tied head: wte's two copies summed (see the top of this file).
  void after_backward() override {
    if (!embedding_) return;
    const GptTensor& wte = model_.tensors()[model_.wte_index()];
    float* g = model_.grads() + wte.range.begin;
    embedding_->all_reduce(g, g, wte.range.size(), DType::f32, ReduceOp::sum);
  }

  float* params() override { return model_.params(); }
  float* grads() override { return model_.grads(); }
  std::size_t local_params() const override { return model_.num_params(); }
  // AdamW's moments, zeros, made on the first step, as the MLP's (ZeRO-1 never makes them).
  void make_moments() {
    if (adam_m_.numel() != 0) return;
    adam_m_ = Tensor(mem_, {std::int64_t(local_params())}, DType::f32, MemTag::optimizer, model_.device());
    adam_v_ = Tensor(mem_, {std::int64_t(local_params())}, DType::f32, MemTag::optimizer, model_.device());
  }
  void adamw_step(const kernels::AdamWConfig& c, int t) override {
    make_moments();
    TrainOps& ops = train_ops(model_.device());
    ops.adamw_step(params(), grads(), adam_m_.as<float>(), adam_v_.as<float>(), local_params(), c, t);
    ops.synchronize();
  }

  std::vector<std::string> names() const override {
    std::vector<std::string> n;
    for (const GptTensor& t : model_.tensors()) n.push_back(t.name);
    return n;
  }
  std::vector<std::size_t> whole_indices() const override {  // the table's ids (gpt.h)
    std::vector<std::size_t> at;
    for (const GptTensor& t : model_.tensors()) at.push_back(t.id);
    return at;
  }
  std::vector<float> full_params(const std::string& name) override { return model_.full_tensor(name); }

  // GPT-2's tensors as this stage's tp slice holds them (labs/train/gpt_sharded.h); the last
  // stage's copy of wte is the first stage's, which saves it.
  std::vector<HeldTensor> held_tensors() const override {
    std::vector<HeldTensor> held = gpt_held_tensors(model_);
    if (!topo_.is_first_stage() && model_.wte_index() < held.size()) held[model_.wte_index()].saves = false;
    return held;
  }
  HeldState host_state(bool with_optimizer) override {
    const std::size_t n = local_params();
    HeldState st{std::vector<float>(n), std::vector<float>(n), std::vector<float>(n)};
    copy_bytes(st.params.data(), params(), n * sizeof(float));
    if (!with_optimizer) return st;
    make_moments();
    copy_bytes(st.m.data(), adam_m_.data(), n * sizeof(float));
    copy_bytes(st.v.data(), adam_v_.data(), n * sizeof(float));
    return st;
  }
  void set_state(const HeldState& st, bool with_optimizer) override {
    const std::size_t n = local_params();
    copy_bytes(params(), st.params.data(), n * sizeof(float));
    if (!with_optimizer) return;
    make_moments();
    copy_bytes(adam_m_.data(), st.m.data(), n * sizeof(float));
    copy_bytes(adam_v_.data(), st.v.data(), n * sizeof(float));
  }

  // gpt.h's count for this stage's span, one micro-batch of b sequences.
  double activation_bytes() const override {
    return gpt_activation_bytes(micro_config(s_), s_.grid.tp, ex::TpMode::plain, model_.span(), s_.recompute);
  }
  double activation_peak(int in_flight) const override {
    return gpt_activation_parts(micro_config(s_), s_.grid.tp, ex::TpMode::plain, model_.span(), s_.recompute)
        .peak(in_flight);
  }
  void publish_activation_formula(Comm& world, int in_flight) const override {
    const GptConfig c = micro_config(s_);
    dtl::publish_activation_formula(
        world, gpt_activation_parts(c, s_.grid.tp, ex::TpMode::plain, model_.span(), s_.recompute), s_.recompute,
        in_flight, korthikanti_layer_bytes(c, s_.grid.tp, ex::TpMode::plain, s_.recompute));
  }
  bool activation_figures(Comm& world, GptActivationFigures& f) const override {
    f = gpt_activation_figures(world, model_);
    return true;
  }
  std::size_t activation_cache_bytes() const override { return model_.activation_cache_bytes(); }
  // Megatron's 4 all-reduces of R·h floats per block (g after both c_proj forward, f
  // before c_attn and c_fc backward); the first stage's embedding adds g's (the vocab-
  // parallel lookup's partial sums), the last stage's head f's backward and the vocab-
  // parallel cross-entropy 3 of R floats (each row's max, Σ exp and target logit).
  double tp_bytes_per_micro_batch() const override {
    const double T = s_.grid.tp, ring = 2 * (T - 1) / T, R = s_.micro_rows(), h = s_.hidden;
    // Full recomputation reruns each block's attention g (its MLP stops at GELU): one more.
    const double per_block = s_.recompute == theory::Recompute::full ? 5.0 : 4.0;
    const double all_reduces =
        per_block * blocks_.count() + (topo_.is_first_stage() ? 1 : 0) + (topo_.is_last_stage() ? 1 : 0);
    return ring * 4.0 * (all_reduces * R * h + (topo_.is_last_stage() ? 3 * R : 0));
  }
  // One all-reduce of wte's V/T·h floats between two ranks: 2·(2−1)/2 of its bytes.
  double embedding_bytes() const override { return embedding_ ? 4.0 * double(s_.vocab) / s_.grid.tp * s_.hidden : 0; }

 private:
  Topology& topo_;
  GridSettings s_;
  StageBlocks blocks_;
  Gpt model_;
  std::unique_ptr<Comm> embedding_;  // the first and last stage of this pipeline (P > 1)
  MemoryTracker& mem_;
  std::vector<GptActivations> acts_;                // per micro-batch, from its forward to its backward
  std::vector<std::vector<int>> tokens_, targets_;  // per micro-batch of this replica, [S][b]
  Tensor adam_m_, adam_v_;
};

}  // namespace

std::unique_ptr<GridStage> make_grid_gpt_stage(Topology& topo, const GridSettings& s, MemoryTracker& mem, StageBlocks b,
                                               Device device) {
  return std::make_unique<GridGptStage>(topo, s, mem, b, device);
}

OneRankRun train_gpt_one_rank(Comm& alone, const GridSettings& s, Device device) {
  MemoryTracker mem(alone.global_rank(), nullptr);
  Gpt model(GptConfig{s.vocab, s.seq, s.hidden, s.heads, s.layers, s.batch}, {alone, ex::TpMode::plain}, mem, 7,
            device);
  AdamW opt(model.whole_params(), device, mem, s.adamw);  // steps 1, 2, ...
  OneRankRun run;
  std::vector<int> tokens, targets;
  for (int step = 0; step < s.steps; ++step) {
    counting_batch(step, s.seq, s.batch, s.vocab, tokens, targets);
    run.losses.push_back(model.forward_backward(tokens.data(), targets.data()));
    opt.step(model.whole_params());
  }
  for (const GptTensor& t : model.tensors()) run.weights.push_back(model.full_tensor(t.name));
  return run;
}

}  // namespace dtl
