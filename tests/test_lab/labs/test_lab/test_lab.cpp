// The test lab: every rank fills a vector, the learner's weighted_sum adds them up weighted
// by rank + 1, and the report checks the result against the float64 sum and the bytes the
// all-reduce moved against 4n. Small on purpose: it is the proof of docs/reference.md's "Adding a lab"
// (a folder like labs/<lab>/ and one registration line), built only in tests.
#include "tests/test_lab/labs/test_lab/test_lab.h"

#include <cmath>
#include <vector>

#include "core/trace/trace.h"
#include "labs/measure.h"
#include "labs/option_table.h"
#include "tests/test_lab/exercises/test_lab.h"

namespace dtl {

namespace {

struct TestLabSettings {
  int length = 1000;
};

const OptionTable<TestLabSettings>& test_lab_option_table() {
  static const OptionTable<TestLabSettings> table = [] {
    OptionTable<TestLabSettings> t;
    t.integer("length", &TestLabSettings::length, 1000, 1, 1 << 20, "floats per rank");
    return t;
  }();
  return table;
}

// Rank r's element i: small integers, so every sum is exact in float.
float element(int rank, std::size_t i) { return float(i % 7) + float(rank); }

Report run_test_lab(Comm& comm, const LabConfig& cfg) {
  const TestLabSettings s = test_lab_option_table().parse(cfg.options);
  const std::size_t n = std::size_t(s.length);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = element(comm.rank(), i);
  const std::size_t mark = comm.trace() ? comm.trace()->log(comm.global_rank(), kStreamComm).size() : 0;
  ex::weighted_sum(comm, x.data(), n);
  double worst = 0, bytes = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double want = 0;  // float64: the sum over ranks of (r + 1) · x_r[i]
    for (int r = 0; r < comm.size(); ++r) want += double(r + 1) * double(element(r, i));
    worst = std::max(worst, std::fabs(double(x[i]) - want));
  }
  if (comm.trace()) {
    const EventLog& log = comm.trace()->log(comm.global_rank(), kStreamComm);
    for (std::size_t i = mark; i < log.size(); ++i)
      if (log[i].kind == EventKind::collective) bytes += double(log[i].bytes);
  }
  Report rep = start_report(comm, cfg, "test_lab");
  rep.check("weighted_sum.max_diff", "max |result − float64 sum|", worst, 0.0, "").from("exact");
  rep.add("weighted_sum.bytes", "bytes all-reduced per rank", bytes, "B").predict(4.0 * double(n), "4n");
  return rep;
}

}  // namespace

namespace ex {
std::span<const ExerciseHints> test_lab_hints();  // tests/test_lab/exercises/test_lab_hints.cpp
}  // namespace ex

int test_lab_length(const LabOptions& options) { return test_lab_option_table().parse(options).length; }

LabInfo test_lab_info() {
  return {
      "test_lab",
      "a lab built only in tests: the learner's weighted sum against the float64 sum",
      {},
      test_lab_option_table().specs(),
      {{"weighted_sum", "WeightedSum", 5}},
      run_test_lab,
      nullptr,
      StepUnit::collectives,
      /*overlaps_compute=*/false,
      {kBytesView, ViewKind::timeline, ViewKind::report},
      {},
      test_lab_option_table().settings_text(),
      ex::test_lab_hints(),
      {},
      {{"ranks", "2"}},  // small_run: the registry-wide tests run the test lab too
  };
}

}  // namespace dtl
