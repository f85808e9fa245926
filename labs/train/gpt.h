// A tiny GPT-2 (Radford et al. 2019) for the training labs, tensor-parallel from the start
// (Megatron-LM: Shoeybi et al. 2019 §3; sequence parallelism: Korthikanti et al. 2022).
//
//   x = wte[token] + wpe[position]
//   L × { x += attn(ln_1(x));  x += mlp(ln_2(x)) }         pre-LayerNorm blocks
//   logits = ln_f(x)·wteᵀ                                   the LM head is tied to wte
//   loss = mean over tokens of softmax cross-entropy(logits, target)
//
// attn: causal multi-head attention, A heads of h/A features, c_attn [3h × h] (rows: every
// head's Q, then K, then V) and c_proj [h × h]. mlp: c_fc [4h × h], GELU (tanh), c_proj
// [h × 4h]. Layout as nn.Linear: W [out × in], y = x·Wᵀ + b. Tensor names are GPT-2's
// (wte, wpe, h.{i}.ln_1.weight, h.{i}.attn.c_attn.weight, ..., ln_f.bias), so a checkpoint
// writer can hand them to PyTorch as they are.
//
// Token rows follow Megatron's [s, b] order, row = s·B + b, so a contiguous block of rows
// is a block of the sequence: what sequence parallelism keeps on each rank.
//
// Tensor parallelism over the T ranks of `tp` (exercises/tensor_parallel.h, the learner's
// code): rank r holds heads [r·A/T, (r+1)·A/T) — c_attn column-parallel (its Q, K and V
// rows), attn.c_proj row-parallel — and MLP columns [r·4h/T, (r+1)·4h/T) — c_fc column-,
// mlp.c_proj row-parallel. wte is split by vocabulary rows (vocab-parallel embedding, LM
// head and cross-entropy). Everything else is replicated. So each block all-reduces twice
// forward (g after both c_proj) and twice backward (f before c_attn and c_fc) over
// rows·h floats. With TpMode::sequence_parallel the residual stream, LayerNorms and the
// embedding output keep rows/T rows; f and g become all-gather / reduce-scatter, backward
// gathers ln_1's and ln_2's outputs again (Megatron's choice: memory over one more gather),
// and the replicated tensors that saw only this rank's rows (LayerNorms, wpe) get their
// gradients summed by one all-reduce after backward. T = 1 never communicates.
//
// Precision: fp32, or mixed (bf16/f16 parameters and gradients, 2 + 2 bytes per parameter,
// the optimizer's fp32 master, m and v: 2 + 2 + 12 = 16 B/param, Micikevicius et al. 2018).
// Mixed precision computes in fp32 as the MLP does (labs/train/mlp.h): before a block runs,
// its parameters are widened into an fp32 window; after its backward, its fp32 gradients
// are rounded once into the 16-bit buffer. The embeddings and ln_f are used at both ends of
// the step (the tied head needs wte after the last block), so their window stays for the
// whole step and wte's gradient — embedding plus head — is summed in fp32 before rounding.
// Activations stay fp32. The sequence-parallel gradient all-reduce runs in the 16-bit type.
//
// Pipeline stages (the grid lab, gpt_stage.cpp): a GptSpan makes the model hold blocks
// first..last only, the embeddings on the first stage, ln_f and the LM head on the last.
// The head is tied to wte, so a last stage without the embeddings keeps its own copy of
// wte, drawn identical (Megatron-LM's "word embeddings" on the last stage); whoever runs
// the pipeline sums the two copies' gradients (the grid lab's embedding group). Each
// micro-batch in flight has its own GptActivations; forward_stage / backward_stage run one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/memory/buffer_pool.h"
#include "core/memory/memory.h"
#include "core/theory/recompute.h"
#include "exercises/tensor_parallel.h"
#include "labs/train/gpt_config.h"
#include "labs/train/gpt_overrides.h"
#include "labs/train/optimizer.h"
#include "labs/train/param_layout.h"
#include "labs/train/train_ops.h"

namespace dtl {

enum class GptBuffer { params, grads };

// Initial values: weights normal(0, std) (GPT-2: 0.02), biases zero, LayerNorm weights one.
// perturb_all (tests) also draws biases and LayerNorm parameters (1 + normal for the LN
// weights), so a bias added twice or a LayerNorm gradient missed cannot hide behind zeros.
struct GptInit {
  float std = 0.02f;
  bool perturb_all = false;
};

// Activation bytes of one micro-batch on one rank (MemTag::activation), counting what this
// implementation stores, in fp32 (4 bytes a float). R = S·B rows, Rl = R/T under sequence
// parallelism (else R), h hidden, A heads, V vocabulary:
//   a block    Rl·h          its input (the residual stream)
//            + 3·Rl·h        ln_1 output, residual after attention, ln_2 output
//            + 4·Rl          mean and 1/std of both LayerNorms
//            + 12·R·h/T      q, k, v (3h/T), attention output (h/T), c_fc output and GELU (2·4h/T)
//            + B·(A/T)·S²    softmax probabilities (none with a GptAttentionOverride: `attention`
//                            replaced; R = n·B then, the rank's n positions, and the
//                            override counts what it keeps itself)
//   the end    Rl·h          the stage's output (ln_f's input)
//            + Rl·h + 2·Rl   on the stage with the head: ln_f's output and statistics,
//            + 2·R·V/T       the logits and their gradient (vocab-parallel)
// Only the Rl terms shrink with sequence parallelism: Korthikanti et al.'s 10·sbh of the
// LayerNorm/residual region becoming 10·sbh/t (docs/labs.md maps every term to theirs).
// Recomputation (core/theory/recompute.h) moves terms from what a block keeps to what it
// holds only while it runs, forward and again in backward (`recomputed`):
//   selective  the probabilities, and the attention's output computed again beside them (R·h/T)
//   full       all but the block's input (the forward is rerun up to GELU: the last
//              projection's output is not needed by backward)
struct GptActivationBytes {
  int blocks = 0;         // held by the stage
  double block = 0;       // one block keeps from its forward to its backward
  double end = 0;         // the end group above, from the last block's forward to the head's backward
  double recomputed = 0;  // one block holds while it runs (0 without recomputation)
  double kept() const { return blocks * block + end; }  // a micro-batch after its forward
  // The most held at once with `in_flight` micro-batches between forward and backward: all
  // of them kept, or the running block's recomputed set on top of all but one micro-batch's end
  // (the last block's forward, before its end exists; a backward, after the head gave it back).
  double peak(int in_flight = 1) const { return in_flight * kept() + (recomputed > end ? recomputed - end : 0.0); }
};
enum class GptAttention : std::uint8_t { dense, replaced };  // replaced: set_context_parallel's override
GptActivationBytes gpt_activation_parts(const GptConfig& c, int tp, ex::TpMode mode, GptSpan span = {},
                                        theory::Recompute recompute = theory::Recompute::none,
                                        GptAttention attention = GptAttention::dense);
// One micro-batch's peak: gpt_activation_parts(...).peak(1).
double gpt_activation_bytes(const GptConfig& c, int tp, ex::TpMode mode, GptSpan span = {},
                            theory::Recompute recompute = theory::Recompute::none);

// Parameters, near enough for memory plans: 12·h² per block (QKV, projection, c_fc, c_proj)
// and the token and position tables (V + S)·h; biases and LayerNorms (13·h a block) left out.
inline double gpt_approx_params(const GptConfig& c) {
  const double h = c.hidden;
  return c.layers * 12.0 * h * h + (double(c.vocab) + c.seq) * h;
}

// One block's activations: views into two pooled buffers (Gpt's BufferPool, counted as
// MemTag::activation while held, so the memory view sees them rise through forward and fall
// through backward). `kept` lives from the block's forward to its backward; `recomputed`
// only while the block runs (forward, and again in backward). Which view is in which buffer
// is the recomputation mode's choice (gpt_activations.cpp); without one, `recomputed` is empty.
struct GptBlockActivations {
  PooledBuffer kept, recomputed;
  float *input = nullptr, *ln1_out = nullptr, *ln1_mean = nullptr, *ln1_rstd = nullptr, *qkv = nullptr,
        *probs = nullptr, *attn_out = nullptr, *resid_mid = nullptr, *ln2_out = nullptr, *ln2_mean = nullptr,
        *ln2_rstd = nullptr, *fc_pre = nullptr, *fc_act = nullptr;
  float* attn_again = nullptr;  // selective: where the recomputed attention output goes (discarded)
};

// One micro-batch's activations, made empty (make_activations) and filled as its forward
// runs: each held block's, and the end — the stage's output (ln_f's input), and on the
// stage with the head ln_f's output and statistics, the logits and their gradient.
struct GptActivations {
  std::vector<GptBlockActivations> blocks;
  PooledBuffer end;
  float *output = nullptr, *lnf_out = nullptr, *lnf_mean = nullptr, *lnf_rstd = nullptr, *logits = nullptr,
        *dlogits = nullptr;
};

// What the last step's forward and backward held, read from the memory tracker's counts
// (the bytes of the alloc events the memory view draws), for the labs' formula checks.
struct GptActivationMeasure {
  std::vector<double> block;  // each held block's kept bytes
  double end = 0, recomputed = 0;
  // Summed over every forward and backward so far: seconds and blocks run.
  double recompute_seconds = 0, forward_block_seconds = 0;
  long recomputed_blocks = 0, forward_blocks = 0;
};

class Gpt {
 public:
  // Throws UsageError for a config gpt_config_problem rejects. On a GPU (Device::cuda) every
  // op runs there but the cross-entropy, on the host (head_forward); tokens and targets
  // stay host arrays.
  // `precision`: f32, or bf16/f16 for mixed precision (above). `span`: a pipeline stage's
  // part (fp32 and without sequence parallelism unless it is the whole model).
  Gpt(const GptConfig& config, const ex::TpGroup& tp, MemoryTracker& mem, std::uint32_t seed,
      Device device = Device::cpu(), GptInit init = {}, DType precision = DType::f32, GptSpan span = {});
  ~Gpt();
  Gpt(const Gpt&) = delete;
  Gpt& operator=(const Gpt&) = delete;

  const GptConfig& config() const { return c_; }
  const GptSpan& span() const { return span_; }  // last filled in
  int held_blocks() const { return span_.last - span_.first + 1; }
  int tp_size() const { return T_; }
  int tp_rank() const { return rank_; }
  bool sequence_parallel() const { return sp_; }
  DType precision() const { return precision_; }
  Device device() const { return ops_.device(); }
  int local_rows() const { return rows_local_; }  // rows of the residual stream on this rank

  // The flat buffers (elements of precision()) and their table of named tensors, in GPT-2's order.
  const std::vector<GptTensor>& tensors() const { return tensors_; }
  const GptTensor& tensor(std::string_view name) const;  // Error naming it if absent
  // Layers: 0 embeddings, 1..L blocks, L+1 ln_f (and a head stage's copy of wte); a stage
  // holds a sub-range, keeping the numbers.
  const ParamLayout& layout() const { return layout_; }
  std::size_t num_params() const { return layout_.numel(); }
  // As floats: fp32 only (Error in mixed precision: use whole_params() or full_tensor()).
  float* params();
  float* grads();
  const float* params() const;
  const float* grads() const;
  ParamSlice whole_params() { return {params_.data(), grads_.data(), num_params(), precision_}; }

  // tokens and targets: R = S·B token ids each, row = s·B + b, on the host.
  // forward_backward zeroes the gradients, fills them and returns the mean loss. The
  // gradients are of loss_scale × loss (f16's loss scaling: LossScaler, optimizer.h).
  float forward_backward(const int* tokens, const int* targets, float loss_scale = 1.0f);
  float forward(const int* tokens, const int* targets);

  // As a pipeline stage (forward_backward and forward need the whole model). Activations
  // for one micro-batch of config().rows() rows, kept until its backward.
  GptActivations make_activations();
  // Forward of one micro-batch through the held part: the first stage embeds `tokens`, the
  // others start from `x`, the previous stage's output [rows × h]. Returns the stage's
  // output (a.output, until its backward_stage gives the end back), or on the head's stage
  // nullptr after ln_f, the head and the loss over `targets` (into *loss), whose gradient it
  // scales by `loss_scale` (the micro-batch's share of the global mean).
  const float* forward_stage(const int* tokens, const float* x, const int* targets, GptActivations& a, float* loss,
                             float loss_scale);
  // Its backward: from `dy` = dL/d(output) (ignored on the head's stage: from its loss),
  // adding to the gradients; `tokens` again on the first stage. Returns dL/dx of the
  // stage's input [rows × h] (nullptr on the first stage), valid until the next call.
  const float* backward_stage(const int* tokens, const float* dy, GptActivations& a);
  void zero_grads();
  // From now on every block's MLP is `mlp` (null: the dense one again). Its own tensors stay
  // in the table, unused: their gradients are 0. fp32 on the host, one tp rank (UsageError).
  void set_mlp_override(GptMlpOverride* mlp);
  // Context parallelism: this rank holds `positions` (ascending, each in [0, seq): n of the S,
  // in one or more contiguous runs — zig-zag has two) of every sequence, so its rows are n·B
  // ([s, b] over its positions: row i·B + b is position positions[i] of sequence b), the
  // tokens and targets forward_backward takes are those rows, wpe adds each run's positions
  // and the loss is the mean over its rows; `attention` computes every block's attention
  // across the ranks. Before the first forward; the whole model, fp32 on the host, one tp
  // rank, no recomputation (UsageError). wpe's gradient covers this rank's positions only:
  // the caller sums the gradients over the ranks.
  void set_context_parallel(GptAttentionOverride* attention, std::vector<int> positions);
  const std::vector<int>& positions() const { return positions_; }  // empty: every position
  // Activation recomputation from the next forward on (gpt.h, gpt_activation_parts): the
  // gradients are the same bit for bit; what a block keeps shrinks and its backward reruns
  // part (selective) or all (full) of its forward. Full with a replaced MLP: UsageError.
  void set_recompute(theory::Recompute r);
  theory::Recompute recompute() const { return recompute_; }
  const GptActivationMeasure& activation_measure() const { return measure_; }
  // The activation pool's reserved bytes the tracker does not count now (device_vs_tracker_bytes).
  std::size_t activation_cache_bytes() const { return pool_.idle_bytes(); }
  // The index in tensors() of wte (the embedding's, or the head's copy), or npos if not held.
  std::size_t wte_index() const { return wte_; }

  // The logits of the last forward() (Error after forward_backward, which gives them back),
  // [R × V/T]: vocabulary entries [vocab_begin, +V/T).
  const float* logits() const;
  int vocab_local() const { return c_.vocab / T_; }
  int vocab_begin() const { return rank_ * vocab_local(); }

  // A tensor in the full model's layout, all-gathered across the tp group when it is
  // split (a collective: every rank of the group calls it for the same name).
  std::vector<float> full_tensor(std::string_view name, GptBuffer which = GptBuffer::params);
  // Where element `local` of this rank's part of `t` lies in the full tensor (flattened).
  std::size_t full_element(const GptTensor& t, std::size_t local) const { return full_index(t, rank_, local); }
  // The other way: this rank's slice of `full` (the whole tensor, full_shape's elements)
  // becomes its parameters. Local, no communication. Error when the count does not fit.
  void set_full_tensor(std::string_view name, const std::vector<float>& full);
  // The tensors all-reduced after backward under sequence parallelism (empty otherwise) and
  // their element count: "the extra all-reduce of the LayerNorm weight gradients".
  std::vector<std::string> sequence_partial_tensors() const;
  std::size_t sequence_partial_numel() const;

 private:
  // The table: wte, wpe, then each block's tensors in this order, then ln_f's weight and
  // bias. A stage's table holds its part in the same order (a head stage without the
  // embeddings: its copy of wte after ln_f).
  enum BlockParam : int {
    ln1_w,
    ln1_b,
    attn_w,
    attn_b,
    attn_proj_w,
    attn_proj_b,
    ln2_w,
    ln2_b,
    fc_w,
    fc_b,
    mlp_proj_w,
    mlp_proj_b,
    kBlockParams
  };
  static constexpr std::size_t kWpe = 1, kNone = std::size_t(-1);
  std::size_t blocks_begin() const { return span_.embedding ? 2 : 0; }  // the first held block's first tensor
  std::size_t lnf_index() const { return blocks_begin() + std::size_t(held_blocks()) * kBlockParams; }
  bool whole() const { return span_.embedding && span_.head && held_blocks() == c_.layers; }
  void check_span();
  void build_table();
  void initialize(std::uint32_t seed, const GptInit& init);
  std::size_t full_index(const GptTensor& t, int rank, std::size_t local) const;
  void allocate();
  bool tp_active() const { return T_ > 1; }
  bool mixed() const { return precision_ != DType::f32; }
  int layer_of(std::size_t index) const {  // the layout's layer of tensor `index`
    if (index < blocks_begin()) return 0;
    if (index >= lnf_index()) return c_.layers + 1;
    return 1 + span_.first + int((index - blocks_begin()) / kBlockParams);
  }
  // Tensor `index` as fp32: in the flat buffers, or (mixed precision) in its layer's window.
  float* param(std::size_t index);
  float* grad(std::size_t index);
  // Mixed precision's windows (gpt_precision.cpp); each does nothing in fp32.
  void allocate_windows();
  void widen_edges();                // embeddings and ln_f, for the whole step; their gradients zeroed
  void widen_block(int i);           // block i's parameters
  void begin_block_backward(int i);  // widen_block, and block i's fp32 gradients zeroed
  void narrow_block_grads(int i);    // block i's fp32 gradients rounded into the 16-bit buffer
  void narrow_edge_grads();
  void store_floats(Range r, const float* values);                 // elements r of the parameters, from fp32
  std::vector<float> load_floats(Range r, GptBuffer which) const;  // and back, on the host
  std::size_t block_tensor(int block, int which) const {           // block: the model's number, first..last
    return blocks_begin() + std::size_t(block - span_.first) * kBlockParams + std::size_t(which);
  }
  ex::TpLinear linear(int block, int weight_index);
  void allocate_workspace();
  void require_stage_use(const char* what) const;
  float run_forward(const int* tokens, const int* targets);
  void forward_blocks(GptActivations& a);   // the held blocks, first to last
  void backward_blocks(GptActivations& a);  // and back
  void embed_forward(const int* tokens, GptActivations& a);
  void embed_backward(const int* tokens);
  void block_forward(int i, GptActivations& a);
  void block_backward(int i, GptActivations& a);
  // Block i's layers up to GELU from b.input: every tensor its backward reads (what full
  // recomputation reruns; the MLP's last projection is the caller's).
  void block_body_forward(int i, GptBlockActivations& b);
  // Pooled activations (gpt_activations.cpp): what block k keeps, what a block holds while
  // it runs, the end; each records its bytes in measure_.
  void acquire_block(GptActivations& a, std::size_t k);
  void acquire_recomputed(GptBlockActivations& b);
  void acquire_end(GptActivations& a);
  void recompute_block(int i, GptBlockActivations& b);  // in backward, before the block's backward
  void release_forward_only(GptActivations& a);         // forward(): all but the end (the logits)
  float head_forward(const int* targets, GptActivations& a);
  void head_backward(GptActivations& a);
  const float* column_forward(const ex::TpLinear& l, const float* x, float* y);
  void column_backward(const ex::TpLinear& l, const float* x_local, const float* dy, float* dx);
  void row_forward(const ex::TpLinear& l, const float* x, float* y);
  void row_backward(const ex::TpLinear& l, const float* x, const float* dy, float* dx);
  void all_reduce_sequence_partial_grads();

  GptConfig c_;
  GptSpan span_;
  std::size_t wte_ = 0;  // wte_index()
  ex::TpGroup tp_;
  int T_ = 1, rank_ = 0;
  bool sp_ = false;
  GptMlpOverride* mlp_override_ = nullptr;
  GptAttentionOverride* attention_override_ = nullptr;
  std::vector<int> positions_;  // set_context_parallel's; empty: all of them
  // The runs of consecutive positions this rank's rows hold: wpe rows [position, +rows/B)
  // are added to rows [row, +rows).
  struct PositionRun {
    int position, row, rows;
  };
  std::vector<PositionRun> position_runs() const;
  std::int64_t probability_floats() const;
  int rows_ = 0, rows_local_ = 0;
  MemoryTracker& mem_;
  TrainOps& ops_;
  ex::LinearMath math_;
  std::vector<GptTensor> tensors_;
  ParamLayout layout_;
  DType precision_ = DType::f32;
  Tensor params_, grads_;
  // Mixed precision (MemTag::other): layers 0 and L+1 in fp32 for the step, then one block.
  Tensor edge_w_, edge_g_, block_w_, block_g_;
  int widened_block_ = -1;
  theory::Recompute recompute_ = theory::Recompute::none;
  BufferPool pool_;     // the activations' memory, reserved once and reused step after step
  GptActivations own_;  // forward_backward's and forward's
  GptActivationMeasure measure_;
  // Workspace (MemTag::other): full-row buffers for f/g, the backward's gradients, a zero bias.
  Tensor full_x_, full_scratch_, y_, dresid_, dln_, dqkv_, dattn_, dfc_act_, dfc_pre_, zero_bias_, db_scratch_,
      sp_pack_;
  std::vector<std::uint16_t> fwd_labels_, bwd_labels_, recompute_labels_;
  std::vector<float> host_logits_, host_dlogits_;  // on a GPU: the cross-entropy's host copies
};

}  // namespace dtl
