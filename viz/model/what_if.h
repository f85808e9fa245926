// The what-if panel's model (issue 47), plain code so tests can check it without a window:
// from a run's trace (its settings in the metadata, its report) and a set of slider values
// (ranks, micro-batches, chunks v, ZeRO stage, sequence length, recomputation) to the rows the
// curriculum's formulas predict, each computed by the same pure functions the lab's report
// calls (core/theory, and the GPT's own activation count):
//   zero      model state per rank by tag Ψ·(p, g, K) sharded by stage (zero_bytes_per_param)
//             and bytes each rank sends per step (zero_comm_elements_per_rank)
//   pipeline  each schedule's bubble, the published formula where its source gives one for
//             the step (published_bubble, e.g. 1F1B (P−1)/(v·M+P−1)), else the simulator's
//             with the run's action times (simulate), and the simulator's step time
//   ddp       ring wire bytes per rank per step 2(P−1)/P · Ψ·bytes (all_reduce_cost, ring)
//   gpt       one block's activations kept for its backward, this GPT's count (gpt_activation_parts)
//             and Korthikanti et al.'s (korthikanti_layer_bytes), and the FLOPs a recomputation
//             reruns, at any sequence length and recomputation (none, selective, full)
// At the run's own settings every row equals the report's predicted value for the same id,
// and the report's measured value is given beside it (the measured point the panel marks).
// The panel keeps only its slider values; everything it draws comes from what_if_rows.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "viz/model/trace_data.h"

namespace dtl::viz {

// What a slider sets. Typed, never a label.
enum class WhatIfKnob : std::uint8_t { ranks, micro_batches, chunks, zero_stage, sequence_length, recompute };
const char* what_if_knob_name(WhatIfKnob k);  // "ranks", "micro-batches M", "chunks v", "ZeRO stage", ...
// A recompute slider's value in words: 0 none, 1 selective, 2 full (core/theory/recompute.h).
const char* what_if_recompute_name(int value);

// `dtlab-viz --what-if-set micro-batches=32,ranks=8`: the sliders to start at. Knobs by their
// option words (ranks, micro-batches, chunks, zero-stage, seq, recompute: 0 none, 1 selective,
// 2 full), values whole numbers; anything else is a UsageError that says what is accepted.
struct WhatIfSetting {
  WhatIfKnob knob;
  int value;
};
std::vector<WhatIfSetting> parse_what_if_set(const std::string& text);

struct WhatIfValues {
  int ranks = 1, micro_batches = 1, chunks = 1, zero_stage = 0;
  int sequence_length = 1, recompute = 0;  // recompute: theory::Recompute's order, none 0 .. full 2
  int& at(WhatIfKnob k);
  int at(WhatIfKnob k) const;
  bool operator==(const WhatIfValues&) const = default;
};

struct WhatIfSlider {
  WhatIfKnob knob = WhatIfKnob::ranks;
  int lo = 1, hi = 1;  // the range the slider offers (the run's value is inside it)
};

// Which lab's formulas apply. none: the trace's lab has no what-if (or its settings are missing).
enum class WhatIfLab : std::uint8_t { none, zero, pipeline, ddp, gpt };

struct WhatIfModel {
  WhatIfLab lab = WhatIfLab::none;
  std::vector<WhatIfSlider> sliders;  // those that apply to this lab
  WhatIfValues run;                   // the run's own settings: where the sliders start
  std::string why_none;               // lab none: why, in words
  // What the formulas need from the run, read once from its metadata and report.
  double psi = 0;                                       // parameters of the model
  double param_bytes = 0, grad_bytes = 0;               // per parameter (ZeRO's p, g; DDP's element size)
  double optimizer_bytes = 0;                           // ZeRO's K
  std::vector<int> zero_stages;                         // the stages the run ran (their rows have a measured value)
  std::vector<ScheduleKind> schedules;                  // pipeline: the schedules run (built-in ones)
  std::vector<double> forward_s, backward_s, weight_s;  // per schedule: one stage's whole-model action times
  std::vector<std::string> ddp_cases;                   // ddp: the report's cases with a ring_wire_bytes row
  int vocab = 0, hidden = 0, heads = 0, layers = 0, batch = 0;  // gpt: the model (GptConfig) but its s
};

// The model of the trace's run; lab none (with why_none) where no formula applies.
WhatIfModel what_if_model(const TraceData& d);

struct WhatIfRow {
  std::string id;                   // the report's row id these figures predict ("zero2.grad_bytes")
  std::string label, unit, source;  // unit as a report row's: "B", "s", "" (a share)
  double predicted = 0;             // at the slider values
  double at_run = 0;                // the same formula at the run's own settings
  std::optional<double> measured;   // the report's measured value for this id (the run's point), if any
  std::string note;                 // a setting the formula refuses (a schedule that cannot be built): why
};

// The rows at `v`, one per figure, in a fixed order (the panel draws them as given). O(the
// pipeline simulator's actions: stages x micro-batches x chunks x 3) per schedule.
std::vector<WhatIfRow> what_if_rows(const TraceData& d, const WhatIfModel& m, const WhatIfValues& v);

}  // namespace dtl::viz
