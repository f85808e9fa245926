// The GPT's forward and backward (the model and its tensor parallelism: gpt.h).
#include "labs/train/gpt.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "core/trace/trace.h"

namespace dtl {

namespace {
constexpr float kLayerNormEps = 1e-5f;
}

Gpt::Gpt(const GptConfig& config, const ex::TpGroup& tp, MemoryTracker& mem, std::uint32_t seed, Device device,
         GptInit init, DType precision, GptSpan span)
    : c_(config),
      span_(span),
      tp_(tp),
      T_(tp.comm.size()),
      rank_(tp.comm.rank()),
      sp_(tp.mode == ex::TpMode::sequence_parallel && T_ > 1),
      mem_(mem),
      ops_(train_ops(device)),
      precision_(precision),
      pool_(mem, device) {
  if (precision != DType::f32 && precision != DType::bf16 && precision != DType::f16)
    throw UsageError("the GPT runs in fp32, or mixed precision with bf16 or fp16 parameters");
  if (const std::string problem = gpt_config_problem(c_, T_, tp.mode); !problem.empty())
    throw UsageError("GPT on " + std::to_string(T_) + " tensor-parallel ranks: " + problem);
  check_span();  // fills in span_.last
  rows_ = c_.rows();
  rows_local_ = sp_ ? rows_ / T_ : rows_;
  // The exercises' LinearMath on this device; a rank without the bias multiplies with zeros.
  math_.forward = [this](const float* X, const float* W, const float* b, float* Y, int rows, int in, int out) {
    ops_.linear_forward(X, W, b ? b : zero_bias_.as<float>(), Y, rows, in, out);
  };
  math_.backward = [this](const float* X, const float* W, const float* dY, float* dX, float* dW, float* db, int rows,
                          int in, int out, bool accumulate) {
    ops_.linear_backward(X, W, dY, dX, dW, db ? db : db_scratch_.as<float>(), rows, in, out, accumulate);
  };
  build_table();
  params_ = Tensor(mem, {std::int64_t(num_params())}, precision_, MemTag::param, device);
  grads_ = Tensor(mem, {std::int64_t(num_params())}, precision_, MemTag::grad, device);
  initialize(seed, init);
  allocate_workspace();
  allocate_windows();
  if (Trace* trace = tp_.comm.trace())
    for (int i = 0; i < c_.layers; ++i) {
      fwd_labels_.push_back(
          trace->label("fwd block " + std::to_string(i), Role{.pass = Pass::forward, .block = std::int16_t(i)}));
      bwd_labels_.push_back(
          trace->label("bwd block " + std::to_string(i), Role{.pass = Pass::backward, .block = std::int16_t(i)}));
      recompute_labels_.push_back(trace->label("recompute block " + std::to_string(i),
                                               Role{.pass = Pass::recompute, .block = std::int16_t(i)}));
    }
}

Gpt::~Gpt() = default;

// The workspace every forward and backward shares (MemTag::other): full-row buffers for f
// and g, the backward's gradients, a zero bias. The activations: make_activations().
void Gpt::allocate_workspace() {
  const std::int64_t R = rows_, Rl = rows_local_, h = c_.hidden, T = T_;
  const std::int64_t qkv = 3 * h / T, attn = h / T, fc = 4 * h / T, Vl = vocab_local();
  const Device dev = ops_.device();
  const auto work = [&](std::int64_t n) { return Tensor(mem_, {n}, DType::f32, MemTag::other, dev); };
  full_x_ = work(R * h), full_scratch_ = work(R * h), y_ = work(Rl * h);
  dresid_ = work(Rl * h), dln_ = work(Rl * h);
  dqkv_ = work(R * qkv), dattn_ = work(R * attn), dfc_act_ = work(R * fc), dfc_pre_ = work(R * fc);
  zero_bias_ = work(std::max<std::int64_t>(4 * h, Vl)), db_scratch_ = work(std::max<std::int64_t>(4 * h, Vl));
  ops_.zero(zero_bias_.as<float>(), zero_bias_.numel());
  if (sp_) sp_pack_ = Tensor(mem_, {std::int64_t(sequence_partial_numel())}, precision_, MemTag::other, dev);
}

ex::TpLinear Gpt::linear(int block, int weight_index) {
  // Every linear's bias follows its weight in the table.
  const std::size_t w = block_tensor(block, weight_index), b = w + 1;
  const GptTensor& t = tensors_[w];
  ex::TpLinear l;
  l.out = int(t.local_shape[0]);
  l.in = int(t.local_shape[1]);
  l.weight = param(w);
  l.weight_grad = grad(w);
  l.bias = param(b);
  l.bias_grad = grad(b);
  if (t.split == GptSplit::row) {  // the bias goes into the sum once: on the rank the exercise gives it to
    const ex::LinearSlice s = ex::row_parallel_slice(int(t.full_shape[0]), int(t.full_shape[1]), rank_, T_);
    if (s.bias_end <= s.bias_begin) l.bias = nullptr;
  }
  return l;
}

// ---- the four linear regions: the exercises' code when T > 1, plain GEMMs when T = 1 ----

const float* Gpt::column_forward(const ex::TpLinear& l, const float* x, float* y) {
  if (tp_active()) return ex::column_parallel_forward(tp_, math_, l, x, full_x_.as<float>(), y, rows_);
  math_.forward(x, l.weight, l.bias, y, rows_, l.in, l.out);
  return x;
}

void Gpt::column_backward(const ex::TpLinear& l, const float* x_local, const float* dy, float* dx) {
  if (!tp_active()) {
    math_.backward(x_local, l.weight, dy, dx, l.weight_grad, l.bias_grad, rows_, l.in, l.out, true);
    return;
  }
  // Sequence parallel: gather the LayerNorm's output again instead of keeping all rows of it.
  const float* x_in = ex::f_forward(tp_, x_local, full_x_.as<float>(), std::size_t(rows_) * std::size_t(l.in));
  ex::column_parallel_backward(tp_, math_, l, x_in, dy, full_scratch_.as<float>(), dx, rows_, true);
}

void Gpt::row_forward(const ex::TpLinear& l, const float* x, float* y) {
  if (tp_active())
    ex::row_parallel_forward(tp_, math_, l, x, full_scratch_.as<float>(), y, rows_);
  else
    math_.forward(x, l.weight, l.bias, y, rows_, l.in, l.out);
}

void Gpt::row_backward(const ex::TpLinear& l, const float* x, const float* dy, float* dx) {
  if (tp_active())
    ex::row_parallel_backward(tp_, math_, l, x, dy, full_scratch_.as<float>(), dx, rows_, true);
  else
    math_.backward(x, l.weight, dy, dx, l.weight_grad, l.bias_grad, rows_, l.in, l.out, true);
}

// ---- embedding: vocab-parallel wte, then wpe on this rank's rows --------------------

void Gpt::embed_forward(const int* tokens, GptActivations& a) {
  const int h = c_.hidden;
  float* x0 = a.blocks[0].input;
  if (tp_active()) {  // each rank looks up the tokens it owns (zeros for the rest); g sums them
    float* partial = full_scratch_.as<float>();
    ops_.embedding_forward(tokens, param(wte_), vocab_begin(), vocab_local(), partial, rows_, h);
    ex::g_forward(tp_, partial, x0, std::size_t(rows_) * std::size_t(h));
  } else {
    ops_.embedding_forward(tokens, param(wte_), 0, c_.vocab, x0, rows_, h);
  }
  for (const PositionRun& r : position_runs())
    ops_.position_forward(param(kWpe) + std::size_t(r.position) * std::size_t(h),
                          x0 + std::size_t(r.row) * std::size_t(h), r.rows, h, c_.batch);
}

// Row = s·B + b: position s = row / B. This rank's rows start at a whole position (under
// sequence parallelism seq divides by T), first_row / B; under context parallelism each run
// of consecutive positions it holds is one run of rows.
std::vector<Gpt::PositionRun> Gpt::position_runs() const {
  if (positions_.empty()) return {{(sp_ ? rank_ * rows_local_ : 0) / c_.batch, 0, rows_local_}};
  std::vector<PositionRun> runs;
  for (std::size_t i = 0; i < positions_.size(); ++i) {
    const int row = int(i) * c_.batch;
    if (!runs.empty() && positions_[i] == positions_[i - 1] + 1)
      runs.back().rows += c_.batch;
    else
      runs.push_back({positions_[i], row, c_.batch});
  }
  return runs;
}

void Gpt::embed_backward(const int* tokens) {
  const int h = c_.hidden;
  const float* d = dresid_.as<float>();
  for (const PositionRun& r : position_runs())
    ops_.position_backward(d + std::size_t(r.row) * std::size_t(h),
                           grad(kWpe) + std::size_t(r.position) * std::size_t(h), r.rows, h, c_.batch);
  const std::size_t full_n = std::size_t(rows_) * std::size_t(h);
  const float* d_all = tp_active() ? ex::g_backward(tp_, d, full_scratch_.as<float>(), full_n) : d;
  ops_.embedding_backward(tokens, d_all, grad(wte_), vocab_begin(), vocab_local(), rows_, h);
}

// ---- one pre-LayerNorm block ------------------------------------------------------

void Gpt::block_body_forward(int i, GptBlockActivations& a) {
  const int h = c_.hidden;
  const std::size_t local_n = std::size_t(rows_local_) * std::size_t(h);
  const auto p = [&](int which) { return param(block_tensor(i, which)); };
  ops_.layernorm_forward(a.input, p(ln1_w), p(ln1_b), a.ln1_out, a.ln1_mean, a.ln1_rstd, rows_local_, h, kLayerNormEps);
  column_forward(linear(i, attn_w), a.ln1_out, a.qkv);
  const kernels::AttentionShape shape{c_.seq, c_.batch, c_.heads / T_, h / c_.heads};
  if (attention_override_)
    attention_override_->forward(i, a.qkv, a.attn_out);
  else
    ops_.attention_forward(a.qkv, a.attn_out, a.probs, shape);
  row_forward(linear(i, attn_proj_w), a.attn_out, y_.as<float>());
  ops_.residual_add(a.input, y_.as<float>(), a.resid_mid, local_n);  // x + attn(ln_1(x))
  ops_.layernorm_forward(a.resid_mid, p(ln2_w), p(ln2_b), a.ln2_out, a.ln2_mean, a.ln2_rstd, rows_local_, h,
                         kLayerNormEps);
  if (mlp_override_) return;
  const ex::TpLinear fc = linear(i, fc_w);
  if (tp_active()) {  // the exercises' column-parallel layer, then the GELU on this rank's columns
    column_forward(fc, a.ln2_out, a.fc_pre);
    ops_.gelu_forward(a.fc_pre, a.fc_act, std::size_t(rows_) * std::size_t(4 * h / T_));
  } else {  // one op: the bias and the GELU in one pass after the GEMM
    ops_.linear_gelu_forward(a.ln2_out, fc.weight, fc.bias, a.fc_pre, a.fc_act, rows_, fc.in, fc.out);
  }
}

// Block i's input is in place (the embedding's, the previous block's or the stage's input);
// its output becomes the next block's input, or the end's output after the last block.
void Gpt::block_forward(int i, GptActivations& acts) {
  const std::size_t k = std::size_t(i - span_.first);  // its slot in the stage
  GptBlockActivations& a = acts.blocks[k];
  const std::size_t local_n = std::size_t(rows_local_) * std::size_t(c_.hidden);
  acquire_recomputed(a);  // with recomputation: what the block holds only while it runs
  block_body_forward(i, a);
  float* y = y_.as<float>();
  if (mlp_override_) {
    std::fill_n(y, local_n, 0.0f);
    mlp_override_->forward(i, a.ln2_out, y);
  } else {
    row_forward(linear(i, mlp_proj_w), a.fc_act, y);
  }
  ops_.axpy(1.0f, a.resid_mid, y, local_n);  // x += mlp(ln_2(x)), in the workspace
  a.recomputed.reset();                      // the running set goes before the next block's kept set comes
  const bool last = k + 1 == acts.blocks.size();
  if (last)
    acquire_end(acts);
  else
    acquire_block(acts, k + 1);
  copy_bytes(last ? acts.output : acts.blocks[k + 1].input, y, local_n * sizeof(float));
}

// On entry dresid_ holds dL/d(block output); on return dL/d(block input). The block's
// activations are given back (with recomputation, recompute_block ran first).
void Gpt::block_backward(int i, GptActivations& acts) {
  const std::size_t k = std::size_t(i - span_.first);
  GptBlockActivations& a = acts.blocks[k];
  const int h = c_.hidden;
  const auto p = [&](int which) { return param(block_tensor(i, which)); };
  const auto g = [&](int which) { return grad(block_tensor(i, which)); };
  float* d = dresid_.as<float>();
  if (mlp_override_) {
    std::fill_n(dln_.as<float>(), std::size_t(rows_local_) * std::size_t(h), 0.0f);
    mlp_override_->backward(i, d, dln_.as<float>());
  } else {
    row_backward(linear(i, mlp_proj_w), a.fc_act, d, dfc_act_.as<float>());
    ops_.gelu_backward(a.fc_pre, dfc_act_.as<float>(), dfc_pre_.as<float>(), dfc_pre_.numel());
    column_backward(linear(i, fc_w), a.ln2_out, dfc_pre_.as<float>(), dln_.as<float>());
  }
  // The residual passes d through; ln_2's backward adds its part.
  ops_.layernorm_backward(a.resid_mid, p(ln2_w), a.ln2_mean, a.ln2_rstd, dln_.as<float>(), d, g(ln2_w), g(ln2_b),
                          rows_local_, h);

  row_backward(linear(i, attn_proj_w), a.attn_out, d, dattn_.as<float>());
  const kernels::AttentionShape shape{c_.seq, c_.batch, c_.heads / T_, h / c_.heads};
  if (attention_override_)
    attention_override_->backward(i, dattn_.as<float>(), dqkv_.as<float>());
  else
    ops_.attention_backward(a.qkv, a.probs, dattn_.as<float>(), dqkv_.as<float>(), shape);
  column_backward(linear(i, attn_w), a.ln1_out, dqkv_.as<float>(), dln_.as<float>());
  ops_.layernorm_backward(a.input, p(ln1_w), a.ln1_mean, a.ln1_rstd, dln_.as<float>(), d, g(ln1_w), g(ln1_b),
                          rows_local_, h);
  a.kept.reset();
  a.recomputed.reset();
}

// ---- ln_f, the tied LM head and the vocab-parallel cross-entropy --------------------

float Gpt::head_forward(const int* targets, GptActivations& a) {
  const int h = c_.hidden, lnf = int(lnf_index());
  ops_.layernorm_forward(a.output, param(std::size_t(lnf)), param(std::size_t(lnf) + 1), a.lnf_out, a.lnf_mean,
                         a.lnf_rstd, rows_local_, h, kLayerNormEps);
  const float* x = a.lnf_out;
  if (tp_active()) x = ex::f_forward(tp_, x, full_x_.as<float>(), std::size_t(rows_) * std::size_t(h));
  // The tied LM head: logits_local = x·wte_localᵀ, this rank's vocabulary entries.
  ops_.linear_forward(x, param(wte_), zero_bias_.as<float>(), a.logits, rows_, h, vocab_local());
  // One rank: the device's cross-entropy kernel. Vocab-parallel: the learner's host code
  // (exercise vocab_parallel_cross_entropy), so on a GPU the logits come over and dlogits
  // go back, R·V/T floats each way per step.
  if (!tp_active()) return ops_.softmax_cross_entropy(a.logits, targets, a.dlogits, rows_, c_.vocab);
  const bool on_host = ops_.device().kind == Device::Kind::cpu;
  const std::size_t n = std::size_t(rows_) * std::size_t(vocab_local());
  if (!on_host) {
    host_logits_.resize(n);
    host_dlogits_.resize(n);
    copy_bytes(host_logits_.data(), a.logits, n * sizeof(float));  // waits for the LM head
  }
  const float* logits = on_host ? a.logits : host_logits_.data();
  float* dlogits = on_host ? a.dlogits : host_dlogits_.data();
  const float loss =
      ex::vocab_parallel_cross_entropy(tp_.comm, logits, targets, rows_, vocab_local(), vocab_begin(), dlogits);
  if (!on_host) copy_bytes(a.dlogits, host_dlogits_.data(), n * sizeof(float));
  return loss;
}

// Right after head_forward: its input (ln_f's output over all rows) is still in place.
void Gpt::head_backward(GptActivations& a) {
  const int h = c_.hidden;
  const std::size_t lnf = lnf_index();
  const float* x = sp_ ? full_x_.as<float>() : a.lnf_out;
  float* dx_all = full_scratch_.as<float>();
  // dx = dlogits·wte_local (a partial sum over the vocabulary), dwte_local += dlogitsᵀ·x.
  ops_.linear_backward(x, param(wte_), a.dlogits, dx_all, grad(wte_), db_scratch_.as<float>(), rows_, h, vocab_local(),
                       true);
  const float* dln = dx_all;
  if (tp_active()) {
    ex::f_backward(tp_, dx_all, dln_.as<float>(), std::size_t(rows_) * std::size_t(h));
    dln = dln_.as<float>();
  }
  ops_.zero(dresid_.as<float>(), dresid_.numel());
  ops_.layernorm_backward(a.output, param(lnf), a.lnf_mean, a.lnf_rstd, dln, dresid_.as<float>(), grad(lnf),
                          grad(lnf + 1), rows_local_, h);
  a.end.reset();  // before the blocks' backward: what their recomputation may need
}

// ---- the step ------------------------------------------------------------------------

float Gpt::run_forward(const int* tokens, const int* targets) {
  if (!whole())
    throw Error("Gpt: forward and forward_backward run the whole model; a pipeline stage runs forward_stage");
  own_ = make_activations();  // the last call's logits given back
  widen_edges();
  acquire_block(own_, 0);
  embed_forward(tokens, own_);
  forward_blocks(own_);
  return head_forward(targets, own_);
}

void Gpt::forward_blocks(GptActivations& a) {
  Trace* trace = tp_.comm.trace();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = span_.first; i <= span_.last; ++i) {
    ScopedSpan span(trace, tp_.comm.global_rank(), EventKind::compute, trace ? fwd_labels_[std::size_t(i)] : 0);
    widen_block(i);
    block_forward(i, a);
  }
  if (recompute_ == theory::Recompute::none) return;                // the time is only compared with recomputation's
  if (ops_.device().kind != Device::Kind::cpu) ops_.synchronize();  // (a GPU's: the work's, not its launch's)
  measure_.forward_block_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  measure_.forward_blocks += held_blocks();
}

// On entry dresid_ holds dL/d(the last held block's output); on return dL/d(the first's input).
// With recomputation each block's forward runs again first, in its own span.
void Gpt::backward_blocks(GptActivations& a) {
  Trace* trace = tp_.comm.trace();
  const int rank = tp_.comm.global_rank();
  const bool again = recompute_ != theory::Recompute::none;
  for (int i = span_.last; i >= span_.first; --i) {
    if (again) {
      ScopedSpan span(trace, rank, EventKind::compute, trace ? recompute_labels_[std::size_t(i)] : 0);
      begin_block_backward(i);
      recompute_block(i, a.blocks[std::size_t(i - span_.first)]);
    }
    ScopedSpan span(trace, rank, EventKind::compute, trace ? bwd_labels_[std::size_t(i)] : 0);
    if (!again) begin_block_backward(i);
    block_backward(i, a);
    narrow_block_grads(i);
  }
}

float Gpt::forward(const int* tokens, const int* targets) {
  const float loss = run_forward(tokens, targets);
  release_forward_only(own_);
  return loss;
}

float Gpt::forward_backward(const int* tokens, const int* targets, float loss_scale) {
  // fp32 accumulates into the zeroed buffer; mixed precision writes every layer's rounded
  // gradients once (each window is zeroed before its layer's backward).
  if (!mixed()) ops_.zero(grads(), num_params());
  const float loss = run_forward(tokens, targets);
  if (loss_scale != 1.0f) ops_.scale(loss_scale, own_.dlogits, std::size_t(rows_) * std::size_t(vocab_local()));
  head_backward(own_);
  backward_blocks(own_);
  embed_backward(tokens);
  narrow_edge_grads();
  all_reduce_sequence_partial_grads();
  return loss;
}

}  // namespace dtl
