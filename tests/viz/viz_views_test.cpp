// The views' plain-code parts added for DDP (issue 13): the time axis and the memory
// axis, the hidden 1-rank reference phase, stepping by collectives, the memory picture
// with the lab's formula, where each lab's views go, and a real DDP trace through them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/comm/threads_backend.h"
#include "core/error.h"
#include "core/trace/binary_trace.h"
#include "core/trace/chrome_writer.h"
#include "labs/lab.h"
#include "tests/viz/trace_fixtures.h"
#include "viz/model/axes.h"
#include "viz/model/memory_model.h"
#include "viz/model/panels.h"
#include "viz/model/trace_index.h"

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
  EXPECT_EQ(labels(time_ticks(0, 55e6, 0, 1000, 80)),
            (V{"0 ms", "5 ms", "10 ms", "15 ms", "20 ms", "25 ms", "30 ms", "35 ms", "40 ms", "45 ms", "50 ms", "55 ms"}));
  // Zoomed to 100 µs at 40 ms: 10 µs steps, still in ms (the magnitude), with the decimals they need.
  EXPECT_EQ(labels(time_ticks(40e6, 40.1e6, 0, 1000, 80)).front(), "40 ms");
  EXPECT_EQ(labels(time_ticks(40e6, 40.1e6, 0, 1000, 80))[1], "40.01 ms");
  // Counted from the origin (the run after the reference phase), not from the trace's zero.
  EXPECT_EQ(labels(time_ticks(1e9, 1.0008e9, 1e9, 800, 100)), (V{"0 µs", "100 µs", "200 µs", "300 µs", "400 µs", "500 µs", "600 µs", "700 µs", "800 µs"}));
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
  d.labels[1] = "warm-up";
  EXPECT_EQ(shown_range(d, index_trace(d), false).begin, 0);
  d.labels[1] = kReferencePhaseLabel;
  d.events[0].end_ns = 9600;
  EXPECT_EQ(shown_range(d, index_trace(d), false).begin, 0);
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

TEST(Panels, EachLabsViewsTileTheWindowMainViewTallest) {
  const Rect area{0, 40, 1600, 960};
  for (const LabInfo& lab : lab_registry()) {
    const std::vector<PanelPlace> p = arrange_panels(lab.views, area, 8);
    ASSERT_EQ(p.size(), lab.views.size()) << lab.name;
    double covered = 0;
    for (std::size_t i = 0; i < p.size(); ++i) {
      const Rect& r = p[i].rect;
      EXPECT_TRUE(r.x >= area.x && r.y >= area.y && r.x + r.w <= area.x + area.w + 0.01f && r.y + r.h <= area.y + area.h + 0.01f)
          << lab.name << " " << view_kind_name(p[i].kind);
      covered += double(r.w) * r.h;
      for (std::size_t j = 0; j < i; ++j) {
        const Rect& q = p[j].rect;
        const bool apart = r.x >= q.x + q.w || q.x >= r.x + r.w || r.y >= q.y + q.h || q.y >= r.y + r.h;
        EXPECT_TRUE(apart) << lab.name << ": " << view_kind_name(p[i].kind) << " overlaps " << view_kind_name(p[j].kind);
      }
    }
    EXPECT_GT(covered, 0.95 * area.w * area.h) << lab.name;
    const auto main = std::find_if(p.begin(), p.end(), [&](const PanelPlace& x) { return x.kind == lab.views.front(); });
    for (const PanelPlace& x : p) EXPECT_GE(main->rect.h, x.rect.h) << lab.name << ": the main view gets the taller band";
  }
  // The ring is the collectives lab's alone.
  EXPECT_NE(std::count(find_lab("collectives")->views.begin(), find_lab("collectives")->views.end(), ViewKind::ring), 0);
  EXPECT_EQ(std::count(find_lab("ddp")->views.begin(), find_lab("ddp")->views.end(), ViewKind::ring), 0);
  // DDP: the timeline across the top, memory beside report below it.
  const std::vector<PanelPlace> ddp = arrange_panels(find_lab("ddp")->views, area, 8);
  EXPECT_EQ(ddp[0].kind, ViewKind::timeline);
  EXPECT_FLOAT_EQ(ddp[0].rect.w, 1600);
  EXPECT_LT(ddp[1].rect.x, ddp[2].rect.x);
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
  // The reference phase is hidden, and at the first bucket all-reduce every rank (rank 0
  // too, which ran the reference first) holds its model: no empty bar.
  const TimeRange shown = shown_range(d, x, false);
  ASSERT_TRUE(x.reference);
  EXPECT_EQ(shown.begin, x.reference->end);
  const auto first_bucket = std::find_if(x.steps().begin(), x.steps().end(),
                                         [&](const Event& e) { return d.label(e.label) == "all_reduce" && e.bytes > 64; });
  ASSERT_NE(first_bucket, x.steps().end());
  for (const std::int64_t t : {x.steps().front().begin_ns, first_bucket->end_ns}) {  // cursor 0 (as step 1 begins), and later
    const MemoryPicture at = memory_at(d, t);
    for (int r = 0; r < 4; ++r)
      EXPECT_EQ(at.now[std::size_t(r)].bytes[std::size_t(MemTag::param)], std::uint64_t(4 * params)) << "rank " << r << " at " << t;
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
  for (const TraceData& d : {parse_chrome_trace(test::read_file(dir.file("g.json"))), load_trace(dir.file("g.json.dtlt"))}) {
    ASSERT_EQ(d.events.size(), 2u);
    const Event& c = d.events[0].kind == EventKind::collective ? d.events[0] : d.events[1];
    const Event& k = d.events[0].kind == EventKind::collective ? d.events[1] : d.events[0];
    EXPECT_EQ(c.axis, GroupAxis::tp);
    EXPECT_EQ(c.group_rank, 1);
    EXPECT_EQ(k.axis, GroupAxis::none);
    EXPECT_EQ(k.group_rank, -1);
  }
  const std::string bad_axis =
      "{\"traceEvents\":[{\"ph\":\"X\",\"pid\":0,\"ts\":1,\"dur\":1,\"cat\":\"collective\",\"args\":{\"axis\":\"zz\"}}]}";
  EXPECT_THROW(parse_chrome_trace(bad_axis), Error);
  BinaryTrace b = read_binary_trace(dir.file("g.json.dtlt"));
  b.events[0].axis = GroupAxis(9);
  write_binary_trace(b, dir.file("bad.dtlt"));
  try {
    read_binary_trace(dir.file("bad.dtlt"));
    ADD_FAILURE() << "an unknown axis was accepted";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("group axis"), std::string::npos) << err.what();
  }
}

TEST(TimeCuts, LeaveTheLearnersWaitsOutOfTheAxis) {
  const TimeCuts cuts({{100, 1100}, {1500, 3500}, {1000, 1200}});  // the first two overlap: merged
  ASSERT_EQ(cuts.ranges().size(), 2u);
  EXPECT_EQ(cuts.ranges()[0].end, 1200);
  EXPECT_DOUBLE_EQ(cuts.compress(50), 50);
  EXPECT_DOUBLE_EQ(cuts.compress(600), 100);    // inside a cut: at its break
  EXPECT_DOUBLE_EQ(cuts.compress(1300), 200);   // 1300 - 1100 cut before it
  EXPECT_DOUBLE_EQ(cuts.compress(4000), 900);   // 4000 - 1100 - 2000
  for (double t : {0.0, 50.0, 1300.0, 1499.0, 3600.0, 9000.0}) EXPECT_DOUBLE_EQ(cuts.expand(cuts.compress(t)), t) << t;
  EXPECT_DOUBLE_EQ(cuts.expand(100), 100);  // a break maps to its cut's start
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

TEST(TimeCuts, ACollectiveStillRunningWhenTheWorldWentQuietIsNotCut) {
  TraceData d;
  d.ranks = 2;
  d.events = {span(EventKind::collective, 0, 900, 1300), span(EventKind::compute, 1, 0, 5000)};
  const TimeCuts cuts = learner_wait_cuts(d, {{1000, 2000}, {3000, 4000}});
  ASSERT_EQ(cuts.ranges().size(), 2u);
  EXPECT_EQ(cuts.ranges()[0].begin, 1300);  // the all-reduce ran to 1300: the cut starts there
  EXPECT_EQ(cuts.ranges()[1].begin, 3000);  // compute spans (a backward waiting at the gate) do not hold it
}

TEST(Lanes, ALayersSpanGoesOnTheLaneUnderItsBackward) {
  TraceData d;
  d.ranks = 1;
  d.labels = {"", "backward", "backward 1", "backward 0", "phase"};
  d.events = {span(EventKind::phase, 0, 0, 100, 4), span(EventKind::compute, 0, 10, 90, 1),
              span(EventKind::compute, 0, 10, 40, 2), span(EventKind::compute, 0, 50, 80, 3)};
  const std::vector<Track> tracks = layout_tracks(d);
  ASSERT_EQ(tracks.size(), 2u);  // the phase and backward on lane 0 (a phase is a container), the layers under
  EXPECT_EQ(tracks[0].events.size(), 2u);
  EXPECT_EQ(tracks[1].events.size(), 2u);
  EXPECT_EQ(d.label(d.events[tracks[1].events[0]].label), "backward 1");
}
