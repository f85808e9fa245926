// The collectives lab's view (ring_view.h): the run at the cursor in its algorithm's shape,
// each rank's buffer as chunk cells colored by how far they have come, the transfer in
// flight travelling along its edge, and the run's bytes so far beside its own formula.
//
// Cost follows pixels. While a rank's cells fit on its node (kMinCellPx each) they sit
// there; with more ranks (16 and up on a laptop screen) the nodes become small boxes and the
// cells a rank × chunk grid beside them, as `dtlab run ... --step` prints it; with hundreds
// of ranks each grid row folds to one bar colored by its mean.
#include "viz/views/collectives/ring_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <utility>

#include "labs/collectives/collectives_lab.h"
#include "viz/model/text_fit.h"

namespace dtl::viz {

namespace {

constexpr float kMinCellPx = 8;  // a chunk cell narrower than this is not readable on a node

struct Picture {
  const ChunkState* state = nullptr;  // nullptr: no chunk picture (too large)
  CellMeaning cells = CellMeaning::contributions;
  int P = 1, chunks = 1;
  int level(int r, int c) const { return state ? cell_level(*state, cells, r, c) : 1; }
  ImU32 color(int r, int c) const {
    const int l = level(r, c);
    return l == 0 ? IM_COL32(70, 72, 80, 255) : contribution_color(l, P);  // 0: not there yet
  }
};

// One rank's node with its cells on it (few ranks).
void draw_node_cells(ImDrawList* dl, const Picture& pic, Vec2 p, int r, float cell) {
  const float w = cell * float(pic.chunks);
  const ImVec2 a(p.x - w / 2, p.y - cell / 2), b(p.x + w / 2, p.y + cell / 2);
  dl->AddRectFilled(ImVec2(a.x - 2, a.y - 2), ImVec2(b.x + 2, b.y + 2), IM_COL32(40, 42, 48, 255), 3.0f);
  for (int c = 0; c < pic.chunks; ++c) {
    const ImVec2 c0(a.x + cell * float(c) + 1, a.y + 1), c1(a.x + cell * float(c + 1) - 1, b.y - 1);
    dl->AddRectFilled(c0, c1, pic.color(r, c), 2.0f);
    if (cell >= 14 && pic.state) {
      char num[8];
      std::snprintf(num, sizeof num, "%d", pic.level(r, c));
      dl->AddText(ImVec2(c0.x + 2, c0.y),
                  pic.level(r, c) == pic.P ? IM_COL32(255, 255, 255, 255) : IM_COL32(20, 20, 20, 255), num);
    }
  }
}

// A small node: a box with the rank's number (many ranks; the cells are in the grid).
void draw_node_box(ImDrawList* dl, Vec2 p, int r, float size) {
  dl->AddRectFilled(ImVec2(p.x - size / 2, p.y - size / 2), ImVec2(p.x + size / 2, p.y + size / 2),
                    IM_COL32(40, 42, 48, 255), 3.0f);
  char num[16];
  std::snprintf(num, sizeof num, "%d", r);
  const ImVec2 t = ImGui::CalcTextSize(num);
  if (t.x <= size) dl->AddText(ImVec2(p.x - t.x / 2, p.y - t.y / 2), IM_COL32(230, 230, 235, 255), num);
}

// The rank × chunk grid: a row per rank (folded to its mean with too many ranks), the
// in-flight transfer's cells outlined on the sender's and the receiver's rows.
void draw_matrix(ImDrawList* dl, const Picture& pic, ImVec2 o, ImVec2 size, const std::vector<double>& sent,
                 const Event* moving) {
  const float label_w = ImGui::CalcTextSize("rank 0000 ").x, sent_w = ImGui::CalcTextSize(" 999.9 KiB").x;
  const float row = std::min(22.0f, size.y / float(pic.P));
  const bool folded = row < 2 || (size.x - label_w - sent_w) / float(pic.chunks) < 2;
  const float cell = folded ? 0 : std::min(22.0f, (size.x - label_w - sent_w) / float(pic.chunks));
  const bool labels = row >= ImGui::GetTextLineHeight();
  for (int r = 0; r < pic.P; ++r) {
    const float y = o.y + row * float(r);
    if (labels) {
      char text[48];
      std::snprintf(text, sizeof text, "rank %d", r);
      dl->AddText(ImVec2(o.x, y), IM_COL32(230, 230, 235, 255), text);
      dl->AddText(ImVec2(o.x + label_w + cell * float(pic.chunks) + 4, y), IM_COL32(180, 180, 190, 255),
                  human_bytes(sent[std::size_t(r)]).c_str());
    }
    if (folded) {
      long total = 0;
      for (int c = 0; c < pic.chunks; ++c) total += pic.level(r, c);
      const int mean = int(std::lround(double(total) / pic.chunks));
      dl->AddRectFilled(ImVec2(o.x + label_w, y), ImVec2(o.x + size.x - sent_w, y + std::max(1.0f, row - 1)),
                        mean == 0 ? IM_COL32(70, 72, 80, 255) : contribution_color(mean, pic.P));
      continue;
    }
    for (int c = 0; c < pic.chunks; ++c)
      dl->AddRectFilled(ImVec2(o.x + label_w + cell * float(c) + 1, y + 1),
                        ImVec2(o.x + label_w + cell * float(c + 1) - 1, y + row - 1), pic.color(r, c),
                        row >= 8 ? 2.0f : 0.0f);
  }
  if (!moving || folded) return;
  const int first = std::max(0, moving->chunk), n = std::max<int>(1, moving->chunk_count);
  auto outline = [&](int r, ImU32 col) {
    if (r < 0 || r >= pic.P) return;
    const float y = o.y + row * float(r);
    dl->AddRect(ImVec2(o.x + label_w + cell * float(first), y),
                ImVec2(o.x + label_w + cell * float(first + n), y + row), col, 2.0f, 0, 2.0f);
  };
  outline(moving->peer, kind_color(EventKind::send));
  outline(moving->rank, kind_color(EventKind::recv));
}

// Edges this run used so far; those of the current step (the round of the transfer at the
// cursor) drawn bold: halving-doubling's pairs, the tree's level, the ring's neighbours.
void draw_edges(ImDrawList* dl, const std::vector<Vec2>& pos, const std::vector<Edge>& edges,
                const std::vector<Event>& tr, std::size_t k) {
  const int P = int(pos.size());
  auto line = [&](int from, int to, ImU32 col, float width) {
    if (from < 0 || from >= P || to < 0 || to >= P) return;
    const Vec2 a = pos[std::size_t(from)], b = pos[std::size_t(to)];
    dl->AddLine(ImVec2(a.x, a.y), ImVec2(b.x, b.y), col, width);
  };
  for (const Edge& e : edges) {
    if (e.first >= k) break;  // ordered by their first transfer
    line(e.from, e.to, IM_COL32(170, 170, 180, 110), 1.5f);
  }
  if (k == 0) return;
  const int step = tr[k - 1].step;
  for (std::size_t i = k; i-- > 0 && tr[i].step == step && k - i <= std::size_t(4 * P);)
    line(tr[i].peer, tr[i].rank, IM_COL32(230, 200, 120, 200), 2.5f);
}

// The transfer in flight: a box sliding from the sender to the receiver.
void draw_in_flight(ImDrawList* dl, const Event& e, const std::vector<Vec2>& pos, float size, float anim) {
  const int P = int(pos.size());
  if (e.peer < 0 || e.peer >= P || e.rank < 0 || e.rank >= P) return;
  const Vec2 s = pos[std::size_t(e.peer)], t = pos[std::size_t(e.rank)];
  const float u = std::clamp(anim, 0.0f, 1.0f);
  dl->AddLine(ImVec2(s.x, s.y), ImVec2(t.x, t.y), kind_color(EventKind::send), 3.0f);
  const ImVec2 m(s.x + (t.x - s.x) * u, s.y + (t.y - s.y) * u);
  dl->AddRectFilled(ImVec2(m.x - size, m.y - size / 2), ImVec2(m.x + size, m.y + size / 2),
                    (e.flags & kFlagReduce) ? kind_color(EventKind::recv) : kind_color(EventKind::send), 3.0f);
}

// When each transfer of a run went on the wire: the later of its send's and its receive's
// posting (a receive posted first waits for the send). Sends are found by flow id among the
// events from the run's first receive on; one posted earlier (a sliced ring's first step posts
// its sends first) counts from its receive.
std::vector<std::int64_t> on_wire_starts(const std::vector<Event>& events, const std::vector<Event>& run) {
  std::vector<std::int64_t> start(run.size());
  std::map<std::uint64_t, std::size_t> by_flow;
  std::int64_t first = INT64_MAX, last = INT64_MIN;
  for (std::size_t i = 0; i < run.size(); ++i) {
    start[i] = run[i].begin_ns;
    if (run[i].flow_id) by_flow[run[i].flow_id] = i;
    first = std::min(first, run[i].begin_ns), last = std::max(last, run[i].end_ns);
  }
  auto it = std::lower_bound(events.begin(), events.end(), first,
                             [](const Event& e, std::int64_t t) { return e.begin_ns < t; });
  for (; it != events.end() && it->begin_ns <= last; ++it) {
    if (it->kind != EventKind::send || !it->flow_id) continue;
    const auto f = by_flow.find(it->flow_id);
    if (f != by_flow.end()) start[f->second] = std::max(start[f->second], it->begin_ns);
  }
  return start;
}

// The transfers on the wire at time `now` (started, not landed), each a box on its edge as far
// along as its time is; a link's several at once side by side (channels: parallel rings).
// Returns {how many, the most on one link}.
std::pair<int, int> draw_on_wire(ImDrawList* dl, const std::vector<Event>& tr, const std::vector<std::int64_t>& start,
                                 std::size_t from, std::int64_t now, const std::vector<Vec2>& pos, float size) {
  const int P = int(pos.size());
  std::map<std::pair<int, int>, int> on_link;
  int count = 0, most = 0;
  for (std::size_t j = from; j < tr.size(); ++j) {
    const Event& e = tr[j];
    if (start[j] > now || e.end_ns <= now || e.peer < 0 || e.peer >= P || e.rank < 0 || e.rank >= P) continue;
    const int lane = on_link[{e.peer, e.rank}]++;
    most = std::max(most, lane + 1);
    if (++count > 8 * P) continue;  // counted, not drawn: past a few per link they only stack up
    const Vec2 s = pos[std::size_t(e.peer)], t = pos[std::size_t(e.rank)];
    // How far along its time it is, kept off the two nodes so that it reads as on the link.
    const float u =
        0.2f +
        0.6f * std::clamp(float(now - start[j]) / float(std::max<std::int64_t>(1, e.end_ns - start[j])), 0.f, 1.f);
    const float len = std::max(1.0f, std::hypot(t.x - s.x, t.y - s.y));
    const float off = float(lane) * size * 1.3f, nx = -(t.y - s.y) / len * off, ny = (t.x - s.x) / len * off;
    const ImVec2 m(s.x + (t.x - s.x) * u + nx, s.y + (t.y - s.y) * u + ny);
    const ImU32 col = (e.flags & kFlagReduce) ? kind_color(EventKind::recv) : kind_color(EventKind::send);
    dl->AddRectFilled(ImVec2(m.x - size, m.y - size / 2), ImVec2(m.x + size, m.y + size / 2),
                      (col & 0x00FFFFFF) | 0xA0000000, 2.0f);
    dl->AddRect(ImVec2(m.x - size, m.y - size / 2), ImVec2(m.x + size, m.y + size / 2), col, 2.0f);
  }
  return {count, most};
}

// Where the transfer at the cursor landed: its cells on the receiver's node, outlined.
void outline_landed(ImDrawList* dl, const Event& e, const std::vector<Vec2>& pos, float cell, int chunks) {
  if (e.rank < 0 || e.rank >= int(pos.size())) return;
  const Vec2 p = pos[std::size_t(e.rank)];
  const float left = p.x - cell * float(chunks) / 2;
  const int first = std::clamp(e.chunk, 0, chunks - 1), n = std::clamp<int>(e.chunk_count, 1, chunks - first);
  // Inside the cells, so the node's frame stays whole around them.
  dl->AddRect(ImVec2(left + cell * float(first) + 1, p.y - cell / 2 + 1),
              ImVec2(left + cell * float(first + n) - 1, p.y + cell / 2 - 1), kind_color(EventKind::recv), 2.0f, 0,
              2.0f);
}

std::string run_title(const CollectiveRun& run) {
  std::string t = run.name;
  // The checked run first, then the repetitions the report times (warm-up included).
  if (run.role.part == RunPart::timed)
    t += run.repeats > 1 ? " · run " + std::to_string(run.repeat) + " of " + std::to_string(run.repeats)
                         : " · traced run";
  return t;
}

void draw_legend(CellMeaning m, int P) {
  if (m == CellMeaning::contributions) {
    legend_swatch(contribution_color(1, P), "own data only");
    legend_swatch(contribution_color((P + 1) / 2, P), "partly reduced");
    legend_swatch(contribution_color(P, P), "all ranks (done)");
  } else {
    legend_swatch(IM_COL32(70, 72, 80, 255), "not received yet");
    legend_swatch(contribution_color(P, P),
                  m == CellMeaning::owner_chunk ? "chunk c from its owner, rank c" : "rank 0's data");
  }
  ImGui::NewLine();
}

}  // namespace

void RingView::Index(const Frame& f) {
  const auto& transfers = f.session.transfers();
  const std::array<std::size_t, 2> key{reinterpret_cast<std::size_t>(&f.session.data()), transfers.size()};
  if (key != runs_key_) {
    runs_ = collective_runs(f.session.data(), transfers);
    runs_key_ = key;
  }
  run_ = run_at(runs_, std::min(f.cursor, transfers.size()));
  if (runs_.empty()) return;
  const CollectiveRun& run = runs_[run_];
  const std::array<std::size_t, 3> pkey{transfers.size(), run_, run.end};
  if (pkey == picture_key_) return;
  run_transfers_.assign(transfers.begin() + std::ptrdiff_t(run.first), transfers.begin() + std::ptrdiff_t(run.end));
  timeline_ = ChunkTimeline(run_transfers_, std::max(1, f.session.data().ranks), std::max(1, f.session.chunks()));
  run_edges_ = edges_in_order(run_transfers_);
  run_on_wire_ = on_wire_starts(f.session.data().events, run_transfers_);
  picture_key_ = pkey;
}

namespace {

// Where things go: the algorithm's shape, with the cells on the nodes while they fit.
struct Layout {
  RunShape shape = RunShape::ring;
  bool matrix = false;
  float cell = 1, node_w = 1, graph_w = 1, area_h = 1;
  ImVec2 origin, avail;
  std::vector<Vec2> pos;
};

Layout layout_for(RunShape shape, int P, int chunks) {
  Layout l;
  l.shape = shape;
  l.origin = ImGui::GetCursorScreenPos();
  l.avail = ImGui::GetContentRegionAvail();
  const float line = ImGui::GetTextLineHeightWithSpacing();
  l.area_h = std::max(140.0f, l.avail.y - line * 5);
  const float side = std::min(l.avail.x, l.area_h);
  const float fit = side * float(M_PI) * (shape == RunShape::tree ? 0.5f : 0.8f) / float(P * chunks);
  l.cell = std::clamp(std::min(fit, side / float(4 * chunks + 8)), 1.0f, 22.0f);
  l.matrix = l.cell < kMinCellPx;
  l.graph_w = l.matrix ? l.avail.x * 0.45f : l.avail.x;
  l.node_w = l.matrix ? std::clamp(l.graph_w * 2.2f / float(P), 6.0f, 26.0f) : l.cell * float(chunks);
  const float pad_x = std::max(l.node_w, ImGui::CalcTextSize("rank 00  sent 999.9 KiB").x) / 2 + 6, pad_y = line + 12;
  l.pos = shape_positions(shape, P, l.origin.x + pad_x, l.origin.y + pad_y, std::max(20.0f, l.graph_w - 2 * pad_x),
                          std::max(20.0f, l.area_h - 2 * pad_y));
  return l;
}

void draw_nodes(ImDrawList* dl, const Layout& l, const Picture& pic, const std::vector<double>& sent) {
  const float line = ImGui::GetTextLineHeightWithSpacing();
  for (int r = 0; r < pic.P; ++r) {
    const Vec2 p = l.pos[std::size_t(r)];
    if (l.matrix) {
      draw_node_box(dl, p, r, l.node_w);
      continue;
    }
    draw_node_cells(dl, pic, p, r, l.cell);
    char label[96];
    std::snprintf(label, sizeof label, "rank %d  sent %s", r, human_bytes(sent[std::size_t(r)]).c_str());
    dl->AddText(ImVec2(p.x - ImGui::CalcTextSize(label).x / 2, p.y - l.cell / 2 - line - 2),
                IM_COL32(230, 230, 235, 255), label);
  }
}

}  // namespace

// The run, the transfer at the cursor and the run's bytes against its formula, in words.
void RingView::DrawCaption(const Frame& f, const CollectiveRun& run, const Event* moving, bool going_on) {
  ImGui::Text("run %zu of %zu%s: %s", run_ + 1, runs_.size(), going_on ? " so far" : "", clip_text(shown.run).c_str());
  if (moving)  // wrapped: a narrow panel keeps the whole sentence
    ImGui::TextWrapped("transfer %zu of %zu%s in this run: rank %d -> rank %d, chunk %d%s, %s, %s, step %d", shown.done,
                       shown.total, going_on ? " so far" : "", moving->peer, moving->rank, moving->chunk,
                       moving->chunk_count > 1 ? "+" : "", human_bytes(double(moving->bytes)).c_str(),
                       (moving->flags & kFlagReduce) ? "reduce" : "copy", moving->step);
  else
    ImGui::Text("before its first transfer: every rank holds only its own data");
  if (shown.in_flight > 0)
    ImGui::TextWrapped(
        "on the wire as it landed: %d more transfer%s (outlined boxes on their links), up to %d on one link%s",
        shown.in_flight, shown.in_flight == 1 ? "" : "s", shown.most_on_one_link,
        shown.most_on_one_link > 1 ? " side by side (channels: parallel rings)" : "");
  if (!shown.formula.empty())
    ImGui::TextWrapped("most sent by one rank in this run: %s   formula %s (the whole run)",
                       human_bytes(shown.most_sent).c_str(), clip_text(shown.formula).c_str());
  else
    ImGui::TextDisabled("most sent by one rank: %s (a trace without run marks: no formula to compare)",
                        human_bytes(shown.most_sent).c_str());
  if (!timeline_.available()) ImGui::TextDisabled("%s", clip_text(timeline_.why_unavailable()).c_str());
  draw_legend(run.cells, f.session.data().ranks);
}

void RingView::Draw(const Frame& f) {
  const TraceData& d = f.session.data();
  const int P = d.ranks, chunks = std::max(1, f.session.chunks());
  if (P < 1) return ImGui::TextUnformatted("no ranks in this trace");
  Index(f);
  const bool going_on = f.session.live() && !f.session.finished();
  if (runs_.empty()) {
    shown = {};
    return ImGui::TextWrapped(
        "before any transfer: every rank holds only its own data%s",
        going_on ? " (live: the transfers appear as they move)" : " (this trace has no transfers)");
  }
  const CollectiveRun& run = runs_[run_];
  const std::size_t k = std::min(f.cursor > run.first ? f.cursor - run.first : 0, run_transfers_.size());
  const bool in_flight = k > 0 && f.anim < 1.0f;
  std::optional<ChunkState> state;
  if (timeline_.available()) state = timeline_.state_after(run_transfers_, in_flight ? k - 1 : k);
  const std::vector<double> sent = timeline_.bytes_sent_after(run_transfers_, k);
  const Picture pic{state ? &*state : nullptr, run.cells, P, chunks};

  ImDrawList* dl = ImGui::GetWindowDrawList();
  const Layout l = layout_for(shape_of(run.role), P, chunks);
  draw_edges(dl, l.pos, run_edges_, run_transfers_, k);
  draw_nodes(dl, l, pic, sent);
  // The transfer at the cursor: travelling while it animates, then its cells outlined where
  // it landed (never a box parked over the receiver).
  const Event* moving = k > 0 ? &run_transfers_[k - 1] : nullptr;
  const std::int64_t now = moving ? moving->end_ns : (run_on_wire_.empty() ? 0 : run_on_wire_.front());
  const auto [on_wire, most_on_link] =
      draw_on_wire(dl, run_transfers_, run_on_wire_, k, now, l.pos, std::max(6.0f, l.matrix ? l.node_w / 3 : l.cell));
  if (moving && in_flight)
    draw_in_flight(dl, *moving, l.pos,
                   l.matrix ? l.node_w / 3 : l.cell * float(std::max<int>(1, moving->chunk_count)) / 2, f.anim);
  else if (moving && !l.matrix)
    outline_landed(dl, *moving, l.pos, l.cell, chunks);
  if (l.matrix)
    draw_matrix(dl, pic, ImVec2(l.origin.x + l.graph_w + 8, l.origin.y), ImVec2(l.avail.x - l.graph_w - 8, l.area_h),
                sent, moving);

  const double N = std::atof(d.meta_of(MetaKey::bytes) ? d.meta_of(MetaKey::bytes)->c_str() : "0");
  const RunFormula formula = run_formula(run.role, P, N);
  shown = {run_title(run),
           formula.known ? formula.bytes_text + " = " + human_bytes(formula.bytes_per_rank) : "",
           *std::max_element(sent.begin(), sent.end()),
           formula.bytes_per_rank,
           k,
           run_transfers_.size(),
           l.shape,
           l.matrix,
           0,
           on_wire,
           most_on_link};
  for (int r = 0; r < P && state; ++r)
    for (int c = 0; c < chunks; ++c) shown.complete_cells += pic.level(r, c) == P;
  ImGui::SetCursorScreenPos(ImVec2(l.origin.x, l.origin.y + l.area_h + 4));
  DrawCaption(f, run, moving, going_on);
}

namespace {
std::unique_ptr<Panel> make_ring(const PanelSettings&) { return std::make_unique<RingView>(); }
const bool registered = register_panel({kRingView, "Collective: each run in its algorithm's shape", make_ring});
}  // namespace

}  // namespace dtl::viz
