// The what-if panel's model (what_if.h): the run's settings from its trace, then the lab's
// formulas at any slider values, through the same core/theory functions its report calls.
#include "viz/model/what_if.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/theory/collectives.h"
#include "core/theory/schedule.h"
#include "core/theory/zero.h"
#include "labs/ddp/ddp_lab.h"
#include "labs/gpt/gpt_lab.h"
#include "labs/train/gpt_activation_report.h"
#include "labs/zero/zero_lab.h"

namespace dtl::viz {

namespace {

// Slider ranges: wide enough to see a formula's shape, small enough that the simulator
// answers within a frame (64 stages x 128 micro-batches x 4 chunks x 3 actions).
constexpr int kMaxRanks = 64, kMaxMicroBatches = 128, kMaxChunks = 4, kMaxSequence = 4096;

// The report's rows by id (an empty map when the trace has none or it is malformed).
std::map<std::string, nlohmann::json> report_rows(const TraceData& d) {
  std::map<std::string, nlohmann::json> rows;
  const std::string* text = d.meta_of(MetaKey::report);
  if (!text) return rows;
  const nlohmann::json r = nlohmann::json::parse(*text, nullptr, false);
  if (!r.is_object() || !r.contains("rows") || !r["rows"].is_array()) return rows;
  for (const nlohmann::json& row : r["rows"])
    if (row.is_object() && row.contains("id") && row["id"].is_string()) rows[row["id"].get<std::string>()] = row;
  return rows;
}

std::optional<double> number_of(const std::map<std::string, nlohmann::json>& rows, const std::string& id,
                                const char* field) {
  const auto it = rows.find(id);
  if (it == rows.end() || !it->second.contains(field) || !it->second[field].is_number()) return std::nullopt;
  return it->second[field].get<double>();
}

bool zero_model(const TraceData& d, WhatIfModel& m) {
  const std::optional<ZeroSettings> s = zero_option_table().from_meta(d.meta);
  if (!s) return false;
  const theory::ZeroPrecision p = s->bytes_per_param();
  m.psi = double(parameter_count(s->shape));
  m.param_bytes = p.param, m.grad_bytes = p.grad, m.optimizer_bytes = p.optimizer;
  for (int stage = 0; stage <= 3; ++stage)
    if (s->stage == ZeroStageChoice::all || static_cast<int>(s->stage) == stage) m.zero_stages.push_back(stage);
  m.run.zero_stage = m.zero_stages.front();
  m.sliders = {{WhatIfKnob::ranks, 1, kMaxRanks}, {WhatIfKnob::zero_stage, 0, 3}};
  return true;
}

bool looped(pipeline::ScheduleKind k) {
  return k == pipeline::ScheduleKind::interleaved || k == pipeline::ScheduleKind::interleaved_zb;
}

// The schedules the run simulated (meta "pipeline_simulated.<name>"), with their action times.
bool pipeline_model(const TraceData& d, WhatIfModel& m) {
  m.run.chunks = 2;  // the lab's --chunks default; only the looped schedules read it (config_for)
  for (pipeline::ScheduleKind k : pipeline::builtin_schedules()) {
    const auto it = d.meta.find(meta_key_name(MetaKey::pipeline_simulated, pipeline::schedule_name(k)));
    if (it == d.meta.end()) continue;
    const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
    const bool ok = j.is_object() && j.contains("action_times") && j["action_times"].is_array() &&
                    j["action_times"].size() == 3 &&
                    std::all_of(j["action_times"].begin(), j["action_times"].end(),
                                [](const nlohmann::json& t) { return t.is_number(); }) &&
                    j.contains("micro_batches") && j["micro_batches"].is_number() && j.contains("chunks") &&
                    j["chunks"].is_number();
    if (!ok) continue;  // a trace from before the times were recorded, or a malformed one
    m.schedules.push_back(k);
    m.forward_s.push_back(j["action_times"][0].get<double>());
    m.backward_s.push_back(j["action_times"][1].get<double>());
    m.weight_s.push_back(j["action_times"][2].get<double>());
    m.run.micro_batches = j["micro_batches"].get<int>();
    if (looped(k)) m.run.chunks = j["chunks"].get<int>();
  }
  if (m.schedules.empty()) return false;
  m.sliders = {{WhatIfKnob::ranks, 2, kMaxRanks}, {WhatIfKnob::micro_batches, 1, kMaxMicroBatches}};
  if (std::any_of(m.schedules.begin(), m.schedules.end(), looped))
    m.sliders.push_back({WhatIfKnob::chunks, 2, kMaxChunks});
  return true;
}

bool ddp_model(const TraceData& d, WhatIfModel& m) {
  const std::optional<DdpSettings> s = ddp_option_table().from_meta(d.meta);
  if (!s) return false;
  m.psi = double(parameter_count(s->shape));
  m.grad_bytes = double(dtype_size(s->precision));
  for (const auto& [id, row] : report_rows(d))
    if (id.ends_with(".ring_wire_bytes")) m.ddp_cases.push_back(id.substr(0, id.size() - 16));
  if (m.ddp_cases.empty()) return false;
  m.sliders = {{WhatIfKnob::ranks, 1, kMaxRanks}};
  return true;
}

WhatIfRow row(std::string id, std::string label, std::string unit, std::string source, double predicted,
              double at_run) {
  WhatIfRow r;
  r.id = std::move(id), r.label = std::move(label), r.unit = std::move(unit), r.source = std::move(source);
  r.predicted = predicted, r.at_run = at_run;
  return r;
}

bool gpt_model(const TraceData& d, WhatIfModel& m) {
  const std::optional<GptLabSettings> s = gpt_option_table().from_meta(d.meta);
  if (!s) return false;
  m.vocab = s->model.vocab, m.hidden = s->model.hidden, m.heads = s->model.heads, m.layers = s->model.layers;
  m.batch = s->model.batch;
  m.run.sequence_length = s->model.seq;
  m.run.recompute = int(s->recompute);
  m.sliders = {
      {WhatIfKnob::ranks, 1, 8}, {WhatIfKnob::sequence_length, 2, kMaxSequence}, {WhatIfKnob::recompute, 0, 2}};
  return true;
}

void zero_rows(const WhatIfModel& m, const WhatIfValues& v, std::vector<WhatIfRow>& out) {
  const theory::ZeroPrecision p{m.param_bytes, m.grad_bytes, m.optimizer_bytes};
  const theory::ZeroBytes b = theory::zero_bytes_per_param(v.zero_stage, v.ranks, p);
  const theory::ZeroBytes b0 = theory::zero_bytes_per_param(v.zero_stage, m.run.ranks, p);
  const std::string n = "zero" + std::to_string(v.zero_stage) + ".";
  // Memory per rank by tag (Rajbhandari et al. Table 1), then the bytes each rank sends.
  out.push_back(row(n + "param_bytes", "params per rank", "B", "Ψ·p/N^[s≥3]", m.psi * b.params, m.psi * b0.params));
  out.push_back(row(n + "grad_bytes", "grads per rank", "B", "Ψ·g/N^[s≥2]", m.psi * b.grads, m.psi * b0.grads));
  out.push_back(row(n + "optimizer_bytes", "master + m + v per rank", "B", "Ψ·K/N^[s≥1]", m.psi * b.optimizer,
                    m.psi * b0.optimizer));
  out.push_back(
      row(n + "model_state_bytes", "model state per rank", "B", "Ψ·(p+g+K)", m.psi * b.total(), m.psi * b0.total()));
  const auto comm = [&](int N) { return theory::zero_comm_elements_per_rank(m.psi, v.zero_stage, N) * m.param_bytes; };
  out.push_back(row(n + "comm_formula", "bytes sent per rank per step", "B",
                    v.zero_stage == 3 ? "3Ψ(N-1)/N" : "2Ψ(N-1)/N", comm(v.ranks), comm(m.run.ranks)));
}

// One schedule's bubble and step time at (P, M, v): the published formula where its source
// gives one for the step (as the lab's report: pipeline_report.cpp), else the simulator's.
struct PipelineFigures {
  double bubble = 0, makespan = 0;
  const char* source = "";
  std::string refused;  // the schedule cannot be built at these settings: why
};
PipelineFigures pipeline_figures(pipeline::ScheduleKind k, const pipeline::ActionTimes& t, int P, int M, int v) {
  PipelineFigures f;
  try {
    const pipeline::ScheduleConfig c = pipeline::config_for(k, P, M, v);
    const pipeline::Schedule sched = pipeline::make_schedule(k, c);
    const double chunks = c.chunks;
    const pipeline::Simulation sim =
        pipeline::simulate(sched, {t.forward / chunks, t.backward / chunks, t.weight < 0 ? -1 : t.weight / chunks, 0});
    const pipeline::PublishedBubble pub = pipeline::published_bubble(k, c, t);
    const bool formula = pub.applies && !pub.tiled;
    f.bubble = formula ? pub.idle_share : sim.bubble_fraction();
    f.source = formula ? pub.formula : "simulator";
    f.makespan = sim.makespan;
  } catch (const Error& e) { f.refused = e.what(); }
  return f;
}

void pipeline_rows(const WhatIfModel& m, const WhatIfValues& v, std::vector<WhatIfRow>& out) {
  for (std::size_t i = 0; i < m.schedules.size(); ++i) {
    const pipeline::ScheduleKind k = m.schedules[i];
    const pipeline::ActionTimes t{m.forward_s[i], m.backward_s[i], m.weight_s[i], 0};
    const PipelineFigures now = pipeline_figures(k, t, v.ranks, v.micro_batches, v.chunks);
    const PipelineFigures run = pipeline_figures(k, t, m.run.ranks, m.run.micro_batches, m.run.chunks);
    const std::string name = pipeline::schedule_name(k);
    WhatIfRow bubble =
        row(name + ".bubble", name + ": bubble (idle share of the step)", "", now.source, now.bubble, run.bubble);
    WhatIfRow step = row(name + ".step_time", name + ": step time (simulator, the run's action times)", "s",
                         "simulator", now.makespan, run.makespan);
    bubble.note = step.note = now.refused;
    out.push_back(bubble), out.push_back(step);
  }
}

// The GPT lab's activation rows (labs/train/gpt_activation_report.cpp, prefix "memory."). The
// vocabulary (the corpus's, not an option) enters none of a block's figures.
void gpt_rows(const WhatIfModel& m, const WhatIfValues& v, std::vector<WhatIfRow>& out) {
  const auto config = [&](int seq) { return GptConfig{m.vocab, seq, m.hidden, m.heads, m.layers, m.batch}; };
  const theory::Recompute r = theory::Recompute(v.recompute);
  const GptConfig now = config(v.sequence_length), run = config(m.run.sequence_length);
  const auto block = [&](const GptConfig& c, int tp) {
    return gpt_activation_parts(c, tp, ex::TpMode::plain, {}, r).block;
  };
  out.push_back(row("memory.activation_per_layer", "kept per layer and micro-batch (this GPT, fp32)", "B",
                    "this GPT's tensors (gpt.h)", block(now, v.ranks), block(run, m.run.ranks)));
  out.push_back(row("memory.activation_per_layer_paper", "the layer in Korthikanti et al.'s terms (16-bit)", "B",
                    "Korthikanti et al. 2022", korthikanti_layer_bytes(now, v.ranks, ex::TpMode::plain, r),
                    korthikanti_layer_bytes(run, m.run.ranks, ex::TpMode::plain, r)));
  if (r != theory::Recompute::none)
    out.push_back(row("memory.recompute_vs_forward", "recomputation / block forward (FLOPs)", "x",
                      "FLOPs rerun / forward FLOPs", recompute_flop_ratio(now, r), recompute_flop_ratio(run, r)));
}

void ddp_rows(const WhatIfModel& m, const WhatIfValues& v, std::vector<WhatIfRow>& out) {
  const double bytes = m.psi * m.grad_bytes;  // every gradient once, all-reduced by a ring
  const auto wire = [&](int P) { return theory::all_reduce_cost(AlgorithmKind::ring, P, bytes).bytes_per_rank; };
  for (const std::string& c : m.ddp_cases)
    out.push_back(row(c + ".ring_wire_bytes", c + ": ring wire bytes per rank per step", "B", "ring 2(P-1)/P·N",
                      wire(v.ranks), wire(m.run.ranks)));
}

}  // namespace

const char* what_if_knob_name(WhatIfKnob k) {
  switch (k) {
    case WhatIfKnob::ranks: return "ranks";
    case WhatIfKnob::micro_batches: return "micro-batches M";
    case WhatIfKnob::chunks: return "chunks v";
    case WhatIfKnob::zero_stage: return "ZeRO stage";
    case WhatIfKnob::sequence_length: return "sequence length s";
    case WhatIfKnob::recompute: return "recompute (0 none, 1 selective, 2 full)";
  }
  return "?";
}

const char* what_if_recompute_name(int value) {
  return theory::recompute_name(theory::Recompute(std::clamp(value, 0, 2)));
}

std::vector<WhatIfSetting> parse_what_if_set(const std::string& text) {
  static const std::pair<const char*, WhatIfKnob> words[] = {
      {"ranks", WhatIfKnob::ranks},         {"micro-batches", WhatIfKnob::micro_batches},
      {"chunks", WhatIfKnob::chunks},       {"zero-stage", WhatIfKnob::zero_stage},
      {"seq", WhatIfKnob::sequence_length}, {"recompute", WhatIfKnob::recompute}};
  std::vector<WhatIfSetting> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const std::size_t eq = item.find('=');
    const std::string word = item.substr(0, eq);
    const auto known = std::find_if(std::begin(words), std::end(words), [&](const auto& w) { return word == w.first; });
    char* end = nullptr;
    const long value = eq == std::string::npos ? 0 : std::strtol(item.c_str() + eq + 1, &end, 10);
    if (known == std::end(words) || eq == std::string::npos || eq + 1 == item.size() || *end != '\0' || value < 0 ||
        value > 1 << 20)
      throw UsageError(
          "--what-if-set takes KNOB=N[,KNOB=N], a knob one of ranks, micro-batches, chunks, zero-stage "
          "and N a whole number (e.g. --what-if-set micro-batches=32,ranks=8); got '" +
          text + "'");
    out.push_back({known->second, int(value)});
    at = comma + 1;
  }
  return out;
}

int& WhatIfValues::at(WhatIfKnob k) {
  switch (k) {
    case WhatIfKnob::ranks: return ranks;
    case WhatIfKnob::micro_batches: return micro_batches;
    case WhatIfKnob::chunks: return chunks;
    case WhatIfKnob::zero_stage: return zero_stage;
    case WhatIfKnob::sequence_length: return sequence_length;
    case WhatIfKnob::recompute: return recompute;
  }
  return ranks;
}
int WhatIfValues::at(WhatIfKnob k) const { return const_cast<WhatIfValues&>(*this).at(k); }

namespace {

// The labs with what-if formulas: the lab the trace's meta names, looked up once.
struct WhatIfLabEntry {
  const char* name;
  WhatIfLab lab;
  bool (*build)(const TraceData&, WhatIfModel&);
};
constexpr WhatIfLabEntry kWhatIfLabs[] = {{"zero", WhatIfLab::zero, zero_model},
                                          {"pipeline", WhatIfLab::pipeline, pipeline_model},
                                          {"ddp", WhatIfLab::ddp, ddp_model},
                                          {"gpt", WhatIfLab::gpt, gpt_model}};

const WhatIfLabEntry* what_if_lab(const std::string& name) {
  for (const WhatIfLabEntry& e : kWhatIfLabs)
    if (name == e.name) return &e;
  return nullptr;
}

}  // namespace

WhatIfModel what_if_model(const TraceData& d) {
  WhatIfModel m;
  m.run.ranks = d.ranks;
  const std::string* lab = d.meta_of(MetaKey::lab);
  const std::string name = lab ? *lab : "";
  const WhatIfLabEntry* entry = what_if_lab(name);
  bool ok = entry && entry->build(d, m);
  if (entry) m.lab = entry->lab;
  // A run beyond a slider's range (a hostile trace's 16384 stages) gets no what-if: its
  // own figures would be computed at another size, or take the simulator minutes.
  for (const WhatIfSlider& s : m.sliders)
    if (ok && (m.run.at(s.knob) < s.lo || m.run.at(s.knob) > s.hi)) {
      ok = false;
      m.why_none = std::string("the run's ") + what_if_knob_name(s.knob) + " " + std::to_string(m.run.at(s.knob)) +
                   " is outside the sliders' " + std::to_string(s.lo) + " to " + std::to_string(s.hi);
    }
  if (!ok && !m.why_none.empty()) {
    const std::string why = m.why_none;
    m = WhatIfModel{};
    m.why_none = why;
  } else if (!ok) {
    m = WhatIfModel{};
    m.why_none = name.empty() ? "the trace names no lab"
                 : entry
                     ? "the trace lacks the run's settings (or a pipeline's action times): record it again"
                     : "the " + name + " lab has no what-if formulas here (the zero, pipeline, ddp and gpt labs do)";
  }
  return m;
}

std::vector<WhatIfRow> what_if_rows(const TraceData& d, const WhatIfModel& m, const WhatIfValues& v) {
  std::vector<WhatIfRow> out;
  switch (m.lab) {
    case WhatIfLab::zero: zero_rows(m, v, out); break;
    case WhatIfLab::pipeline: pipeline_rows(m, v, out); break;
    case WhatIfLab::ddp: ddp_rows(m, v, out); break;
    case WhatIfLab::gpt: gpt_rows(m, v, out); break;
    case WhatIfLab::none: break;
  }
  const std::map<std::string, nlohmann::json> rows = report_rows(d);
  for (WhatIfRow& r : out) r.measured = number_of(rows, r.id, "measured");
  return out;
}

}  // namespace dtl::viz
