#include "labs/cli/step_printers.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "labs/cli/step_pictures.h"
#include "labs/report_format.h"

namespace dtl::cli {

void print_chunks(std::ostream& os, const ChunkState& s, std::size_t width) {
  constexpr int kLead = 12, kCell = 5;  // "    rank 0  |", then "  3*|" per chunk
  const int band = std::max(1, (int(width) - kLead - 1) / kCell);
  for (int first = 0; first < s.chunks(); first += band) {
    const int last = std::min(s.chunks(), first + band);
    if (band < s.chunks()) os << "    chunks " << first << ".." << last - 1 << ":\n";
    for (int r = 0; r < s.ranks(); ++r) {
      os << "    rank " << r << (r < 10 ? "  " : " ") << "|";
      for (int c = first; c < last; ++c) {
        const int n = s.count(r, c);
        char cell[16];
        std::snprintf(cell, sizeof cell, "%3d%c|", n, n == s.ranks() ? '*' : ' ');
        os << cell;
      }
      os << "\n";
    }
  }
}

void print_transfer(std::ostream& os, std::size_t index, const Event& e) {
  os << glued("transfer " + std::to_string(index) + ":") << " "
     << glued("rank " + std::to_string(e.peer) + " -> rank " + std::to_string(e.rank));
  if (e.chunk >= 0)
    os << "  "
       << glued(e.chunk_count > 1
                    ? "chunks " + std::to_string(e.chunk) + ".." + std::to_string(e.chunk + e.chunk_count - 1)
                    : "chunk " + std::to_string(e.chunk));
  if (e.micro_batch >= 0) os << "  " << glued("micro-batch " + std::to_string(e.micro_batch));
  os << "  " << glued(std::to_string(e.bytes) + " B") << "  " << ((e.flags & kFlagReduce) ? "reduce" : "copy") << "  "
     << glued("(step " + std::to_string(e.step) + ", tag " + std::to_string(e.tag) + ")") << "\n";
}

namespace {

std::string group_words(const Event& e) {
  if (e.axis != GroupAxis::none) return std::string("the ") + group_axis_name(e.axis) + " group";
  return e.group_rank >= 0 ? "a sub-group" : "every rank";
}

}  // namespace

void print_collective(std::ostream& os, std::size_t index, const Event& e, const Trace& trace) {
  const std::string name = trace.label_name(e.label), why = role_purpose(trace.label_role(e.label));
  os << glued("collective " + std::to_string(index) + ":") << " " << (name.empty() ? "collective" : name) << " of "
     << glued(format_value(double(e.bytes), "B")) << " on " << glued(group_words(e)) << " "
     << glued("(rank " + std::to_string(e.rank) + "'s)") << (why.empty() ? "" : " · " + why) << "\n";
}

void MemoryLines::print_if_changed(std::ostream& os, const std::vector<Event>& events, int ranks) {
  std::vector<MemoryByTag> mem(std::size_t(std::max(0, ranks)));
  for (const Event& e : events)
    if (e.rank >= 0 && e.rank < ranks) mem[std::size_t(e.rank)].apply(e);
  std::vector<std::uint64_t> totals;
  std::vector<std::vector<std::uint64_t>> tags;
  for (const MemoryByTag& m : mem) {
    totals.push_back(m.total);
    tags.emplace_back(std::begin(m.bytes), std::end(m.bytes));
  }
  if (tags == last_tags_) return;
  last_tags_ = tags;
  const int shown = std::min(ranks, 8);
  for (int r = 0; r < shown; ++r) {
    if (totals[std::size_t(r)] == 0) continue;                         // nothing allocated on this rank yet
    os << "    " << glued("memory  rank " + std::to_string(r) + ":");  // each entry whole on a line
    for (int t = 0; t < kNumMemTags; ++t)
      if (tags[std::size_t(r)][std::size_t(t)] > 0)
        os << "  "
           << glued(std::string(mem_tag_name(MemTag(t))) + " " +
                    format_value(double(tags[std::size_t(r)][std::size_t(t)]), "B"));
    os << "  " << glued("= " + format_value(double(totals[std::size_t(r)]), "B")) << "\n";
  }
  if (ranks > shown) os << "    memory  (" << ranks - shown << " more ranks)\n";
}

namespace {

bool is_pipeline_action(const Event& e, const Trace& trace) {
  return e.kind == EventKind::compute && e.micro_batch >= 0 && trace.label_role(e.label).pass != Pass::none;
}

// An action's letter in the chart: a schedule's F, B or W (core/trace/vocab.h), O for any other pass.
std::string action_letter(Pass p) {
  const std::string letter = pass_letter(p);
  return letter.empty() ? "O" : letter;
}

}  // namespace

namespace {

// One training step's actions as text rows, time across (`columns`), and its bubble.
struct GanttRows {
  std::size_t actions = 0;
  double span_ms = 0, bubble = 0;
  std::vector<std::string> rows;
};

GanttRows gantt_of(const std::vector<Event>& events, int step, int ranks, const Trace& trace, int columns) {
  GanttRows g;
  std::vector<const Event*> acts;
  for (const Event& e : events)
    if (is_pipeline_action(e, trace) && e.step == step && e.rank >= 0 && e.rank < ranks) acts.push_back(&e);
  g.actions = acts.size();
  if (acts.empty()) return g;
  std::int64_t t0 = acts.front()->begin_ns, t1 = acts.front()->end_ns;
  for (const Event* e : acts) t0 = std::min(t0, e->begin_ns), t1 = std::max(t1, e->end_ns);
  const double span = double(std::max<std::int64_t>(1, t1 - t0)), per_col = span / columns;
  g.rows.assign(std::size_t(ranks), std::string(columns, '.'));
  double busy = 0;
  for (const Event* e : acts) {
    std::string& row = g.rows[std::size_t(e->rank)];
    const int a = std::clamp(int(double(e->begin_ns - t0) / per_col), 0, columns - 1);
    const int b = std::clamp(int(double(e->end_ns - t0) / per_col + 0.5), a + 1, columns);
    const std::string text = action_letter(trace.label_role(e->label).pass) + std::to_string(e->micro_batch);
    for (int c = a; c < b; ++c) row[std::size_t(c)] = std::size_t(c - a) < text.size() ? text[std::size_t(c - a)] : '=';
    busy += double(e->end_ns - e->begin_ns);
  }
  g.span_ms = span * 1e-6;
  g.bubble = 1 - busy / (double(ranks) * span);  // idle share of ranks × the step's span
  return g;
}

void print_gantt(std::ostream& os, const GanttRows& g, int step, const char* state) {
  char head[128];
  std::snprintf(head, sizeof head, "    training step %d %s (%zu actions, %.3g ms): bubble %.1f %% (dots)\n", step,
                state, g.actions, g.span_ms, 100 * g.bubble);
  os << head;
  for (std::size_t r = 0; r < g.rows.size(); ++r)
    os << "    rank " << r << (r < 10 ? "  " : " ") << "|" << g.rows[r] << "|\n";
}

}  // namespace

void TextGantt::print_if_grown(std::ostream& os, const std::vector<Event>& events, int ranks, const Trace& trace,
                               std::size_t width) {
  const int columns = std::clamp(int(width) - 14, 16, 72);  // "    rank 0  |" and the closing "|"
  int step = -1;
  for (const Event& e : events)
    if (is_pipeline_action(e, trace)) step = std::max(step, e.step);
  if (step < 0) return;
  if (last_step_ >= 0 && step != last_step_) {  // a new step began: the last one whole, once
    const GanttRows done = gantt_of(events, last_step_, ranks, trace, columns);
    if (done.actions > last_actions_) print_gantt(os, done, last_step_, "complete");
    last_actions_ = 0;
  }
  const GanttRows now = gantt_of(events, step, ranks, trace, columns);
  if (step == last_step_ && now.actions == last_actions_) return;
  last_step_ = step, last_actions_ = now.actions;
  print_gantt(os, now, step, "so far");
}

}  // namespace dtl::cli
