// What the experts lab trains (experts_internal.h): the MoE blocks on a regression target
// (--model mlp), or the tiny GPT of labs/train/gpt.h with every block's MLP a mixture of
// experts (--model gpt: Shazeer et al. 2017's placement, GShard's every-layer variant).
//
// The GPT under expert parallelism: attention, LayerNorms and embeddings are replicated and
// data-parallel — each of the EP ranks runs B/EP of the B sequences and their gradients are
// summed over the ranks after backward (each rank's loss scaled by 1/EP, so the sum is the
// gradient of the mean over all B·S tokens) — while each MoE MLP sends ln_2's output rows to
// the ranks holding their experts. The one-rank reference runs all B sequences with the
// ranks' sequences as its routing groups, so capacity drops the same slots.
#include <numeric>

#include "core/memory/memory.h"
#include "labs/experts/experts_internal.h"
#include "labs/train/data.h"
#include "labs/train/gpt.h"
#include "labs/train/gpt_sharded.h"
#include "labs/train/optimizer.h"

namespace dtl {

namespace {

class MoeBlocksModel final : public ExpertsModel {
 public:
  MoeBlocksModel(const ExpertsSettings& s, Comm& ep, int groups) : moe_(s.shape, ep, groups) {}
  float train_step(int) override { return moe_.train_step(); }
  void adamw_step(const kernels::AdamWConfig& c, int t) override { moe_.adamw_step(c, t); }
  moe::MoeModel& moe() override { return moe_; }
  std::vector<IndexedTensor> tensors(bool grads) override {
    std::vector<IndexedTensor> out;
    for (const moe::Param& p : moe_.params()) out.push_back({p.index, grads ? p.g : p.w});
    return out;
  }

 private:
  moe::MoeModel moe_;
};

GptConfig gpt_config(const ExpertsSettings& s, int batch) {
  return {s.gpt.vocab, s.gpt.seq, s.shape.hidden, s.gpt.heads, s.shape.layers, batch};
}

// The MoE in place of each block's MLP. `groups` routing groups over this rank's rows; the
// model's rows are [s, b], so a group (the sequences b of one EP rank) is gathered into
// contiguous rows first, in (s, b) order — what that rank's own model holds.
class MoeMlp final : public GptMlpOverride {
 public:
  MoeMlp(moe::MoeModel& moe, const GptConfig& c, int groups, int hidden) : moe_(moe), h_(std::size_t(hidden)) {
    const int per = c.batch / groups;
    for (int g = 0; g < groups; ++g)
      for (int s = 0; s < c.seq; ++s)
        for (int b = 0; b < per; ++b) rows_.push_back(std::size_t(s * c.batch + g * per + b));
    buf_in_.resize(rows_.size() * h_), buf_out_.resize(rows_.size() * h_);
  }
  void forward(int block, const float* x, float* y) override {
    gather(x);
    std::fill(buf_out_.begin(), buf_out_.end(), 0.0f);
    moe_.forward_block(block, buf_in_.data(), buf_out_.data());
    scatter_add(y);
  }
  void backward(int block, const float* dy, float* dx) override {
    gather(dy);
    std::fill(buf_out_.begin(), buf_out_.end(), 0.0f);
    moe_.backward_block(block, buf_in_.data(), buf_out_.data());
    scatter_add(dx);
  }

 private:
  void gather(const float* from) {
    for (std::size_t i = 0; i < rows_.size(); ++i) std::copy_n(from + rows_[i] * h_, h_, buf_in_.data() + i * h_);
  }
  void scatter_add(float* to) const {
    for (std::size_t i = 0; i < rows_.size(); ++i)
      for (std::size_t c = 0; c < h_; ++c) to[rows_[i] * h_ + c] += buf_out_[i * h_ + c];
  }
  moe::MoeModel& moe_;
  std::size_t h_;
  std::vector<std::size_t> rows_;  // group row i is model row rows_[i]
  std::vector<float> buf_in_, buf_out_;
};

moe::MoeShape gpt_moe_shape(const ExpertsSettings& s) {
  moe::MoeShape m = s.shape;
  m.tokens = s.gpt.seq * s.gpt.batch;  // every token of the global batch
  return m;
}

class MoeGptModel final : public ExpertsModel {
 public:
  // groups: routing groups this rank runs (1 under expert parallelism; the reference: EP).
  MoeGptModel(const ExpertsSettings& s, Comm& ep, int groups)
      : s_(s),
        ep_(ep),
        alone_(ep.split(ep.rank(), 0)),
        mem_(ep.global_rank(), nullptr),
        batch_(s.gpt.batch / ep.size()),
        moe_(gpt_moe_shape(s), ep, groups),
        gpt_(gpt_config(s, batch_), ex::TpGroup{*alone_, ex::TpMode::plain}, mem_, 7),
        mlp_(moe_, gpt_config(s, batch_), groups, s.shape.hidden),
        opt_(gpt_.whole_params(), Device::cpu(), mem_, s.adamw) {
    gpt_.set_mlp_override(&mlp_);
  }
  float train_step(int step) override {
    std::vector<int> tokens, targets, mine, mine_targets;
    counting_batch(step, s_.gpt.seq, s_.gpt.batch, s_.gpt.vocab, tokens, targets);
    for (int s = 0; s < s_.gpt.seq; ++s)  // this rank's sequences, rows [s, b] as the model takes them
      for (int b = 0; b < batch_; ++b) {
        const std::size_t row = std::size_t(s * s_.gpt.batch + ep_.rank() * batch_ + b);
        mine.push_back(tokens[row]), mine_targets.push_back(targets[row]);
      }
    moe_.begin_step();
    const float inv_ep = 1.0f / float(ep_.size());
    double ce = gpt_.forward_backward(mine.data(), mine_targets.data(), inv_ep);
    const double aux = moe_.end_step();
    ep_.all_reduce(gpt_.grads(), gpt_.grads(), gpt_.num_params(), DType::f32, ReduceOp::sum);
    ep_.all_reduce(&ce, &ce, 1, DType::f64, ReduceOp::sum);
    return float(ce / ep_.size() + double(s_.shape.aux_weight) * aux);
  }
  void adamw_step(const kernels::AdamWConfig& c, int t) override {
    opt_.step(gpt_.whole_params());
    moe_.adamw_step(c, t);
  }
  moe::MoeModel& moe() override { return moe_; }
  // The GPT's tensors and AdamW's moments (labs/train/gpt_sharded.h): the same on every rank.
  StagedPieces stage_dense(bool saves) override { return stage_gpt_checkpoint(gpt_, opt_, saves); }
  std::size_t load_dense(const Manifest& m) override { return load_gpt_sharded(m, gpt_, opt_); }
  // The GPT's tensors first (its table's order), then the MoE's canonical list.
  std::vector<IndexedTensor> tensors(bool grads) override {
    std::vector<IndexedTensor> out;
    int i = 0;
    for (const GptTensor& t : gpt_.tensors())
      out.push_back({i++, gpt_.full_tensor(t.name, grads ? GptBuffer::grads : GptBuffer::params)});
    for (const moe::Param& p : moe_.params()) out.push_back({i + p.index, grads ? p.g : p.w});
    return out;
  }

 private:
  const ExpertsSettings& s_;
  Comm& ep_;
  std::unique_ptr<Comm> alone_;  // the GPT's own group of one: no tensor parallelism
  MemoryTracker mem_;
  int batch_;  // this rank's sequences
  moe::MoeModel moe_;
  Gpt gpt_;
  MoeMlp mlp_;
  AdamW opt_;
};

}  // namespace

int experts_tensor_count(const ExpertsSettings& s) {
  const int moe = moe::MoeModel::param_count(s.shape);
  if (s.model == ExpertsModelKind::mlp) return moe;
  // The GPT's table: wte, wpe, 12 per block, ln_f's 2 (labs/train/gpt.h).
  return 2 + 12 * s.shape.layers + 2 + moe;
}

std::unique_ptr<ExpertsModel> make_experts_model(const ExpertsSettings& s, Comm& ep, int groups) {
  if (s.model == ExpertsModelKind::gpt) return std::make_unique<MoeGptModel>(s, ep, groups);
  return std::make_unique<MoeBlocksModel>(s, ep, groups);
}

}  // namespace dtl
