// Ring view: ranks on a circle, each rank's buffer as a row of chunk cells colored by how
// many ranks' contributions the chunk holds, the chunk in flight travelling along its
// edge, and bytes sent so far beside the formula 2(P-1)/P·N. Edges are the pairs that
// actually exchanged data, so tree and halving-doubling runs draw their own shapes.
//
// Cost follows pixels: when a rank's cells would be narrower than kMinCellPx (hundreds of
// ranks), each rank's buffer is one square colored by its mean contribution count, and
// 16 ranks are labelled.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "core/theory/collectives.h"
#include "labs/collectives/collectives_lab.h"
#include "viz/app/views.h"

namespace dtl::viz {

struct RingView final : Panel {
  void Draw(const Frame& f) override;
};

namespace {

constexpr float kMinCellPx = 4;

struct RingGeometry {
  std::vector<Vec2> pos;
  float cell = 4, node_w = 4, line = 10;
  bool folded = false;  // one bar per rank instead of a cell per chunk
};

RingGeometry ring_geometry(int P, int chunks, ImVec2 origin, ImVec2 avail, float ring_h) {
  RingGeometry g;
  g.line = ImGui::GetTextLineHeight();
  const Vec2 center{origin.x + avail.x / 2, origin.y + ring_h / 2};
  // Cells shrink as chunks grow; the ring is an ellipse filling the panel so labels of
  // neighbouring ranks stay apart.
  const float circumference = float(M_PI) * std::min(avail.x, ring_h);
  g.cell = std::clamp(std::min(avail.x, ring_h) / float(4 * chunks + 8), kMinCellPx, 22.0f);
  g.folded = g.cell * float(chunks) * float(P) > circumference;
  if (g.folded) g.cell = g.node_w = std::clamp(circumference / float(P), 3.0f, 12.0f);  // the ranks make a ring of color
  else g.node_w = g.cell * float(chunks);
  const float rx = std::max(20.0f, avail.x / 2 - std::max(g.node_w, ImGui::CalcTextSize("rank 00  sent 999.9 KiB").x) / 2 - 8);
  const float ry = std::max(20.0f, ring_h / 2 - g.cell / 2 - g.line - 10);
  g.pos = ring_positions(P, center, 1.0f);
  for (Vec2& p : g.pos) p = {center.x + (p.x - center.x) * rx, center.y + (p.y - center.y) * ry};
  return g;
}

void draw_edges(ImDrawList* dl, const Frame& f, const RingGeometry& g, std::size_t k) {
  const int P = int(g.pos.size());
  for (const Edge& e : f.session.edges()) {
    if (e.first >= k) break;  // edges are ordered by their first transfer
    if (e.from >= 0 && e.from < P && e.to >= 0 && e.to < P)
      dl->AddLine(ImVec2(g.pos[std::size_t(e.from)].x, g.pos[std::size_t(e.from)].y),
                  ImVec2(g.pos[std::size_t(e.to)].x, g.pos[std::size_t(e.to)].y), IM_COL32(170, 170, 180, 140), 1.5f);
  }
}

// One rank's buffer: a cell per chunk, or (folded) one square of its mean contribution count.
void draw_buffer(ImDrawList* dl, const RingGeometry& g, const ChunkState* state, int r, int chunks, int P) {
  const Vec2 p = g.pos[std::size_t(r)];
  const ImVec2 a(p.x - g.node_w / 2, p.y - g.cell / 2), b(p.x + g.node_w / 2, p.y + g.cell / 2);
  dl->AddRectFilled(ImVec2(a.x - 2, a.y - 2), ImVec2(b.x + 2, b.y + 2), IM_COL32(40, 42, 48, 255), 3.0f);
  if (!state) return;
  if (g.folded) {
    long total = 0;
    for (int c = 0; c < chunks; ++c) total += state->count(r, c);
    dl->AddRectFilled(a, b, contribution_color(int(std::lround(double(total) / chunks)), P), 2.0f);
    return;
  }
  for (int c = 0; c < chunks; ++c) {
    const int n = state->count(r, c);
    const ImVec2 c0(a.x + g.cell * float(c) + 1, a.y + 1), c1(a.x + g.cell * float(c + 1) - 1, b.y - 1);
    dl->AddRectFilled(c0, c1, contribution_color(n, P), 2.0f);
    if (g.cell >= 14) {
      char num[8];
      std::snprintf(num, sizeof num, "%d", n);
      dl->AddText(ImVec2(c0.x + 2, c0.y), n == P ? IM_COL32(255, 255, 255, 255) : IM_COL32(20, 20, 20, 255), num);
    }
  }
}

// The transfer in flight: a chunk-sized box sliding from sender to receiver.
void draw_in_flight(ImDrawList* dl, const Event& e, const RingGeometry& g, float anim) {
  const int P = int(g.pos.size());
  if (e.peer < 0 || e.peer >= P || e.rank < 0 || e.rank >= P) return;
  const Vec2 s = g.pos[std::size_t(e.peer)], t = g.pos[std::size_t(e.rank)];
  const float u = std::clamp(anim, 0.0f, 1.0f);
  dl->AddLine(ImVec2(s.x, s.y), ImVec2(t.x, t.y), kind_color(EventKind::send), 3.0f);
  const ImVec2 m(s.x + (t.x - s.x) * u, s.y + (t.y - s.y) * u);
  const float half = g.folded ? g.cell : g.cell * float(std::max<int>(1, e.chunk_count)) / 2;
  dl->AddRectFilled(ImVec2(m.x - half, m.y - g.cell / 2), ImVec2(m.x + half, m.y + g.cell / 2),
                    (e.flags & kFlagReduce) ? kind_color(EventKind::recv) : kind_color(EventKind::send), 3.0f);
}

// The transfer at the cursor in words. A live run's total is unknown until it ends: it
// counts what has moved so far ("5 of 5 so far"), not "5/5".
void draw_transfer_caption(const Frame& f, const std::vector<Event>& transfers, std::size_t k) {
  const bool going_on = f.session.live() && !f.session.finished();
  char count[64];
  std::snprintf(count, sizeof count, going_on ? "%zu of %zu so far" : "%zu/%zu", k, transfers.size());
  if (k > 0) {
    const Event& e = transfers[k - 1];
    ImGui::Text("transfer %s: rank %d -> rank %d, chunk %d%s, %s, %s", count, e.peer, e.rank, e.chunk,
                e.chunk_count > 1 ? "+" : "", human_bytes(double(e.bytes)).c_str(),
                (e.flags & kFlagReduce) ? "reduce (adds the sender's contributions)" : "copy");
  } else if (going_on) {
    ImGui::Text("before any transfer: every rank holds only its own data (live: the transfers appear as they move)");
  } else {
    ImGui::Text("before any transfer: every rank holds only its own data (%zu transfers in this run)", transfers.size());
  }
}

}  // namespace

void RingView::Draw(const Frame& f) {
  const TraceData& d = f.session.data();
  const auto& transfers = f.session.transfers();
  const int P = d.ranks, chunks = std::max(1, f.session.chunks());
  if (P < 1) {
    ImGui::TextUnformatted("no ranks in this trace");
    return;
  }
  const std::size_t k = std::min(f.cursor, transfers.size());
  // The picture before the transfer in flight lands: it arrives when the animation ends.
  const bool in_flight = k > 0 && f.anim < 1.0f;
  const ChunkTimeline& timeline = f.session.chunk_timeline();
  std::optional<ChunkState> state;
  if (timeline.available()) state = timeline.state_after(transfers, in_flight ? k - 1 : k);
  const std::vector<double> sent = timeline.bytes_sent_after(transfers, k);

  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float legend_h = ImGui::GetTextLineHeightWithSpacing() * 4;
  const float ring_h = std::max(120.0f, avail.y - legend_h);
  const RingGeometry g = ring_geometry(P, chunks, origin, avail, ring_h);
  draw_edges(dl, f, g, k);

  // Each rank: its buffer, and what it has sent (with many ranks, 16 labels around the ring).
  const int label_every = g.folded ? (P + 15) / 16 : 1;
  for (int r = 0; r < P; ++r) {
    draw_buffer(dl, g, state ? &*state : nullptr, r, chunks, P);
    if (r % label_every != 0) continue;
    char label[96];
    std::snprintf(label, sizeof label, "rank %d  sent %s", r, human_bytes(sent[std::size_t(r)]).c_str());
    const Vec2 p = g.pos[std::size_t(r)];
    dl->AddText(ImVec2(p.x - ImGui::CalcTextSize(label).x / 2, p.y - g.cell / 2 - g.line - 4), IM_COL32(230, 230, 235, 255), label);
  }
  if (k > 0) draw_in_flight(dl, transfers[k - 1], g, f.anim);

  ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + avail.y - legend_h));
  draw_transfer_caption(f, transfers, k);
  double most = 0;
  for (double s : sent) most = std::max(most, s);
  const double N = std::atof(d.meta_of(MetaKey::bytes) ? d.meta_of(MetaKey::bytes)->c_str() : "0");
  ImGui::Text("most sent by one rank: %s   ring formula 2(P-1)/P*N = %s", human_bytes(most).c_str(),
              human_bytes(theory::all_reduce_cost(theory::Algo::ring, P, N).bytes_per_rank).c_str());
  if (!timeline.available()) ImGui::TextDisabled("%s", timeline.why_unavailable().c_str());
  else if (g.folded) ImGui::TextDisabled("%d ranks: each square is a rank's buffer, colored by its mean contribution count", P);
  legend_swatch(contribution_color(1, P), "own data only");
  legend_swatch(contribution_color((P + 1) / 2, P), "partly reduced");
  legend_swatch(contribution_color(P, P), "all ranks (done)");
  ImGui::NewLine();
}

namespace {
std::unique_ptr<Panel> make_ring(const PanelSettings&) { return std::make_unique<RingView>(); }
const bool registered = register_panel({kRingView, "Ring: chunks and their contributions", make_ring});
}  // namespace

}  // namespace dtl::viz
