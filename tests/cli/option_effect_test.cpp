// No silent options (issue 31): every option of every lab — read from the labs' own tables
// (LabInfo::options), so a new option is covered the day it is added — changed from its
// value in a small base configuration to another valid one must either change the report
// or be refused (exit 2, saying why). "Change" is measured against noise: the base runs
// twice, and a number differs when it moves by more than 3× what it moved between those two
// runs (timings move a little on their own; a real effect moves a row by much more, or adds
// or removes rows). Label slow: about 200 small runs, once per CI run, in the release build.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "labs/lab.h"
#include "tests/cli/cli_util.h"

using nlohmann::json;

namespace {

// Where the generic next value would not show an option's effect in a small run: bucket
// capacities above the whole model, compute times of a microsecond, a backward near its
// default of twice the forward (3 ms against 4 ms moved the step time by less than CI's noise).
const std::map<std::pair<std::string, std::string>, std::string> kValue = {
    {{"ddp", "bucket-mb"}, "0.01"},
    {{"zero", "bucket-mb"}, "0.001"},
    {{"pipeline", "compute-us"}, "3000"},
    {{"pipeline", "backward-us"}, "12000"},
    {{"pipeline", "weight-us"}, "1000"},
    {{"grid", "compute-us"}, "3000"},
    {{"grid", "dp"}, "2"},  // (0 means ranks / (tp·pp) = 1 here: the next value, 1, is the same grid)
};

// Options that apply only beside others (refused in the base configuration, rightly): the
// configuration where each does, added to the base for its own test.
const std::map<std::pair<std::string, std::string>, std::map<std::string, std::string>> kAppliesWith = {
    {{"ddp", "micro-batches"}, {{"variant", "accumulate"}}},
    {{"pipeline", "chunks"}, {{"schedule", "interleaved"}}},
    {{"pipeline", "backward-us"}, {{"compute-us", "2000"}}},
    {{"pipeline", "weight-us"}, {{"schedule", "zb-h1"}, {"compute-us", "2000"}}},
    {{"tensor_parallel", "heads"}, {{"model", "gpt"}}},
    {{"tensor_parallel", "vocab"}, {{"model", "gpt"}}},
    {{"grid", "heads"}, {{"model", "gpt"}}},
    {{"grid", "vocab"}, {{"model", "gpt"}}},
    {{"experts", "seq"}, {{"model", "gpt"}}},
    {{"experts", "batch"}, {{"model", "gpt"}}},
    {{"experts", "heads"}, {{"model", "gpt"}}},
    {{"experts", "vocab"}, {{"model", "gpt"}}},
};

// Options whose effect no report row can show, and why (each a reviewed exception).
const std::map<std::pair<std::string, std::string>, const char*> kNoRowEffect = {
    {{"collectives", "op"},
     "changes the values combined; every row is a count, a time or a check against the exact result of that op"},
};

struct LabRun {
  int code = -1;
  std::string err;
  json report;
};

LabRun run(const std::string& lab, const std::map<std::string, std::string>& options) {
  std::string args = "run " + lab + " --json";
  for (const auto& [k, v] : options) args += " --" + k + " '" + v + "'";
  const dtl::test::CliOutput o = dtl::test::run_dtlab(args);
  LabRun r{o.code, o.err, json::parse(o.out, nullptr, false)};
  return r;
}

// Every number in the report's rows and plots, by a path naming it ("rows/bucketed.loss_last/measured").
void flatten(const json& j, const std::string& at, std::map<std::string, double>& out) {
  if (j.is_number())
    out[at] = j.get<double>();
  else if (j.is_object())
    for (const auto& [k, v] : j.items()) flatten(v, at + "/" + k, out);
  else if (j.is_array())
    for (std::size_t i = 0; i < j.size(); ++i) {
      const json& e = j[i];
      const std::string key =
          e.is_object() && e.contains("id") && e["id"].is_string() ? e["id"].get<std::string>() : std::to_string(i);
      flatten(e, at + "/" + key, out);
    }
}
std::map<std::string, double> numbers(const json& report) {
  std::map<std::string, double> out;
  if (report.is_object()) {
    if (report.contains("rows")) flatten(report["rows"], "rows", out);
    if (report.contains("plots")) flatten(report["plots"], "plots", out);
  }
  return out;
}

// What moved between `a` and `b` (empty when nothing did): a row appearing or going; a
// number that was the same in both base runs (a loss, a byte count) now different; or one
// that was not (a timing) now off by more than 3× its noise and by more than 10%.
std::string what_moved(const std::map<std::string, double>& a, const std::map<std::string, double>& a2,
                       const std::map<std::string, double>& b) {
  for (const auto& [k, v] : b)
    if (!a.count(k)) return "new " + k;
  for (const auto& [k, v] : a) {
    const auto it = b.find(k);
    if (it == b.end()) return "gone " + k;
    const auto again = a2.find(k);
    const double noise = again == a2.end() ? std::fabs(v) : std::fabs(again->second - v), w = it->second;
    if (noise == 0 && w != v) return k;
    if (noise > 0 && std::fabs(w - v) > 3 * noise && std::fabs(w - v) > 0.1 * std::fabs(v))
      return k + " (beyond its noise)";
  }
  return {};
}

// Other valid values than `from`, in the order tried: an integer's neighbours and double
// and half (a value may be refused for a divisibility the next one meets), a choice's others.
std::vector<std::string> candidates(const dtl::OptionSpec& o, const std::string& from) {
  if (o.kind == dtl::OptionKind::choice) {
    std::vector<std::string> out;
    for (const std::string& c : o.choices)
      if (c != from) out.push_back(c);
    return out;
  }
  const double v = std::stod(from);
  std::vector<std::string> out;
  for (double w : {o.kind == dtl::OptionKind::integer ? v + 1 : (v == 0 ? 1.0 : v * 2), 2 * v, v - 1, v / 2}) {
    if (w < o.min || w > o.max || w == v || (o.kind == dtl::OptionKind::integer && w != std::floor(w))) continue;
    char buf[64];
    std::snprintf(buf, sizeof buf, o.kind == dtl::OptionKind::integer ? "%.0f" : "%.9g", w);
    if (std::find(out.begin(), out.end(), buf) == out.end()) out.push_back(buf);
  }
  return out;
}

struct Verdict {
  bool refused = false;
  std::string line, moved;
};

// Option `o` of `lab` changed in configuration `base`: refused at every value tried, or the
// first accepted value's change to the report (empty when nothing moved).
Verdict try_option(const dtl::LabInfo& lab, const dtl::OptionSpec& o, const std::map<std::string, std::string>& base) {
  const LabRun a = run(lab.name, base), a2 = run(lab.name, base);
  EXPECT_EQ(a.code, 0) << lab.name << " base run\n" << a.err;
  const auto given = base.find(o.name);
  const std::string from = given != base.end() ? given->second : o.default_value;
  const auto special = kValue.find({lab.name, o.name});
  const std::vector<std::string> values =
      special != kValue.end() ? std::vector<std::string>{special->second} : candidates(o, from);
  Verdict v{true, "", ""};
  for (const std::string& value : values) {
    auto options = base;
    options[o.name] = value;
    const LabRun b = run(lab.name, options);
    v.line = "dtlab run " + lab.name + " --" + o.name + " " + value + " (from " + from + ")";
    if (b.code == 2) {  // refused: it must say why
      EXPECT_NE(b.err.find("error"), std::string::npos) << v.line << "\n" << b.err;
      std::printf("%-70s refused: %s", v.line.c_str(), b.err.c_str());
      continue;
    }
    // Exit 1 with a report: a check of the lab failed at that value (a GPT that learns less
    // in its few steps): still a report to compare.
    EXPECT_TRUE(b.code == 0 || (b.code == 1 && b.report.is_object())) << v.line << "\n" << b.err;
    v.refused = false;
    v.moved = what_moved(numbers(a.report), numbers(a2.report), numbers(b.report));
    // A timing's noise is one difference of two base runs: one run slowed by a busy CI
    // machine (mpirun tests beside this one) can make it larger than the option's effect.
    // Measure afresh, twice at most, before calling the option silent.
    for (int again = 0; again < 2 && v.moved.empty(); ++again) {
      const LabRun c = run(lab.name, base), c2 = run(lab.name, base), d = run(lab.name, options);
      v.moved = what_moved(numbers(c.report), numbers(c2.report), numbers(d.report));
    }
    return v;
  }
  return v;
}

}  // namespace

TEST(OptionEffect, EveryLabOptionChangesTheReportOrIsRefused) {
  int options = 0, refused = 0;
  for (const dtl::LabInfo& lab : dtl::lab_registry()) {
    // The base: the lab's small run (LabInfo::small_run); the option under test replaces its
    // entry there if it has one.
    ASSERT_FALSE(lab.small_run.empty()) << "the lab " << lab.name << " declares no small_run in its LabInfo";
    for (const dtl::OptionSpec& o : lab.options) {
      if (o.kind == dtl::OptionKind::path) continue;  // its effect is a file (tests/cli: --save, --load)
      ++options;
      auto base = lab.small_run;
      const auto with = kAppliesWith.find({lab.name, o.name});
      if (with != kAppliesWith.end())
        for (const auto& [flag, value] : with->second) base.insert_or_assign(flag, value);
      const Verdict v = try_option(lab, o, base);
      if (v.refused) {
        ++refused;
        continue;
      }
      const auto exempt = kNoRowEffect.find({lab.name, o.name});
      if (exempt != kNoRowEffect.end()) {
        std::printf("%-70s exempt: %s\n", v.line.c_str(), exempt->second);
        continue;
      }
      EXPECT_FALSE(v.moved.empty()) << v.line << ": accepted, yet no row or plot of the report changed";
      std::printf("%-70s changes %s\n", v.line.c_str(), v.moved.c_str());
    }
  }
  std::printf("%d options changed, %d of them refused at every value tried in their configuration\n", options, refused);
  EXPECT_GE(options, 50);
}
