// The pipeline lab's report rows (see pipeline_lab.cpp) and its registry entry.
#include <cmath>

#include "labs/measure.h"
#include "labs/pipeline/pipeline_lab.h"
#include "labs/report_format.h"

namespace dtl {

namespace {

void add_bubble_rows(Report& rep, const std::string& n, const PipelineSettings& s, const PipelineMeasurement& m,
                     int P) {
  const pipeline::PublishedBubble& pub = m.published;  // the source's formula, with this run's F, B, W
  const bool step_formula = pub.applies && !pub.tiled, tiled_formula = pub.applies && pub.tiled;
  const Provenance sim = Provenance::simulated;
  // Idle share of the step, e.g. (P−1)/(v·M+P−1) for 1F1B: the form the curriculum texts use.
  rep.add(n + "bubble", "bubble: idle share of the step", 0, "").over(m.bubble);
  ReportRow& idle = rep.rows.back();
  if (step_formula)
    idle.predict(pub.idle_share, pub.formula);
  else
    idle.predict(m.simulated_bubble, "simulator", sim);
  const double formula = *idle.predicted;  // (before the next add: it may move the rows)
  // Relative to the useful compute, (P−1)/(v·M): Megatron-LM's and the Ultra-Scale Playbook's form.
  const double b = m.bubble.median;
  rep.add(n + "bubble_vs_compute", "bubble relative to compute (idle / busy)", b < 1 ? b / (1 - b) : 0, "")
      .predict(formula / (1 - formula), step_formula ? pub.formula : "simulator",
               step_formula ? Provenance::formula : sim);
  // Each stage starting its next step as soon as it is done (Qi et al.'s post-validation):
  // where zb-h2 and zb-v reach their ~0 (Simulation::bubble_tiled).
  rep.add(n + "bubble_tiled", "bubble with steps back to back (idle / longest stage span)", 0, "")
      .over(m.bubble_tiled)
      .predict(tiled_formula ? pub.idle_share : m.simulated_tiled, tiled_formula ? pub.formula : "simulator",
               tiled_formula ? Provenance::formula : sim);
  rep.add(n + "bubble_simulated", "bubble the simulator gives for this run's action times", m.simulated_bubble, "");
  // Without --compute-us an action's compute here is about as short as a hand-off between
  // threads: the stages then wait on hand-offs, not on the schedule's fill and drain.
  if (s.forward_us <= 0 && b - formula > 0.1)
    rep.notes.push_back(
        std::string(pipeline::schedule_name(m.kind)) + "'s measured bubble " + format_number(b) +
        " is not the formula's " + format_number(formula) +
        " (the simulator, with this run's action times: " + format_number(m.simulated_bubble) +
        "): each action's compute here is about as short as handing a micro-batch to the next stage's thread, "
        "so stages wait on hand-offs, not on the schedule. --compute-us 2000 makes each F last 2 ms and each B "
        "4 ms, as a GPU's compute dwarfs a hand-off, and the measured bubble is the schedule's.");
  for (int st = 0; st < P; ++st)
    rep.add(n + "bubble_stage" + std::to_string(st), "stage " + std::to_string(st) + ": idle share",
            m.stage_bubble[std::size_t(st)], "");
}

// Where each published in-flight bound comes from (core/theory/schedule_formulas.cpp).
const char* published_in_flight_source(pipeline::ScheduleKind k) {
  switch (k) {
    case pipeline::ScheduleKind::zb_h1: return "P (Qi et al.)";
    case pipeline::ScheduleKind::zb_h2: return "2P-1 (Qi et al.)";
    case pipeline::ScheduleKind::zb_v: return "2P chunks (Qi et al.)";
    case pipeline::ScheduleKind::dualpipe_v: return "PP+1 = 2P+1 chunks (DualPipe)";
    case pipeline::ScheduleKind::interleaved_zb: return "interleaved's + s";
    case pipeline::ScheduleKind::gpipe: return "M (GPipe)";
    default: return "Narayanan et al.";
  }
}

void add_memory_rows(Report& rep, const std::string& n, const PipelineSettings& s, const PipelineMeasurement& m,
                     int P) {
  for (int st = 0; st < P; ++st) {
    const std::string k = std::to_string(st);
    rep.check(n + "in_flight_stage" + k, "stage " + k + ": micro-batches in flight (most)",
              m.stage_in_flight_peak[std::size_t(st)], m.predicted_in_flight[std::size_t(st)], "")
        .from(m.kind == pipeline::ScheduleKind::gpipe         ? "M"
              : m.kind == pipeline::ScheduleKind::one_f_one_b ? "min(M, P-s)"
              : m.kind == pipeline::ScheduleKind::csv         ? "the file's list"
                                                              : "the schedule kind's (core/theory)");
    if (m.published_in_flight[std::size_t(st)] >= 0)
      rep.check(n + "in_flight_published_stage" + k, "stage " + k + ": micro-batch chunks in flight vs the paper's",
                m.stage_in_flight_peak[std::size_t(st)], m.published_in_flight[std::size_t(st)], "")
          .from(published_in_flight_source(m.kind));
    rep.check(n + "activation_stage" + k, "stage " + k + ": activation memory (peak)",
              m.stage_activation_peak[std::size_t(st)], m.predicted_activation[std::size_t(st)], "B")
        .from("in flight × per micro-batch");
    rep.add(n + "warmup_stage" + k, "stage " + k + ": forwards before its first backward",
            m.forwards_before_backward[std::size_t(st)], "");
  }
  add_device_memory_check(rep, n, m.device_vs_tracker);
  (void)s;
}

// Where the model sits and which actions overlap: the run's against core/theory's schedule.
void add_layout_rows(Report& rep, const std::string& n, const PipelineMeasurement& m, int P) {
  if (m.loss_stage >= 0)  // (not run: resumed past the step it is read at)
    rep.check(n + "loss_stage", "stage computing the loss (holds the last layer)", m.loss_stage, m.predicted_loss_stage,
              "")
        .from(m.chunks == 2 && (m.kind == pipeline::ScheduleKind::zb_v || m.kind == pipeline::ScheduleKind::dualpipe_v)
                  ? "the V: stage 0"
                  : "the placement");
  for (int st = 0; st < P && st < int(m.stage_pairs.size()); ++st) {
    if (m.stage_pairs[std::size_t(st)] == 0 && m.predicted_pairs[std::size_t(st)] == 0) continue;
    const std::string k = std::to_string(st);
    rep.check(n + "pairs_stage" + k, "stage " + k + ": overlapped F&B pairs run", m.stage_pairs[std::size_t(st)],
              m.predicted_pairs[std::size_t(st)], "")
        .from(m.kind == pipeline::ScheduleKind::dualpipe_v ? "2(M-2P+s+1)+(P-s-1), -1 on the last stage"
                                                           : "the file's list");
  }
}

}  // namespace

void add_pipeline_rows(Report& rep, const PipelineSettings& s, const PipelineMeasurement& m, int P) {
  const std::string n = std::string(pipeline::schedule_name(m.kind)) + ".";
  if (m.checkpoints.resumed_from < 0) rep.add(n + "loss_first", "loss, first step", m.first_loss, "");  // else: not run
  rep.add(n + "loss_last", "loss, last step", m.last_loss, "");
  add_checkpoint_report(rep, n, m.checkpoints);
  if (m.max_vs_reference >= 0)
    rep.check(n + "weight_diff_vs_one_rank", "max weight diff vs 1 rank", m.max_vs_reference, 0.0, "", 1e-5)
        .from("fp32 sum order");
  rep.add(n + "step_time", "step time (first action to last, all stages)", 0, "s").over(m.step);
  add_bubble_rows(rep, n, s, m, P);
  // Every boundary between virtual stages carries each micro-batch's activation forward
  // and its gradient back: (P·v − 1) · M · rows · width · 4 B · 2.
  const double boundary = double(s.rows()) * s.shape.width * 4.0;
  rep.check(n + "p2p_bytes_per_step", "bytes sent between stages per step (all)", m.p2p_bytes_per_step,
            2.0 * (P * m.chunks - 1) * s.micro_batches * boundary, "B")
      .from("2·M·activation per boundary");
  add_memory_rows(rep, n, s, m, P);
  add_layout_rows(rep, n, m, P);
}

void describe_pipeline_setup(Report& rep, const PipelineSettings& s, const std::vector<pipeline::ScheduleKind>& kinds) {
  const int P = rep.ranks;
  char mlp[160];
  std::snprintf(mlp, sizeof mlp, "MLP %d wide × %d layers over %d stages", s.shape.width, s.shape.layers, P);
  rep.setup.push_back(mlp);
  rep.setup.push_back("batch " + std::to_string(s.batch) + " in " + std::to_string(s.micro_batches) +
                      " micro-batches of " + std::to_string(s.rows()));
  std::string names;
  for (pipeline::ScheduleKind k : kinds) names += (names.empty() ? "" : ", ") + std::string(pipeline::schedule_name(k));
  rep.setup.push_back("schedule " + names);
  if (s.emulated())
    rep.setup.push_back("actions last F " + format_number(s.forward_us) + " µs, B " + format_number(s.backward_us) +
                        " µs (split: B " + format_number(s.backward_us - s.weight_us) + " + W " +
                        format_number(s.weight_us) + ")");
  rep.notes.push_back(
      "Bubble: 1 − Σ busy / (P · step), the step from the first action's start to the last action's end; "
      "the curriculum's (P−1)/(M+P−1) is this idle share, Megatron-LM's (P−1)/M the same idle time "
      "relative to the compute (b / (1 − b)). Interleaving divides the bubble by v; the zero-bubble and "
      "DualPipe formulas take this run's F, B (full backward) and W. zb-h2 and zb-v reach ~0 only with "
      "steps back to back (bubble_tiled: each stage's own span, Qi et al.'s post-validation).");
  rep.notes.push_back("Times: the median of " + count_of(s.repeat, "run") + " of " + count_of(s.steps, "step") +
                      " after 1 warm-up step." +
                      (s.emulated() ? " Each action is stretched to its --compute-us time "
                                      "(the real compute runs inside it)."
                                    : ""));
}

}  // namespace dtl
