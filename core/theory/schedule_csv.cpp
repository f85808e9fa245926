// torch.distributed.pipelining's schedule CSV (core/theory/schedule_csv.h): a small reader
// of cells (the grammar of _Action.from_str, written anew), the placement read back from
// the rows, and the writer, each B written as I when its stage also runs the W.
#include "core/theory/schedule_csv.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "core/error.h"

namespace dtl::pipeline {

namespace {

// One compute action of a cell as torch writes it.
struct CellAction {
  int stage = 0;  // virtual stage
  char type = 'F';
  int micro_batch = 0;
};

// A cell's whereabouts for messages, from 1 as a spreadsheet counts.
struct CellPlace {
  int row = 0, cell = 0;
  std::string text;
  [[noreturn]] void fail(const std::string& rule) const {
    throw UsageError("schedule CSV row " + std::to_string(row) + " (rank " + std::to_string(row - 1) + "), cell " +
                     std::to_string(cell) + " \"" + text + "\": " + rule);
  }
};

std::string trim(std::string_view s) {
  while (!s.empty() && (std::isspace(static_cast<unsigned char>(s.front())) || s.front() == '"')) s.remove_prefix(1);
  while (!s.empty() && (std::isspace(static_cast<unsigned char>(s.back())) || s.back() == '"')) s.remove_suffix(1);
  return std::string(s);
}

bool is_communication(std::string_view s) {
  for (std::string_view word : {"SEND_F", "RECV_F", "SEND_B", "RECV_B", "UNSHARD", "RESHARD", "REDUCE_GRAD"})
    if (s.find(word) != std::string_view::npos) return true;
  return false;
}

// <stage><F|I|B|W><micro-batch>, digits only around the letter.
CellAction parse_single(std::string_view s, const CellPlace& at) {
  std::size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  const std::size_t letter = i;
  if (letter == 0 || letter >= s.size() || std::string_view("FIBW").find(s[letter]) == std::string_view::npos)
    at.fail("an action is <stage><F|I|B|W><micro-batch>, e.g. 0F3 or 2I0");
  ++i;
  const std::size_t digits = i;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == digits) at.fail("a compute action names its micro-batch after the letter, e.g. 1B3");
  if (i != s.size()) at.fail("unexpected text after the micro-batch; one action per cell");
  if (letter > 6 || i - digits > 6) at.fail("a stage or micro-batch index above 999999");
  return {std::stoi(std::string(s.substr(0, letter))), s[letter], std::stoi(std::string(s.substr(digits)))};
}

// A cell: one action, or an overlapped pair (F first, as torch's runtime reads them).
std::vector<CellAction> parse_cell(const std::string& s, const CellPlace& at) {
  if (s.empty() || s.front() != '(') return {parse_single(s, at)};
  const std::size_t close = s.find(')'), semi = s.find(';');
  if (close == std::string::npos || s.substr(close + 1) != "OVERLAP_F_B")
    at.fail("a grouped cell is (<F action>;<B action>)OVERLAP_F_B");
  if (semi == std::string::npos || semi > close || s.find(';', semi + 1) < close)
    at.fail("an overlapped pair holds exactly two actions separated by ';'");
  const CellAction f = parse_single(trim(s.substr(1, semi - 1)), at);
  const CellAction b = parse_single(trim(s.substr(semi + 1, close - semi - 1)), at);
  if (f.type != 'F' || (b.type != 'B' && b.type != 'I'))
    at.fail("an overlapped pair is a forward then a backward: (0F7;7B3)OVERLAP_F_B");
  return {f, b};
}

std::vector<std::vector<std::string>> split_rows(std::string_view text) {
  std::vector<std::vector<std::string>> rows;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::vector<std::string> cells;
    for (std::size_t c = 0; c <= line.size();) {
      std::size_t comma = line.find(',', c);
      if (comma == std::string_view::npos) comma = line.size();
      cells.push_back(trim(line.substr(c, comma - c)));
      c = comma + 1;
    }
    rows.push_back(cells);
    pos = end + 1;
  }
  while (!rows.empty() && rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();  // trailing newlines
  return rows;
}

// Loop or V, and v, from the row each virtual stage appears on.
ScheduleConfig placement_of(const std::map<int, std::pair<int, CellPlace>>& row_of, int P, int M) {
  const int V = row_of.empty() ? 0 : row_of.rbegin()->first + 1;
  if (V == 0) throw UsageError("schedule CSV: no compute action in any row");
  if (V % P != 0 || int(row_of.size()) != V)
    throw UsageError("schedule CSV: its " + std::to_string(row_of.size()) + " stages (0.." + std::to_string(V - 1) +
                     ") do not split evenly over its " + std::to_string(P) +
                     " rows; every rank holds the same number of stages, each stage index used once");
  bool loop = true, vee = V == 2 * P;
  for (const auto& [vs, where] : row_of) {
    loop = loop && where.first == vs % P;
    vee = vee && where.first == (vs < P ? vs : 2 * P - 1 - vs);
  }
  if (!loop && !vee) {
    for (const auto& [vs, where] : row_of)
      if (where.first != vs % P && (V != 2 * P || where.first != (vs < P ? vs : 2 * P - 1 - vs)))
        where.second.fail("stage " + std::to_string(vs) + " on rank " + std::to_string(where.first) +
                          ": dtlab places stage k on rank k mod P (loop) or, with 2 per rank, on rank k and then "
                          "2P-1-k (V)");
  }
  return {P, M, V / P, vee ? Placement::vee : Placement::loop};  // P = 1: both fit, the same map
}

}  // namespace

std::string CsvSchedule::place(int stage, std::size_t action) const {
  const std::size_t s = std::size_t(stage);
  if (s >= cell.size() || action >= cell[s].size()) return "rank " + std::to_string(stage);
  return "row " + std::to_string(stage + 1) + " (rank " + std::to_string(stage) + "), cell " +
         std::to_string(cell[s][action]) + " \"" + text[s][action] + "\"";
}

CsvSchedule read_torch_csv(std::string_view text) {
  const std::vector<std::vector<std::string>> rows = split_rows(text);
  if (rows.empty()) throw UsageError("schedule CSV: the file is empty; write one row of actions per rank");
  const int P = int(rows.size());
  std::vector<std::vector<std::pair<CellAction, CellPlace>>> parsed(rows.size());
  std::map<int, std::pair<int, CellPlace>> row_of;  // virtual stage → (row, first cell)
  int M = 0;
  for (int r = 0; r < P; ++r)
    for (std::size_t c = 0; c < rows[std::size_t(r)].size(); ++c) {
      const std::string& cell = rows[std::size_t(r)][c];
      if (cell.empty() || is_communication(cell)) continue;  // idle step / torch's communication form
      const CellPlace at{r + 1, int(c) + 1, cell};
      for (const CellAction& a : parse_cell(cell, at)) {
        const auto [it, fresh] = row_of.emplace(a.stage, std::pair{r, at});
        if (!fresh && it->second.first != r)
          at.fail("stage " + std::to_string(a.stage) + " is on rank " + std::to_string(it->second.first) +
                  " too; a stage lives on one rank");
        M = std::max(M, a.micro_batch + 1);
        parsed[std::size_t(r)].push_back({a, at});
      }
    }
  CsvSchedule out;
  out.schedule.kind = ScheduleKind::csv;
  out.schedule.config = placement_of(row_of, P, M);
  out.schedule.stages.resize(std::size_t(P));
  out.cell.resize(std::size_t(P));
  out.text.resize(std::size_t(P));
  for (int r = 0; r < P; ++r) {
    std::set<std::tuple<char, int, int>> seen;  // (type, micro-batch, chunk) on this rank
    for (const auto& [a, at] : parsed[std::size_t(r)])
      seen.insert({a.type, a.micro_batch, out.schedule.chunk_of(a.stage)});
    const auto& list = parsed[std::size_t(r)];
    for (std::size_t i = 0; i < list.size(); ++i) {
      const auto& [a, at] = list[i];
      const int chunk = out.schedule.chunk_of(a.stage);
      const bool weight = seen.count({'W', a.micro_batch, chunk}) != 0;
      if (a.type == 'I' && !weight) at.fail("an I (input gradient) needs its W on the same rank; add it, or write B");
      if (a.type == 'B' && weight) at.fail("B is the full backward, so its W would run twice; write I, or drop the W");
      if (a.type == 'W' && !seen.count({'I', a.micro_batch, chunk}))
        at.fail("a W follows an I of the same micro-batch");
      const Pass op = a.type == 'F' ? Pass::forward : a.type == 'W' ? Pass::weight : Pass::backward;
      const bool pair_head = i + 1 < list.size() && list[i + 1].second.cell == at.cell && at.text.front() == '(';
      out.schedule.stages[std::size_t(r)].push_back({op, a.micro_batch, chunk, pair_head && a.type == 'F'});
      out.cell[std::size_t(r)].push_back(at.cell);
      out.text[std::size_t(r)].push_back(at.text);
    }
  }
  check_schedule(out.schedule, [&out](int stage, std::size_t action) { return out.place(stage, action); });
  return out;
}

std::string write_torch_csv(const Schedule& s) {
  std::string out;
  for (int st = 0; st < int(s.stages.size()); ++st) {
    const std::vector<Action>& list = s.stages[std::size_t(st)];
    const auto cell = [&](const Action& a) {
      const char type = a.op == Pass::forward                           ? 'F'
                        : a.op == Pass::weight                          ? 'W'
                        : s.splits_backward(st, a.micro_batch, a.chunk) ? 'I'
                                                                        : 'B';
      return std::to_string(s.virtual_stage(st, a.chunk)) + type + std::to_string(a.micro_batch);
    };
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (i > 0) out += ',';
      if (list[i].with_next && i + 1 < list.size()) {
        out += '(';
        out += cell(list[i]);
        out += ';';
        out += cell(list[i + 1]);
        out += ")OVERLAP_F_B";
        ++i;
      } else {
        out += cell(list[i]);
      }
    }
    out += '\n';
  }
  return out;
}

}  // namespace dtl::pipeline
