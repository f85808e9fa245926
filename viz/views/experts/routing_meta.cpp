// The meta "moe_routing", read and checked (routing_meta.h).
#include "viz/views/experts/routing_meta.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <type_traits>

namespace dtl::viz {

namespace {

using nlohmann::json;

int whole(const json& j, const char* key, int lo, int hi) {  // lo − 1: missing or out of range
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return lo - 1;
  const long long v = it->get<long long>();
  return v < lo || v > hi ? lo - 1 : int(v);
}

// The array `key`: exactly n numbers in [lo, hi] (whole ones for an integral T).
template <class T>
bool numbers(const json& j, const char* key, std::size_t n, double lo, double hi, std::vector<T>& out) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_array() || it->size() != n) return false;
  out.reserve(n);
  for (const json& v : *it) {
    const double x = v.is_number() ? v.get<double>() : NAN;
    if (!(x >= lo && x <= hi) || (std::is_integral_v<T> && x != std::floor(x))) return false;
    out.push_back(T(x));
  }
  return true;
}

// "routed" is optional (older traces have none); where present, a kept slot's expert is its choice.
bool read_block(const json& o, const MoeRouting& m, MoeBlock& b) {
  const std::size_t P = std::size_t(m.P), slots = std::size_t(m.T) * std::size_t(m.k);
  if (!o.is_object() || !numbers(o, "choice", slots, -1, m.E - 1, b.choice) ||
      !numbers(o, "rows", P * P, 0, 1e15, b.rows) || !numbers(o, "kept_per_expert", std::size_t(m.E), 0, 1e15, b.kept))
    return false;
  if (!o.contains("routed")) return true;
  if (!numbers(o, "routed", slots, 0, m.E - 1, b.routed)) return false;
  for (std::size_t i = 0; i < slots; ++i)
    if (b.choice[i] >= 0 && b.choice[i] != b.routed[i]) return false;
  return true;
}

double hidden_from_report(const std::string& report, const MoeRouting& m) {
  if (m.P < 1 || m.k < 1 || m.T < m.P) return 0;
  const json j = json::parse(report, nullptr, false);
  const auto rows = j.is_object() ? j.find("rows") : j.end();
  if (rows == j.end() || !rows->is_array()) return 0;
  for (const json& row : *rows) {
    if (!row.is_object()) continue;
    const auto id = row.find("id"), predicted = row.find("predicted");
    if (id == row.end() || *id != "a2a.dispatch_bytes" || predicted == row.end() || !predicted->is_number()) continue;
    const double h = predicted->get<double>() / (double(m.T / m.P) * m.k * 4.0);
    return h >= 1 && h <= 4096 ? std::round(h) : 0;
  }
  return 0;
}

}  // namespace

namespace {

// A step's "blocks" list into `out`; false (and m.message) when it is not one.
bool read_blocks(const json& holder, MoeRouting& m, std::vector<MoeBlock>& out) {
  const auto blocks = holder.find("blocks");
  if (blocks == holder.end() || !blocks->is_array() || blocks->empty())
    return m.message = "moe_routing: no \"blocks\" list", false;
  for (std::size_t i = 0; i < blocks->size() && i < 64; ++i) {
    MoeBlock b;
    if (!read_block((*blocks)[i], m, b)) {
      out.clear();
      m.message = "moe_routing: block " + std::to_string(i) +
                  " needs choice [T·k] (experts, −1 dropped), rows [P·P], kept_per_expert [E] (counts) and, if "
                  "any, routed [T·k] (experts, each kept slot's choice)";
      return false;
    }
    out.push_back(std::move(b));
  }
  return true;
}

}  // namespace

MoeRouting parse_moe_routing(const std::string& text) {
  MoeRouting m;
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return m.message = "the meta \"moe_routing\" is not a JSON object", m;
  if (const auto omitted = j.find("omitted"); omitted != j.end() && omitted->is_string())
    return m.message = "The lab kept no routing for this run: " + omitted->get<std::string>() +
                       ". Run fewer --tokens, --layers or --top-k to see it.",
           m;
  m.E = whole(j, "experts", 1, 1024), m.P = whole(j, "ranks", 1, 4096), m.T = whole(j, "tokens", 1, 1 << 22);
  m.k = whole(j, "top_k", 1, 64), m.C = whole(j, "capacity", 0, 1 << 30);
  const auto drop = j.find("drop");
  if (m.E < 1 || m.P < 1 || m.T < 1 || m.k < 1 || m.C < 0 || drop == j.end() || !drop->is_boolean())
    return m.message =
               "moe_routing: experts, ranks, tokens, top_k and capacity must be whole numbers in range, drop a boolean",
           m;
  m.drop = drop->get<bool>();
  if (m.E % m.P || m.T % m.P || m.k > m.E || std::size_t(m.T) * std::size_t(m.k) > (std::size_t(1) << 24))
    return m.message =
               "moe_routing: experts and tokens must be divisible by the ranks, top_k at most the experts, "
               "tokens·top_k at most 2^24",
           m;
  // {steps: [{step, blocks}]}, or (a trace of an earlier build) the first step's {blocks}.
  const auto steps = j.find("steps");
  if (steps == j.end()) {
    MoeRouting::Step only;
    if (!read_blocks(j, m, only.blocks)) return m;
    m.steps.push_back(std::move(only));
  } else {
    if (!steps->is_array() || steps->empty()) return m.message = "moe_routing: \"steps\" is not a list of steps", m;
    for (std::size_t i = 0; i < steps->size() && i < 64; ++i) {
      const json& one = (*steps)[i];
      MoeRouting::Step st;
      st.step = one.is_object() ? whole(one, "step", 0, 1 << 30) : -1;
      if (st.step < 0) return m.message = "moe_routing: step " + std::to_string(i) + " has no whole \"step\" number", m;
      if (!read_blocks(one, m, st.blocks)) return m;
      m.steps.push_back(std::move(st));
    }
  }
  m.blocks = m.steps.front().blocks;
  return m;
}

std::size_t show_step(MoeRouting& m, int training_step) {
  std::size_t at = 0;
  for (std::size_t i = 0; i < m.steps.size(); ++i)
    if (m.steps[i].step <= training_step) at = i;
  if (!m.steps.empty()) m.blocks = m.steps[at].blocks;
  return at;
}

int training_step_at(const TraceData& d, std::int64_t time_ns) {
  int step = -1;
  for (const Event& e : d.events) {  // sorted by begin
    if (e.begin_ns > time_ns) break;
    if (e.rank == 0 && e.stream == kStreamMain && e.kind == EventKind::compute && e.step >= 0)
      step = std::max(step, int(e.step));
  }
  return step;
}

MoeTotals moe_totals(const MoeRouting& m, const MoeBlock& b) {
  MoeTotals t;
  const std::size_t P = std::size_t(m.P);
  t.sent.assign(P, 0), t.computed.assign(P, 0);
  for (std::size_t q = 0; q < P; ++q)
    for (std::size_t d = 0; d < P; ++d) t.sent[q] += b.rows[q * P + d], t.computed[d] += b.rows[q * P + d];
  for (std::size_t q = 0; q < P; ++q) {
    const double others = t.sent[q] - b.rows[q * P + q];
    t.to_others_mean += others / double(P), t.to_others_max = std::max(t.to_others_max, others);
  }
  t.balanced_to_others = double(m.T / m.P) * m.k * double(m.P - 1) / m.P;
  t.slots = double(m.T) * m.k, t.dropped = double(std::count(b.choice.begin(), b.choice.end(), -1));
  t.mean_load = t.slots / m.E, t.most_kept = b.kept.empty() ? 0 : *std::max_element(b.kept.begin(), b.kept.end());
  if (!b.routed.empty()) t.routed.assign(std::size_t(m.E), 0);
  for (const int e : b.routed) t.routed[std::size_t(e)] += 1;
  return t;
}

Bins bins(int items, float pixels, float max_px) {
  Bins b;
  pixels = std::max(pixels, 1.0f);
  if (float(items) <= pixels)
    b.n = items, b.px = std::clamp(std::floor(pixels / float(items)), 1.0f, max_px);
  else
    b.per = int(std::ceil(float(items) / pixels)), b.n = (items + b.per - 1) / b.per;
  return b;
}

MoeCells moe_cells(const MoeRouting& m, const MoeBlock& b, const Bins& rows, const Bins& columns) {
  MoeCells c;
  const bool routed = !b.routed.empty();
  c.cells.assign(std::size_t(rows.n) * std::size_t(columns.n), 0), c.drops.assign(routed ? 0 : std::size_t(rows.n), 0);
  for (std::size_t t = 0; t < std::size_t(m.T); ++t)
    for (int j = 0; j < m.k; ++j) {
      const std::size_t slot = t * std::size_t(m.k) + std::size_t(j), r = t / std::size_t(rows.per);
      const int e = routed ? b.routed[slot] : b.choice[slot];
      if (e < 0) {
        c.drops[r] |= std::uint64_t(1) << j;
        continue;
      }
      std::uint8_t& v = c.cells[r * std::size_t(columns.n) + std::size_t(e / columns.per)];
      if (b.choice[slot] < 0)
        v |= MoeCells::kDropped;
      else if ((v & ~MoeCells::kDropped) == 0 || (v & ~MoeCells::kDropped) > j + 1)
        v = std::uint8_t((v & MoeCells::kDropped) | (j + 1));
    }
  return c;
}

void moe_read_run_options(const TraceData& d, MoeRouting& m) {
  const int h = d.meta_int("hidden", 0);
  const std::string* report = d.meta_of(MetaKey::report);
  m.hidden = h >= 1 && h <= 4096 ? h : report ? hidden_from_report(*report, m) : 0;
  const auto c = d.meta.find("capacity-factor");
  const double f = c == d.meta.end() ? 0 : std::strtod(c->second.c_str(), nullptr);
  m.capacity_factor = f >= 0.01 && f <= 64 ? f : 0;  // the option's range
}

}  // namespace dtl::viz
