// The GPT the context-parallel lab trains (cp_lab_internal.h): labs/train/gpt.h with every
// block's attention replaced by one of cp_exchange.h's algorithms over the CP ranks.
//
// Each of the P ranks holds n = S/P positions of every one of the B sequences (cp_positions:
// contiguous, or zig-zag's two chunks), so n·B rows; weights are replicated. Its loss is the
// mean over its rows, scaled by 1/P for backward, so the gradients summed over the ranks (one
// all-reduce after backward) are those of the mean over all S·B tokens: what one rank running
// the whole batch computes.
#include <algorithm>

#include "core/memory/memory.h"
#include "labs/context_parallel/cp_lab_internal.h"
#include "labs/train/data.h"
#include "labs/train/gpt_sharded.h"

namespace dtl {

// The override: per block, what cp_attention_forward saved for its backward. The block keeps
// qkv and the output itself (gpt.h), so the override points at them instead of keeping a
// copy (the output is copied back in for the algorithms whose backward reads it, only while
// that backward runs); what it keeps is counted as MemTag::activation (cp_kept_floats).
class CpAttention final : public GptAttentionOverride {
 public:
  CpAttention(Comm& cp, cp::CpAlgo algo, const cp::CpLayer& layer, int layers, MemoryTracker& mem, CpCallLog* log)
      : cp_(cp), algo_(algo), layer_(layer), mem_(mem), log_(log), saved_(std::size_t(layers)) {
    out_floats_ = std::size_t(layer.shape.seq / cp.size()) * std::size_t(layer.shape.batch) *
                  std::size_t(layer.shape.heads * layer.shape.head_dim);
  }

  void forward(int block, const float* qkv, float* out) override {
    Saved& s = saved_.at(std::size_t(block));
    const CpMarks m = cp_marks(cp_);
    s.state = cp::cp_attention_forward(cp_, algo_, layer_, qkv);
    if (log_) log_->add(cp_call_trace(cp_, m, cp_marks(cp_)), false);
    std::copy(s.state.out.begin(), s.state.out.end(), out);
    std::vector<float>().swap(s.state.out);  // the block keeps it
    s.qkv = qkv, s.out = out;
    s.bytes = sizeof(float) *
              (s.state.lse.size() + s.state.kv_all.size() + s.state.head_qkv.size() + s.state.head_out.size());
    mem_.record_use(s.bytes, MemTag::activation);
  }

  void backward(int block, const float* dout, float* dqkv) override {
    Saved& s = saved_.at(std::size_t(block));
    if (algo_ != cp::CpAlgo::ulysses) s.state.out.assign(s.out, s.out + out_floats_);  // D = rowsum(dout ∘ out)
    const CpMarks m = cp_marks(cp_);
    const std::vector<float> d = cp::cp_attention_backward(cp_, algo_, layer_, s.qkv, s.state, dout);
    if (log_) log_->add(cp_call_trace(cp_, m, cp_marks(cp_)), true);
    std::copy(d.begin(), d.end(), dqkv);
    s.state = {};
    mem_.record_return(s.bytes, MemTag::activation);
  }

 private:
  struct Saved {
    cp::CpSaved state;
    const float* qkv = nullptr;
    const float* out = nullptr;
    std::size_t bytes = 0;
  };
  Comm& cp_;
  cp::CpAlgo algo_;
  cp::CpLayer layer_;
  MemoryTracker& mem_;
  CpCallLog* log_;
  std::vector<Saved> saved_;
  std::size_t out_floats_ = 0;
};

struct CpGptRun::Impl {
  Impl(const CpSettings& s, Comm& cp, cp::CpAlgo algo, MemoryTracker& mem, CpCallLog* log)
      : s(s),
        cp(cp),
        alone(cp.split(cp.rank(), 0)),
        positions(cp::cp_positions(s.split, s.seq, cp.size(), cp.rank())),
        gpt(s.gpt(), ex::TpGroup{*alone, ex::TpMode::plain}, mem, 7),
        attention(cp, algo, s.layer(), s.layers, mem, log),
        opt(gpt.whole_params(), Device::cpu(), mem, s.adamw) {
    gpt.set_context_parallel(&attention, positions);
  }
  const CpSettings& s;
  Comm& cp;
  std::unique_ptr<Comm> alone;  // the GPT's own group of one: no tensor parallelism
  std::vector<int> positions;
  Gpt gpt;
  CpAttention attention;
  AdamW opt;
};

CpGptRun::CpGptRun(const CpSettings& s, Comm& cp, cp::CpAlgo algo, MemoryTracker& mem, CpCallLog* log)
    : impl_(std::make_unique<Impl>(s, cp, algo, mem, log)) {}
CpGptRun::~CpGptRun() = default;

float CpGptRun::train_step(int step) {
  Impl& m = *impl_;
  const int B = m.s.batch, P = m.cp.size();
  std::vector<int> tokens, targets, mine, mine_targets;
  counting_batch(step, m.s.seq, B, m.s.vocab, tokens, targets);
  for (int p : m.positions)  // this rank's rows, [s, b] over its positions
    for (int b = 0; b < B; ++b) {
      mine.push_back(tokens[std::size_t(p * B + b)]);
      mine_targets.push_back(targets[std::size_t(p * B + b)]);
    }
  double loss = m.gpt.forward_backward(mine.data(), mine_targets.data(), 1.0f / float(P));
  m.cp.all_reduce(m.gpt.grads(), m.gpt.grads(), m.gpt.num_params(), DType::f32, ReduceOp::sum);
  m.cp.all_reduce(&loss, &loss, 1, DType::f64, ReduceOp::sum);
  return float(loss / P);
}

void CpGptRun::adamw_step() { impl_->opt.step(impl_->gpt.whole_params()); }

std::vector<std::vector<float>> gpt_tensors(Gpt& gpt, bool grads) {
  std::vector<std::vector<float>> out;
  for (const GptTensor& t : gpt.tensors())
    out.push_back(gpt.full_tensor(t.name, grads ? GptBuffer::grads : GptBuffer::params));
  return out;
}

std::vector<std::vector<float>> CpGptRun::tensors(bool grads) { return gpt_tensors(impl_->gpt, grads); }

StagedPieces CpGptRun::stage_checkpoint() {
  return stage_gpt_checkpoint(impl_->gpt, impl_->opt, impl_->cp.rank() == 0);
}
std::size_t CpGptRun::load_checkpoint(const Manifest& m) { return load_gpt_sharded(m, impl_->gpt, impl_->opt); }

}  // namespace dtl
