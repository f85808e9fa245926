// What a lab returns: rows of {quantity, measured, predicted, unit}, and whether every
// check it made passed. The CLI prints it, the visualizer overlays it, tests assert on it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtl {

struct ReportRow {
  std::string quantity;
  double measured = 0;
  std::optional<double> predicted;  // nullopt where no formula applies
  std::string unit;
};

struct Report {
  std::string lab;
  std::string backend;
  int ranks = 0;
  nlohmann::json config = nlohmann::json::object();
  std::vector<ReportRow> rows;
  bool ok = true;           // every check the lab makes passed
  std::vector<std::string> failures;  // which checks failed, in words

  void add(std::string quantity, double measured, std::optional<double> predicted, std::string unit);
  // A check: adds a row (measured vs expected) and marks the report failed if |diff| > tolerance.
  void check(std::string quantity, double measured, double expected, std::string unit, double tolerance = 0);
  const ReportRow* find(std::string_view quantity) const;
  nlohmann::json to_json() const;
  std::string to_text() const;  // aligned table for the terminal
};

}  // namespace dtl
