// The tensor-parallel split view's model (viz/views/tensor_parallel/split_model.h): the meta "tp_split" as
// matrices cut into rank-owned bands, f/g markers, the layout, and which operator a
// collective at the cursor is, on crafted traces.
#include "viz/views/tensor_parallel/split_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

using namespace dtl;
using namespace dtl::viz;

namespace {

// The meta the lab writes for the GPT (labs/tensor_parallel/tp_report.cpp, split_meta).
std::string gpt_meta(int T, int h = 64, int heads = 4, int vocab = 64) {
  const std::string H = std::to_string(h), H3 = std::to_string(3 * h), H4 = std::to_string(4 * h);
  return "{\"T\":" + std::to_string(T) + ",\"model\":\"gpt\",\"layers\":2,\"hidden\":" + H +
         ",\"heads\":" + std::to_string(heads) + ",\"vocab\":" + std::to_string(vocab) + ",\"tensors\":[" +
         "{\"name\":\"wte\",\"rows\":" + std::to_string(vocab) + ",\"cols\":" + H +
         ",\"split\":\"vocab_rows\",\"region\":\"embedding\"}," +
         "{\"name\":\"h.0.ln_1.weight\",\"rows\":1,\"cols\":" + H +
         ",\"split\":\"replicated\",\"region\":\"attention\"}," +
         "{\"name\":\"h.0.attn.c_attn.weight\",\"rows\":" + H3 + ",\"cols\":" + H +
         ",\"split\":\"qkv_column\",\"region\":\"attention\"}," + "{\"name\":\"h.0.attn.c_proj.weight\",\"rows\":" + H +
         ",\"cols\":" + H + ",\"split\":\"row\",\"region\":\"attention\"}," +
         "{\"name\":\"h.0.ln_2.weight\",\"rows\":1,\"cols\":" + H + ",\"split\":\"replicated\",\"region\":\"mlp\"}," +
         "{\"name\":\"h.0.mlp.c_fc.weight\",\"rows\":" + H4 + ",\"cols\":" + H +
         ",\"split\":\"column\",\"region\":\"mlp\"}," + "{\"name\":\"h.0.mlp.c_proj.weight\",\"rows\":" + H +
         ",\"cols\":" + H4 + ",\"split\":\"row\",\"region\":\"mlp\"}]}";
}

std::string mlp_meta(int T) {
  return "{\"T\":" + std::to_string(T) + ",\"model\":\"mlp\",\"layers\":2,\"hidden\":64,\"tensors\":[" +
         "{\"name\":\"h.0.mlp.c_fc.weight\",\"rows\":256,\"cols\":64,\"split\":\"column\",\"region\":\"mlp\"}," +
         "{\"name\":\"h.0.mlp.c_proj.weight\",\"rows\":64,\"cols\":256,\"split\":\"row\",\"region\":\"mlp\"}]}";
}

// The bands cover the matrix exactly: inside it, pairwise disjoint, areas summing to it.
void expect_tiles(const SplitMatrix& m) {
  std::int64_t area = 0;
  for (std::size_t i = 0; i < m.bands.size(); ++i) {
    const SplitBand& a = m.bands[i];
    EXPECT_TRUE(a.c0 >= 0 && a.c0 <= a.c1 && a.c1 <= m.cols && a.r0 >= 0 && a.r0 <= a.r1 && a.r1 <= m.rows)
        << m.name << " band " << i;
    area += (a.c1 - a.c0) * (a.r1 - a.r0);
    for (std::size_t j = 0; j < i; ++j) {
      const SplitBand& b = m.bands[j];
      const bool apart = a.c1 <= b.c0 || b.c1 <= a.c0 || a.r1 <= b.r0 || b.r1 <= a.r0;
      EXPECT_TRUE(apart) << m.name << ": bands " << j << " and " << i << " overlap";
    }
  }
  EXPECT_EQ(area, m.rows * m.cols) << m.name;
}

const SplitMatrix& find(const SplitModel& s, const std::string& name) {
  for (const SplitMatrix& m : s.matrices)
    if (m.name == name) return m;
  throw std::runtime_error("no " + name);
}

Event event(EventKind kind, int rank, std::uint8_t stream, std::int64_t b, std::int64_t e, std::uint16_t label,
            std::uint64_t bytes = 0) {
  Event ev;
  ev.kind = kind, ev.rank = rank, ev.stream = stream, ev.begin_ns = b, ev.end_ns = e, ev.label = label,
  ev.bytes = bytes;
  return ev;
}

}  // namespace

TEST(SplitModel, BandsTileEveryMatrixForAnyT) {
  for (int T : {1, 2, 3, 4, 7}) {
    const SplitModel s = parse_split_model(gpt_meta(T, 84, 12, 50));
    ASSERT_EQ(s.message, "") << "T " << T;
    ASSERT_EQ(s.matrices.size(), 7u);
    EXPECT_TRUE(s.notes.empty());
    for (const SplitMatrix& m : s.matrices) expect_tiles(m);
  }
}

TEST(SplitModel, OwnersFollowEachSplitKind) {
  const SplitModel s = parse_split_model(gpt_meta(2));
  const SplitMatrix& wte = find(s, "wte");  // vocab_rows: rank r holds rows [V·r/T, V·(r+1)/T)
  ASSERT_EQ(wte.bands.size(), 2u);
  EXPECT_EQ(wte.bands[1].owner, 1);
  EXPECT_EQ(wte.bands[1].r0, 32);
  EXPECT_EQ(wte.bands[1].c1, 64);
  const SplitMatrix& ln = find(s, "h.0.ln_1.weight");  // replicated: one band, every rank
  ASSERT_EQ(ln.bands.size(), 1u);
  EXPECT_EQ(ln.bands[0].owner, -1);
  EXPECT_EQ(ln.bands[0].label, "every rank");
  const SplitMatrix& qkv = find(s, "h.0.attn.c_attn.weight");  // Q, K, V each in T bands of rows by heads
  ASSERT_EQ(qkv.bands.size(), 6u);
  const int owners[] = {0, 1, 0, 1, 0, 1};
  const std::int64_t starts[] = {0, 32, 64, 96, 128, 160};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(qkv.bands[i].owner, owners[i]) << i;
    EXPECT_EQ(qkv.bands[i].r0, starts[i]) << i;
  }
  EXPECT_EQ(qkv.bands[2].label, "K rank 0");
  const SplitMatrix& fc = find(s, "h.0.mlp.c_fc.weight");  // column: bands of rows (output features)
  EXPECT_EQ(fc.bands[1].r0, 128);
  EXPECT_EQ(fc.bands[1].c0, 0);
  EXPECT_EQ(fc.bands[1].c1, 64);
  const SplitMatrix& proj = find(s, "h.0.mlp.c_proj.weight");  // row: bands of columns (input features)
  EXPECT_EQ(proj.bands[1].owner, 1);
  EXPECT_EQ(proj.bands[1].c0, 128);
  EXPECT_EQ(proj.bands[1].r0, 0);
  EXPECT_EQ(proj.bands[1].r1, 64);
  EXPECT_EQ(proj.short_name(), "mlp.c_proj");
}

TEST(SplitModel, FBeforeEachColumnMatrixGAfterEachRowMatrix) {
  const SplitModel s = parse_split_model(gpt_meta(2));
  ASSERT_EQ(s.markers.size(), 4u);
  EXPECT_EQ(s.markers[0].op, 'f');
  EXPECT_EQ(s.matrices[s.markers[0].matrix].name, "h.0.attn.c_attn.weight");
  EXPECT_FALSE(s.markers[0].after);
  EXPECT_EQ(s.markers[1].op, 'g');
  EXPECT_EQ(s.matrices[s.markers[1].matrix].name, "h.0.attn.c_proj.weight");
  EXPECT_TRUE(s.markers[1].after);
  EXPECT_EQ(s.marker_of('f', "mlp"), 2);
  EXPECT_EQ(s.marker_of('g', "mlp"), 3);
  EXPECT_EQ(s.marker_of('g', "embedding"), -1);
  EXPECT_EQ(parse_split_model(mlp_meta(2)).markers.size(), 2u);
}

TEST(SplitModel, MissingOrInvalidMetaGivesAnEmptyModelWithAMessage) {
  EXPECT_NE(split_model(TraceData{}).message, "");
  EXPECT_TRUE(split_model(TraceData{}).empty());
  for (const char* bad :
       {"", "{", "[1]", "{\"T\":0,\"tensors\":[]}", "{\"T\":2}", "{\"T\":99999,\"tensors\":[{}]}",
        "{\"T\":2,\"tensors\":[1,{\"name\":\"x\",\"rows\":-1,\"cols\":2,\"split\":\"row\"}]}", "{\"T\":\"2\"}"}) {
    const SplitModel s = parse_split_model(bad);
    EXPECT_TRUE(s.empty()) << bad;
    EXPECT_NE(s.message, "") << bad;
    EXPECT_TRUE(s.markers.empty()) << bad;
  }
  // One bad tensor is left out with a note; the rest is drawn.
  const SplitModel s = parse_split_model(
      "{\"T\":2,\"tensors\":[{\"name\":\"a\",\"rows\":4,\"cols\":4,\"split\":\"diagonal\"},"
      "{\"name\":\"b\",\"rows\":4,\"cols\":4,\"split\":\"row\"},{\"name\":\"q\",\"rows\":4,\"cols\":4,\"split\":\"qkv_"
      "column\"}]}");
  ASSERT_EQ(s.matrices.size(), 1u);
  ASSERT_EQ(s.notes.size(), 2u);
  EXPECT_NE(s.notes[0].find("diagonal"), std::string::npos);
  EXPECT_EQ(s.message, "");
}

TEST(SplitLayout, OneScaleSlotsInsideTheAreaMarkersInTheGaps) {
  const SplitModel s = parse_split_model(gpt_meta(2));
  const Rect area{10, 20, 700, 500};
  const std::vector<float> label_w(s.matrices.size(), 120.0f);
  const SplitLayout g = layout_split(s, area, label_w, 30, 14);
  ASSERT_EQ(g.matrices.size(), s.matrices.size());
  ASSERT_EQ(g.marker_x.size(), s.markers.size());
  EXPECT_GT(g.scale, 0.3f);
  for (std::size_t i = 0; i < g.matrices.size(); ++i) {
    const Rect& m = g.matrices[i];
    const Rect& slot = g.slots[i];
    if (s.matrices[i].cols > 1 && s.matrices[i].rows > 1) {
      EXPECT_NEAR(m.w / m.h, float(s.matrices[i].cols) / float(s.matrices[i].rows), 1e-3f) << s.matrices[i].name;
    }
    EXPECT_GE(m.x, slot.x + 14 - 1e-3f);
    EXPECT_LE(m.x + m.w, slot.x + slot.w - 14 + 1e-3f);
    EXPECT_GE(slot.x, area.x - 1e-3f);
    EXPECT_LE(slot.x + slot.w, area.x + area.w + 1e-3f);
    EXPECT_LE(slot.y + slot.h, area.y + area.h + 1e-3f);
  }
  const Rect& fc = g.slots[s.markers[2].matrix];  // f of the MLP: in the gap before c_fc
  EXPECT_FLOAT_EQ(g.marker_x[2], fc.x + 7);
  EXPECT_TRUE(layout_split(SplitModel{}, area, {}, 30, 14).matrices.empty());
}

namespace {

// Two ranks, one layer: the blocks on the main stream, the collectives of each on comm.
struct Crafted {
  TraceData d;
  std::vector<std::size_t> rank0;  // indices of rank 0's collectives, in time order
};
// names: the collectives inside the forward block, then inside the backward block; each 10 ns.
Crafted crafted(const std::vector<std::string>& fwd, const std::vector<std::string>& bwd) {
  Crafted c;
  c.d.ranks = 2;
  c.d.labels = {"", "fwd block 1", "bwd block 1", "all_reduce", "all_gather", "reduce_scatter"};
  c.d.roles = {{},
               Role{.pass = Pass::forward, .block = 1},
               Role{.pass = Pass::backward, .block = 1},
               library_collective_role(CollectiveKind::all_reduce),
               library_collective_role(CollectiveKind::all_gather),
               library_collective_role(CollectiveKind::reduce_scatter)};
  auto label = [&](const std::string& n) {
    return std::uint16_t(std::find(c.d.labels.begin(), c.d.labels.end(), n) - c.d.labels.begin());
  };
  std::vector<Event> ev;
  auto block = [&](std::uint16_t l, std::int64_t t0, const std::vector<std::string>& names) {
    for (int r = 0; r < 2; ++r)
      ev.push_back(event(EventKind::compute, r, kStreamMain, t0, t0 + 20 * std::int64_t(names.size()) + 10, l));
    for (std::size_t i = 0; i < names.size(); ++i)
      for (int r = 0; r < 2; ++r)
        ev.push_back(event(EventKind::collective, r, kStreamComm, t0 + 5 + 20 * std::int64_t(i),
                           t0 + 15 + 20 * std::int64_t(i), label(names[i]), 32768));
  };
  ev.push_back(event(EventKind::collective, 0, kStreamComm, 0, 10, label("all_reduce"), 256));  // the embedding's
  block(1, 100, fwd);
  block(2, 1000, bwd);
  std::stable_sort(ev.begin(), ev.end(), [](const Event& a, const Event& b) { return a.begin_ns < b.begin_ns; });
  for (std::size_t i = 0; i < ev.size(); ++i)
    if (ev[i].kind == EventKind::collective && ev[i].rank == 0) c.rank0.push_back(i);
  c.d.events = std::move(ev);
  return c;
}

std::string ops(const Crafted& c, const SplitModel& s) {
  std::string out;
  for (std::size_t i : c.rank0) {
    const TpMoment t = tp_moment(c.d, s, c.d.events[i]);
    out += t.in_block ? std::string(1, t.op ? t.op : '?') + (t.regather ? "*" : "") + ":" + t.region +
                            (t.marker >= 0 ? "" : "!") + " "
                      : "out ";
  }
  return out;
}

}  // namespace

TEST(TpMoment, PlainGptForwardGAttentionGMlpBackwardFMlpFAttention) {
  const SplitModel s = parse_split_model(gpt_meta(2));
  const Crafted c = crafted({"all_reduce", "all_reduce"}, {"all_reduce", "all_reduce"});
  EXPECT_EQ(ops(c, s), "out g:attention g:mlp f:mlp f:attention ");
  const TpMoment t = tp_moment(c.d, s, c.d.events[c.rank0[3]]);
  EXPECT_EQ(t.layer, 1);
  EXPECT_FALSE(t.forward);
  EXPECT_EQ(t.marker, s.marker_of('f', "mlp"));
  EXPECT_EQ(t.caption, "layer 1 \xc2\xb7 backward \xc2\xb7 f before mlp.c_fc: all-reduce 32 KiB");
  EXPECT_EQ(tp_moment(c.d, s, c.d.events[c.rank0[0]]).caption,
            "outside the blocks: all-reduce 256 B (embedding, loss, or the check against one rank)");
}

TEST(TpMoment, MlpModelOneGForwardOneFBackward) {
  const SplitModel s = parse_split_model(mlp_meta(2));
  EXPECT_EQ(ops(crafted({"all_reduce"}, {"all_reduce"}), s), "out g:mlp f:mlp ");
}

TEST(TpMoment, SequenceParallelGathersAndScattersWithTheRegather) {
  const SplitModel gpt = parse_split_model(gpt_meta(2));
  const Crafted c =
      crafted({"all_gather", "reduce_scatter", "all_gather", "reduce_scatter"},
              {"all_gather", "all_gather", "reduce_scatter", "all_gather", "all_gather", "reduce_scatter"});
  EXPECT_EQ(ops(c, gpt),
            "out f:attention g:attention f:mlp g:mlp g:mlp f*:mlp f:mlp g:attention f*:attention f:attention ");
  const SplitModel mlp = parse_split_model(mlp_meta(2));
  EXPECT_EQ(ops(crafted({"all_gather", "reduce_scatter"}, {"all_gather", "all_gather", "reduce_scatter"}), mlp),
            "out f:mlp g:mlp g:mlp f*:mlp f:mlp ");
}

TEST(TpMoment, InFlightAtATimeAndNothingWhenIdle) {
  const SplitModel s = parse_split_model(gpt_meta(2));
  const Crafted c = crafted({"all_reduce", "all_reduce"}, {"all_reduce", "all_reduce"});
  const TpMoment t = tp_moment_at(c.d, s, 128);  // the forward's second all-reduce: 125..135
  ASSERT_TRUE(t.valid);
  EXPECT_EQ(t.rank, 0);
  EXPECT_EQ(t.op, 'g');
  EXPECT_EQ(t.region, "mlp");
  EXPECT_FALSE(tp_moment_at(c.d, s, 50).valid);
  EXPECT_FALSE(tp_moment(c.d, s, c.d.events[1]).valid);  // a compute span is no collective
  // No meta: the caption still says what moved.
  EXPECT_EQ(tp_moment_at(c.d, SplitModel{}, 128).caption, "layer 1 \xc2\xb7 forward \xc2\xb7 all-reduce 32 KiB");
}
