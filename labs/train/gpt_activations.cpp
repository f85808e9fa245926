// The GPT's activations (gpt.h, "GptActivationBytes"): what each block keeps from its
// forward to its backward, what it holds only while it runs, and activation recomputation —
// the trade of memory for a second forward (core/theory/recompute.h).
//
// Every buffer comes from the model's BufferPool: reserved on the first step, reused after,
// and counted by the MemoryTracker only while held, so the memory view shows activations
// rising block by block through forward and falling through backward.
#include <chrono>
#include <string>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "core/trace/trace.h"
#include "labs/train/gpt.h"

namespace dtl {

GptActivationBytes gpt_activation_parts(const GptConfig& c, int tp, ex::TpMode mode, GptSpan span,
                                        theory::Recompute recompute, GptAttention attention) {
  // The formula and what each term is: gpt.h, above GptActivationBytes.
  const double T = tp, R = c.rows(), h = c.hidden, S = c.seq, B = c.batch, A = c.heads, V = c.vocab;
  const double Rl = mode == ex::TpMode::sequence_parallel && tp > 1 ? R / T : R;
  const double input = Rl * h;                               // the block's input
  const double rest = 3 * Rl * h + 4 * Rl + 12 * R * h / T;  // everything else but the probabilities
  const double probs = attention == GptAttention::dense ? B * (A / T) * S * S : 0.0, attention_again = R * h / T;
  GptActivationBytes p;
  p.blocks = (span.last < 0 ? c.layers - 1 : span.last) - span.first + 1;
  switch (recompute) {
    case theory::Recompute::none: p.block = 4 * (input + rest + probs); break;
    case theory::Recompute::selective:
      p.block = 4 * (input + rest);
      p.recomputed = 4 * (probs + attention_again);
      break;
    case theory::Recompute::full:
      p.block = 4 * input;
      p.recomputed = 4 * (rest + probs);
      break;
    case theory::Recompute::selective_op:  // (the planner's torchtitan policy; the lab's options do not offer it)
      throw UsageError("the GPT lab recomputes none, selective or full");
  }
  p.end = 4 * (span.head ? 2 * Rl * h + 2 * Rl + 2 * R * V / T : Rl * h);
  return p;
}

double gpt_activation_bytes(const GptConfig& c, int tp, ex::TpMode mode, GptSpan span, theory::Recompute recompute) {
  return gpt_activation_parts(c, tp, mode, span, recompute).peak(1);
}

namespace {

// Views into one pooled buffer, each starting on a 64-byte boundary (16 floats) as separate
// allocations would; the tracker counts the views' floats, not the padding between them.
class Carver {
 public:
  void add(float*& view, std::int64_t floats) { views_.push_back({&view, std::size_t(floats)}); }
  PooledBuffer take(BufferPool& pool) {
    std::size_t end = 0, counted = 0;
    for (const View& v : views_) end = round_up(end) + v.floats, counted += v.floats;
    if (views_.empty()) return {};
    PooledBuffer buffer = pool.acquire(end * sizeof(float), MemTag::activation, counted * sizeof(float));
    float* base = static_cast<float*>(buffer.data());
    std::size_t at = 0;
    for (const View& v : views_) {
      at = round_up(at);
      *v.view = base + at;
      at += v.floats;
    }
    return buffer;
  }

 private:
  static std::size_t round_up(std::size_t floats) { return (floats + 15) / 16 * 16; }
  struct View {
    float** view;
    std::size_t floats;
  };
  std::vector<View> views_;
};

struct BlockSizes {
  std::int64_t local_rows_h, rows_local, qkv, probs, attn, fc;
};

// A block's tensors on a rank: R rows (Rl of the residual stream), h hidden, T tp ranks.
BlockSizes block_sizes(std::int64_t R, std::int64_t Rl, std::int64_t h, std::int64_t T, std::int64_t probs) {
  return {Rl * h, Rl, R * 3 * h / T, probs, R * h / T, R * 4 * h / T};
}

// Which of a block's tensors the mode keeps (into `kept`) and which the block holds only
// while it runs (into `running`): the split gpt_activation_parts counts.
void plan_block(const BlockSizes& n, theory::Recompute r, GptBlockActivations& b, Carver& kept, Carver& running) {
  const bool full = r == theory::Recompute::full;
  Carver& body = full ? running : kept;
  kept.add(b.input, n.local_rows_h);
  body.add(b.ln1_out, n.local_rows_h), body.add(b.qkv, n.qkv);
  if (n.probs > 0) (r == theory::Recompute::none ? kept : running).add(b.probs, n.probs);  // none if replaced
  body.add(b.attn_out, n.attn), body.add(b.resid_mid, n.local_rows_h), body.add(b.ln2_out, n.local_rows_h);
  body.add(b.fc_pre, n.fc), body.add(b.fc_act, n.fc);
  body.add(b.ln1_mean, n.rows_local), body.add(b.ln1_rstd, n.rows_local);
  body.add(b.ln2_mean, n.rows_local), body.add(b.ln2_rstd, n.rows_local);
  if (r == theory::Recompute::selective) running.add(b.attn_again, n.attn);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void Gpt::set_recompute(theory::Recompute r) {
  if (r != theory::Recompute::none && attention_override_)
    throw UsageError(
        "recomputation reruns the attention from its probabilities; a replaced attention (context "
        "parallelism) keeps none: use --recompute none");
  if (r == theory::Recompute::full && mlp_override_)
    throw UsageError(
        "full recomputation would run a replaced MLP (the experts lab's all-to-alls) twice; use "
        "--recompute selective or none");
  recompute_ = r;
}

// B·(A/T)·S² probabilities a block keeps, 0 with a replaced attention (gpt.h).
std::int64_t Gpt::probability_floats() const {
  if (attention_override_) return 0;
  return std::int64_t(c_.batch) * (c_.heads / T_) * c_.seq * c_.seq;
}

GptActivations Gpt::make_activations() {
  GptActivations a;
  a.blocks.resize(std::size_t(held_blocks()));
  measure_.block.resize(std::size_t(held_blocks()));
  return a;
}

void Gpt::acquire_block(GptActivations& a, std::size_t k) {
  Carver kept, running;
  plan_block(block_sizes(rows_, rows_local_, c_.hidden, T_, probability_floats()), recompute_, a.blocks[k], kept,
             running);
  const std::size_t before = mem_.current(MemTag::activation);
  a.blocks[k].kept = kept.take(pool_);
  measure_.block[k] = double(mem_.current(MemTag::activation) - before);
}

void Gpt::acquire_recomputed(GptBlockActivations& b) {
  if (recompute_ == theory::Recompute::none) return;
  Carver kept, running;
  plan_block(block_sizes(rows_, rows_local_, c_.hidden, T_, probability_floats()), recompute_, b, kept, running);
  const std::size_t before = mem_.current(MemTag::activation);
  b.recomputed = running.take(pool_);
  measure_.recomputed = double(mem_.current(MemTag::activation) - before);
}

void Gpt::acquire_end(GptActivations& a) {
  const std::int64_t R = rows_, Rl = rows_local_, h = c_.hidden;
  Carver end;
  end.add(a.output, Rl * h);
  if (span_.head) {
    end.add(a.lnf_out, Rl * h), end.add(a.lnf_mean, Rl), end.add(a.lnf_rstd, Rl);
    end.add(a.logits, R * vocab_local()), end.add(a.dlogits, R * vocab_local());
  }
  const std::size_t before = mem_.current(MemTag::activation);
  a.end = end.take(pool_);
  measure_.end = double(mem_.current(MemTag::activation) - before);
}

// Before block i's backward: what its forward did not keep, computed again from what it did.
// Selective: the core attention (Q·Kᵀ, softmax, ·V) from the kept q, k, v — its output goes
// to a scratch view, as the kept one is the same. Full: the block from its kept input, up to
// GELU, collectives included (the tensor-parallel g after attention, sequence parallelism's
// gathers): Megatron's full recomputation reruns them too.
void Gpt::recompute_block(int i, GptBlockActivations& b) {
  const auto t0 = std::chrono::steady_clock::now();
  acquire_recomputed(b);
  if (recompute_ == theory::Recompute::full) {
    block_body_forward(i, b);
  } else {
    const kernels::AttentionShape shape{c_.seq, c_.batch, c_.heads / T_, c_.hidden / c_.heads};
    ops_.attention_forward(b.qkv, b.attn_again, b.probs, shape);
  }
  if (ops_.device().kind != Device::Kind::cpu) ops_.synchronize();  // the time is the work's, not its launch's
  measure_.recompute_seconds += seconds_since(t0);
  ++measure_.recomputed_blocks;
}

const float* Gpt::logits() const {
  if (!own_.end.data()) throw Error("Gpt::logits: the logits of the last forward() (forward_backward gives them back)");
  return own_.logits;
}

void Gpt::release_forward_only(GptActivations& a) {
  for (GptBlockActivations& b : a.blocks) b.kept.reset(), b.recomputed.reset();
}

}  // namespace dtl
