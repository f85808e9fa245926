// Context-parallel attention view (the context_parallel lab): the S × S causal attention of
// one sequence cut into chunks — P of them (contiguous split) or 2P (zig-zag) — each block of
// (query chunk, key chunk) colored by the rank that computes it, the future above the
// diagonal masked; beside it how K/V moves:
//   ring        the blocks each rank has computed in the ring pass at the cursor (its latest
//               "ring block" span, step t: the K/V chunk of rank (r − t) mod P), the block at
//               the cursor outlined; the ring of ranks with the chunk each holds now
//   all-gather  every rank attends its queries to the whole gathered K/V at once
//   Ulysses     the all-to-all as a rank × rank matrix of bytes (a sequence chunk of A/P heads
//               to every other rank), from the trace's all-to-all events
// What is computed where comes from the split (cp_partition.h, the lab's own code) and the
// trace's typed roles: a phase's algorithm (ring; or the library's all_gather / all_to_all),
// a ring block span's step. The causal work per rank (pairs) is printed under the matrix.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "labs/context_parallel/cp_lab.h"
#include "labs/context_parallel/cp_partition.h"
#include "viz/app/views.h"

namespace dtl::viz {

namespace {

const ImU32 kMasked = IM_COL32(40, 40, 46, 255), kGridLine = IM_COL32(20, 20, 24, 255),
            kText = IM_COL32(220, 220, 225, 255), kDim = IM_COL32(150, 150, 160, 255),
            kNow = IM_COL32(255, 255, 255, 255), kEveryRank = IM_COL32(150, 160, 185, 255);

struct Setup {  // the run's shape, from its options in the meta
  int S = 0, P = 0;
  cp::CpSplit split = cp::CpSplit::contiguous;
  bool ok = false;
};

Setup read_setup(const TraceData& d) {
  Setup s;
  s.P = d.ranks;
  s.S = d.meta_int("seq", 0);
  const auto it = d.meta.find("split");  // the option's own word for it (cp_partition.h)
  const bool zigzag = it != d.meta.end() && it->second == cp::cp_split_name(cp::CpSplit::zigzag);
  s.split = zigzag ? cp::CpSplit::zigzag : cp::CpSplit::contiguous;
  const int chunks = zigzag ? 2 * s.P : s.P;
  s.ok = s.P >= 1 && s.P <= 64 && s.S >= 1 && s.S <= (1 << 20) && s.S % chunks == 0;  // else: nothing to draw
  return s;
}

// The chunks the sequence is cut into and the rank owning each (its queries, its K/V): the
// split's rule written here, not the learner's zigzag_partition, which the viewer must not run.
std::vector<int> chunk_owners(const Setup& s) {
  const int C = s.split == cp::CpSplit::zigzag ? 2 * s.P : s.P;
  std::vector<int> owner(std::size_t(C), 0);
  for (int c = 0; c < C; ++c) owner[std::size_t(c)] = c < s.P ? c : 2 * s.P - 1 - c;  // zig-zag: chunks r and 2P−1−r
  return owner;
}

// Each rank's causal (query, key ≤ query) pairs per head and sequence, from its chunks, and max / mean.
std::vector<long long> pairs_per_rank(const Setup& s, const std::vector<int>& owner, double* max_over_mean) {
  const long long len = s.S / static_cast<long long>(owner.size());
  std::vector<long long> pairs(std::size_t(s.P), 0);
  for (std::size_t c = 0; c < owner.size(); ++c)
    for (long long p = static_cast<long long>(c) * len; p < static_cast<long long>(c + 1) * len; ++p)
      pairs[std::size_t(owner[c])] += p + 1;
  long long most = 0, sum = 0;
  for (long long v : pairs) most = std::max(most, v), sum += v;
  *max_over_mean = sum > 0 ? double(most) * s.P / double(sum) : 1.0;
  return pairs;
}

enum class Algo { unknown, ring, all_gather, ulysses };

Algo algo_of(const Role& r) {
  if (r.part != RunPart::timed) return Algo::unknown;
  if (r.algorithm == AlgorithmKind::ring) return Algo::ring;
  if (r.collective == CollectiveKind::all_gather) return Algo::all_gather;
  if (r.collective == CollectiveKind::all_to_all) return Algo::ulysses;
  return Algo::unknown;
}

// The algorithm of the timed phase at time t (its role: the ring's own point-to-point, or the
// library collective the algorithm is made of); before the first, the first. (A run of
// all-gather or Ulysses alone has no transfer to step through: the cursor stays at its start.)
Algo algo_at(const TraceData& d, std::int64_t t) {
  Algo at = Algo::unknown, first = Algo::unknown;
  for (const Event& e : d.events) {  // sorted by begin
    if (e.kind != EventKind::phase) continue;
    const Algo a = algo_of(d.role(e));
    if (a == Algo::unknown) continue;
    if (first == Algo::unknown) first = a;
    if (e.begin_ns <= t) at = a;
  }
  return at == Algo::unknown ? first : at;
}

// Each rank's latest ring step at time t (−1: none yet): the step of its last ring block span.
std::vector<int> ring_steps_at(const TraceData& d, int P, std::int64_t t, Pass* pass) {
  std::vector<int> step(std::size_t(P), -1);
  for (const Event& e : d.events) {
    if (e.kind != EventKind::compute || e.begin_ns > t || e.rank < 0 || e.rank >= P) continue;
    const Role& r = d.role(e);
    if (r.algorithm != AlgorithmKind::ring) continue;
    step[std::size_t(e.rank)] = int(std::clamp<std::int64_t>(e.step, 0, P - 1));
    *pass = r.pass;
  }
  return step;
}

ImU32 faded(ImU32 c) { return (c & 0x00FFFFFFu) | (0x55u << 24); }

struct Matrix {
  ImVec2 o;
  float cell;
};

// The blocks: query chunk rows, key chunk columns; done[r][o]: rank r has its queries' block
// with the K/V of rank o (the ring so far; all of them for the other algorithms).
// by_heads (Ulysses): every rank computes every block, for its A/P heads: one neutral color.
void draw_blocks(ImDrawList* dl, const Matrix& m, const std::vector<int>& owner,
                 const std::vector<std::vector<bool>>& done, const std::vector<int>& now, bool by_heads) {
  const int C = int(owner.size());
  for (int q = 0; q < C; ++q)
    for (int k = 0; k < C; ++k) {
      const ImVec2 a(m.o.x + float(k) * m.cell, m.o.y + float(q) * m.cell), z(a.x + m.cell, a.y + m.cell);
      const int r = owner[std::size_t(q)], o = owner[std::size_t(k)];
      const ImU32 c = by_heads                               ? kEveryRank
                      : done[std::size_t(r)][std::size_t(o)] ? rank_color(r)
                                                             : faded(rank_color(r));
      if (k > q)
        dl->AddRectFilled(a, z, kMasked);  // every key after every query: masked
      else if (k == q)
        dl->AddTriangleFilled(ImVec2(a.x, a.y), ImVec2(a.x, z.y), ImVec2(z.x, z.y), c),
            dl->AddTriangleFilled(a, ImVec2(z.x, a.y), z, kMasked);
      else
        dl->AddRectFilled(a, z, c);
      dl->AddRect(a, z, kGridLine);
      if (k <= q && now[std::size_t(r)] == o)
        dl->AddRect(ImVec2(a.x + 1, a.y + 1), ImVec2(z.x - 1, z.y - 1), kNow, 0, 0, 2.0f);
    }
  dl->AddText(ImVec2(m.o.x, m.o.y + float(C) * m.cell + 4), kDim,
              by_heads ? "keys →   (rows: queries; every rank computes every block for its A/P heads)"
                       : "keys →   (rows: queries, a chunk each; colored by the rank computing them)");
}

// The ring of ranks: rank r holds the K/V chunk of rank now[r] (−1: its own, before the ring).
void draw_ring(ImDrawList* dl, ImVec2 c, float radius, const std::vector<int>& now) {
  const int P = int(now.size());
  for (int r = 0; r < P; ++r) {
    const float a = 6.2831853f * float(r) / float(P) - 1.5707963f;
    const ImVec2 p(c.x + radius * std::cos(a), c.y + radius * std::sin(a));
    const float an = 6.2831853f * float((r + 1) % P) / float(P) - 1.5707963f;
    const ImVec2 pn(c.x + radius * std::cos(an), c.y + radius * std::sin(an));
    dl->AddLine(ImVec2(p.x + (pn.x - p.x) * 0.2f, p.y + (pn.y - p.y) * 0.2f),
                ImVec2(p.x + (pn.x - p.x) * 0.8f, p.y + (pn.y - p.y) * 0.8f), kDim, 1.5f);
    dl->AddCircleFilled(p, 16, rank_color(r));
    char label[48];
    std::snprintf(label, sizeof label, "%d", r);
    dl->AddText(ImVec2(p.x - 4, p.y - 7), IM_COL32(20, 20, 20, 255), label);
    std::snprintf(label, sizeof label, "K/V of %d", now[std::size_t(r)] < 0 ? r : now[std::size_t(r)]);
    dl->AddText(ImVec2(p.x - 28, p.y + 18), kText, label);
  }
}

// Ulysses: bytes each rank sent to each other rank in its first all-to-all of the timed
// Ulysses phase, from the events (an all-to-all's event carries its whole buffer; a P-th of
// it goes to each rank).
void draw_all_to_all(ImDrawList* dl, const TraceData& d, ImVec2 o, float cell, int P) {
  std::int64_t from = 0, to = 0;  // the Ulysses phase, any rank's
  for (const Event& e : d.events)
    if (e.kind == EventKind::phase && algo_of(d.role(e)) == Algo::ulysses && to == 0) from = e.begin_ns, to = e.end_ns;
  std::vector<double> bytes(std::size_t(P), 0);
  for (const Event& e : d.events)
    if (e.kind == EventKind::collective && d.role(e).collective == CollectiveKind::all_to_all && e.rank >= 0 &&
        e.rank < P && e.begin_ns >= from && e.begin_ns <= to && bytes[std::size_t(e.rank)] == 0)
      bytes[std::size_t(e.rank)] = double(e.bytes) / P;
  for (int i = 0; i < P; ++i)
    for (int j = 0; j < P; ++j) {
      const ImVec2 a(o.x + float(j) * cell, o.y + float(i) * cell), z(a.x + cell, a.y + cell);
      dl->AddRectFilled(a, z, i == j ? kMasked : rank_color(i));
      dl->AddRect(a, z, kGridLine);
      if (i != j && cell > 40)
        dl->AddText(ImVec2(a.x + 3, a.y + cell / 2 - 7), IM_COL32(20, 20, 20, 255),
                    human_bytes(bytes[std::size_t(i)]).c_str());
    }
  dl->AddText(ImVec2(o.x, o.y + float(P) * cell + 4), kDim, "all-to-all: row sends to column (the diagonal stays)");
}

}  // namespace

struct CpAttentionView final : Panel {
  void Draw(const Frame& f) override;
};

void CpAttentionView::Draw(const Frame& f) {
  const TraceData& d = f.session.data();
  const Setup s = read_setup(d);
  if (!s.ok)
    return ImGui::TextWrapped("No context-parallel run in this trace (dtlab run context_parallel writes one).");
  const std::int64_t t = f.cursor_time();
  const Algo algo = algo_at(d, t);
  const std::vector<int> owner = chunk_owners(s);
  Pass pass = Pass::none;
  const std::vector<int> steps =
      algo == Algo::ring ? ring_steps_at(d, s.P, t, &pass) : std::vector<int>(std::size_t(s.P), -1);
  std::vector<int> now(std::size_t(s.P), -1);
  std::vector<std::vector<bool>> done(std::size_t(s.P), std::vector<bool>(std::size_t(s.P), algo != Algo::ring));
  for (int r = 0; r < s.P; ++r)
    for (int k = 0; k <= steps[std::size_t(r)]; ++k) {
      const int origin = ((r - k) % s.P + s.P) % s.P;
      done[std::size_t(r)][std::size_t(origin)] = true;
      now[std::size_t(r)] = origin;
    }
  const char* names[] = {"(before the timed runs)", "ring attention", "all-gather CP", "Ulysses"};
  ImGui::Text("%s · %s split · S = %d over %d ranks%s", names[int(algo)], cp::cp_split_name(s.split), s.S, s.P,
              algo == Algo::ring && pass != Pass::none ? (pass == Pass::forward ? " · forward" : " · backward") : "");
  double imbalance = 1;
  const std::vector<long long> pairs = pairs_per_rank(s, owner, &imbalance);
  if (algo == Algo::ulysses) {
    ImGui::Text("after the all-to-all every rank holds the whole sequence for A/P heads: the same causal work on each");
  } else {
    ImGui::Text("causal pairs per rank (max / mean %.3f):", imbalance);
    for (int r = 0; r < s.P && r < 16; ++r) ImGui::SameLine(), ImGui::Text("%lld", pairs[std::size_t(r)]);
  }
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 start = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
  const int C = int(owner.size());
  const float side = std::max(60.0f, std::min(avail.x * 0.55f, avail.y - 3 * ImGui::GetTextLineHeight()));
  const Matrix m{ImVec2(start.x + 8, start.y + 8), side / float(C)};
  draw_blocks(dl, m, owner, done, now, algo == Algo::ulysses);
  const ImVec2 right(start.x + side + 60, start.y + 8);
  const float rest = std::max(60.0f, avail.x - side - 80);
  if (algo == Algo::ulysses)
    draw_all_to_all(dl, d, right, std::min(rest, side) / float(s.P), s.P);
  else if (algo == Algo::ring) {
    draw_ring(dl, ImVec2(right.x + rest / 2, right.y + side / 2), std::min(rest, side) * 0.35f, now);
    dl->AddText(ImVec2(right.x, right.y + side - ImGui::GetTextLineHeight()), kDim,
                "each step a rank passes the K/V chunk it holds to the next rank (clockwise)");
  } else if (algo == Algo::all_gather)
    dl->AddText(right, kText, "all-gather: every rank holds every K/V chunk");
  ImGui::SetCursorScreenPos(ImVec2(start.x, start.y + side + 3 * ImGui::GetTextLineHeight()));
}

namespace {
std::unique_ptr<Panel> make_cp_attention(const PanelSettings&) { return std::make_unique<CpAttentionView>(); }
const bool registered = register_panel(
    {kCpAttentionView, "Context parallelism: attention blocks by rank, K/V around the ring", make_cp_attention});
}  // namespace

}  // namespace dtl::viz
