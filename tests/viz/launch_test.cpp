// One launch (labs/launch.h): `dtlab run` and dtlab-viz's live session start the same run.
// For every lab's small run (LabInfo::small_run, with the lab's live_options, which the viewer
// starts from, given to dtlab too), `dtlab run --step` and viz::Session::live produce the same
// configuration (the report's "config"), the same trace metadata, key by key, and the same
// step unit; they differ only in measured times. (dtlab-viz's own --bytes default, 1K, is not dtlab's:
// the session here is given what dtlab parsed.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "core/util/units.h"
#include "labs/lab.h"
#include "tests/cli/cli_util.h"
#include "viz/app/session.h"

using namespace dtl;

namespace {

// The small run as dtlab's flags, and as the configuration the viewer's command line builds.
struct SmallRun {
  std::string args;  // "--ranks 2 --bytes 4K ..."
  LabConfig cfg;
};

SmallRun small_run(const LabInfo& lab) {
  std::map<std::string, std::string> flags = lab.small_run;
  for (const auto& [name, value] : lab.live_options) flags.emplace(name, value);  // the small run's win
  SmallRun r;
  for (const auto& [flag, value] : flags) {
    r.args += " --" + flag + " " + value;
    if (flag == "ranks")
      r.cfg.ranks = std::stoi(value);
    else if (flag == "bytes")
      r.cfg.bytes = parse_size(value, "--bytes");
    else if (flag == "iters")
      r.cfg.iters = std::stoi(value);
    else if (flag == "repeat")
      r.cfg.repeat = std::stoi(value);
    else
      r.cfg.options.set(flag, value);
  }
  return r;
}

struct LiveRun {
  std::map<std::string, std::string> meta;  // once the run has ended
  std::string step;                         // what one step moves: "transfer" or "collective"
};

// The live session, every step released as a learner would.
LiveRun live_run(const LabInfo& lab, const LabConfig& cfg) {
  const std::unique_ptr<viz::Session> s = viz::Session::live(lab, cfg);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!s->finished() && std::chrono::steady_clock::now() < deadline) {
    if (s->can_advance())
      s->advance_one();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  EXPECT_TRUE(s->finished()) << lab.name << ": " << s->status();
  s->refresh();  // the report, written when the run ended
  return {s->data().meta, s->step_name()};
}

// The report's "config", the run's settings as the report states them.
nlohmann::json report_config(const std::map<std::string, std::string>& meta) {
  const auto it = meta.find(meta_key_name(MetaKey::report));
  if (it == meta.end()) return nullptr;
  return nlohmann::json::parse(it->second, nullptr, false).value("config", nlohmann::json());
}

}  // namespace

TEST(Launch, DtlabRunAndTheViewersLiveSessionStartTheSameRun) {
  const std::string trace = ::testing::TempDir() + "launch_" + std::to_string(::getpid()) + ".json";
  // The report holds measured times, "live_plots" the curves so far with their times, and a
  // "pipeline_simulated.<schedule>" timeline the schedule replayed at the measured compute times.
  const std::set<std::string> timed = {meta_key_name(MetaKey::report), meta_key_name(MetaKey::live_plots)};
  const std::string simulated = meta_key_name(MetaKey::pipeline_simulated, "");
  for (const LabInfo& lab : lab_registry()) {
    const SmallRun run = small_run(lab);
    const std::string args = "run " + lab.name + run.args + " --step --json --trace " + trace;
    const test::CliOutput o = test::run_dtlab(args + " </dev/null");  // not a terminal: every step printed
    ASSERT_EQ(o.code, 0) << "dtlab run " << lab.name << run.args << " --step\n" << o.err;
    const std::map<std::string, std::string> dtlab = viz::load_trace(trace).meta;
    const LiveRun live = live_run(lab, run.cfg);
    const std::map<std::string, std::string>& viewer = live.meta;
    EXPECT_NE(o.err.find("one " + live.step + " at a time"), std::string::npos)
        << lab.name << ": the viewer steps by " << live.step << "; dtlab said\n"
        << o.err.substr(0, 200);
    EXPECT_EQ(report_config(viewer), report_config(dtlab)) << lab.name;
    EXPECT_FALSE(report_config(dtlab).is_null()) << lab.name << ": no report in dtlab's trace";
    for (const auto& [key, value] : dtlab) {
      const auto it = viewer.find(key);
      if (key == meta_key_name(MetaKey::world_size)) continue;  // the trace writer's, from the trace's ranks
      if (it == viewer.end()) {
        ADD_FAILURE() << lab.name << ": the viewer's run has no meta \"" << key << "\"";
      } else if (!timed.count(key) && !key.starts_with(simulated)) {
        EXPECT_EQ(it->second, value) << lab.name << ": meta \"" << key << "\"";
      }
    }
    for (const auto& [key, value] : viewer)
      EXPECT_TRUE(dtlab.count(key)) << lab.name << ": dtlab's trace has no meta \"" << key << "\"";
    std::printf("%-17s %2zu metadata keys alike\n", lab.name.c_str(), dtlab.size());
  }
  std::remove(trace.c_str());
  std::remove((trace + ".dtlt").c_str());
}
