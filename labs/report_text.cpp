// Report::to_text: the report as a terminal reads it, at most `width` columns.
//
//   ddp lab · 4 ranks (threads) · link pcie4: 32 GB/s, α 5 µs · MLP 256 wide × 4 layers ...
//
//     bucketed                           measured             predicted   from
//   ✓ max weight diff vs 1 rank          1.7e-7               ≤ 1e-5      fp32 rounding
//     exposed communication per step     204.7 µs (142–298)
//     speedup over 1 rank                2.09× (1.95–2.31)    4×          ideal: P×
//
// One case is a list; the cases of Report::columns (2 or more: `--variant all`) are one
// table with a column per case and a row per metric. Labels and sources wrap to fit.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "labs/report.h"
#include "labs/report_format.h"

namespace dtl {

namespace {

constexpr std::size_t kMinFlexible = 6;  // a wrapped column keeps at least this many columns (and its longest word)
constexpr std::size_t kKeepLabel = 36, kKeepSource = 16, kKeepValue = 40;  // widths to wrap others for first
constexpr std::size_t kKeepPivotLabel = 28, kKeepPivotSource = 12;

// Rows of cells; a row of one cell is a heading across the table. Flexible columns wrap:
// first those wider than they would keep (`keep`), then the widest.
struct Table {
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> right, flexible;  // per column
  std::vector<std::size_t> keep;      // per column (flexible ones)

  std::vector<std::size_t> widths(std::size_t width) const;
  std::string render(std::size_t width) const;
};

// The longest word of a cell: a column never narrows below it, so no word breaks across
// lines ("2·M·activatio / n" read as two words). A table may then exceed the width.
std::size_t longest_word(const std::string& cell) {
  std::size_t longest = 0, at = 0;
  while (at <= cell.size()) {
    const std::size_t space = std::min(cell.find(' ', at), cell.size());
    longest = std::max(longest, display_width(std::string_view(cell).substr(at, space - at)));
    at = space + 1;
  }
  return longest;
}

std::vector<std::size_t> Table::widths(std::size_t width) const {
  std::vector<std::size_t> w(right.size(), 0), narrowest(right.size(), kMinFlexible);
  for (const auto& row : rows)
    if (row.size() == w.size())
      for (std::size_t c = 0; c < w.size(); ++c) {
        w[c] = std::max(w[c], display_width(row[c]));
        narrowest[c] = std::max(narrowest[c], longest_word(row[c]));
      }
  auto total = [&] {
    std::size_t t = 0;
    for (std::size_t c = 0; c < w.size(); ++c) t += w[c] + (c + 1 < w.size() ? (c == 0 ? 1 : 2) : 0);
    return t;
  };
  auto excess = [&](std::size_t c) { return w[c] > keep[c] ? w[c] - keep[c] : 0; };
  // Narrow one flexible column by one: the most over its keep, else the widest; never below
  // its longest word (no word breaks) nor kMinFlexible.
  while (total() > width) {
    std::size_t pick = w.size();
    for (std::size_t c = 0; c < w.size(); ++c) {
      if (!flexible[c] || w[c] <= narrowest[c]) continue;
      if (pick == w.size() || excess(c) > excess(pick) || (excess(c) == excess(pick) && w[c] > w[pick])) pick = c;
    }
    if (pick == w.size()) break;
    --w[pick];
  }
  return w;
}

std::string Table::render(std::size_t width) const {
  const std::vector<std::size_t> w = widths(width);
  std::string out;
  for (const auto& row : rows) {
    if (row.size() != w.size()) {  // a heading
      for (const std::string& line : wrap(row.empty() ? "" : row[0], width)) out += line + "\n";
      continue;
    }
    std::vector<std::vector<std::string>> cells(row.size());
    std::size_t lines = 1;
    for (std::size_t c = 0; c < row.size(); ++c) {
      cells[c] = flexible[c] ? wrap(row[c], w[c]) : std::vector<std::string>{row[c]};
      lines = std::max(lines, cells[c].size());
    }
    for (std::size_t l = 0; l < lines; ++l) {
      std::string line;
      for (std::size_t c = 0; c < row.size(); ++c) {
        if (c > 0) line += c == 1 ? " " : "  ";
        line += pad(l < cells[c].size() ? cells[c][l] : "", w[c], right[c]);
      }
      line.erase(line.find_last_not_of(' ') + 1);
      out += line + "\n";
    }
  }
  return out;
}

std::string mark(const ReportRow& r) { return r.is_check() ? (r.passed() ? "✓" : "✗") : " "; }

std::string measured_text(const ReportRow& r) {
  if (r.spread && r.spread->runs > 1) return format_with_range(r.measured, r.spread->min, r.spread->max, r.unit);
  return format_value(r.measured, r.unit);
}

std::string predicted_text(const ReportRow& r) {
  if (!r.predicted) return "";
  return r.is_check() ? format_expected(*r.predicted, *r.tolerance, r.unit) : format_value(*r.predicted, r.unit);
}

// Items joined by " · ", a new line where the next one would pass `width`.
std::string joined(const std::vector<std::string>& items, std::size_t width) {
  std::string out, line;
  for (const std::string& item : items) {
    if (!line.empty() && display_width(line) + 3 + display_width(item) > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " · ") + item;
  }
  for (const std::string& l : wrap(line, width)) out += l + "\n";
  return out;
}

// Every row in the order added; a heading where the case changes.
std::string list_table(const std::vector<const ReportRow*>& rows, std::size_t width, const std::string& value_title) {
  // The values wrap too, at their spaces only ("0.1011 GB/s" over "(0.0546–0.147)"), and last:
  // their keep is wider than any value.
  Table t{{},
          {false, false, true, true, false},
          {false, true, true, true, true},
          {0, kKeepLabel, kKeepValue, kKeepValue, kKeepSource}};
  std::string current = "\x01";
  for (const ReportRow* r : rows) {
    if (r->case_id() != current) {
      current = r->case_id();
      if (t.rows.empty())
        t.rows.push_back({" ", current, value_title, "predicted", "from"});  // titles once
      else {
        t.rows.push_back({""});
        if (!current.empty()) t.rows.push_back({" ", current, "", "", ""});  // (rows about the whole run: no heading)
      }
    }
    t.rows.push_back({mark(*r), r->label, measured_text(*r), predicted_text(*r), r->source});
  }
  return t.render(width);
}

// The cell of one case's row in the side-by-side table: the median only, ✗ on a failed check.
std::string pivot_cell(const ReportRow* r) {
  if (!r) return "";
  return format_value(r->measured, r->unit) + (r->passed() ? "" : " ✗");
}

// Drops a column that is empty in every row below the header.
void drop_empty_column(Table& t, std::size_t c) {
  for (std::size_t i = 1; i < t.rows.size(); ++i)
    if (t.rows[i].size() == t.right.size() && !t.rows[i][c].empty()) return;
  for (auto& row : t.rows)
    if (row.size() == t.right.size()) row.erase(row.begin() + std::ptrdiff_t(c));
  t.right.erase(t.right.begin() + std::ptrdiff_t(c));
  t.keep.erase(t.keep.begin() + std::ptrdiff_t(c));
  t.flexible.erase(t.flexible.begin() + std::ptrdiff_t(c));
}

// One metric of the side-by-side table: its row, and a "predicted" row below it when the
// cases predict different values. Sources that differ by case go to the footnotes.
void add_metric(Table& t, const std::vector<std::string>& columns,
                const std::map<std::string, const ReportRow*>& by_case, std::vector<std::string>& footnotes) {
  const ReportRow* first = by_case.begin()->second;
  std::vector<std::string> cells, predicted;
  std::set<std::string> distinct_predicted, sources;
  std::string by_source, mark_text = " ";
  for (const std::string& c : columns) {
    const auto it = by_case.find(c);
    const ReportRow* r = it == by_case.end() ? nullptr : it->second;
    cells.push_back(pivot_cell(r));
    predicted.push_back(r && r->predicted ? format_value(*r->predicted, r->unit)
                                          : "");  // (tolerances: one case, or JSON)
    if (!r) continue;
    distinct_predicted.insert(predicted_text(*r));
    if (!r->source.empty()) sources.insert(r->source);
    if (!r->source.empty()) by_source += (by_source.empty() ? "" : "; ") + c + " " + r->source;
    if (r->is_check()) mark_text = mark_text == "✗" || !r->passed() ? "✗" : "✓";
  }
  const bool one_prediction = distinct_predicted.size() <= 1;
  const std::string source = sources.size() <= 1 ? (sources.empty() ? "" : *sources.begin()) : "see below";
  std::vector<std::string> row = {mark_text, first->label};
  row.insert(row.end(), cells.begin(), cells.end());
  row.push_back(one_prediction && !distinct_predicted.empty() ? *distinct_predicted.begin() : "");
  row.push_back(one_prediction ? source : "");
  t.rows.push_back(std::move(row));
  if (!one_prediction) {
    std::vector<std::string> sub = {" ", "  predicted"};
    sub.insert(sub.end(), predicted.begin(), predicted.end());
    sub.push_back("");
    sub.push_back(source);
    t.rows.push_back(std::move(sub));
  }
  if (sources.size() > 1) footnotes.push_back(first->label + ": " + by_source);
}

// The cases of `columns` side by side: a column per case, a row per metric.
std::string pivot_table(const std::vector<std::string>& columns, const std::vector<const ReportRow*>& rows,
                        std::size_t width, std::vector<std::string>& footnotes) {
  std::vector<std::string> order;
  std::map<std::string, std::map<std::string, const ReportRow*>> metrics;
  int runs = 0;
  for (const ReportRow* r : rows) {
    if (!metrics.count(r->metric())) order.push_back(r->metric());
    metrics[r->metric()][r->case_id()] = r;
    if (r->spread) runs = std::max(runs, r->spread->runs);
  }
  Table t;
  t.right = std::vector<bool>(columns.size() + 4, true);
  t.flexible = std::vector<bool>(columns.size() + 4, false);
  t.right[0] = t.right[1] = t.right.back() = false;
  t.flexible[1] = t.flexible.back() = true;
  t.keep = std::vector<std::size_t>(columns.size() + 4, 0);
  t.keep[1] = kKeepPivotLabel;
  t.keep.back() = kKeepPivotSource;
  std::vector<std::string> header = {" ", ""};
  header.insert(header.end(), columns.begin(), columns.end());
  header.push_back("predicted");
  header.push_back("from");
  t.rows.push_back(std::move(header));
  for (const std::string& m : order) add_metric(t, columns, metrics[m], footnotes);
  drop_empty_column(t, columns.size() + 3);  // "from", then "predicted" (before it, so its index holds)
  drop_empty_column(t, columns.size() + 2);
  if (runs > 1) footnotes.push_back("The table shows medians; run one case alone (or add --json) for min–max.");
  return t.render(width);
}

// Whether every line of `text` fits `width` columns.
bool fits(const std::string& text, std::size_t width) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (display_width(line) > width) return false;
  return true;
}

// The cases of `columns` one after another, each its own list under its name: what a terminal
// too narrow for them side by side shows (ZeRO's four stages at 80 columns).
std::string cases_in_turn(const std::vector<std::string>& columns, const std::vector<const ReportRow*>& rows,
                          std::size_t width, const std::string& value_title) {
  std::string out;
  for (const std::string& c : columns) {
    std::vector<const ReportRow*> mine;
    for (const ReportRow* r : rows)
      if (r->case_id() == c) mine.push_back(r);
    if (!mine.empty()) out += (out.empty() ? "" : "\n") + c + "\n" + list_table(mine, width, value_title);
  }
  return out;
}

}  // namespace

std::string Report::to_text(int width) const {
  const std::size_t w = std::size_t(std::max(40, width));
  std::vector<std::string> head =
      title.empty() ? std::vector<std::string>{lab + " lab", std::to_string(ranks) + " ranks (" + backend + ")"}
                    : std::vector<std::string>{title};
  head.insert(head.end(), setup.begin(), setup.end());
  std::string out = joined(head, w) + "\n";

  const std::set<std::string> side_by_side(columns.begin(), columns.end());
  std::vector<const ReportRow*> pivoted, listed;
  for (const ReportRow& r : rows)
    (columns.size() >= 2 && side_by_side.count(r.case_id()) ? pivoted : listed).push_back(&r);
  std::vector<std::string> footnotes;
  if (!pivoted.empty()) {
    std::vector<std::string> pivot_notes;
    const std::string side_by_side_text = pivot_table(columns, pivoted, w, pivot_notes);
    if (fits(side_by_side_text, w)) {
      out += side_by_side_text;
      footnotes = std::move(pivot_notes);
    } else {
      out += cases_in_turn(columns, pivoted, w, value_title);
    }
  }
  if (!pivoted.empty() && !listed.empty()) out += "\n";
  if (!listed.empty()) out += list_table(listed, w, value_title);

  out += "\n";
  for (const std::string& n : footnotes)
    for (const std::string& l : wrap(n, w)) out += l + "\n";
  for (const std::string& n : notes) {
    if (display_width(n) <= w && n.find('\n') == std::string::npos) {  // as written: a chart's columns stay put
      out += n + "\n";
      continue;
    }
    for (const std::string& l : wrap(n, w)) out += l + "\n";
  }
  int checks = 0;
  for (const ReportRow& r : rows) checks += r.is_check();
  const std::string of_checks = std::to_string(checks) + (checks == 1 ? " check" : " checks");
  out += ok ? "result: OK, " + of_checks + " passed\n"
            : "result: FAILED, " + std::to_string(failures.size()) + " of " + of_checks + " failed\n";
  for (const std::string& f : failures) {
    const std::vector<std::string> lines = wrap(f, w - 4);
    for (std::size_t i = 0; i < lines.size(); ++i) out += (i == 0 ? "  ✗ " : "    ") + lines[i] + "\n";
  }
  return out;
}

}  // namespace dtl
