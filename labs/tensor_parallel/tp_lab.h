// The tensor-parallel lab (see tp_lab.cpp): Megatron-LM's intra-layer split of an MLP or
// a tiny GPT over T ranks, every collective counted and sized from the trace beside the
// curriculum's formulas (seeds 001–003), every gradient checked against one rank.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exercises/tensor_parallel.h"
#include "kernels/cpu/kernels.h"
#include "labs/lab.h"
#include "labs/option_table.h"
#include "labs/train/checkpoint_run.h"
#include "labs/train/gpt_activation_report.h"

namespace dtl {

// --model and --sequence-parallel.
enum class TpModelKind { mlp, gpt };
enum class TpSequenceChoice { off, on, both };

// The lab's options, typed (tp_option_table() binds each flag to its field), and what the
// run derives from them.
struct TpSettings {
  TpModelKind model = TpModelKind::mlp;
  int tp = 0;  // --tp: 0, or --ranks again (every rank is one tensor-parallel rank)
  TpSequenceChoice sequence_parallel = TpSequenceChoice::off;
  int layers = 2, hidden = 64, heads = 4, seq = 32, batch = 4, vocab = 64;
  int steps = 3;
  bool check = true;  // train the 1-rank reference and compare (off for big milestone runs)
  theory::Recompute recompute = theory::Recompute::none;  // --recompute, the GPT's (labs/train/gpt.h)
  std::vector<ex::TpMode> modes;                          // plain and/or sequence parallel, one report column each
  // Sharded checkpoints (labs/train/checkpoint_run.h): the MLP's, one mode.
  int checkpoint_every = 0;
  std::string checkpoint_dir, resume;
  bool checkpoint_async = false;
  // eps 1e-5: attention's K bias has an exactly zero gradient (softmax ignores a shift of a
  // query's scores), whose rounding noise differs with T; eps 1e-8 would turn it into full
  // lr-sized steps and the weights could not be compared with one rank's.
  kernels::AdamWConfig adamw{1e-3f, 0.9f, 0.999f, 1e-5f, 0.0f};
  int rows() const { return batch * seq; }  // tokens per step: the b·s of the formulas
};
const OptionTable<TpSettings>& tp_option_table();

// The model a run drives, the same for every T: one training step's forward, loss and
// backward on this rank's data, AdamW, and the full tensors for the equivalence checks.
// Its forward and backward mark each block with compute spans "fwd block L" / "bwd
// block L", which is how the lab tells the blocks' collectives from the embedding's.
class TpModelRun {
 public:
  virtual ~TpModelRun() = default;
  virtual float train_step(int step) = 0;  // the global batch's loss, the same on every rank
  virtual void adamw_step(const kernels::AdamWConfig& c, int step) = 0;
  virtual std::vector<std::string> names() const = 0;
  virtual std::vector<float> full_params(const std::string& name) = 0;  // collectives over the group
  virtual std::vector<float> full_grads(const std::string& name) = 0;
  // Every parameter of this rank moved by one ulp, up or down by a fixed pseudo-random sign: a
  // model as close to this one as fp32 can hold (the gradient check's noise floor).
  virtual void nudge_params() = 0;
  // Replicated parameters whose gradients each rank only has part of under sequence
  // parallelism (LayerNorm weights, ...): their element count, all-reduced after backward.
  virtual std::size_t partial_replicated_grads() const { return 0; }
  // f…g regions per block (the MLP's blocks: 1; a transformer layer: attention and MLP, 2),
  // and whether backward gathers a column layer's input again under sequence parallelism.
  virtual int regions_per_block() const = 0;
  virtual bool regathers_input() const = 0;
  // The activation bytes this rank keeps for backward, and that formula in words.
  virtual double activation_bytes() const = 0;
  virtual std::size_t activation_cache_bytes() const { return 0; }  // reserved, idle, untracked (a pool's)
  // The GPT's measured activations (gpt_activation_report.h); false for a model without them.
  virtual bool activation_figures(Comm&, GptActivationFigures&) const { return false; }
  virtual void publish_activation_lines() const {}  // the GPT's, for the activations view
  virtual std::string activation_formula() const = 0;
  virtual std::size_t local_params() const = 0;  // this rank's slice of the model
  // This rank's part of a sharded checkpoint, and reading it back on any T (the MLP's:
  // tp_mlp_checkpoint.cpp; tp_settings refuses the options for the GPT).
  virtual StagedPieces stage_checkpoint() = 0;
  virtual std::size_t load_checkpoint(const Manifest& m) = 0;
};
// On `device` (the rank's: rank_device), the batch's rows copied there each step.
std::unique_ptr<TpModelRun> make_tp_model(const TpSettings& s, const ex::TpGroup& tp, MemoryTracker& mem,
                                          Device device);

// The collectives of one step inside the blocks, from this rank's events.
struct BlockCollectives {
  int all_reduce_fwd = 0, all_reduce_bwd = 0, all_gather_fwd = 0, all_gather_bwd = 0;
  int reduce_scatter_fwd = 0, reduce_scatter_bwd = 0, others = 0;
  int all_reduce_again = 0, all_gather_again = 0, reduce_scatter_again = 0;  // in recomputation's forward
  double largest_payload = 0;  // bytes of the biggest one (all-reduce: the buffer; AG/RS: the full vector)
  double ring_bytes = 0;       // what a ring sends per rank for all of them: 2(T−1)/T or (T−1)/T of each
  double seconds = 0;          // their time (synchronous: all of it exposed)
  double outside_blocks = 0;   // collectives of the step outside the blocks (embedding, loss, LN grads)
  // Forward only (the curriculum's milestone counts the forward pass): the payload of the
  // blocks' collectives, their time, and the blocks' forward spans in all (compute + them).
  double fwd_payload = 0, fwd_comm_seconds = 0, fwd_span_seconds = 0;
};

struct TpMeasurement {
  ex::TpMode mode = ex::TpMode::plain;
  float first_loss = 0, last_loss = 0;
  double max_grad_rel_diff = -1, max_weight_diff = -1, loss_diff = -1;  // vs 1 rank (-1: not checked)
  double grad_noise_floor = 0;   // the reference's (OneRank::grad_noise_floor): sets the gradients' bound
  double first_update_diff = 0;  // AdamW's first update vs one rank's, ÷ lr (labs/measure.h): the weights' bound
  double device_vs_tracker = 0;  // the device's own count - the tracker (largest over ranks)
  BlockCollectives comm;         // of the last step
  double activation_peak = 0;    // bytes, this rank's MemTag::activation peak (max over ranks)
  std::optional<GptActivationFigures> activation;  // the GPT's per layer and recomputed figures
  double recompute_bits = -1;  // gradient elements differing from a twin without recomputation (-1: none ran)
  double param_bytes = 0;      // per rank
  int regions = 1;             // the model's f…g regions per block
  bool regathers = false;
  double predicted_activation = 0;
  std::string activation_formula;
  std::size_t partial_replicated = 0;
  Repeated step, comm_time;  // a training step, and the blocks' collectives in it
  CheckpointStats checkpoints;
};

// The single-rank reference: the same model code on a group of one, trained the same steps.
struct OneRank {
  float first_loss = 0;
  std::vector<std::vector<float>> first_grads, final_params;  // by names()
  // The fp32 noise floor of the first step's gradients on this model: their largest relative
  // change (÷ each tensor's max) when every weight moves by one ulp. Deep, narrow models
  // amplify rounding through the layers (a GPT of hidden 4: 2e-5 at 48 layers, 3e-3 at 192),
  // so the tensor-parallel gradients' bound is a multiple of it, never below 1e-4.
  double grad_noise_floor = 0;
};
OneRank one_rank_reference(Comm& comm, const TpSettings& s, Device device);
// One mode (plain or sequence parallel) on the comm's T ranks: train, time, count, compare.
// --resume's rules for the model (tp_lab.cpp).
ResumeRules tp_resume_rules(const TpSettings& s);
TpMeasurement run_tp_mode(Comm& comm, const LabConfig& cfg, const TpSettings& s, ex::TpMode mode, const OneRank& ref);

// The lab's options as settings for T ranks; UsageError naming the constraint a shape breaks.
TpSettings tp_settings(const LabConfig& cfg, int T);
Report run_tp_lab(Comm& comm, const LabConfig& cfg);
// The lab's own view in dtlab-viz: which rank holds which slice of each weight matrix, f and g
// (viz/views/tensor_parallel/split_view.cpp).
inline constexpr ViewKind kSplitView{"split"};
LabInfo tensor_parallel_lab_info();

// Report rows (tp_report.cpp).
void add_tp_rows(Report& rep, const TpSettings& s, const TpMeasurement& m, int T);
void describe_tp_setup(Report& rep, const TpSettings& s, const LabConfig& cfg);

}  // namespace dtl
