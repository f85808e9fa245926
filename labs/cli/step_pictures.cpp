#include "labs/cli/step_pictures.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "labs/report_format.h"

namespace dtl::cli {

namespace {
constexpr std::string_view kGlue = "\u00a0";  // a space that does not break

std::string unglued(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool glue = s.compare(i, kGlue.size(), kGlue) == 0;
    out.push_back(glue ? ' ' : s[i]);
    if (glue) i += kGlue.size() - 1;
  }
  return out;
}
}  // namespace

std::string glued(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == ' ')
      out.append(kGlue);
    else
      out.push_back(c);
  }
  return out;
}

void print_wrapped(std::ostream& os, const std::string& line, std::size_t width) {
  os << unglued(wrap_hanging(line, width));
}

namespace {

// ---- ZeRO-3's shards ---------------------------------------------------------------------

// When unit `block` was last gathered (its all-gather's end) and freed (its gather buffer's free).
struct Held {
  std::int64_t gathered = -1, freed = -1;
};

// Each rank's newest ZeRO phase: its start and stage (-1: none yet).
struct ZeroPhase {
  std::vector<std::int64_t> since;
  int stage = -1;  // rank 0's
};

ZeroPhase zero_phase(const std::vector<Event>& events, int ranks, const Trace& trace) {
  ZeroPhase p{std::vector<std::int64_t>(std::size_t(ranks), -1), -1};
  std::int64_t rank0 = -1;
  for (const Event& e : events) {
    if (e.kind != EventKind::mark || e.rank < 0 || e.rank >= ranks) continue;
    const Role r = trace.label_role(e.label);
    if (r.zero_stage < 0 || e.begin_ns < p.since[std::size_t(e.rank)]) continue;
    p.since[std::size_t(e.rank)] = e.begin_ns;
    if (e.rank == 0 && e.begin_ns >= rank0) rank0 = e.begin_ns, p.stage = r.zero_stage;
  }
  return p;
}

// "0123" gathered, ".1.." its own slice (rank 1 of 4); past 9 ranks "all" / "own".
std::string slices_cell(bool gathered, int rank, int ranks) {
  if (ranks > 9) return gathered ? "all" : "own";
  std::string cell(std::size_t(ranks), '.');
  for (int q = 0; q < ranks; ++q)
    if (gathered || q == rank) cell[std::size_t(q)] = char('0' + q);
  return cell;
}

std::vector<std::string> shard_rows(const std::vector<std::map<int, Held>>& held, const std::set<int>& units, int ranks,
                                    std::size_t width) {
  std::size_t col = 0;
  for (int u : units) col = std::max(col, std::string("layer " + std::to_string(u)).size());
  col = std::max<std::size_t>(col, ranks > 9 ? 3 : std::size_t(ranks)) + 2;
  const std::size_t fit = std::max<std::size_t>(1, (width > 14 ? width - 14 : 1) / col);
  std::string head = "              ";
  std::size_t shown = 0;
  for (int u : units)
    if (shown++ < fit) head += pad("layer " + std::to_string(u), col);
  std::vector<std::string> rows{head.substr(0, head.find_last_not_of(' ') + 1)};
  for (int r = 0; r < ranks; ++r) {
    std::string row = "    rank " + pad(std::to_string(r), 5);
    shown = 0;
    for (int u : units) {
      if (shown++ >= fit) break;
      const auto it = held[std::size_t(r)].find(u);
      const bool gathered = it != held[std::size_t(r)].end() && it->second.gathered > it->second.freed;
      row += pad(slices_cell(gathered, r, ranks), col);
    }
    rows.push_back(row.substr(0, row.find_last_not_of(' ') + 1));
  }
  if (units.size() > fit)
    rows.push_back("    (" + count_of(long(units.size() - fit), "more unit") + " beyond this width)");
  return rows;
}

// ---- MoE routing -------------------------------------------------------------------------

struct RoutingShape {
  int E = 0, P = 0, T = 0, k = 0, C = 0;
};

// counts[q][e]: slots from rank q's tokens kept for expert e; counts[q][E]: its dropped slots.
std::vector<std::vector<long>> routing_counts(const nlohmann::json& choice, const RoutingShape& s) {
  std::vector<std::vector<long>> counts(std::size_t(s.P), std::vector<long>(std::size_t(s.E) + 1, 0));
  const std::size_t per_rank = std::size_t(s.T / s.P) * std::size_t(s.k);
  for (std::size_t i = 0; i < choice.size() && per_rank > 0; ++i) {
    const std::size_t q = std::min(i / per_rank, std::size_t(s.P) - 1);
    const int e = choice[i].get<int>();
    ++counts[q][e >= 0 && e < s.E ? std::size_t(e) : std::size_t(s.E)];
  }
  return counts;
}

// A column per expert under the rank holding it, or, when that is wider than `width`, a
// column per rank (its experts' slots summed).
std::vector<std::string> routing_rows(const std::vector<std::vector<long>>& counts, const RoutingShape& s,
                                      std::size_t width) {
  const int L = s.E / s.P;  // experts per rank: expert e on rank e / L
  const std::size_t lead = 20, per_expert = 4, gap = 2;
  const bool by_expert = lead + std::size_t(s.E) * per_expert + std::size_t(s.P) * gap + 8 <= width;
  const std::size_t group = by_expert ? std::size_t(L) * per_expert + gap : 9;
  std::string ranks_head(lead, ' '), experts_head(lead, ' ');
  for (int d = 0; d < s.P; ++d) {
    std::string name = group > 10 ? "on rank " : "rank ";  // the rank holding the experts below
    name += std::to_string(d);
    ranks_head += pad(name, group);
    if (!by_expert) continue;
    for (int j = 0; j < L; ++j) {
      std::string expert(1, 'e');  // (not "e" + ...: GCC 12's -Wrestrict false positive)
      expert += std::to_string(d * L + j);
      experts_head += pad(expert, per_expert, true);
    }
    experts_head += std::string(gap, ' ');
  }
  std::vector<std::string> rows{ranks_head + "dropped"};
  if (by_expert) rows.push_back(experts_head.substr(0, experts_head.find_last_not_of(' ') + 1));
  for (int q = 0; q < s.P; ++q) {
    const std::vector<long>& c = counts[std::size_t(q)];
    std::string row = pad("    rank " + std::to_string(q) + "'s tokens", lead);
    for (int d = 0; d < s.P; ++d) {
      long sum = 0;
      for (int j = 0; j < L; ++j) {
        sum += c[std::size_t(d * L + j)];
        if (by_expert) row += pad(std::to_string(c[std::size_t(d * L + j)]), per_expert, true);
      }
      row += by_expert ? std::string(gap, ' ') : pad(std::to_string(sum), 6, true) + std::string(group - 6, ' ');
    }
    rows.push_back(row + pad(std::to_string(c[std::size_t(s.E)]), 7, true));
  }
  return rows;
}

}  // namespace

void ShardPicture::print_if_changed(std::ostream& os, const std::vector<Event>& events, int ranks, const Trace& trace,
                                    std::size_t width) {
  const ZeroPhase phase = zero_phase(events, ranks, trace);
  if (phase.stage != 3) return;  // only ZeRO-3 frees what it gathers
  std::vector<std::map<int, Held>> held(static_cast<std::size_t>(ranks));
  std::set<int> units;
  for (const Event& e : events) {
    if (e.rank < 0 || e.rank >= ranks || e.begin_ns < phase.since[std::size_t(e.rank)]) continue;
    const Role r = trace.label_role(e.label);
    if (r.block < 0) continue;
    Held& h = held[std::size_t(e.rank)][r.block];
    if (e.kind == EventKind::collective && r.collective == CollectiveKind::all_gather) {
      units.insert(r.block);
      h.gathered = std::max(h.gathered, e.end_ns);
    } else if (e.kind == EventKind::free && e.tag == int(MemTag::gather)) {
      h.freed = std::max(h.freed, e.begin_ns);
    }
  }
  if (units.empty()) return;
  const std::vector<std::string> rows = shard_rows(held, units, ranks, width);
  if (rows == last_) return;
  // The legend once; then the title alone.
  print_wrapped(os,
                last_.empty() ? "    shards (ZeRO-3): the slices of each layer's parameters a rank holds, its own, or "
                                "all " +
                                    std::to_string(ranks) + " from the layer's all-gather until it is freed"
                              : std::string("    shards (ZeRO-3):"),
                width);
  last_ = rows;
  for (const std::string& row : rows) os << row << "\n";
}

void RoutingPicture::print_if_new(std::ostream& os, const Trace& trace, std::size_t width) {
  const std::map<std::string, std::string> meta = trace.meta();
  const auto it = meta.find(meta_key_name(MetaKey::moe_routing));
  if (it == meta.end()) return;
  const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
  if (j.is_discarded() || !j.contains("steps") || !j["steps"].is_array() || j["steps"].size() <= steps_shown_) return;
  steps_shown_ = j["steps"].size();
  const RoutingShape s{j.value("experts", 0), j.value("ranks", 0), j.value("tokens", 0), j.value("top_k", 0),
                       j.value("capacity", 0)};
  if (s.E <= 0 || s.P <= 0 || s.E % s.P != 0) return;
  const nlohmann::json& step = j["steps"].back();
  int b = 0;
  for (const nlohmann::json& block : step["blocks"]) {
    const std::string title =
        "    routing, step " + std::to_string(step.value("step", 0)) + ", block " + std::to_string(b++) + ":";
    // The legend once; then the title alone.
    print_wrapped(
        os,
        !legend_shown_
            ? title +
                  " tokens → experts → ranks, the slots each rank's tokens sent to each "
                  "expert (k = " +
                  std::to_string(s.k) + " per token" +
                  (s.C > 0 ? "; capacity " + std::to_string(s.C) + " per expert and rank, the rest dropped)" : ")")
            : title,
        width);
    legend_shown_ = true;
    for (const std::string& row : routing_rows(routing_counts(block["choice"], s), s, width)) os << row << "\n";
  }
}

}  // namespace dtl::cli
