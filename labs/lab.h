// What a lab is: a function run on every rank against dtl::Comm, returning a Report of
// {quantity, measured, predicted, unit} rows, plus a registry entry (name, description,
// options). The CLI prints the report, the visualizer overlays it, tests assert on it.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/comm/comm.h"
#include "core/comm/link.h"
#include "core/memory/memory.h"

namespace dtl {

struct LabConfig {
  int ranks = 4;
  std::uint64_t bytes = 1 << 20;
  DType dtype = DType::f32;
  std::string backend = "threads";
  // Where the lab's buffers live: cpu, or cuda (rank r on GPU r mod count, see rank_device).
  Device::Kind device = Device::Kind::cpu;
  int iters = 5;   // timed repetitions
  int warmup = 1;  // untimed repetitions first
  LinkSpec link;   // the emulated interconnect the run uses (threads backend), for predicted times
  // --slow-rank R:FACTOR: rank R's compute spans last FACTOR times as long (a straggler).
  int slow_rank = -1;
  double slow_factor = 1.0;
  std::map<std::string, std::string> options;  // lab-specific, e.g. {"algo": "ring"}

  const std::string& option(const std::string& key) const;  // throws if the lab declared no such option
  nlohmann::json to_json() const;
};

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

struct LabOption {
  std::string name;           // "algo" → --algo on the command line
  std::string default_value;
  std::string help;
  std::vector<std::string> choices;  // empty: free text
};

struct LabInfo {
  std::string name;
  std::string description;
  std::vector<LabOption> options;
  std::function<Report(Comm&, const LabConfig&)> run;
  // Chunk grid the step-through draws (0: no chunk picture).
  std::function<int(const LabConfig&)> chunk_grid;
  // The lab computes while collectives run (DDP's backward): on thread ranks its rank
  // threads get a lower priority than their comm streams (ThreadsOptions::compute_nice).
  bool overlaps_compute = false;
  // The lab keeps its buffers on LabConfig::device (it may run with --device cuda).
  bool device_buffers = false;
};

// The device a rank's buffers live on: the host, or GPU (rank mod GPU count) so several
// thread ranks may share one GPU. Under a multi-process launcher the node-local rank counts.
Device rank_device(Device::Kind kind, const Comm& comm);

const std::vector<LabInfo>& lab_registry();
const LabInfo* find_lab(std::string_view name);  // nullptr if unknown
// Fills unset lab options with their defaults and validates choices (UsageError).
LabConfig with_defaults(const LabInfo& lab, LabConfig cfg);

}  // namespace dtl
