// The experts lab: a mixture-of-experts model (moe_model.h) trained with expert parallelism
// over the run's EP ranks, beside the same model on one rank (Lepikhin et al. 2020, GShard;
// Fedus et al. 2021, Switch Transformer).
//
//   dtlab run experts --ranks EP [--experts E --top-k k --capacity-factor C --overflow drop|pad]
//                     [--router-skew S] [--layers L --hidden h --ffn f --tokens T] [--link pcie4]
//
// Every rank holds E/EP experts and T/EP tokens. Per block and step: an all-to-all of the
// per-expert counts, then all_to_allv of the routed rows to the experts and back, forward and
// backward (4 all_to_allv). Checks: the loss, every gradient and the final weights equal one
// rank's (which routes the same T/EP-token groups, so capacity drops the same tokens), the
// routing itself, and each all_to_allv's bytes in the trace against the routed rows.
#include "labs/experts/experts_lab.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.h"
#include "core/trace/run_clock.h"
#include "core/trace/trace.h"
#include "core/util/units.h"
#include "labs/experts/experts_internal.h"
#include "labs/measure.h"
#include "labs/shared_options.h"
#include "labs/train/gpt.h"
#include "labs/train/reference.h"

namespace dtl {

const OptionTable<ExpertsSettings>& experts_option_table() {
  static const OptionTable<ExpertsSettings> table = [] {
    auto shape = [](auto member) {
      return [member](ExpertsSettings & s) -> auto& { return s.shape.*member; };
    };
    auto gpt = [](auto member) {
      return [member](ExpertsSettings & s) -> auto& { return s.gpt.*member; };
    };
    OptionTable<ExpertsSettings> t;
    t.choice("model", &ExpertsSettings::model, ExpertsModelKind::mlp,
             {{ExpertsModelKind::mlp, "mlp"}, {ExpertsModelKind::gpt, "gpt"}},
             "MoE blocks on a regression target, or the tiny GPT with every MLP a mixture of experts")
        .integer("experts", shape(&moe::MoeShape::experts), 8, 1, 256, "experts E per MoE block (divisible by --ranks)")
        .integer("top-k", shape(&moe::MoeShape::top_k), 2, 1, 16, "experts k each token is routed to")
        .number("capacity-factor", shape(&moe::MoeShape::capacity_factor), 1.25, 0.01, 64,
                "slots per expert and rank: ceil(C·k·T/(EP·E)); the rest is dropped")
        .choice("overflow", &ExpertsSettings::overflow, ExpertOverflow::drop,
                {{ExpertOverflow::drop, "drop"}, {ExpertOverflow::pad, "pad"}},
                "tokens over capacity: dropped, or none dropped (no capacity: each expert takes its whole load)")
        .number("router-skew", shape(&moe::MoeShape::router_skew), 0.0, 0, 100,
                "adds S·(E-1-e)/(E-1) to expert e's router logit: hot experts on the first ranks")
        .number("aux-weight", shape(&moe::MoeShape::aux_weight), 0.01, 0, 10, "alpha of the load-balancing loss")
        .integer("layers", shape(&moe::MoeShape::layers), 2, 1, 16, "MoE blocks L")
        .integer("hidden", shape(&moe::MoeShape::hidden), 32, 1, 1024, "hidden size h")
        .integer("ffn", shape(&moe::MoeShape::ffn), 64, 1, 4096, "each expert's inner size f")
        .integer("tokens", shape(&moe::MoeShape::tokens), 256, 1, 1 << 14,
                 "tokens T per step, all ranks together (mlp)")
        .integer("seq", gpt(&ExpertsGptShape::seq), 16, 1, 1024, "sequence length S (gpt; T = S·B)")
        .integer("batch", gpt(&ExpertsGptShape::batch), 8, 1, 4096, "sequences B per step, all ranks together (gpt)")
        .integer("vocab", gpt(&ExpertsGptShape::vocab), 64, 2, 1 << 16, "vocabulary V (gpt)")
        .integer("heads", gpt(&ExpertsGptShape::heads), 4, 1, 256, "attention heads (gpt)")
        .integer("steps", &ExpertsSettings::steps, 3, 1, 1000, "training steps (AdamW)")
        .choice("check", &ExpertsSettings::check, true, kOnOffNames,
                "train one rank too and compare the loss, every gradient and weight");
    add_checkpoint_rows(t);
    return t;
  }();
  return table;
}

namespace {

// The options of the other --model are errors (they would have no effect); the GPT's shape
// must split into whole sequences per rank and whole heads.
void check_model_options(const LabConfig& cfg, ExpertsSettings& s, int ep) {
  const OptionTable<ExpertsSettings>& t = experts_option_table();
  const bool gpt = s.model == ExpertsModelKind::gpt;
  for (const char* name : {"seq", "batch", "vocab", "heads"})
    if (!gpt && cfg.options.given(name))
      throw UsageError(std::string("--") + name + " is the GPT's: give --model gpt, or leave it out");
  if (gpt && t.given(cfg.options, [](ExpertsSettings& x) -> int& { return x.shape.tokens; }))
    throw UsageError("--tokens has no effect with --model gpt (its tokens are --seq × --batch); leave it out");
  if (!gpt) return;
  s.shape.tokens = s.gpt.seq * s.gpt.batch;
  if (s.gpt.batch % ep != 0)
    throw UsageError("--batch " + std::to_string(s.gpt.batch) + " must be divisible by --ranks " + std::to_string(ep) +
                     ": each rank runs B/EP whole sequences");
  const std::string problem = gpt_config_problem(
      {s.gpt.vocab, s.gpt.seq, s.shape.hidden, s.gpt.heads, s.shape.layers, s.gpt.batch / ep}, 1, ex::TpMode::plain);
  if (!problem.empty()) throw UsageError(problem);
}

}  // namespace

ExpertsSettings experts_settings(const LabConfig& cfg, int ep) {
  ExpertsSettings s = experts_option_table().parse(cfg.options);
  s.shape.drop = s.overflow == ExpertOverflow::drop;
  check_model_options(cfg, s, ep);
  require_checkpoint_options(experts_option_table(), cfg.options, s, true, "");
  const moe::MoeShape& m = s.shape;
  if (m.experts % ep != 0)
    throw UsageError("--experts " + std::to_string(m.experts) + " must be divisible by the " + std::to_string(ep) +
                     " expert-parallel ranks (--ranks): each rank holds E/EP experts");
  if (m.tokens % ep != 0)
    throw UsageError("--tokens " + std::to_string(m.tokens) + " must be divisible by --ranks " + std::to_string(ep) +
                     ": each rank routes T/EP tokens");
  if (m.top_k > m.experts)
    throw UsageError("--top-k " + std::to_string(m.top_k) + " is more than the " + std::to_string(m.experts) +
                     " experts; use --top-k 1.." + std::to_string(m.experts));
  if (s.overflow == ExpertOverflow::pad &&
      experts_option_table().given(cfg.options, [](ExpertsSettings& x) -> double& { return x.shape.capacity_factor; }))
    throw UsageError("--capacity-factor has no effect with --overflow pad (no token is dropped); drop one of them");
  if (m.experts == 1 && m.router_skew != 0)
    throw UsageError("--router-skew has no effect with one expert (every token goes to it); give --experts 2 or more");
  require_memory(experts_process_bytes(s, ep),
                 s.model == ExpertsModelKind::gpt
                     ? "--batch, --seq, --vocab, --hidden, --ffn, --experts or --layers (or --check off)"
                     : "--tokens, --hidden, --ffn, --experts or --layers (or --check off)");
  return s;
}

// What the ranks of one process hold at most, all of them together (thread ranks; under
// MPI each process holds about 1/EP of it): AdamW's w, g, m, v of every parameter (the
// experts are spread over the ranks, so the whole model once), and per block the cached
// rows of T tokens with every choice kept (no drop) — x, logits and probabilities, then per
// routed row its input, GELU's input and output, the returned row and backward's buffers in
// flight — twice with the one-rank reference. With --model gpt also the GPT around them:
// a replica of its state per rank (and the reference's), its activations for all B sequences.
double experts_process_bytes(const ExpertsSettings& s, int ep) {
  const moe::MoeShape& m = s.shape;
  const double h = m.hidden, f = m.ffn, E = m.experts, T = m.tokens, k = m.top_k, copies = s.check ? 2.0 : 1.0;
  const double params = m.layers * (E * h + E * (2 * h * f + f + h));
  // per routed row: cached in, pre, act and back (2h + 2f), backward's buffers in flight (6h + 2f)
  const double activations = m.layers * (T * (2 * h + 2 * E) + T * k * (8 * h + 4 * f));
  double gpt = 0;
  if (s.model == ExpertsModelKind::gpt) {
    const GptConfig c{s.gpt.vocab, s.gpt.seq, m.hidden, s.gpt.heads, m.layers, s.gpt.batch};
    gpt = 16.0 * gpt_approx_params(c) * (ep + copies - 1) + copies * gpt_activation_bytes(c, 1, ex::TpMode::plain);
  }
  return copies * (16.0 * params + 4.0 * activations) + gpt;
}

namespace {

// What one rank's reference (the model on a group of one, EP routing groups) found.
struct OneRank {
  float first_loss = 0;
  std::vector<float> choices;            // [block][T·k]: each slot's expert, −1 where dropped (first step)
  TensorList first_grads, final_params;  // canonical order (experts_tensor_count)
};

TensorList train_reference(Comm& alone, const ExpertsSettings& s, int ep) {
  const std::unique_ptr<ExpertsModel> model = make_experts_model(s, alone, ep);
  const std::size_t n = std::size_t(experts_tensor_count(s));
  TensorList out(2 + 2 * n);  // the loss, the choices, the gradients, the weights (canonical order)
  for (int step = 0; step < s.steps; ++step) {
    const float loss = model->train_step(step);
    if (step == 0) {
      out[0] = {loss};
      for (const moe::BlockRouting& b : model->moe().routing())
        for (int c : b.choice) out[1].push_back(float(c));
      for (IndexedTensor& t : model->tensors(true)) out.at(2 + std::size_t(t.index)) = std::move(t.values);
    }
    model->adamw_step(s.adamw, step + 1);
  }
  for (IndexedTensor& t : model->tensors(false)) out.at(2 + n + std::size_t(t.index)) = std::move(t.values);
  return out;
}

OneRank one_rank_reference(Comm& comm, const ExpertsSettings& s) {
  const int ep = comm.size();
  const TensorList all = reference_on_rank0(comm, [&](Comm& alone) { return train_reference(alone, s, ep); });
  const std::size_t n = std::size_t(experts_tensor_count(s));
  OneRank ref;
  ref.first_loss = all.at(0).at(0);
  ref.choices = all.at(1);
  ref.first_grads.assign(all.begin() + 2, all.begin() + 2 + std::ptrdiff_t(n));
  ref.final_params.assign(all.begin() + 2 + std::ptrdiff_t(n), all.end());
  return ref;
}

// Slots whose choice (expert, or dropped) differs from the reference's, this rank's tokens.
double routing_differences(Comm& comm, const ExpertsSettings& s, const moe::MoeModel& model, const OneRank& ref) {
  const std::size_t per_rank = std::size_t(s.shape.tokens / comm.size()) * std::size_t(s.shape.top_k);
  const std::size_t per_block = std::size_t(s.shape.tokens) * std::size_t(s.shape.top_k);
  double diff = 0;
  for (std::size_t l = 0; l < model.routing().size(); ++l) {
    const std::vector<int>& mine = model.routing()[l].choice;
    for (std::size_t i = 0; i < per_rank; ++i) {
      const std::size_t at = l * per_block + std::size_t(comm.rank()) * per_rank + i;
      diff += i >= mine.size() || at >= ref.choices.size() || float(mine[i]) != ref.choices[at];
    }
  }
  return diff;
}

}  // namespace

// The first step against one rank: loss, routing, drops and every gradient.
void compare_first_step(Comm& comm, const ExpertsSettings& s, ExpertsModel& model, const OneRank& ref,
                        ExpertsMeasurement& m) {
  m.loss_diff = std::fabs(double(m.first_loss) - double(ref.first_loss));
  m.max_grad_rel_diff = 0;
  for (const IndexedTensor& t : model.tensors(true)) {
    const auto& reference = ref.first_grads.at(std::size_t(t.index));
    m.max_grad_rel_diff = std::max(m.max_grad_rel_diff, max_relative_difference(t.values, reference));
    m.first_update_diff =
        std::max(m.first_update_diff, adam_first_update_difference(t.values, reference, double(s.adamw.eps)));
  }
  comm.all_reduce(&m.first_update_diff, &m.first_update_diff, 1, DType::f64, ReduceOp::max);
  m.routing_differences = routing_differences(comm, s, model.moe(), ref);
  m.reference_dropped = double(std::count(ref.choices.begin(), ref.choices.end(), -1.0f));
  double v[2] = {m.max_grad_rel_diff, m.routing_differences};
  comm.all_reduce(&v[0], &v[0], 1, DType::f64, ReduceOp::max);
  comm.all_reduce(&v[1], &v[1], 1, DType::f64, ReduceOp::sum);
  m.max_grad_rel_diff = v[0], m.routing_differences = v[1];
}

void compare_final_weights(Comm& comm, ExpertsModel& model, const OneRank& ref, ExpertsMeasurement& m) {
  m.max_weight_diff = 0;
  for (const IndexedTensor& t : model.tensors(false))
    m.max_weight_diff =
        std::max(m.max_weight_diff, max_abs_difference(t.values, ref.final_params.at(std::size_t(t.index))));
  comm.all_reduce(&m.max_weight_diff, &m.max_weight_diff, 1, DType::f64, ReduceOp::max);
}

ExpertsMeasurement run_experts(Comm& comm, const LabConfig& cfg, const ExpertsSettings& s) {
  OneRank ref;
  if (s.check) ref = one_rank_reference(comm, s);
  comm.barrier();
  ScopedSpan phase(comm.trace(), comm.global_rank(), EventKind::phase,
                   comm.trace() ? comm.trace()->label("expert parallel", Role{.part = RunPart::timed}) : 0);
  const std::unique_ptr<ExpertsModel> owner = make_experts_model(s, comm, 1);
  ExpertsModel& model = *owner;
  const moe::MoeModel& moe = model.moe();
  ExpertsMeasurement m;
  StepSamples samples;
  RoutingLog log;
  // --resume: every rank reads the routers and the experts it holds, on any EP dividing E.
  const int first = resume_run(comm, s.resume, experts_resume_rules(s), m.checkpoints,
                               [&](const Manifest& man) { return load_experts_checkpoint(comm, s, model, man); });
  for (int step = first; step < s.steps; ++step) {
    report_progress(comm, cfg, "experts: step " + std::to_string(step + 1) + " of " + std::to_string(s.steps));
    const TraceMark mark = trace_mark(comm);
    const auto t0 = RunClock::now();
    float loss = 0;
    {
      const ScopedSpan whole(comm.trace(), comm.global_rank(), EventKind::compute,
                             comm.trace() ? comm.trace()->label("training step") : 0, step);
      loss = model.train_step(step);
    }
    samples.add(comm, moe, std::chrono::duration<double>(RunClock::now() - t0).count(), step, s.steps);
    (step == first ? m.first_loss : m.last_loss) = loss;
    if (log.wants(s, step))
      publish_routing(comm, s, moe, step, log);
    else if (step == first)
      publish_routing_omitted(comm, s);
    if (step == first) {  // the run's first step (a resumed run's too)
      measure_routing(comm, s, moe, m);
      measure_all_to_all_bytes(comm, s, moe, mark, m);
      if (step == 0 && s.check) compare_first_step(comm, s, model, ref, m);
    }
    model.adamw_step(s.adamw, step + 1);
    checkpoint_if_due(comm, checkpoint_plan(s), train_position("experts", step + 1, experts_resume_rules(s).data),
                      m.checkpoints, [&] { return stage_experts_checkpoint(comm, s, model); });
  }
  finish_checkpoints(comm, m.checkpoints);
  if (s.steps == first + 1) m.last_loss = m.first_loss;
  m.aux_loss = moe.last_aux_loss();
  if (s.check) compare_final_weights(comm, model, ref, m);
  samples.finish(comm, cfg, s, m);
  return m;
}

Report run_experts_lab(Comm& comm, const LabConfig& cfg) {
  const ExpertsSettings s = experts_settings(cfg, comm.size());
  const ScopedWaitWords words(moe::moe_wait_words());  // the watchdog names the block's exchange
  Report rep = start_report(comm, cfg, "experts");
  describe_experts_setup(rep, s);
  const ExpertsMeasurement m = run_experts(comm, cfg, s);
  add_experts_rows(rep, s, m, comm.size());
  return rep;
}

namespace ex {
std::span<const ExerciseHints> experts_hints();  // exercises/experts_hints.cpp
}  // namespace ex

LabInfo experts_lab_info() {
  return {
      "experts",
      "mixture of experts with expert parallelism: top-k routing, capacity, all-to-all dispatch and combine",
      {RunOption::faults, RunOption::step},
      experts_option_table().specs(),
      {{"top_k_router", "TopKRouter", 10}, {"dispatch_layout", "DispatchLayout", 10}, {"combine", "Combine", 10}},
      run_experts_lab,
      nullptr,
      StepUnit::collectives,
      /*overlaps_compute=*/false,
      {kRoutingView, ViewKind::timeline, ViewKind::report},
      // A live, stepped run: one block of 32 tokens, so a step of dispatch, experts and
      // combine is a handful of collectives to step through.
      {{"layers", "1"}, {"tokens", "32"}, {"steps", "2"}},
      experts_option_table().settings_text(),
      ex::experts_hints(),
      [](const LabConfig& c) { experts_settings(c, c.ranks); },
      // small_run: the tests start from it (lab.h)
      {{"ranks", "2"}, {"layers", "1"}, {"hidden", "16"}, {"ffn", "32"}, {"steps", "2"}},
  };
}

}  // namespace dtl
