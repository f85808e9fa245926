// The what-if panel's model (viz/model/what_if.h), without a window:
//   - at the sliders' values equal to the run's own settings, every row equals the report's
//     predicted value for the same id exactly (the same core/theory call on the same inputs),
//     and carries the report's measured value (the point the panel marks);
//   - moved, the rows follow the curriculum's closed forms, written out here independently:
//     1F1B's bubble (P−1)/(M+P−1), interleaved's (P−1)/(v·M+P−1), ZeRO's bytes per parameter
//     16 / 4+12/N / 2+14/N / 16/N (bf16 with an fp32 master), its bytes sent 2Ψ(N−1)/N and
//     3Ψ(N−1)/N, DDP's ring 2(P−1)/P · 4Ψ (fp32).
#include "viz/model/what_if.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "labs/lab.h"
#include "tests/cli/cli_util.h"

using namespace dtl;
using namespace dtl::viz;

namespace {

// A lab's small run (lab.h) with `extra` flags, traced; its trace loaded.
TraceData traced_run(const std::string& lab_name, const std::string& extra) {
  const std::string trace = ::testing::TempDir() + "what_if_" + std::to_string(::getpid()) + ".json";
  std::string args;
  for (const LabInfo& lab : lab_registry())
    if (lab.name == lab_name)
      for (const auto& [flag, value] : lab.small_run) args += " --" + flag + " " + value;
  const test::CliOutput o = test::run_dtlab("run " + lab_name + args + " " + extra + " --trace " + trace);
  EXPECT_EQ(o.code, 0) << lab_name << "\n" << o.err;
  TraceData d = load_trace(trace);
  std::remove(trace.c_str());
  std::remove((trace + ".dtlt").c_str());
  return d;
}

// Every row at the run's settings against the report's row of its id; returns how many matched.
int compare_with_report(const TraceData& d, const WhatIfModel& m) {
  const nlohmann::json report = nlohmann::json::parse(*d.meta_of(MetaKey::report));
  std::map<std::string, nlohmann::json> by_id;
  for (const nlohmann::json& row : report["rows"]) by_id[row["id"].get<std::string>()] = row;
  int compared = 0;
  for (const WhatIfRow& r : what_if_rows(d, m, m.run)) {
    EXPECT_EQ(r.predicted, r.at_run) << r.id << ": the sliders at the run's settings are the run's formula";
    const auto it = by_id.find(r.id);
    if (it == by_id.end() || !it->second["predicted"].is_number()) {
      std::printf("%-32s what-if %.6g (no predicted row of this id in the report)\n", r.id.c_str(), r.predicted);
      continue;
    }
    const double theirs = it->second["predicted"].get<double>();
    std::printf("%-32s what-if %.17g, report %.17g, difference %g\n", r.id.c_str(), r.predicted, theirs,
                r.predicted - theirs);
    EXPECT_EQ(r.predicted, theirs) << r.id;
    EXPECT_TRUE(r.measured.has_value()) << r.id;
    if (r.measured) { EXPECT_EQ(*r.measured, it->second["measured"].get<double>()) << r.id; }
    ++compared;
  }
  return compared;
}

const WhatIfRow& find_row(const std::vector<WhatIfRow>& rows, const std::string& id) {
  for (const WhatIfRow& r : rows)
    if (r.id == id) return r;
  ADD_FAILURE() << "no what-if row " << id;
  static const WhatIfRow none;
  return none;
}

}  // namespace

TEST(WhatIf, PipelineAtTheRunsSettingsIsTheReportAndMovesAsTheFormula) {
  const TraceData d = traced_run("pipeline", "--schedule all --chunks 2 --compute-us 200");
  const WhatIfModel m = what_if_model(d);
  ASSERT_EQ(m.lab, WhatIfLab::pipeline) << m.why_none;
  EXPECT_EQ(m.run.ranks, 2);
  EXPECT_GE(compare_with_report(d, m), 4) << "the bubble rows of gpipe, 1f1b, interleaved and zb-h1 at least";
  double worst = 0;
  int interleaved = 0;
  for (int P : {2, 4, 8})
    for (int M : {1, 4, 8, 32})
      for (int v : {2, 3}) {
        WhatIfValues at = m.run;
        at.ranks = P, at.micro_batches = M, at.chunks = v;
        const std::vector<WhatIfRow> rows = what_if_rows(d, m, at);
        const WhatIfRow& one_f_one_b = find_row(rows, "1f1b.bubble");
        // 1F1B needs M >= P (the lab refuses fewer, and so does the panel, saying why).
        EXPECT_EQ(one_f_one_b.note.empty(), M >= P) << "P " << P << ", M " << M << ": " << one_f_one_b.note;
        if (M >= P) worst = std::max(worst, std::fabs(one_f_one_b.predicted - double(P - 1) / (M + P - 1)));
        const WhatIfRow& inter = find_row(rows, "interleaved.bubble");
        if (inter.note.empty())  // (interleaved needs M a multiple of P: its note says so otherwise)
          worst = std::max(worst, std::fabs(inter.predicted - double(P - 1) / (v * M + P - 1))), ++interleaved;
      }
  std::printf("bubble against (P-1)/(M+P-1) and (P-1)/(vM+P-1): largest difference %g\n", worst);
  EXPECT_LT(worst, 1e-12);  // (the formula's own form: idle (P-1)(F+B) over M(F+B) + idle)
  EXPECT_GE(interleaved, 8) << "interleaved compared where M is a multiple of P";
}

TEST(WhatIf, ZeroAtTheRunsSettingsIsTheReportAndMovesAsTheFormula) {
  const TraceData d = traced_run("zero", "--stage all");
  const WhatIfModel m = what_if_model(d);
  ASSERT_EQ(m.lab, WhatIfLab::zero) << m.why_none;
  int compared = 0;
  for (int stage = 0; stage <= 3; ++stage) {
    WhatIfModel at_stage = m;
    at_stage.run.zero_stage = stage;
    compared += compare_with_report(d, at_stage);
  }
  EXPECT_EQ(compared, 4 * 5) << "param, grad, optimizer, model-state and comm rows of stages 0-3";
  const double psi = m.psi;
  const double per_param[4][3] = {{16, 0, 0}, {4, 12, 0}, {2, 14, 0}, {0, 16, 0}};  // Ψ·a + Ψ·b/N
  double worst = 0;
  for (int N : {1, 2, 4, 8, 64})
    for (int stage = 0; stage <= 3; ++stage) {
      WhatIfValues at = m.run;
      at.ranks = N, at.zero_stage = stage;
      const std::vector<WhatIfRow> rows = what_if_rows(d, m, at);
      const std::string n = "zero" + std::to_string(stage) + ".";
      const double state = psi * (per_param[stage][0] + per_param[stage][1] / N);
      worst = std::max(worst, std::fabs(find_row(rows, n + "model_state_bytes").predicted - state) / state);
      const double sent = (stage == 3 ? 3 : 2) * psi * (N - 1) / N * 2;  // bf16: 2 bytes an element
      worst = std::max(worst, std::fabs(find_row(rows, n + "comm_formula").predicted - sent) / std::max(1.0, sent));
    }
  std::printf(
      "ZeRO model state and bytes sent against 16 / 4+12/N / 2+14/N / 16/N, 2|3 Psi(N-1)/N: largest "
      "relative difference %g\n",
      worst);
  EXPECT_LT(worst, 1e-15);
}

TEST(WhatIf, DdpAtTheRunsSettingsIsTheReportAndMovesAsTheFormula) {
  const TraceData d = traced_run("ddp", "");
  const WhatIfModel m = what_if_model(d);
  ASSERT_EQ(m.lab, WhatIfLab::ddp) << m.why_none;
  EXPECT_GE(compare_with_report(d, m), 1);
  double worst = 0;
  for (int P : {1, 2, 3, 8, 64}) {
    WhatIfValues at = m.run;
    at.ranks = P;
    for (const WhatIfRow& r : what_if_rows(d, m, at))
      worst = std::max(worst, std::fabs(r.predicted - 2.0 * (P - 1) / P * 4 * m.psi) / (4 * m.psi));
  }
  std::printf("DDP ring wire bytes against 2(P-1)/P * 4 Psi: largest relative difference %g\n", worst);
  EXPECT_LT(worst, 1e-15);
}

TEST(WhatIf, ALabWithoutFormulasSaysWhy) {
  const TraceData d = traced_run("collectives", "");
  const WhatIfModel m = what_if_model(d);
  EXPECT_EQ(m.lab, WhatIfLab::none);
  EXPECT_NE(m.why_none.find("collectives"), std::string::npos) << m.why_none;
  EXPECT_TRUE(what_if_rows(d, m, m.run).empty());
}

TEST(WhatIf, StartValuesAreKnobsAndWholeNumbersOrAClearError) {
  const std::vector<WhatIfSetting> s = parse_what_if_set("micro-batches=32,ranks=8");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].knob, WhatIfKnob::micro_batches);
  EXPECT_EQ(s[0].value, 32);
  EXPECT_EQ(s[1].knob, WhatIfKnob::ranks);
  EXPECT_EQ(s[1].value, 8);
  EXPECT_EQ(parse_what_if_set("zero-stage=3")[0].knob, WhatIfKnob::zero_stage);
  for (const char* bad : {"", "ranks", "ranks=", "ranks=x", "ranks=2x", "stages=4", "ranks=-1", "ranks=8,", ",ranks=8",
                          "ranks=99999999999"})
    EXPECT_THROW(parse_what_if_set(bad), UsageError) << "'" << bad << "'";
}

TEST(WhatIf, GptAtTheRunsSettingsIsTheReportAndMovesAsKorthikanti) {
  const TraceData d = traced_run("gpt", "--recompute selective");
  const WhatIfModel m = what_if_model(d);
  ASSERT_EQ(m.lab, WhatIfLab::gpt) << m.why_none;
  EXPECT_EQ(m.run.recompute, 1);
  EXPECT_EQ(compare_with_report(d, m), 3) << "per-layer activations (this GPT's, the paper's), the FLOP ratio";
  // Korthikanti et al. with t = 1: s·b·h·(34 + 5·a·s/h) kept, s·b·h·34 selective, 2·s·b·h full.
  const double b = m.batch, h = m.hidden, a = m.heads;
  double worst = 0;
  for (int s : {2, 8, 64, 1024})
    for (int r = 0; r <= 2; ++r) {
      WhatIfValues at = m.run;
      at.ranks = 1, at.sequence_length = s, at.recompute = r;
      const double want = r == 0 ? s * b * h * (34 + 5 * a * s / h) : r == 1 ? 34 * s * b * h : 2 * s * b * h;
      const double got = find_row(what_if_rows(d, m, at), "memory.activation_per_layer_paper").predicted;
      worst = std::max(worst, std::fabs(got - want) / want);
    }
  std::printf("GPT layer activations against Korthikanti et al.'s forms: largest relative difference %g\n", worst);
  EXPECT_LT(worst, 1e-15);
}

TEST(WhatIf, ARunBeyondTheSlidersOrWithoutItsSettingsHasNoneAndSaysWhy) {
  TraceData d = traced_run("pipeline", "");
  ASSERT_EQ(what_if_model(d).lab, WhatIfLab::pipeline);
  TraceData many = d;
  many.ranks = 16384;  // a hostile trace: the simulator would take minutes at the run's own size
  const WhatIfModel m = what_if_model(many);
  EXPECT_EQ(m.lab, WhatIfLab::none);
  EXPECT_NE(m.why_none.find("16384"), std::string::npos) << m.why_none;
  TraceData odd = d;  // action times that are not numbers: left out, never an exception
  for (auto& [key, value] : odd.meta)
    if (key.starts_with(meta_key_name(MetaKey::pipeline_simulated, ""))) {
      nlohmann::json j = nlohmann::json::parse(value);
      j["action_times"] = {"1", nullptr, -1};
      value = j.dump();
    }
  EXPECT_EQ(what_if_model(odd).lab, WhatIfLab::none);
  TraceData bare = d;
  for (auto it = bare.meta.begin(); it != bare.meta.end();)
    it = it->first.starts_with(meta_key_name(MetaKey::pipeline_simulated, "")) ? bare.meta.erase(it) : std::next(it);
  EXPECT_EQ(what_if_model(bare).lab, WhatIfLab::none);
  EXPECT_NE(what_if_model(bare).why_none.find("record it again"), std::string::npos) << what_if_model(bare).why_none;
}
