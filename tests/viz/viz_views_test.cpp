// The views' plain-code parts added for DDP (issue 13): the time axis and the memory
// axis, the hidden 1-rank reference phase, stepping by collectives, the memory picture
// with the lab's formula, where each lab's views go, and a real DDP trace through them;
// for ZeRO's --stage all, the memory picture per phase (tests/viz/data/zero_phases.json is
// a synthetic trace of that shape) and the report's plots; for the pipeline lab, the
// pipeline view's model (each schedule's steps, blocks and bubble; the simulated timelines).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "core/comm/threads_backend.h"
#include "core/error.h"
#include "core/trace/binary_trace.h"
#include "core/trace/chrome_writer.h"
#include "core/trace/trace_limits.h"
#include "labs/collectives/collectives_lab.h"
#include "labs/lab.h"
#include "tests/viz/trace_fixtures.h"
#include "viz/model/axes.h"
#include "viz/model/memory_model.h"
#include "viz/model/panels.h"
#include "viz/model/report_plots.h"
#include "viz/model/trace_index.h"
#include "viz/views/pipeline/pipeline_model.h"

using namespace dtl;
using namespace dtl::viz;

namespace {

std::vector<std::string> labels(const std::vector<Tick>& ticks) {
  std::vector<std::string> out;
  for (const Tick& t : ticks) out.push_back(t.label);
  return out;
}

Event span(EventKind kind, int rank, std::int64_t b, std::int64_t e, std::uint16_t label = 0) {
  Event ev;
  ev.kind = kind;
  ev.rank = rank;
  ev.begin_ns = b;
  ev.end_ns = e;
  ev.label = label;
  return ev;
}

}  // namespace

TEST(TimeTicks, LabelsCountFromTheRunStartInTheUnitOfTheWindow) {
  using V = std::vector<std::string>;
  // 55 ms over 1000 px, ticks at least 80 px apart: every 5 ms.
  EXPECT_EQ(labels(time_ticks(0, 55e6, 0, 1000, 80)), (V{"0 ms", "5 ms", "10 ms", "15 ms", "20 ms", "25 ms", "30 ms",
                                                         "35 ms", "40 ms", "45 ms", "50 ms", "55 ms"}));
  // Zoomed to 100 µs at 40 ms: 10 µs steps, still in ms (the magnitude), with the decimals they need.
  EXPECT_EQ(labels(time_ticks(40e6, 40.1e6, 0, 1000, 80)).front(), "40 ms");
  EXPECT_EQ(labels(time_ticks(40e6, 40.1e6, 0, 1000, 80))[1], "40.01 ms");
  // Counted from the origin (the run after the reference phase), not from the trace's zero.
  EXPECT_EQ(labels(time_ticks(1e9, 1.0008e9, 1e9, 800, 100)),
            (V{"0 µs", "100 µs", "200 µs", "300 µs", "400 µs", "500 µs", "600 µs", "700 µs", "800 µs"}));
  EXPECT_EQ(labels(time_ticks(0, 400, 0, 400, 100)), (V{"0 ns", "100 ns", "200 ns", "300 ns", "400 ns"}));
  EXPECT_EQ(labels(time_ticks(0, 12e9, 0, 600, 100)), (V{"0 s", "2 s", "4 s", "6 s", "8 s", "10 s", "12 s"}));
  EXPECT_EQ(format_duration(1.5e6, 5e5, 2e6), "1.5 ms");
  EXPECT_TRUE(time_ticks(5, 5, 0, 100, 10).empty());  // an empty window has no ticks
}

TEST(TimeTicks, NeverCloserThanAskedNorMoreThanTwoAndAHalfTimesThat) {
  for (double span = 1000; span < 1e12; span *= 3.7)  // (below that the 1 ns step is the floor)
    for (float width : {200.0f, 1333.0f}) {
      const std::vector<Tick> t = time_ticks(span, 2 * span, 0, width, 70);
      ASSERT_GE(t.size(), 1u) << "span " << span;
      if (t.size() < 2) continue;
      const double px = (t[1].value - t[0].value) / span * width;
      EXPECT_GE(px, 70 - 1e-3) << "span " << span << " width " << width;
      EXPECT_LE(px, 2.5 * 70 + 1e-3) << "span " << span << " width " << width;
      for (const Tick& k : t) EXPECT_TRUE(k.value >= span && k.value <= 2 * span) << "span " << span;
    }
}

TEST(ByteScale, PowerOfTwoStepsLabelledInTheUnitOfTheTop) {
  using V = std::vector<std::string>;
  const ByteScale ddp = byte_scale(2786304, 5);  // DDP's peak per rank, 2.66 MiB
  EXPECT_EQ(ddp.step, 1 << 20);
  EXPECT_EQ(ddp.top, 3 << 20);
  EXPECT_EQ(labels(ddp.ticks), (V{"0 MiB", "1 MiB", "2 MiB", "3 MiB"}));
  EXPECT_EQ(labels(byte_scale(700 * 1024, 5).ticks), (V{"0 KiB", "256 KiB", "512 KiB", "768 KiB"}));
  EXPECT_EQ(labels(byte_scale(1.4 * (1 << 20), 4).ticks), (V{"0 MiB", "0.5 MiB", "1 MiB", "1.5 MiB"}));
  EXPECT_EQ(labels(byte_scale(3.0 * (1ull << 30), 4).ticks), (V{"0 GiB", "1 GiB", "2 GiB", "3 GiB"}));
  EXPECT_EQ(labels(byte_scale(0, 4).ticks), (V{"0 B", "1 B"}));  // nothing allocated: still an axis
  for (double max : {1.0, 1000.0, 123456.0, 7e9})
    for (int n : {2, 5, 8}) {
      const ByteScale s = byte_scale(max, n);
      EXPECT_GE(s.top, max);
      EXPECT_LE(s.ticks.size(), std::size_t(n) + 1) << max;
      EXPECT_LT(s.top - s.step, max) << "the top is the first tick at or above " << max;
    }
  EXPECT_EQ(format_bytes(1.5 * (1 << 20), 1 << 21), "1.5 MiB");
}

TEST(ReferencePhase, IsHiddenByDefaultAndShownOnRequest) {
  TraceData d;
  d.ranks = 2;
  d.labels = {"", kReferencePhaseLabel, "backward"};
  d.roles = {{}, kReferenceRole, Role{.pass = Pass::backward}};
  d.events = {span(EventKind::phase, 0, 0, 9000, 1), span(EventKind::collective, 1, 100, 9100),
              span(EventKind::compute, 0, 9050, 9500, 2), span(EventKind::compute, 1, 9150, 9600, 2)};
  d.t_begin = 0, d.t_end = 9600;
  const TraceIndex x = index_trace(d);
  ASSERT_TRUE(x.reference);
  EXPECT_EQ(x.reference->end, 9000);
  const TimeRange hidden = shown_range(d, x, false), shown = shown_range(d, x, true);
  EXPECT_EQ(hidden.begin, 9000);
  EXPECT_EQ(hidden.end, 9600);
  EXPECT_EQ(shown.begin, 0);
  // A trace without one, or one where nothing follows the reference, shows everything.
  d.roles[1] = Role{.part = RunPart::setup};  // (the words do not matter: the role does)
  EXPECT_EQ(shown_range(d, index_trace(d), false).begin, 0);
  d.roles[1] = kReferenceRole;
  d.events[0].end_ns = 9600;
  EXPECT_EQ(shown_range(d, index_trace(d), false).begin, 0);
  // The grid lab runs its reference after the ranks train: the run before it is shown.
  d.events[0].begin_ns = 9000;
  const TimeRange before = shown_range(d, index_trace(d), false);
  EXPECT_EQ(before.begin, 0);
  EXPECT_EQ(before.end, 9000);
}

TEST(StepsByCollective, OneStepPerGroupCollectiveInFinishingOrder) {
  std::vector<Event> ev;
  for (int r = 0; r < 4; ++r) ev.push_back(span(EventKind::collective, r, 10, 100 - r));  // a world all-reduce
  for (int r = 0; r < 4; ++r) {  // two dp groups of two: {0, 2} and {1, 3}
    Event e = span(EventKind::collective, r, 200, 300 + r);
    e.axis = GroupAxis::dp;
    e.group_rank = std::int16_t(r / 2);
    ev.push_back(e);
  }
  ev.push_back(span(EventKind::recv, 1, 0, 5));
  const std::vector<Event> steps = collectives_in_order(ev);
  ASSERT_EQ(steps.size(), 3u);  // the world's (rank 0's) and one per dp group
  EXPECT_EQ(steps[0].rank, 0);
  EXPECT_EQ(steps[1].rank, 0);
  EXPECT_EQ(steps[2].rank, 1);
  EXPECT_EQ(steps[1].axis, GroupAxis::dp);
}

TEST(MemoryPicture, BarsAtTheCursorPeaksAndTheFormula) {
  TraceData d;
  d.ranks = 2;
  auto sample = [](int rank, std::int64_t t, std::uint64_t param, std::uint64_t act) {
    MemorySample m;
    m.rank = rank, m.t_ns = t;
    m.bytes[std::size_t(MemTag::param)] = param;
    m.bytes[std::size_t(MemTag::activation)] = act;
    return m;
  };
  d.memory = {sample(1, 10, 400, 0), sample(1, 20, 400, 600), sample(0, 30, 400, 0), sample(1, 40, 0, 0)};
  d.meta["predicted_bytes_per_rank"] = "1600";
  d.meta["predicted_bytes_formula"] = "16 B/param x 100 params";
  const MemoryPicture early = memory_at(d, 25);
  EXPECT_EQ(early.now[0].bytes[std::size_t(MemTag::param)], 0u);  // rank 0 allocates at 30
  EXPECT_EQ(early.now[1].bytes[std::size_t(MemTag::activation)], 600u);
  EXPECT_EQ(early.peak[1], 1000u);
  EXPECT_EQ(early.peak[0], 400u);
  EXPECT_EQ(early.formula, 1600);
  EXPECT_EQ(early.formula_text, "16 B/param x 100 params");
  EXPECT_EQ(early.largest(), 1600);
  EXPECT_EQ(memory_at(d, 35).now[0].bytes[std::size_t(MemTag::param)], 400u);
  d.meta["predicted_bytes_per_rank"] = "nonsense";
  EXPECT_EQ(memory_at(d, 35).formula, 0);
  EXPECT_EQ(memory_at(d, 35).formula_text, "");
  EXPECT_EQ(memory_at(d, 35).largest(), 1000);
}

// ZeRO's `--stage all` run: one phase span per stage on every rank, a formula per phase in
// the metadata. Rank 0 marks every phase, rank 1 all but "DDP" (it gets the phase's range).
namespace {

TraceData phased_trace() {
  TraceData d;
  d.ranks = 2;
  d.labels = {"", "ZeRO-0", "ZeRO-1", "DDP", "compute"};
  // The phases are found by their roles; the metadata is keyed by role_key (the words differ).
  d.roles = {{}, Role{.zero_stage = 0}, Role{.zero_stage = 1}, Role{.part = RunPart::timed}, {}};
  d.events = {span(EventKind::phase, 0, 100, 200, 1),   span(EventKind::phase, 1, 100, 210, 1),
              span(EventKind::phase, 0, 300, 400, 2),   span(EventKind::phase, 1, 300, 400, 2),
              span(EventKind::compute, 0, 240, 260, 2),  // the label, but not a phase: no span of ZeRO-1
              span(EventKind::phase, 0, 450, 470, 2),    // ZeRO-1 again on rank 0: the larger peak counts
              span(EventKind::phase, 0, 500, 600, 3)};
  auto sample = [](int rank, std::int64_t t, std::initializer_list<std::pair<MemTag, std::uint64_t>> bytes) {
    MemorySample m;
    m.rank = rank, m.t_ns = t;
    for (auto [tag, b] : bytes) m.bytes[std::size_t(tag)] = b;
    return m;
  };
  using enum MemTag;
  d.memory = {sample(0, 50, {{param, 1000}}),  // carried into ZeRO-0
              sample(1, 50, {{param, 800}}),
              sample(0, 120, {{param, 1000}, {grad, 1000}, {optimizer, 4000}}),  // rank 0's ZeRO-0 peak
              sample(0, 150, {{param, 1000}, {grad, 1000}}),
              sample(0, 195, {{param, 1000}, {activation, 5000}}),  // as large, later: not chosen
              sample(1, 205, {{param, 800}, {grad, 800}}),          // inside rank 1's span only
              sample(1, 215, {{param, 5000}}),                      // after it: not counted
              sample(0, 250, {{activation, 99999}}),                // between phases
              sample(0, 260, {}),
              sample(1, 280, {{param, 300}}),  // rank 1 holds this through ZeRO-1
              sample(0, 350, {{param, 500}, {optimizer, 1000}, {gather, 2000}}),
              sample(0, 420, {{comm, 99999}}),  // between rank 0's two ZeRO-1 spans
              sample(0, 440, {{param, 500}}),
              sample(0, 460, {{param, 500}, {comm, 3200}}),  // the second span's larger peak
              sample(0, 480, {}),
              sample(0, 550, {{master, 9000}}),
              sample(1, 580, {{param, 100}})};
  d.meta["phase_formula_bytes.zero_stage=0"] = "7000";
  d.meta["phase_formula_text.zero_stage=0"] = "16Ψ = 16 B/param";
  d.meta["phase_formula_bytes.zero_stage=1"] = " 4e3 ";
  d.meta["phase_formula_bytes.part=timed"] = "10000";
  d.meta["phase_formula_bytes.zero_stage=3,prefetch=9"] = "12x";  // malformed, and no such phase in the trace
  d.meta["phase_formula_text.zero_stage=3,prefetch=9"] = "never shown";
  d.meta["predicted_bytes_per_rank"] = "1600";  // the single formula other labs use: untouched
  d.t_begin = 50, d.t_end = 600;
  return d;
}

}  // namespace

TEST(MemoryByPhase, EachRanksBytesByTagAtItsPeakInsideEachPhaseInTimeOrder) {
  const TraceData d = phased_trace();
  const PhaseMemories m = memory_by_phase(d);
  ASSERT_EQ(m.phases.size(), 4u);
  EXPECT_EQ(m.dropped, 0u);
  // In time order (not the metadata's alphabetical order); the phase not in the trace last.
  EXPECT_EQ(m.phases[0].label, "ZeRO-0");
  EXPECT_EQ(m.phases[1].label, "ZeRO-1");
  EXPECT_EQ(m.phases[2].label, "DDP");
  EXPECT_EQ(m.phases[3].label, "zero_stage=3,prefetch=9");  // no span: its key
  const PhaseMemory& z0 = m.phases[0];
  ASSERT_EQ(z0.at_peak.size(), 2u);
  EXPECT_EQ(z0.peak[0], 6000u);
  EXPECT_EQ(z0.at_peak[0].t_ns, 120);  // the first moment of the largest total
  EXPECT_EQ(z0.at_peak[0].bytes[std::size_t(MemTag::optimizer)], 4000u);
  EXPECT_EQ(z0.at_peak[0].bytes[std::size_t(MemTag::activation)], 0u);
  EXPECT_EQ(z0.peak[1], 1600u);  // at 205, inside rank 1's own span (which ends at 210, not 200)
  EXPECT_EQ(z0.at_peak[1].t_ns, 205);
  EXPECT_EQ(z0.at_peak[1].bytes[std::size_t(MemTag::grad)], 800u);
  EXPECT_EQ(z0.formula, 7000);
  EXPECT_EQ(z0.formula_text, "16Ψ = 16 B/param");
  EXPECT_EQ(z0.begin_ns, 100);
  EXPECT_EQ(z0.end_ns, 210);
  const PhaseMemory& z1 = m.phases[1];
  EXPECT_EQ(z1.peak[0], 3700u);  // rank 0's second ZeRO-1 span; nothing from between its spans
  EXPECT_EQ(z1.at_peak[0].t_ns, 460);
  EXPECT_EQ(z1.at_peak[0].bytes[std::size_t(MemTag::comm)], 3200u);
  EXPECT_EQ(z1.peak[1], 300u);  // no change inside the phase: what it held as the phase began
  EXPECT_EQ(z1.at_peak[1].t_ns, 300);
  EXPECT_EQ(z1.at_peak[1].bytes[std::size_t(MemTag::param)], 300u);
  EXPECT_EQ(z1.formula, 4000);
  EXPECT_EQ(z1.formula_text, "");
  const PhaseMemory& ddp = m.phases[2];
  EXPECT_EQ(ddp.peak[0], 9000u);
  EXPECT_EQ(ddp.at_peak[0].bytes[std::size_t(MemTag::master)], 9000u);
  EXPECT_EQ(ddp.peak[1], 300u);  // rank 1 marks no DDP span: the phase's range, 500..600
  EXPECT_EQ(ddp.at_peak[1].t_ns, 500);
  const PhaseMemory& z9 = m.phases[3];
  EXPECT_FALSE(z9.in_trace);
  EXPECT_EQ(z9.formula, 0);        // "12x" is no number: no line
  EXPECT_EQ(z9.formula_text, "");  // and no text without it
  EXPECT_EQ(z9.peak, (std::vector<std::uint64_t>{0, 0}));
  EXPECT_EQ(m.largest(), 10000);  // DDP's formula: the shared axis reaches every panel's top
  // The picture at the cursor is unchanged beside it.
  EXPECT_EQ(memory_at(d, 600).formula, 1600);
}

TEST(MemoryByPhase, NoneWithoutPhaseFormulasAndBoundedWithHostileMetadata) {
  TraceData d = phased_trace();
  for (auto it = d.meta.begin(); it != d.meta.end();)
    it = it->first.starts_with(meta_key_name(MetaKey::phase_formula_bytes)) ? d.meta.erase(it) : std::next(it);
  EXPECT_TRUE(memory_by_phase(d).phases.empty());  // a phase text alone makes no panel
  // 1000 phases: the first kMaxMemoryPhases in time order are kept, the rest counted.
  d = phased_trace();
  const std::string key = meta_key_name(MetaKey::phase_formula_bytes, "");
  for (int i = 0; i < 1000; ++i) d.meta.emplace(key + "extra " + std::to_string(i), std::string(1, '1'));
  d.meta.emplace(key + "bad\n\x01name", std::string("1e999"));
  const PhaseMemories m = memory_by_phase(d);
  ASSERT_EQ(m.phases.size(), kMaxMemoryPhases);
  EXPECT_EQ(m.dropped, 1005 - kMaxMemoryPhases);
  EXPECT_EQ(m.phases[0].label, "ZeRO-0");
  EXPECT_EQ(m.phases[2].label, "DDP");
  // No ranks, no samples: panels without bars, no crash.
  TraceData empty;
  empty.meta[meta_key_name(MetaKey::phase_formula_bytes, "zero_stage=3")] = "100";
  const PhaseMemories e = memory_by_phase(empty);
  ASSERT_EQ(e.phases.size(), 1u);
  EXPECT_TRUE(e.phases[0].peak.empty());
  EXPECT_EQ(e.largest(), 100);
}

TEST(MemoryByPhase, FormulaBytesArePlainFiniteNumbersOrIgnored) {
  EXPECT_EQ(parse_formula_bytes("7000"), 7000);
  EXPECT_EQ(parse_formula_bytes(" 1.5e6\t"), 1.5e6);
  EXPECT_EQ(parse_formula_bytes("2621440.5"), 2621440.5);
  for (const char* bad :
       {"", " ", "12x", "x12", "1 2", "nan", "inf", "-5", "0", "0x10", "1e400", "1e30", "+", "--1", "1e"})
    EXPECT_EQ(parse_formula_bytes(bad), 0) << "'" << bad << "'";
}

TEST(MemoryByPhase, TheSyntheticZeroTraceShrinksFromStageToStage) {
  const TraceData d = load_chrome_trace(std::string(DTL_SOURCE_DIR) + "/tests/viz/data/zero_phases.json");
  const PhaseMemories m = memory_by_phase(d);
  ASSERT_EQ(m.phases.size(), 4u);
  const double psi = 1e6, P = 4;
  const double formulas[] = {16 * psi, 4 * psi + 12 * psi / P, 2 * psi + 14 * psi / P, 16 * psi / P};
  for (std::size_t s = 0; s < 4; ++s) {
    const PhaseMemory& p = m.phases[s];
    EXPECT_EQ(p.label, "ZeRO-" + std::to_string(s));
    EXPECT_EQ(p.formula, formulas[s]) << p.label;
    EXPECT_NE(p.formula_text.find("B/param"), std::string::npos) << p.label;
    for (int r = 0; r < 4; ++r) {
      // Each rank peaks with its activations held (1.5 MB + 0.1 MB per rank), above the formula.
      EXPECT_GT(double(p.peak[std::size_t(r)]), p.formula) << p.label << " rank " << r;
      EXPECT_EQ(p.at_peak[std::size_t(r)].bytes[std::size_t(MemTag::activation)], 1'500'000u + 100'000u * unsigned(r))
          << p.label;
      if (s > 0) {
        EXPECT_LT(p.peak[std::size_t(r)], m.phases[s - 1].peak[std::size_t(r)]) << p.label << " rank " << r;
      }
    }
  }
  EXPECT_EQ(m.phases[3].at_peak[0].bytes[std::size_t(MemTag::gather)], 600'000u);  // ZeRO-3's gathered parameters
  const ReportPlots plots = parse_report_plots(nlohmann::json::parse(d.meta.at("report")));
  ASSERT_EQ(plots.plots.size(), 1u);
  EXPECT_EQ(plots.plots[0].point_labels.size(), 4u);
}

TEST(ReportPlots, ReadsWellFormedPlotsAndSkipsBrokenOnesWithANote) {
  const nlohmann::json r = nlohmann::json::parse(R"({"rows": [], "plots": [
    {"id": "prefetch", "title": "prefetch depth", "x_label": "peak memory", "x_unit": "B", "y_label": "exposed all-gather",
     "y_unit": "s", "x": [1048576, 1572864, 2097152], "y": [0.004, 0.0025, 0.002], "point_labels": ["depth 0", "depth 1", "depth 2"]},
    {"id": "nolabels", "title": "no labels", "x": [1, 2], "y": [3, 4]},
    {"id": "short", "title": "short y", "x": [1, 2, 3], "y": [1, 2]},
    {"id": "noy", "title": "no y", "x": [1]},
    {"id": "text", "title": "a string in x", "x": ["1"], "y": [1]},
    {"id": "labels", "title": "two labels for three points", "x": [1, 2, 3], "y": [1, 2, 3], "point_labels": ["a", "b"]},
    {"id": "empty", "x": [], "y": []},
    7]})");
  const ReportPlots p = parse_report_plots(r);
  ASSERT_EQ(p.plots.size(), 2u);
  const Plot& a = p.plots[0];
  EXPECT_EQ(a.title, "prefetch depth");
  EXPECT_EQ(a.x_unit, "B");
  EXPECT_EQ(a.y_label, "exposed all-gather");
  EXPECT_EQ(a.x, (std::vector<double>{1048576, 1572864, 2097152}));
  EXPECT_EQ(a.y, (std::vector<double>{0.004, 0.0025, 0.002}));
  EXPECT_EQ(a.point_labels, (std::vector<std::string>{"depth 0", "depth 1", "depth 2"}));
  EXPECT_TRUE(p.plots[1].point_labels.empty());
  const std::vector<std::string> want = {"plot 3 ('short y'): x has 3 points, y 2",
                                         "plot 4 ('no y'): no 'y' array",
                                         "plot 5 ('a string in x'): 'x' holds a value that is not a finite number",
                                         "plot 6 ('two labels for three points'): 2 point labels for 3 points",
                                         "plot 7: no points",
                                         "plot 8: not an object"};
  EXPECT_EQ(p.skipped, want);
  // No plots (older reports), plots that are not a list, a report that is not an object.
  EXPECT_TRUE(parse_report_plots(nlohmann::json::parse(R"({"rows": []})")).plots.empty());
  EXPECT_EQ(parse_report_plots(nlohmann::json::parse(R"({"plots": {}})")).skipped,
            (std::vector<std::string>{"'plots' is not a list"}));
  EXPECT_TRUE(parse_report_plots(nlohmann::json::parse("[1]")).plots.empty());
  // Bounded: more than kMaxPlots plots, or points.
  nlohmann::json many = {{"plots", nlohmann::json::array()}};
  for (std::size_t i = 0; i < kMaxPlots + 5; ++i) many["plots"].push_back({{"x", {1}}, {"y", {2}}});
  const ReportPlots m = parse_report_plots(many);
  EXPECT_EQ(m.plots.size(), kMaxPlots);
  EXPECT_EQ(m.skipped, (std::vector<std::string>{"5 more plots not shown (the limit is 16)"}));
  nlohmann::json big = {
      {"plots",
       {{{"x", std::vector<double>(kMaxPlotPoints + 1, 1.0)}, {"y", std::vector<double>(kMaxPlotPoints + 1, 1.0)}}}}};
  EXPECT_EQ(parse_report_plots(big).skipped.size(), 1u);
}

TEST(ReportPlots, AxesCoverTheDataInReadableUnits) {
  const PlotAxis b = plot_axis(1048576, 2097152 + 1000, "B", 5);
  EXPECT_LE(b.lo, 1048576);
  EXPECT_GE(b.hi, 2097152 + 1000);
  EXPECT_LE(b.ticks.size(), 7u);
  EXPECT_EQ(b.ticks.front().label, "1 MiB");
  EXPECT_EQ(b.ticks[1].label, "1.25 MiB");
  const PlotAxis s = plot_axis(0.002, 0.004, "s", 4);
  EXPECT_EQ(labels(s.ticks), (std::vector<std::string>{"2 ms", "2.5 ms", "3 ms", "3.5 ms", "4 ms"}));
  const PlotAxis one = plot_axis(3, 3, "", 4);  // a single value: a range around it
  EXPECT_LT(one.lo, 3);
  EXPECT_GT(one.hi, 3);
  EXPECT_FALSE(plot_axis(0, 0, "x", 4).ticks.empty());
  EXPECT_EQ(format_value(1.5 * 1048576, "B"), "1.5 MiB");
  EXPECT_EQ(format_value(0.0025, "s"), "2.5 ms");
  EXPECT_EQ(format_value(3.47e9, "B/s"), "3.47 GB/s");
  EXPECT_EQ(format_value(12, "x"), "12 x");
  EXPECT_EQ(format_value(7, ""), "7");
}

TEST(Panels, EachLabsViewsTileTheWindowMainViewTallest) {
  const Rect area{0, 40, 1600, 960};
  for (const LabInfo& lab : lab_registry()) {
    const std::vector<PanelPlace> p = arrange_panels(lab.views, area, 8);
    ASSERT_EQ(p.size(), lab.views.size()) << lab.name;
    double covered = 0;
    for (std::size_t i = 0; i < p.size(); ++i) {
      const Rect& r = p[i].rect;
      EXPECT_TRUE(r.x >= area.x && r.y >= area.y && r.x + r.w <= area.x + area.w + 0.01f &&
                  r.y + r.h <= area.y + area.h + 0.01f)
          << lab.name << " " << view_kind_name(p[i].kind);
      covered += double(r.w) * r.h;
      for (std::size_t j = 0; j < i; ++j) {
        const Rect& q = p[j].rect;
        const bool apart = r.x >= q.x + q.w || q.x >= r.x + r.w || r.y >= q.y + q.h || q.y >= r.y + r.h;
        EXPECT_TRUE(apart) << lab.name << ": " << view_kind_name(p[i].kind) << " overlaps "
                           << view_kind_name(p[j].kind);
      }
    }
    EXPECT_GT(covered, 0.95 * area.w * area.h) << lab.name;
    const auto main =
        std::find_if(p.begin(), p.end(), [&](const PanelPlace& x) { return x.kind == lab.views.front(); });
    for (const PanelPlace& x : p)
      EXPECT_GE(main->rect.h, x.rect.h) << lab.name << ": the main view gets the taller band";
  }
  // The ring is the collectives lab's alone.
  EXPECT_NE(std::count(find_lab("collectives")->views.begin(), find_lab("collectives")->views.end(), kRingView), 0);
  EXPECT_EQ(std::count(find_lab("ddp")->views.begin(), find_lab("ddp")->views.end(), kRingView), 0);
  // DDP: the timeline across the top, memory beside report below it.
  const std::vector<PanelPlace> ddp = arrange_panels(find_lab("ddp")->views, area, 8);
  EXPECT_EQ(ddp[0].kind, ViewKind::timeline);
  EXPECT_FLOAT_EQ(ddp[0].rect.w, 1600);
  EXPECT_LT(ddp[1].rect.x, ddp[2].rect.x);
}

// A small window (1024 × 640; the panels' area about 1008 × 560) stacks every view full width,
// none below the readable minimum, in a column the app scrolls; 1280 × 800 still tiles.
TEST(Panels, ASmallWindowStacksReadablePanelsInsteadOfShrinkingThem) {
  for (const LabInfo& lab : lab_registry()) {
    const std::vector<PanelPlace> small = arrange_panels(lab.views, {0, 0, 1008, 560}, 8);
    ASSERT_EQ(small.size(), lab.views.size()) << lab.name;
    bool stacked = false;
    for (std::size_t i = 0; i < small.size(); ++i) {
      const Rect& r = small[i].rect;
      EXPECT_GE(r.w, kMinPanelW) << lab.name << " " << view_kind_name(small[i].kind);
      EXPECT_GE(r.h, kMinPanelH) << lab.name << " " << view_kind_name(small[i].kind);
      stacked = stacked || r.y + r.h > 560.01f;
      for (std::size_t j = 0; j < i; ++j) {
        const Rect& q = small[j].rect;
        EXPECT_TRUE(r.x >= q.x + q.w || q.x >= r.x + r.w || r.y >= q.y + q.h || q.y >= r.y + r.h)
            << lab.name << ": overlap";
      }
    }
    if (stacked) {  // a column, full width, the main view first
      EXPECT_EQ(small.front().kind, lab.views.front()) << lab.name;
      for (const PanelPlace& p : small) EXPECT_FLOAT_EQ(p.rect.w, 1008) << lab.name;
    }
    std::printf("%-16s at 1008 x 560: %s\n", lab.name.c_str(), stacked ? "stacked, scrolls" : "tiled");
  }
  const std::vector<PanelPlace> big = arrange_panels(find_lab("collectives")->views, {0, 0, 1264, 720}, 8);
  for (const PanelPlace& p : big) EXPECT_LE(p.rect.y + p.rect.h, 720.01f) << "1280 × 800 tiles the window";
}

namespace {

// The DDP lab on 4 thread ranks with 3 buckets, written as `dtlab run ddp --trace` writes it.
const TraceData& ddp_trace() {
  static const TraceData d = [] {
    const LabInfo& lab = *find_lab("ddp");
    LabConfig cfg;
    cfg.ranks = 4;
    cfg.repeat = 1;  // one warm-up step and one timed run of one step: 2 training steps
    cfg.options = {{"bucket-mb", "0.25"}, {"steps", "1"}};
    cfg = with_defaults(lab, cfg);
    Trace trace(4);
    trace.set_meta("lab", lab.name);
    ThreadsOptions opt;
    opt.world_size = 4;
    opt.trace = &trace;
    const RunResult r = run_threads(opt, [&](Comm& c) { lab.run(c, cfg); });
    if (!r.ok()) throw Error("the DDP run failed: " + r.error);
    test::TempFolder dir("ddp_views");
    write_chrome_trace(trace, dir.file("ddp.json"));
    const TraceData json = parse_chrome_trace(test::read_file(dir.file("ddp.json")));
    const TraceData binary = load_trace(dir.file("ddp.json"));  // the .dtlt companion
    if (json.events.size() != binary.events.size()) throw Error("the JSON and the .dtlt differ");
    return json;
  }();
  return d;
}

int count_spans(const TraceData& d, int rank, const std::string& label) {
  int n = 0;
  for (const Event& e : d.events) n += e.rank == rank && e.kind == EventKind::compute && d.label(e.label) == label;
  return n;
}

}  // namespace

TEST(DdpTrace, PerLayerSpansBucketStepsFormulaAndNoEmptyRank) {
  const TraceData& d = ddp_trace();
  const TraceIndex x = index_trace(d, StepUnit::collectives);
  for (int r = 0; r < 4; ++r)
    for (int l = 0; l < 4; ++l) {  // 2 steps, a span per layer inside forward and backward
      EXPECT_EQ(count_spans(d, r, "forward " + std::to_string(l)), 2) << "rank " << r;
      EXPECT_EQ(count_spans(d, r, "backward " + std::to_string(l)), 2) << "rank " << r;
    }
  // Steps: one per world collective, rank 0's; 3 bucket all-reduces in each of the 2 steps.
  std::set<std::uint64_t> bucket_bytes;
  int buckets = 0;
  for (const Event& e : x.steps()) {
    EXPECT_EQ(e.rank, 0);
    EXPECT_EQ(e.axis, GroupAxis::none);  // the world communicator: no group
    EXPECT_EQ(e.group_rank, -1);
    if (d.label(e.label) == "all_reduce" && e.bytes > 64) ++buckets, bucket_bytes.insert(e.bytes);
  }
  EXPECT_EQ(buckets, 2 * 3);
  std::set<int> training_steps;  // a collective takes the step of its rank's compute before it
  for (const Event& e : x.steps())
    if (d.label(e.label) == "all_reduce" && e.bytes > 64) training_steps.insert(e.step);
  EXPECT_EQ(training_steps, (std::set<int>{0, 1}));
  EXPECT_EQ(bucket_bytes.size(), 3u);
  // The formula: 16 B per parameter of the default MLP (64-256-256-256-64 with biases).
  const double params = 64 * 256 + 256 + 2 * (256 * 256 + 256) + 256 * 64 + 64;
  const MemoryPicture end = memory_at(d, d.t_end);
  EXPECT_DOUBLE_EQ(end.formula, 16 * params);
  EXPECT_NE(end.formula_text.find("16 B/param"), std::string::npos);
  for (int r = 0; r < 4; ++r) EXPECT_GE(double(end.peak[std::size_t(r)]), 16 * params) << "rank " << r;
  // The reference phase is hidden: the view opens on the timed phases, never before rank 0's
  // reference ends (the other ranks enter theirs and wait while rank 0 still runs it); and
  // at the first bucket all-reduce every rank (rank 0 too) holds its model: no empty bar.
  const TimeRange shown = shown_range(d, x, false);
  ASSERT_TRUE(x.reference);
  ASSERT_TRUE(x.timed);
  EXPECT_EQ(shown.begin, std::max(x.reference->end, x.timed->begin));
  EXPECT_EQ(shown.end, x.timed->end);
  const auto first_bucket = std::find_if(x.steps().begin(), x.steps().end(), [&](const Event& e) {
    return d.label(e.label) == "all_reduce" && e.bytes > 64;
  });
  ASSERT_NE(first_bucket, x.steps().end());
  // When the first step (a barrier) ends, every rank has reached it, so each has built its
  // model (rank 0's barrier may begin before a slow-starting rank allocates); and later.
  for (const std::int64_t t : {x.steps().front().end_ns, first_bucket->end_ns}) {
    const MemoryPicture at = memory_at(d, t);
    for (int r = 0; r < 4; ++r)
      EXPECT_EQ(at.now[std::size_t(r)].bytes[std::size_t(MemTag::param)], std::uint64_t(4 * params))
          << "rank " << r << " at " << t;
  }
}

TEST(EventGroup, AxisAndGroupRankSurviveJsonAndBinaryAndAreChecked) {
  Trace trace(4);
  Event e = span(EventKind::collective, 3, 10, 20, trace.label("all_reduce"));
  e.stream = kStreamComm;
  e.axis = GroupAxis::tp;
  e.group_rank = 1;
  trace.record(e);
  trace.record(span(EventKind::compute, 2, 5, 30));
  test::TempFolder dir("event_group");
  write_chrome_trace(trace, dir.file("g.json"));
  for (const TraceData& d :
       {parse_chrome_trace(test::read_file(dir.file("g.json"))), load_trace(dir.file("g.json.dtlt"))}) {
    ASSERT_EQ(d.events.size(), 2u);
    const Event& c = d.events[0].kind == EventKind::collective ? d.events[0] : d.events[1];
    const Event& k = d.events[0].kind == EventKind::collective ? d.events[1] : d.events[0];
    EXPECT_EQ(c.axis, GroupAxis::tp);
    EXPECT_EQ(c.group_rank, 1);
    EXPECT_EQ(k.axis, GroupAxis::none);
    EXPECT_EQ(k.group_rank, -1);
  }
  const std::string bad_axis =
      "{\"traceEvents\":[{\"ph\":\"X\",\"pid\":0,\"ts\":1,\"dur\":1,\"cat\":\"collective\",\"args\":{\"axis\":\"zz\"}}]"
      "}";
  EXPECT_THROW(parse_chrome_trace(bad_axis), Error);
  BinaryTrace b = read_binary_trace(dir.file("g.json.dtlt"));
  b.events[0].axis = GroupAxis(9);
  write_binary_trace(b, dir.file("bad.dtlt"));
  try {
    read_binary_trace(dir.file("bad.dtlt"));
    ADD_FAILURE() << "an unknown axis was accepted";
  } catch (const Error& err) { EXPECT_NE(std::string(err.what()).find("group axis"), std::string::npos) << err.what(); }
}

TEST(TimeCuts, LeaveTheLearnersWaitsOutOfTheAxis) {
  const TimeCuts cuts({{100, 1100}, {1500, 3500}, {1000, 1200}});  // the first two overlap: merged
  ASSERT_EQ(cuts.ranges().size(), 2u);
  EXPECT_EQ(cuts.ranges()[0].end, 1200);
  EXPECT_DOUBLE_EQ(cuts.compress(50), 50);
  EXPECT_DOUBLE_EQ(cuts.compress(600), 100);   // inside a cut: at its break
  EXPECT_DOUBLE_EQ(cuts.compress(1300), 200);  // 1300 - 1100 cut before it
  EXPECT_DOUBLE_EQ(cuts.compress(4000), 900);  // 4000 - 1100 - 2000
  for (double t : {0.0, 50.0, 1300.0, 1499.0, 3600.0, 9000.0}) EXPECT_DOUBLE_EQ(cuts.expand(cuts.compress(t)), t) << t;
  EXPECT_DOUBLE_EQ(cuts.expand(100), 100);     // a break maps to its cut's start
  EXPECT_DOUBLE_EQ(cuts.compress(1200), 100);  // (and so does its end)

  // An axis over [0, 3600] real ns, 500 without the waits, on 500 px: a pixel per run ns.
  TimeAxis axis{0, 3600, 0, 500, &cuts};
  EXPECT_FLOAT_EQ(axis.to_x(1300), 200);
  EXPECT_FLOAT_EQ(axis.to_x(3600), 500);
  EXPECT_DOUBLE_EQ(axis.to_t(200), 1300);
  axis.zoom(2, 250);  // around compressed 250 (real 1350): 125..375 compressed
  EXPECT_DOUBLE_EQ(axis.compress(axis.t0), 125);
  EXPECT_DOUBLE_EQ(axis.compress(axis.t1), 375);
}

TEST(Lanes, ASliceStackPhaseThenBackwardThenItsLayers) {
  TraceData d;
  d.ranks = 1;
  d.labels = {"", "backward", "backward 1", "backward 0", "phase"};
  d.events = {span(EventKind::phase, 0, 0, 100, 4), span(EventKind::compute, 0, 10, 90, 1),
              span(EventKind::compute, 0, 10, 40, 2), span(EventKind::compute, 0, 50, 80, 3)};
  const std::vector<Track> tracks = layout_tracks(d);
  ASSERT_EQ(tracks.size(), 3u);  // the phase on lane 0, backward under it, its layers under that
  EXPECT_EQ(tracks[0].events.size(), 1u);
  EXPECT_EQ(d.label(d.events[tracks[0].events[0]].label), "phase");
  EXPECT_EQ(tracks[1].events.size(), 1u);
  EXPECT_EQ(d.label(d.events[tracks[1].events[0]].label), "backward");
  EXPECT_EQ(tracks[2].events.size(), 2u);
  EXPECT_EQ(d.label(d.events[tracks[2].events[0]].label), "backward 1");
}

// ---- pipeline view (viz/views/pipeline/pipeline_model) ----------------------------------------------

namespace {

// Labels of the synthetic pipeline traces.
enum : std::uint16_t { kGpipe = 1, kF, kB, kOptimizer, k1f1b, kW };

Event action(int stage, std::uint16_t op, int mb, int step, std::int64_t b, std::int64_t e, int chunk = 0) {
  Event ev = span(EventKind::compute, stage, b, e, op);
  ev.micro_batch = std::int16_t(mb);
  ev.step = step;
  ev.chunk = chunk;
  return ev;
}

// GPipe on 2 stages, 2 micro-batches, F = 100 ns, B = 200 ns, starting at `t`:
//   stage 0: F0 F1 . . . . B0 B0 B1 B1      busy 600 of 900 each, so
//   stage 1: .  F0 F1 B0 B0 B1 B1 . .       bubble = 1 - 1200 / (2 x 900) = 1/3 = (P-1)/(M+P-1)
void gpipe_step(std::vector<Event>& ev, int step, std::int64_t t) {
  ev.push_back(action(0, kF, 0, step, t, t + 100));
  ev.push_back(action(0, kF, 1, step, t + 100, t + 200));
  ev.push_back(action(1, kF, 0, step, t + 100, t + 200));
  ev.push_back(action(1, kF, 1, step, t + 200, t + 300));
  ev.push_back(action(1, kB, 0, step, t + 300, t + 500));
  ev.push_back(action(1, kB, 1, step, t + 500, t + 700));
  ev.push_back(action(0, kB, 0, step, t + 500, t + 700));
  ev.push_back(action(0, kB, 1, step, t + 700, t + 900));
  for (int r = 0; r < 2; ++r) ev.push_back(span(EventKind::compute, r, t + 950, t + 990, kOptimizer));  // not an action
}

TraceData pipeline_trace() {
  TraceData d;
  d.ranks = 2;
  d.labels = {"", "gpipe", "F", "B", "optimizer", "1f1b", "W"};
  d.roles = {{},
             Role{.part = RunPart::timed, .schedule = ScheduleKind::gpipe},
             Role{.pass = Pass::forward},
             Role{.pass = Pass::backward},
             Role{.pass = Pass::optimizer},
             Role{.part = RunPart::timed, .schedule = ScheduleKind::one_f_one_b},
             Role{.pass = Pass::weight}};
  std::vector<Event>& ev = d.events;
  for (int r = 0; r < 2; ++r) ev.push_back(span(EventKind::phase, r, 900, 6000, kGpipe));
  gpipe_step(ev, 0, 1000);
  gpipe_step(ev, 1, 3000);
  ev.push_back(action(0, kF, 0, 2, 5000, 5100));      // step 2 only began: incomplete
  Event send = span(EventKind::send, 0, 1100, 1110);  // p2p: not an action
  send.peer = 1;
  ev.push_back(send);
  // Then 1f1b with chunks (its own phase), one step, and a W: 2 stages x 1 micro-batch.
  for (int r = 0; r < 2; ++r) ev.push_back(span(EventKind::phase, r, 7000, 8000, k1f1b));
  ev.push_back(action(0, kF, 0, 0, 7000, 7100, 1));
  ev.push_back(action(1, kF, 0, 0, 7100, 7200, 1));
  ev.push_back(action(1, kB, 0, 0, 7200, 7300, 1));
  ev.push_back(action(1, kW, 0, 0, 7300, 7400, 1));
  ev.push_back(action(0, kB, 0, 0, 7300, 7400, 1));
  ev.push_back(action(0, kW, 0, 0, 7400, 7500, 1));
  std::stable_sort(ev.begin(), ev.end(), [](const Event& a, const Event& b) {
    return a.begin_ns != b.begin_ns ? a.begin_ns < b.begin_ns : a.rank < b.rank;
  });
  d.t_begin = 900, d.t_end = 8000;
  d.meta["report"] =
      R"json({"rows": [{"id": "gpipe.bubble", "measured": 0.34, "predicted": 0.3333333333333333, "source": "(P-1)/(M+P-1)"},
                                  {"id": "gpipe.bubble_vs_compute", "measured": 0.5, "predicted": 0.5},
                                  {"id": "1f1b.bubble", "measured": 7, "predicted": "oops"}, 17, {"id": ".bubble"}]})json";
  return d;
}

const char* kSimulated =
    R"({"stages": 2, "micro_batches": 2, "chunks": 1, "makespan": 9e-7, "bubble": 0.3333333333333333,
  "actions": [[0, "F", 0, 0, 0.0, 1e-7], [0, "F", 1, 0, 1e-7, 2e-7], [1, "F", 0, 0, 1e-7, 2e-7], [1, "F", 1, 0, 2e-7, 3e-7],
              [1, "B", 0, 0, 3e-7, 5e-7], [1, "B", 1, 0, 5e-7, 7e-7], [0, "B", 0, 0, 5e-7, 7e-7], [0, "B", 1, 0, 7e-7, 9e-7]]})";

}  // namespace

TEST(PipelineModel, EachSchedulesActionsAndItsCompleteSteps) {
  const TraceData d = pipeline_trace();
  const PipelineRuns runs = pipeline_runs(d);
  ASSERT_EQ(runs.runs.size(), 2u);
  EXPECT_EQ(runs.dropped, 0u);
  EXPECT_EQ(runs.runs[0].schedule, "gpipe");  // in time order
  EXPECT_EQ(runs.runs[1].schedule, "1f1b");
  const PipelineRun& g = *runs.find("gpipe");
  EXPECT_EQ(g.actions.size(), 17u);  // 2 steps x 8, and step 2's first F; no optimizer, no send
  ASSERT_EQ(g.steps.size(), 3u);
  EXPECT_TRUE(g.steps[0].complete);
  EXPECT_TRUE(g.steps[1].complete);
  EXPECT_FALSE(g.steps[2].complete);
  EXPECT_EQ(g.last_complete, 1);
  EXPECT_EQ(g.steps[1].begin_ns, 3000);
  EXPECT_EQ(g.steps[1].end_ns, 3900);
  EXPECT_EQ(pipeline_step_at(g, 3450), 1);
  EXPECT_EQ(pipeline_step_at(g, 2950), -1);  // between steps (the optimizer)
  EXPECT_EQ(runs.find("zb-h1"), nullptr);
}

TEST(PipelineModel, TheStepsBlocksAndTheBubbleOfTwoStagesOfGpipe) {
  const TraceData d = pipeline_trace();
  const PipelineRuns runs = pipeline_runs(d);
  const PipelineStep s = pipeline_step(d, *runs.find("gpipe"));  // the last complete step: 1, not the begun 2
  EXPECT_EQ(s.step, 1);
  EXPECT_TRUE(s.complete);
  EXPECT_EQ(s.stages, 2);
  EXPECT_EQ(s.micro_batches, 2);
  EXPECT_EQ(s.chunks, 1);
  EXPECT_EQ(s.begin_ns, 3000);
  EXPECT_DOUBLE_EQ(s.makespan(), 900e-9);
  // Independent reference: 1 - (2 stages x 600 ns busy) / (2 x 900 ns) = 1/3 = (P-1)/(M+P-1).
  EXPECT_DOUBLE_EQ(s.bubble, 1.0 / 3.0);
  ASSERT_EQ(s.stage_idle.size(), 2u);
  EXPECT_DOUBLE_EQ(s.stage_idle[0], 300.0 / 900.0);
  EXPECT_DOUBLE_EQ(s.stage_idle[1], 300.0 / 900.0);
  ASSERT_EQ(s.blocks.size(), 8u);
  struct Want {
    int stage;
    Pass op;
    int mb;
    double b, e;
  };
  const Want want[] = {{0, Pass::forward, 0, 0, 100},    {0, Pass::forward, 1, 100, 200},
                       {0, Pass::backward, 0, 500, 700}, {0, Pass::backward, 1, 700, 900},
                       {1, Pass::forward, 0, 100, 200},  {1, Pass::forward, 1, 200, 300},
                       {1, Pass::backward, 0, 300, 500}, {1, Pass::backward, 1, 500, 700}};
  for (std::size_t i = 0; i < 8; ++i) {
    const PipeBlock& k = s.blocks[i];
    EXPECT_EQ(k.stage, want[i].stage) << "block " << i;
    EXPECT_EQ(k.op, want[i].op) << "block " << i;
    EXPECT_EQ(k.micro_batch, want[i].mb) << "block " << i;
    EXPECT_NEAR(k.begin, want[i].b * 1e-9, 1e-18) << "block " << i;
    EXPECT_NEAR(k.end, want[i].e * 1e-9, 1e-18) << "block " << i;
  }
  // A step asked for by number; one not there falls back to the last complete.
  EXPECT_EQ(pipeline_step(d, *runs.find("gpipe"), 0).begin_ns, 1000);
  EXPECT_EQ(pipeline_step(d, *runs.find("gpipe"), 2).blocks.size(), 1u);
  EXPECT_FALSE(pipeline_step(d, *runs.find("gpipe"), 2).complete);
  // M is the run's (its meta), not the micro-batches a step in progress has shown so far.
  EXPECT_EQ(pipeline_step(d, *runs.find("gpipe"), 2).micro_batches, 1) << "one block seen so far";
  TraceData with_m = d;
  with_m.meta[meta_key_name(MetaKey::micro_batches)] = "2";
  EXPECT_EQ(pipeline_step(with_m, *pipeline_runs(with_m).find("gpipe"), 2).micro_batches, 2);
  with_m.meta[meta_key_name(MetaKey::micro_batches)] = "2147483647";  // hostile: clamped
  EXPECT_EQ(pipeline_step(with_m, *pipeline_runs(with_m).find("gpipe"), 2).micro_batches, 1 << 16);
  EXPECT_EQ(pipeline_step(d, *runs.find("gpipe"), 99).step, 1);
  // 1f1b with W and chunk 1: chunks = 2, every stage busy 300 of 500.
  const PipelineStep o = pipeline_step(d, *runs.find("1f1b"));
  EXPECT_EQ(o.step, 0);
  EXPECT_TRUE(o.complete);
  EXPECT_EQ(o.chunks, 2);
  EXPECT_EQ(o.blocks.size(), 6u);
  EXPECT_DOUBLE_EQ(o.bubble, 1 - 600.0 / 1000.0);
}

// A replay's timeline opens on one timed step (issue 27, item 7): the second training step of
// the first timed phase, from its first compute span to the next step's; a phase without
// numbered steps opens whole; nothing timed: the whole run, as before.
TEST(TimelineOpening, OneStepOfTheFirstTimedPhase) {
  const TraceData d = pipeline_trace();  // gpipe: steps 0 (from 1000), 1 (from 3000), 2 (from 5000, begun)
  const std::optional<TimeRange> step = first_timed_step(d);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->begin, 3000);
  EXPECT_EQ(step->end, 5000);
  const std::optional<TimeRange> phase = first_timed_step(phased_trace());  // "DDP" is its only timed phase, no steps
  ASSERT_TRUE(phase);
  EXPECT_EQ(phase->begin, 500);
  EXPECT_EQ(phase->end, 600);
  TraceData untimed = pipeline_trace();
  for (Role& r : untimed.roles) r.part = RunPart::none;
  EXPECT_FALSE(first_timed_step(untimed));
}

// Which rank draws which stage: every rank its own; in a dp × tp × pp grid (meta "grid",
// Megatron's layout) each stage's dp 0, tp 0 rank; a hostile grid that does not fit the
// trace's ranks counts as none.
TEST(PipelineModel, EachStageIsDrawnByItsFirstRankInAGrid) {
  TraceData d;
  d.ranks = 8;
  EXPECT_EQ(pipeline_stages(d).of_rank, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  d.meta[meta_key_name(MetaKey::grid)] = R"({"dp":2,"tp":2,"pp":2})";
  const PipelineStages g = pipeline_stages(d);
  EXPECT_EQ(g.of_rank, (std::vector<int>{0, -1, -1, -1, 1, -1, -1, -1}));  // ranks 0 and 4: pp 0 and 1 at dp 0, tp 0
  EXPECT_EQ(g.count, 2);
  d.meta[meta_key_name(MetaKey::grid)] = R"({"dp":3,"tp":2,"pp":2})";  // 12 ≠ 8 ranks
  EXPECT_EQ(pipeline_stages(d).count, 8);
}

TEST(PipelineModel, TheFormulaComesFromTheReportsBubbleRow) {
  const auto rows = report_bubbles(pipeline_trace());
  ASSERT_EQ(rows.count("gpipe"), 1u);
  EXPECT_DOUBLE_EQ(rows.at("gpipe").predicted, 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(rows.at("gpipe").measured, 0.34);
  EXPECT_EQ(rows.at("gpipe").source, "(P-1)/(M+P-1)");
  EXPECT_EQ(rows.at("gpipe").provenance, Provenance::formula);  // no "provenance": a formula
  ASSERT_EQ(rows.count("1f1b"), 1u);                            // malformed numbers: absent, not a crash
  EXPECT_EQ(rows.at("1f1b").predicted, -1);
  EXPECT_EQ(rows.at("1f1b").measured, -1);
  EXPECT_EQ(rows.count(""), 0u);
  TraceData bad;
  bad.meta["report"] = "{\"rows\": [";
  EXPECT_TRUE(report_bubbles(bad).empty());
  TraceData zb;  // the simulator's prediction is told by its provenance, not by the words of its source
  zb.meta["report"] = R"json({"rows": [{"id": "zb-h1.bubble", "measured": 0.2, "predicted": 0.1, "source": "anything",
                                        "provenance": "simulated"}]})json";
  EXPECT_EQ(report_bubbles(zb).at("zb-h1").provenance, Provenance::simulated);
}

TEST(PipelineModel, ParsesTheSimulatedTimeline) {
  SimulatedPipeline sim;
  std::string why;
  ASSERT_TRUE(parse_simulated_pipeline(kSimulated, sim, why)) << why;
  EXPECT_EQ(sim.stages, 2);
  EXPECT_EQ(sim.micro_batches, 2);
  EXPECT_EQ(sim.chunks, 1);
  EXPECT_DOUBLE_EQ(sim.makespan, 9e-7);
  EXPECT_DOUBLE_EQ(sim.bubble, 1.0 / 3.0);
  ASSERT_EQ(sim.blocks.size(), 8u);
  EXPECT_EQ(sim.blocks[2].stage, 0);  // sorted by (stage, begin)
  EXPECT_EQ(sim.blocks[2].op, Pass::backward);
  EXPECT_DOUBLE_EQ(sim.blocks[2].begin, 5e-7);
  ASSERT_EQ(sim.stage_idle.size(), 2u);
  EXPECT_NEAR(sim.stage_idle[0], 1.0 / 3.0, 1e-12);  // the same step as the measured one: the same idle
  TraceData d = pipeline_trace();
  d.meta["pipeline_simulated.zb-h1"] = kSimulated;
  d.meta["pipeline_simulated.gpipe"] = kSimulated;
  const SimulatedPipelines all = simulated_pipelines(d, {"gpipe", "1f1b"});
  ASSERT_EQ(all.runs.size(), 2u);
  EXPECT_EQ(all.runs[0].schedule, "gpipe");  // the measured runs' order first, the rest after
  EXPECT_EQ(all.runs[1].schedule, "zb-h1");
  EXPECT_TRUE(all.notes.empty());
}

TEST(PipelineModel, AMalformedSimulatedTimelineIsLeftOutWithANote) {
  const std::string good = kSimulated;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const std::size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  const std::vector<std::string> bad = {
      "",
      "[]",
      "{",
      "null",
      good.substr(0, good.size() / 2),
      std::string(5000, '[') + std::string(5000, ']'),
      with("\"stages\": 2", "\"stages\": 0"),
      with("\"stages\": 2", "\"stages\": 1.5"),
      with("\"stages\": 2", "\"stages\": 18446744073709551615"),
      with("\"stages\": 2", "\"stages\": -3"),
      with("\"micro_batches\": 2", "\"micro_batches\": \"2\""),
      with("\"chunks\": 1", "\"chunks\": 99999"),
      with("\"makespan\": 9e-7", "\"makespan\": -1"),
      with("\"makespan\": 9e-7", "\"makespan\": 1e300"),
      with("\"bubble\": 0.3333333333333333", "\"bubble\": 2"),
      with("[0, \"F\", 0, 0, 0.0, 1e-7]", "[2, \"F\", 0, 0, 0.0, 1e-7]"),
      with("[0, \"F\", 0, 0, 0.0, 1e-7]", "[0, \"X\", 0, 0, 0.0, 1e-7]"),
      with("[0, \"F\", 0, 0, 0.0, 1e-7]", "[0, \"F\", 2, 0, 0.0, 1e-7]"),
      with("[0, \"F\", 0, 0, 0.0, 1e-7]", "[0, \"F\", 0, 1, 0.0, 1e-7]"),
      with("[0, \"F\", 0, 0, 0.0, 1e-7]", "[0, \"F\", 0, 0, 2e-7, 1e-7]"),
      with("[0, \"F\", 0, 0, 0.0, 1e-7]", "[0, \"F\", 0, 0, 0.0, 5.0]"),
      with("[0, \"F\", 0, 0, 0.0, 1e-7]", "[0, \"F\", 0, 0, 0.0]"),
      with("[0, \"F\", 0, 0, 0.0, 1e-7]", "{\"stage\": 0}"),
      with("[0, \"F\", 0, 0, 0.0, 1e-7]", "[0, [\"F\"], 0, 0, 0.0, 1e-7]"),
      with("\"actions\": [", "\"actions\": 3, \"x\": ["),
      // 13 actions where 2 stages x 2 micro-batches x 1 chunk x 3 ops allow 12
      with("[0, \"F\", 0, 0, 0.0, 1e-7]",
           "[0, \"F\", 0, 0, 0.0, 1e-7]" + std::string(5, ' ') +
               ", [0, \"F\", 0, 0, 0.0, 1e-7], [0, \"F\", 0, 0, 0.0, 1e-7], [0, \"F\", 0, 0, 0.0, 1e-7], [0, \"F\", 0, "
               "0, 0.0, 1e-7], [0, \"F\", 0, 0, 0.0, 1e-7]"),
  };
  TraceData d;
  for (std::size_t i = 0; i < bad.size(); ++i) {
    SimulatedPipeline sim;
    std::string why;
    EXPECT_FALSE(parse_simulated_pipeline(bad[i], sim, why)) << "case " << i << ": " << bad[i].substr(0, 120);
    EXPECT_FALSE(why.empty()) << "case " << i;
    d.meta["pipeline_simulated.bad" + std::to_string(100 + i)] = bad[i];
  }
  d.meta["pipeline_simulated.good"] = kSimulated;
  const SimulatedPipelines all = simulated_pipelines(d);
  ASSERT_EQ(all.runs.size(), 1u);  // the good one survives its malformed neighbours
  EXPECT_EQ(all.runs[0].schedule, "good");
  EXPECT_EQ(all.notes.size(), kMaxPipelineSchedules);  // one per entry left out, bounded
  EXPECT_NE(all.notes[0].find("pipeline_simulated.bad100: "), std::string::npos) << all.notes[0];
  // More timelines than the view stacks: the first kMaxPipelineSchedules, and a note.
  TraceData many;
  for (int i = 0; i < 20; ++i) many.meta["pipeline_simulated.s" + std::to_string(10 + i)] = kSimulated;
  const SimulatedPipelines m = simulated_pipelines(many);
  EXPECT_EQ(m.runs.size(), kMaxPipelineSchedules);
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_EQ(m.notes[0], "12 more simulated timelines left out (the limit is 8)");
}

TEST(PipelineModel, ActionsOutsideAnyPhaseAndHostileFieldsAreHandled) {
  TraceData d;
  d.ranks = 2;
  d.labels = {"", "F", "B"};
  d.roles = {{}, Role{.pass = Pass::forward}, Role{.pass = Pass::backward}};
  d.meta["schedule"] = "zb-h1";
  d.events = {action(0, 1, 0, 0, 0, 10),  action(1, 1, 0, 0, 10, 20), action(1, 2, 0, 0, 20, 40),
              action(0, 2, 0, 0, 40, 60), action(5, 1, 0, 0, 0, 10),  // a rank beyond the trace's: ignored
              action(0, 1, -7, 0, 60, 70)};  // a negative micro-batch: drawn as 0, makes the step incomplete
  d.events.back().chunk = 1 << 30;
  const PipelineRuns runs = pipeline_runs(d);
  ASSERT_EQ(runs.runs.size(), 1u);
  EXPECT_EQ(runs.runs[0].schedule, "zb-h1");  // a live run's schedule whose phase has not ended
  const PipelineStep s = pipeline_step(d, runs.runs[0]);
  EXPECT_EQ(s.step, 0);
  EXPECT_FALSE(s.complete);  // stage 0 ran two F, stage 1 one
  EXPECT_EQ(s.blocks.size(), 5u);
  EXPECT_LE(s.chunks, trace_limits::kMaxChunks + 1);
  EXPECT_GE(s.bubble, 0);
  EXPECT_LE(s.bubble, 1);
  TraceData empty;
  EXPECT_TRUE(pipeline_runs(empty).runs.empty());
  EXPECT_EQ(pipeline_step(empty, PipelineRun{}).step, -1);
}
