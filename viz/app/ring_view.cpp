// Ring view: ranks on a circle, each rank's buffer as a row of chunk cells colored by how
// many ranks' contributions the chunk holds, the chunk in flight travelling along its
// edge, and bytes sent so far beside the formula 2(P-1)/P·N. Edges are the pairs that
// actually exchanged data, so tree and halving-doubling runs draw their own shapes.
#include <cmath>
#include <cstdio>
#include <set>

#include "core/theory/collectives.h"
#include "viz/app/views.h"

namespace dtl::viz {


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
  const ChunkState state = f.session.chunk_timeline().state_after(transfers, in_flight ? k - 1 : k);
  const std::vector<double> sent = f.session.chunk_timeline().bytes_sent_after(transfers, k);

  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float legend_h = ImGui::GetTextLineHeightWithSpacing() * 3;
  const float ring_h = std::max(120.0f, avail.y - legend_h);
  const Vec2 center{origin.x + avail.x / 2, origin.y + ring_h / 2};
  // Cells shrink as chunks grow; the ring is an ellipse filling the panel so labels of
  // neighbouring ranks stay apart.
  const float cell = std::clamp(std::min(avail.x, ring_h) / float(4 * chunks + 8), 4.0f, 22.0f);
  const float node_w = cell * float(chunks), line = ImGui::GetTextLineHeight();
  const float rx = std::max(20.0f, avail.x / 2 - std::max(node_w, ImGui::CalcTextSize("rank 00  sent 999.9 KiB").x) / 2 - 8);
  const float ry = std::max(20.0f, ring_h / 2 - cell / 2 - line - 10);
  std::vector<Vec2> pos = ring_positions(P, center, 1.0f);
  for (Vec2& p : pos) p = {center.x + (p.x - center.x) * rx, center.y + (p.y - center.y) * ry};

  // Edges that carried data so far (thin), the active one (thick).
  std::set<std::pair<int, int>> edges;
  for (std::size_t i = 0; i < k; ++i) edges.insert({transfers[i].peer, transfers[i].rank});
  for (const auto& [a, b] : edges)
    if (a >= 0 && a < P && b >= 0 && b < P)
      dl->AddLine(ImVec2(pos[std::size_t(a)].x, pos[std::size_t(a)].y), ImVec2(pos[std::size_t(b)].x, pos[std::size_t(b)].y),
                  IM_COL32(170, 170, 180, 140), 1.5f);

  // Each rank: its label, its chunk cells, and what it has sent.
  const double N = std::stod(d.meta.count("bytes") ? d.meta.at("bytes") : "0");
  const double predicted = theory::all_reduce_cost(theory::Algo::ring, P, N).bytes_per_rank;
  for (int r = 0; r < P; ++r) {
    const Vec2 p = pos[std::size_t(r)];
    const float w = cell * float(chunks);
    const ImVec2 a(p.x - w / 2, p.y - cell / 2), b(p.x + w / 2, p.y + cell / 2);
    dl->AddRectFilled(ImVec2(a.x - 3, a.y - 3), ImVec2(b.x + 3, b.y + 3), IM_COL32(40, 42, 48, 255), 4.0f);
    for (int c = 0; c < chunks; ++c) {
      const int n = state.count(r, c);
      const ImVec2 c0(a.x + cell * float(c) + 1, a.y + 1), c1(a.x + cell * float(c + 1) - 1, b.y - 1);
      dl->AddRectFilled(c0, c1, contribution_color(n, P), 2.0f);
      if (cell >= 14) {
        char num[8];
        std::snprintf(num, sizeof num, "%d", n);
        dl->AddText(ImVec2(c0.x + 2, c0.y), n == P ? IM_COL32(255, 255, 255, 255) : IM_COL32(20, 20, 20, 255), num);
      }
    }
    char label[96];
    std::snprintf(label, sizeof label, "rank %d  sent %s", r, human_bytes(sent[std::size_t(r)]).c_str());
    const float tw = ImGui::CalcTextSize(label).x;
    dl->AddText(ImVec2(p.x - tw / 2, a.y - line - 4), IM_COL32(230, 230, 235, 255), label);
  }

  // The transfer in flight: a chunk-sized box sliding from sender to receiver.
  if (k > 0) {
    const Event& e = transfers[k - 1];
    if (e.peer >= 0 && e.peer < P && e.rank >= 0 && e.rank < P) {
      const Vec2 s = pos[std::size_t(e.peer)], t = pos[std::size_t(e.rank)];
      const float u = std::clamp(f.anim, 0.0f, 1.0f);
      dl->AddLine(ImVec2(s.x, s.y), ImVec2(t.x, t.y), kind_color(EventKind::send), 3.0f);
      const ImVec2 m(s.x + (t.x - s.x) * u, s.y + (t.y - s.y) * u);
      const float half = cell * float(std::max<int>(1, e.chunk_count)) / 2;
      dl->AddRectFilled(ImVec2(m.x - half, m.y - cell / 2), ImVec2(m.x + half, m.y + cell / 2),
                        (e.flags & kFlagReduce) ? kind_color(EventKind::recv) : kind_color(EventKind::send), 3.0f);
    }
  }

  ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + avail.y - legend_h));
  if (k > 0) {
    const Event& e = transfers[k - 1];
    ImGui::Text("transfer %zu/%zu: rank %d -> rank %d, chunk %d%s, %s, %s", k, transfers.size(), e.peer, e.rank, e.chunk,
                e.chunk_count > 1 ? "+" : "", human_bytes(double(e.bytes)).c_str(),
                (e.flags & kFlagReduce) ? "reduce (adds the sender's contributions)" : "copy");
  } else {
    ImGui::Text("before any transfer: every rank holds only its own data (%zu transfers in this run)", transfers.size());
  }
  double most = 0;
  for (double s : sent) most = std::max(most, s);
  ImGui::Text("most sent by one rank: %s   ring formula 2(P-1)/P*N = %s", human_bytes(most).c_str(),
              human_bytes(predicted).c_str());
  legend_swatch(contribution_color(1, P), "own data only");
  legend_swatch(contribution_color((P + 1) / 2, P), "partly reduced");
  legend_swatch(contribution_color(P, P), "all ranks (done)");
  ImGui::NewLine();
}

}  // namespace dtl::viz
