// The tensor-parallel lab: one model split Megatron-style over the T ranks of the run
// (Shoeybi et al. 2019 §3; sequence parallelism: Korthikanti et al. 2022), trained for a
// few AdamW steps, beside the same model on one rank.
//
//   dtlab run tensor_parallel --model mlp|gpt --ranks T [--sequence-parallel off|on|both]
//                             [--layers L --hidden H --heads A --seq S --batch B --vocab V] [--link pcie4]
//
// What it measures, from each rank's own trace events: the collectives inside the blocks
// per layer and pass (plain: 2 all-reduces forward, 2 backward; sequence parallel: each
// becomes an all-gather and a reduce-scatter), their payload against b·s·h·4 bytes, the
// ring bytes per rank per step against 4L · 2(T−1)/T · b·s·h·4, activation memory per
// rank with and without sequence parallelism, and compute against communication time.
// Equivalence: the loss, every gradient of the first step and the weights after --steps
// steps equal one rank's (the same code on a 1-rank group).
#include "labs/tensor_parallel/tp_lab.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "core/theory/collectives.h"
#include "core/trace/run_clock.h"
#include "core/trace/trace.h"
#include "core/util/units.h"
#include "labs/measure.h"
#include "labs/shared_options.h"
#include "labs/tensor_parallel/tp_mlp.h"
#include "labs/train/gpt_sharded.h"
#include "labs/train/reference.h"

namespace dtl {

namespace {

using Clock = RunClock;  // a stepped run leaves out the learner's pauses

// ---- which collectives a step made inside the blocks, from the trace ----

struct Span {
  std::int64_t begin, end;
  Pass pass;  // forward, backward, or recompute (a forward again inside backward)
};

std::vector<Span> block_spans(Trace& tr, int rank, std::size_t mark) {
  std::vector<Span> spans;
  const EventLog& log = tr.log(rank, kStreamMain);
  for (std::size_t i = mark; i < log.size(); ++i) {
    const Event& e = log[i];
    if (e.kind != EventKind::compute) continue;
    const Role role = tr.label_role(e.label);
    if (role.block >= 0 && (role.pass == Pass::forward || role.pass == Pass::backward || role.pass == Pass::recompute))
      spans.push_back({e.begin_ns, e.end_ns, role.pass});
  }
  return spans;
}

BlockCollectives block_collectives(Comm& comm, std::size_t main_mark, std::size_t comm_mark) {
  Trace& tr = *comm.trace();
  const int me = comm.global_rank(), T = comm.size();
  const std::vector<Span> spans = block_spans(tr, me, main_mark);
  const EventLog& log = tr.log(me, kStreamComm);
  BlockCollectives c;
  for (const Span& s : spans)
    if (s.pass == Pass::forward) c.fwd_span_seconds += double(s.end - s.begin) * 1e-9;
  for (std::size_t i = comm_mark; i < log.size(); ++i) {
    const Event& e = log[i];
    if (e.kind != EventKind::collective) continue;
    const auto in = std::find_if(spans.begin(), spans.end(),
                                 [&](const Span& s) { return e.begin_ns >= s.begin && e.begin_ns <= s.end; });
    if (in == spans.end()) {
      c.outside_blocks += 1;
      continue;
    }
    const CollectiveKind kind = tr.label_role(e.label).collective;
    const bool fwd = in->pass == Pass::forward;
    if (in->pass == Pass::recompute) {
      if (kind == CollectiveKind::all_reduce)
        c.all_reduce_again += 1;
      else if (kind == CollectiveKind::all_gather)
        c.all_gather_again += 1;
      else if (kind == CollectiveKind::reduce_scatter)
        c.reduce_scatter_again += 1;
    } else if (kind == CollectiveKind::all_reduce)
      (fwd ? c.all_reduce_fwd : c.all_reduce_bwd) += 1;
    else if (kind == CollectiveKind::all_gather)
      (fwd ? c.all_gather_fwd : c.all_gather_bwd) += 1;
    else if (kind == CollectiveKind::reduce_scatter)
      (fwd ? c.reduce_scatter_fwd : c.reduce_scatter_bwd) += 1;
    else
      c.others += 1;
    if (kind == CollectiveKind::all_reduce || kind == CollectiveKind::all_gather ||
        kind == CollectiveKind::reduce_scatter)
      c.ring_bytes += theory::ring_bus_bytes(kind, T, double(e.bytes));
    c.largest_payload = std::max(c.largest_payload, double(e.bytes));
    c.seconds += double(e.end_ns - e.begin_ns) * 1e-9;
    if (fwd) c.fwd_payload += double(e.bytes), c.fwd_comm_seconds += double(e.end_ns - e.begin_ns) * 1e-9;
  }
  return c;
}

// ---- the single-rank reference: the same code on a group of one ----

// The first step's gradients of the model with every weight one ulp away, against `first`
// (the loss, then the gradients by names()): the largest relative difference, the fp32 noise
// floor of a gradient on this model whatever the sum order (OneRank::grad_noise_floor).
double gradient_noise_floor(const TpSettings& s, Comm& alone, MemoryTracker& mem, Device device,
                            const TensorList& first) {
  std::unique_ptr<TpModelRun> nudged = make_tp_model(s, {alone, ex::TpMode::plain}, mem, device);
  nudged->nudge_params();
  nudged->train_step(0);
  double floor = 0;
  const std::vector<std::string> names = nudged->names();
  for (std::size_t i = 0; i < names.size(); ++i)
    floor = std::max(floor, max_relative_difference(nudged->full_grads(names[i]), first.at(i + 1)));
  return floor;
}

}  // namespace

// Rank 0 trains the model on a group of its own (labs/train/reference.h); every rank gets the
// first loss, the first step's gradients and the final weights, by names().
OneRank one_rank_reference(Comm& comm, const TpSettings& s, Device device) {
  const TensorList all = reference_on_rank0(comm, [&](Comm& alone) {
    MemoryTracker mem(alone.global_rank(), nullptr);
    std::unique_ptr<TpModelRun> model = make_tp_model(s, {alone, ex::TpMode::plain}, mem, device);
    TensorList first_loss_grads{{}}, final_params;
    for (int step = 0; step < s.steps; ++step) {
      const float loss = model->train_step(step);
      if (step == 0) {
        first_loss_grads[0] = {loss};
        for (const std::string& n : model->names()) first_loss_grads.push_back(model->full_grads(n));
      }
      model->adamw_step(s.adamw, step + 1);
    }
    for (const std::string& n : model->names()) final_params.push_back(model->full_params(n));
    first_loss_grads.insert(first_loss_grads.end(), final_params.begin(), final_params.end());
    model.reset();
    first_loss_grads[0].push_back(float(gradient_noise_floor(s, alone, mem, device, first_loss_grads)));
    return first_loss_grads;  // the loss and the noise floor, then the gradients, then the weights
  });
  OneRank ref;
  const std::size_t n = (all.size() - 1) / 2;
  ref.first_loss = all[0].at(0);
  ref.grad_noise_floor = all[0].at(1);
  ref.first_grads.assign(all.begin() + 1, all.begin() + 1 + std::ptrdiff_t(n));
  ref.final_params.assign(all.begin() + 1 + std::ptrdiff_t(n), all.end());
  return ref;
}

namespace {

// With recomputation, after the first step's backward: its gradients against a twin that
// keeps every activation, bit for bit (elements differing, summed over the group).
double recompute_bit_check(Comm& comm, const LabConfig& cfg, const TpSettings& s, const ex::TpGroup& g,
                           TpModelRun& model) {
  const ScopedSpan span(comm.trace(), comm.global_rank(), EventKind::compute,
                        comm.trace()->label("recomputation check"));
  MemoryTracker twin_mem(comm.global_rank(), nullptr);  // its bytes are not the run's
  TpSettings keep_all = s;
  keep_all.recompute = theory::Recompute::none;
  std::unique_ptr<TpModelRun> twin = make_tp_model(keep_all, g, twin_mem, rank_device(cfg.device, comm));
  twin->train_step(0);
  double differing = 0;
  for (const std::string& name : model.names()) {
    const std::vector<float> a = model.full_grads(name), b = twin->full_grads(name);
    for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
      const bool same_bits =
          i < a.size() && i < b.size() && std::bit_cast<std::uint32_t>(a[i]) == std::bit_cast<std::uint32_t>(b[i]);
      differing += same_bits ? 0 : 1;
    }
  }
  return differing;  // full_grads are whole tensors on every rank: the group's count already
}

// The first step against one rank's: the loss, and every gradient relative to its tensor's max.
void compare_first_step(TpModelRun& model, float loss, const OneRank& ref, double eps, TpMeasurement& m) {
  m.loss_diff = std::fabs(double(loss) - double(ref.first_loss));
  m.grad_noise_floor = ref.grad_noise_floor;
  const std::vector<std::string> names = model.names();
  m.max_grad_rel_diff = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::vector<float> g = model.full_grads(names[i]);
    m.max_grad_rel_diff = std::max(m.max_grad_rel_diff, max_relative_difference(g, ref.first_grads[i]));
    m.first_update_diff = std::max(m.first_update_diff, adam_first_update_difference(g, ref.first_grads[i], eps));
  }
}

// The weights after the last step against one rank's.
void compare_final_weights(TpModelRun& model, const OneRank& ref, TpMeasurement& m) {
  const std::vector<std::string> names = model.names();
  m.max_weight_diff = 0;
  for (std::size_t i = 0; i < names.size(); ++i)
    m.max_weight_diff =
        std::max(m.max_weight_diff, max_abs_difference(model.full_params(names[i]), ref.final_params[i]));
}

}  // namespace

// --resume's rules: the MLP's (shared with the grid lab), or the GPT's on the counting task
// (labs/train/gpt_sharded.h), which the context_parallel lab trains too.
ResumeRules tp_resume_rules(const TpSettings& s) {
  if (s.model == TpModelKind::mlp) return tp_mlp_resume_rules(s.batch, s.seq, s.steps);
  return counting_gpt_resume_rules(s.batch, s.steps);
}

// One mode (plain or sequence parallel) on the T ranks: train, time, count, compare.
TpMeasurement run_tp_mode(Comm& comm, const LabConfig& cfg, const TpSettings& s, ex::TpMode mode, const OneRank& ref) {
  const std::string name = mode == ex::TpMode::plain ? "tp" : "tp+sp";
  comm.barrier();
  ScopedSpan phase(comm.trace(), comm.global_rank(), EventKind::phase,
                   comm.trace()->label(name, Role{.part = RunPart::timed}));
  const std::size_t main_mark = comm.trace()->log(comm.global_rank(), kStreamMain).size();
  MemoryTracker mem(comm.global_rank(), comm.trace());
  const ex::TpGroup g{comm, mode};
  std::unique_ptr<TpModelRun> model = make_tp_model(s, g, mem, rank_device(cfg.device, comm));
  TpMeasurement m{.mode = mode,
                  .param_bytes = double(mem.peak(MemTag::param)),
                  .regions = model->regions_per_block(),
                  .regathers = model->regathers_input()};
  m.predicted_activation = model->activation_bytes(), m.activation_formula = model->activation_formula();
  publish_memory_formula(comm, double(model->local_params()), m.predicted_activation,
                         name + ": 16 B/param x this rank's slice + activations " + m.activation_formula);
  m.partial_replicated = model->partial_replicated_grads();
  if (s.modes.size() == 1) model->publish_activation_lines();  // (two modes would share one meta key)
  std::vector<double> steps, comm_s;
  // --resume: every rank reads its slices of the checkpoint's tensors, on any T.
  const int first = resume_run(comm, s.resume, tp_resume_rules(s), m.checkpoints,
                               [&](const Manifest& man) { return model->load_checkpoint(man); });
  for (int step = first; step < s.steps; ++step) {
    report_progress(comm, cfg, name + ": step " + std::to_string(step + 1) + " of " + std::to_string(s.steps));
    const std::size_t mm = comm.trace()->log(comm.global_rank(), kStreamMain).size();
    const std::size_t cm = comm.trace()->log(comm.global_rank(), kStreamComm).size();
    const auto t0 = Clock::now();
    float loss = 0;
    {  // the step as a span holding its blocks: the timeline opens on one (and names it)
      const ScopedSpan whole(comm.trace(), comm.global_rank(), EventKind::compute, comm.trace()->label("training step"),
                             step);
      loss = model->train_step(step);
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    m.comm = block_collectives(comm, mm, cm);
    if (step > first || s.steps == first + 1) steps.push_back(seconds), comm_s.push_back(m.comm.seconds);
    (step == first ? m.first_loss : m.last_loss) = loss;
    if (step == 0 && s.recompute != theory::Recompute::none)
      m.recompute_bits = recompute_bit_check(comm, cfg, s, g, *model);
    if (step == 0 && s.check) compare_first_step(*model, loss, ref, double(s.adamw.eps), m);
    model->adamw_step(s.adamw, step + 1);
    checkpoint_if_due(comm, checkpoint_plan(s), train_position("tensor_parallel", step + 1, tp_resume_rules(s).data),
                      m.checkpoints, [&] { return model->stage_checkpoint(); });
  }
  finish_checkpoints(comm, m.checkpoints);
  if (s.steps == first + 1) m.last_loss = m.first_loss;
  if (s.check) compare_final_weights(*model, ref, m);
  m.device_vs_tracker =
      device_vs_tracker_bytes(comm, mem, rank_device(cfg.device, comm), double(model->activation_cache_bytes()));
  if (GptActivationFigures f; model->activation_figures(comm, f))
    m.activation = f, m.activation->gradient_bits_differing = m.recompute_bits;
  m.activation_peak = peak_bytes_since(comm, main_mark, MemTag::activation);
  comm.all_reduce(&m.activation_peak, &m.activation_peak, 1, DType::f64, ReduceOp::max);
  m.step = repeated(steps);
  m.comm_time = repeated(comm_s);
  return m;
}

const OptionTable<TpSettings>& tp_option_table() {
  static const OptionTable<TpSettings> table = [] {
    OptionTable<TpSettings> t;
    t.choice("model", &TpSettings::model, TpModelKind::mlp, {{TpModelKind::mlp, "mlp"}, {TpModelKind::gpt, "gpt"}},
             "the model split over the ranks")
        .integer("tp", &TpSettings::tp, 0, 0, 4096, "tensor-parallel ranks T: every rank is one (0: as --ranks)")
        .choice("sequence-parallel", &TpSettings::sequence_parallel, TpSequenceChoice::off,
                {{TpSequenceChoice::off, "off"}, {TpSequenceChoice::on, "on"}, {TpSequenceChoice::both, "both"}},
                "split LayerNorm/residual regions along the sequence");
    add_block_rows(t, {.layers = 2,
                       .hidden = 64,
                       .heads = 4,
                       .seq = 32,
                       .batch = 4,
                       .vocab = 64,
                       .steps = 3,
                       .layers_help = "blocks (MLP) or transformer layers (GPT), L",
                       .batch_help = "batch b (sequences per step)"});
    t.choice("check", &TpSettings::check, true, kOnOffNames, "train one rank too and compare every gradient and weight")
        .choice("recompute", &TpSettings::recompute, theory::Recompute::none, kRecomputeNames, kRecomputeHelp);
    add_checkpoint_rows(t);
    return t;
  }();
  return table;
}

namespace ex {
std::span<const ExerciseHints> tensor_parallel_hints();  // exercises/tensor_parallel_hints.cpp
}  // namespace ex

LabInfo tensor_parallel_lab_info() {
  return {
      "tensor_parallel",
      "tensor parallelism: Megatron column/row splits, f and g, sequence parallelism; every collective vs formulas",
      {RunOption::device, RunOption::faults, RunOption::step},
      tp_option_table().specs(),
      {{"tp_slices", "TpSlices", 5},
       {"f_operator", "FOperator", 10},
       {"g_operator", "GOperator", 10},
       {"column_parallel_linear", "ColumnParallelLinear", 10},
       {"row_parallel_linear", "RowParallelLinear", 10},
       {"vocab_parallel_cross_entropy", "VocabParallelCrossEntropy", 15}},
      run_tp_lab,
      nullptr,
      StepUnit::collectives,
      /*overlaps_compute=*/false,
      {kSplitView, ViewKind::timeline, ViewKind::memory, kActivationView, ViewKind::report},
      {},
      tp_option_table().settings_text(),
      ex::tensor_parallel_hints(),
      [](const LabConfig& c) { tp_settings(c, c.ranks); },
      // small_run: the tests start from it (lab.h)
      {{"ranks", "2"}, {"layers", "1"}, {"hidden", "16"}, {"seq", "8"}, {"batch", "2"}},
  };
}

}  // namespace dtl
