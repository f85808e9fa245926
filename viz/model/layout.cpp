#include "viz/model/layout.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_set>

#include "core/error.h"
#include "core/trace/chrome_writer.h"
#include "core/trace/trace_limits.h"

namespace dtl::viz {

std::vector<Vec2> ring_positions(int ranks, Vec2 center, float radius) {
  std::vector<Vec2> p(std::size_t(std::max(0, ranks)));
  for (int r = 0; r < ranks; ++r) {
    const double a = -M_PI / 2 + 2 * M_PI * r / ranks;
    p[std::size_t(r)] = {center.x + radius * float(std::cos(a)), center.y + radius * float(std::sin(a))};
  }
  return p;
}

TimeCuts::TimeCuts(std::vector<TimeRange> cuts) {
  std::sort(cuts.begin(), cuts.end(), [](const TimeRange& a, const TimeRange& b) { return a.begin < b.begin; });
  for (const TimeRange& c : cuts) {
    if (c.end <= c.begin) continue;
    if (!cuts_.empty() && c.begin <= cuts_.back().end)
      cuts_.back().end = std::max(cuts_.back().end, c.end);
    else
      cuts_.push_back(c);
  }
  double total = 0;
  for (const TimeRange& c : cuts_) {
    before_.push_back(total);
    total += double(c.end - c.begin);
  }
}

double TimeCuts::compress(double t) const {
  // The last cut starting at or before t.
  const auto it =
      std::upper_bound(cuts_.begin(), cuts_.end(), t, [](double v, const TimeRange& c) { return v < double(c.begin); });
  if (it == cuts_.begin()) return t;
  const std::size_t i = std::size_t(it - cuts_.begin()) - 1;
  if (t < double(cuts_[i].end)) return double(cuts_[i].begin) - before_[i];  // inside the cut: its break
  return t - before_[i] - double(cuts_[i].end - cuts_[i].begin);
}

double TimeCuts::expand(double c) const {
  // The last cut whose compressed position (its begin less the cut time before it) is below c.
  std::size_t lo = 0, hi = cuts_.size();
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (double(cuts_[mid].begin) - before_[mid] < c)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0) return c;
  return c + before_[lo - 1] + double(cuts_[lo - 1].end - cuts_[lo - 1].begin);
}

float TimeAxis::from_compressed(double c) const {
  const double a = compress(t0), span = std::max(1e-9, compress(t1) - a);
  return x0 + float((c - a) / span) * width;
}

double TimeAxis::to_t(float x) const {
  const double a = compress(t0), span = compress(t1) - a;
  return expand(a + double(x - x0) / double(width) * span);
}

// Zoom and pan work on the picture's time (cuts left out), so a break stays a break.
void TimeAxis::zoom(double factor, float anchor_x) {
  const double a = compress(t0), b = compress(t1);
  const double left = double(anchor_x - x0) / double(width);
  const double anchor = a + left * (b - a);
  const double span = std::max(10.0, (b - a) / factor);  // never below 10 ns
  t0 = expand(anchor - left * span);
  t1 = expand(anchor - left * span + span);
}

void TimeAxis::pan(float dx) {
  const double a = compress(t0), b = compress(t1);
  const double dt = double(dx) / double(width) * (b - a);
  t0 = expand(a - dt);
  t1 = expand(b - dt);
}

namespace {

// A slice stack, as Perfetto and Tracy draw one: a span nested inside another (a layer's
// backward inside "backward", the sends and receives inside a collective's phase, a pass
// inside a lab's phase) goes one lane down, so a container never hides what it holds.
// Lanes are renumbered (lane, depth) in order; depth stops at kMaxDepth, and lanes past
// trace_limits::kMaxLanes share the last one, as assign_lanes does.
std::vector<int> nested_below(const std::vector<Event>& spans, std::vector<int> lane) {
  constexpr int kMaxDepth = 4;
  std::map<int, std::vector<std::int64_t>> open;  // per lane: ends of the spans open
  std::vector<std::pair<int, int>> at(spans.size());
  for (std::size_t i = 0; i < spans.size(); ++i) {
    auto& stack = open[lane[i]];
    while (!stack.empty() && stack.back() <= spans[i].begin_ns) stack.pop_back();
    at[i] = {lane[i], std::min(int(stack.size()), kMaxDepth)};
    stack.push_back(spans[i].end_ns);
  }
  std::map<std::pair<int, int>, int> number;
  for (const auto& a : at) number[a] = 0;
  int next = 0;
  for (auto& [key, n] : number) n = next++;
  for (std::size_t i = 0; i < spans.size(); ++i)
    lane[i] = std::min(number[at[i]], trace_limits::kMaxLanes - 1);  // the cap holds
  return lane;
}

}  // namespace

std::vector<Track> layout_tracks(const TraceData& t) {
  std::map<std::pair<int, int>, std::vector<std::uint32_t>> by_stream;
  for (std::uint32_t i = 0; i < t.events.size(); ++i)
    if (is_span(t.events[i].kind)) by_stream[{t.events[i].rank, t.events[i].stream}].push_back(i);
  std::vector<Track> tracks;
  for (auto& [key, idx] : by_stream) {
    std::stable_sort(idx.begin(), idx.end(), [&](std::uint32_t a, std::uint32_t b) {
      const Event &x = t.events[a], &y = t.events[b];
      return x.begin_ns != y.begin_ns ? x.begin_ns < y.begin_ns : x.end_ns > y.end_ns;
    });
    std::vector<Event> spans;
    spans.reserve(idx.size());
    for (auto i : idx) spans.push_back(t.events[i]);
    const std::vector<int> lane = nested_below(spans, assign_lanes(spans, trace_limits::kMaxLanes));
    const int lanes = lane.empty() ? 0 : *std::max_element(lane.begin(), lane.end()) + 1;
    const std::size_t first = tracks.size();
    for (int l = 0; l < lanes; ++l) tracks.push_back(Track{key.first, key.second, l, {}, {}});
    for (std::size_t k = 0; k < idx.size(); ++k) {
      Track& tr = tracks[first + std::size_t(lane[k])];
      const std::int64_t end = t.events[idx[k]].end_ns;
      tr.max_end.push_back(tr.max_end.empty() ? end : std::max(tr.max_end.back(), end));
      tr.events.push_back(idx[k]);
    }
  }
  return tracks;
}

std::vector<DrawBox> visible_boxes(const TraceData& t, const Track& tr, const TimeAxis& axis, float min_px) {
  std::vector<DrawBox> out;
  // First event that can reach into the window: running max of ends > t0.
  std::size_t i =
      std::size_t(std::upper_bound(tr.max_end.begin(), tr.max_end.end(), std::int64_t(axis.t0)) - tr.max_end.begin());
  while (i < tr.events.size()) {
    const Event& e = t.events[tr.events[i]];
    if (double(e.begin_ns) > axis.t1) break;
    const float x0 = std::max(axis.to_x(double(e.begin_ns)), axis.x0 - 1);
    const float x1 = std::min(axis.to_x(double(e.end_ns)), axis.x0 + axis.width + 1);
    if (x1 - x0 >= min_px) {
      // Inside the box drawn last (overlapping spans that share the last lane, say 100k
      // threads of one torch trace at once): it would be drawn right over it, so it joins
      // that box's count instead of costing a box of its own (they cost gigabytes).
      if (!out.empty() && x0 >= out.back().x0 && x1 <= out.back().x1) {
        ++out.back().count;
        ++i;
        continue;
      }
      out.push_back({x0, x1, tr.events[i], 1});
      ++i;
      continue;
    }
    // Fold: absorb every event that starts before this box is min_px wide, then jump.
    DrawBox box{x0, x0 + min_px, tr.events[i], 0};
    const double fold_until = axis.to_t(box.x1);
    auto begins_after = [&](std::size_t j) { return double(t.events[tr.events[j]].begin_ns) >= fold_until; };
    // Binary search on begin times (the track is sorted by begin) for the first event past the box.
    std::size_t lo = i, hi = tr.events.size();
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (begins_after(mid))
        hi = mid;
      else
        lo = mid + 1;
    }
    // A span wide enough to draw that begins inside the box is not folded away: the box
    // stops before it (looked for among the next kWideScan only: a denser pixel folds whole).
    constexpr std::size_t kWideScan = 256;
    for (std::size_t j = i + 1; j < lo && j < i + kWideScan; ++j) {
      const Event& w = t.events[tr.events[j]];
      if (axis.to_x(double(w.end_ns)) - axis.to_x(double(w.begin_ns)) >= min_px) {
        lo = j;
        break;
      }
    }
    box.count = std::uint32_t(lo - i);  // every member begins inside [x0, x0 + min_px)
    out.push_back(box);
    i = lo;
  }
  return out;
}

double idle_fraction(const TraceData& t, int rank, std::int64_t t0, std::int64_t t1) {
  if (t1 <= t0) return 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> busy;
  for (const Event& e : t.events) {
    if (e.rank != rank || e.end_ns <= t0 || e.begin_ns >= t1) continue;
    if (e.kind == EventKind::compute) busy.push_back({std::max(e.begin_ns, t0), std::min(e.end_ns, t1)});
  }
  std::sort(busy.begin(), busy.end());
  std::int64_t covered = 0, reach = t0;
  for (const auto& [b, e] : busy) {
    if (e <= reach) continue;
    covered += e - std::max(b, reach);
    reach = e;
  }
  return 1.0 - double(covered) / double(t1 - t0);
}

std::vector<Edge> edges_in_order(const std::vector<Event>& transfers) {
  std::vector<Edge> edges;
  std::unordered_set<std::uint64_t> seen;
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    const Event& e = transfers[i];
    if (seen.insert(std::uint64_t(std::uint32_t(e.peer)) << 32 | std::uint32_t(e.rank)).second)
      edges.push_back({i, e.peer, e.rank});
  }
  return edges;
}

ChunkState chunk_state_after(const std::vector<Event>& transfers, int ranks, int chunks, std::size_t k) {
  ChunkState s(ranks, chunks);
  for (std::size_t i = 0; i < std::min(k, transfers.size()); ++i) s.apply(transfers[i]);
  return s;
}

std::vector<double> bytes_sent_after(const std::vector<Event>& transfers, int ranks, std::size_t k) {
  std::vector<double> sent(std::size_t(ranks), 0.0);
  for (std::size_t i = 0; i < std::min(k, transfers.size()); ++i)
    if (transfers[i].peer >= 0 && transfers[i].peer < ranks)
      sent[std::size_t(transfers[i].peer)] += double(transfers[i].bytes);
  return sent;
}

}  // namespace dtl::viz

namespace dtl::viz {

namespace {
// Issue 47's one definition of idle: the rank's compute has no work (communication it waits
// on, a pipeline's bubble, a wait for a slower rank are all idle).
bool is_busy(EventKind k) { return k == EventKind::compute; }
}  // namespace

BusyIndex::BusyIndex(const TraceData& t)
    : begin_(std::size_t(t.ranks)), end_(std::size_t(t.ranks)), before_(std::size_t(t.ranks)) {
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> spans(std::size_t(t.ranks));
  for (const Event& e : t.events)
    if (is_busy(e.kind) && e.rank >= 0 && e.rank < t.ranks)
      spans[std::size_t(e.rank)].push_back({e.begin_ns, e.end_ns});
  for (std::size_t r = 0; r < spans.size(); ++r) {
    auto& s = spans[r];
    std::sort(s.begin(), s.end());
    std::int64_t total = 0;
    for (const auto& [b, e] : s) {
      if (!end_[r].empty() && b <= end_[r].back()) {  // overlaps the last merged interval
        if (e > end_[r].back()) {
          total += e - end_[r].back();
          end_[r].back() = e;
        }
        continue;
      }
      begin_[r].push_back(b);
      end_[r].push_back(e);
      before_[r].push_back(total);
      total += e - b;
    }
  }
}

std::int64_t BusyIndex::covered_until(int rank, std::int64_t t) const {
  const auto& b = begin_[std::size_t(rank)];
  const std::size_t i = std::size_t(std::upper_bound(b.begin(), b.end(), t) - b.begin());
  if (i == 0) return 0;
  const std::size_t k = i - 1;  // the last interval starting at or before t
  return before_[std::size_t(rank)][k] + std::min(t, end_[std::size_t(rank)][k]) - b[k];
}

double BusyIndex::idle_fraction(int rank, std::int64_t t0, std::int64_t t1) const {
  if (t1 <= t0 || rank < 0 || std::size_t(rank) >= begin_.size()) return 0;
  return 1.0 - double(covered_until(rank, t1) - covered_until(rank, t0)) / double(t1 - t0);
}

std::vector<TimeRange> BusyIndex::idle_gaps(int rank, std::int64_t t0, std::int64_t t1, std::int64_t min_ns) const {
  std::vector<TimeRange> gaps;
  if (t1 <= t0 || rank < 0 || std::size_t(rank) >= begin_.size()) return gaps;
  const auto& b = begin_[std::size_t(rank)];
  const auto& e = end_[std::size_t(rank)];
  std::size_t k = std::size_t(std::upper_bound(b.begin(), b.end(), t0) - b.begin());
  if (k > 0) --k;        // the interval starting at or before t0 may still cover it
  std::int64_t at = t0;  // where the stretch not yet accounted for begins
  auto add = [&](std::int64_t from, std::int64_t to) {
    if (to - from >= std::max<std::int64_t>(min_ns, 1)) gaps.push_back({from, to});
  };
  for (; k < b.size() && b[k] < t1; ++k) {
    if (b[k] > at) add(at, b[k]);
    at = std::max(at, e[k]);
  }
  if (at < t1) add(at, t1);
  return gaps;
}

std::uint64_t chunk_picture_bytes(int ranks, int chunks) {
  const std::uint64_t r = std::uint64_t(std::max(1, ranks)), c = std::uint64_t(std::max(1, chunks));
  return r * c * ((r + 63) / 64) * 8;  // ChunkState: a bitset of contributors per (rank, chunk)
}

ChunkTimeline::ChunkTimeline(const std::vector<Event>& transfers, int ranks, int chunks)
    : ranks_(std::max(1, ranks)), chunks_(std::max(1, chunks)) {
  const std::uint64_t picture = chunk_picture_bytes(ranks_, chunks_);
  available_ = picture <= trace_limits::kMaxChunkPictureBytes;
  if (!available_)
    why_ = "no chunk picture: " + std::to_string(ranks_) + " ranks x " + std::to_string(chunks_) +
           " chunks would need " + std::to_string(picture >> 20) + " MiB, beyond the limit of " +
           std::to_string(trace_limits::kMaxChunkPictureBytes >> 20) + " MiB";
  // Space checkpoints so that all of them fit the budget (plus the one at the start).
  const std::uint64_t per = (available_ ? picture : 0) + std::uint64_t(ranks_) * sizeof(double);
  const std::uint64_t fit = std::max<std::uint64_t>(1, trace_limits::kChunkCheckpointBytes / per);
  every_ = std::max<std::size_t>(1024, std::size_t((transfers.size() + fit - 1) / fit));
  std::optional<ChunkState> s;
  if (available_) s.emplace(ranks_, chunks_);
  std::vector<double> sent(std::size_t(ranks_), 0.0);
  for (std::size_t i = 0;; ++i) {
    if (i % every_ == 0) {
      if (s) states_.push_back(*s);
      sent_.push_back(sent);
    }
    if (i == transfers.size()) break;
    if (s) s->apply(transfers[i]);
    if (transfers[i].peer >= 0 && transfers[i].peer < ranks_)
      sent[std::size_t(transfers[i].peer)] += double(transfers[i].bytes);
  }
}

ChunkState ChunkTimeline::state_after(const std::vector<Event>& transfers, std::size_t k) const {
  k = std::min(k, transfers.size());
  DTL_CHECK(available_, why_);
  const std::size_t c = std::min(k / every_, states_.size() - 1);
  ChunkState s = states_[c];
  for (std::size_t i = c * every_; i < k; ++i) s.apply(transfers[i]);
  return s;
}

std::vector<double> ChunkTimeline::bytes_sent_after(const std::vector<Event>& transfers, std::size_t k) const {
  k = std::min(k, transfers.size());
  const std::size_t c = std::min(k / every_, sent_.size() - 1);
  std::vector<double> sent = sent_[c];
  for (std::size_t i = c * every_; i < k; ++i)
    if (transfers[i].peer >= 0 && transfers[i].peer < ranks_)
      sent[std::size_t(transfers[i].peer)] += double(transfers[i].bytes);
  return sent;
}

}  // namespace dtl::viz
