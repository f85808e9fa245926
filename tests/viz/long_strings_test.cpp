// Issue 46: no content crashes the viewer. ImGui reserves four vertices per character of a
// string it draws and holds 65,536 in a draw list: one 100k-character string in a trace aborted
// dtlab-viz ("Too many vertices in ImDrawList"). For every lab's trace this test puts a string
// of 200,000 characters into one field at a time — each event's and rank's name, every string
// inside each metadata value (report rows, notes, routing, grid, the split picture, simulated
// schedules, formulas; the first under each key name), each JSON value replaced by another
// shape or by plain text (a view's message then quotes it), the suffix of the prefixed keys (a
// schedule's or a phase's name) — and draws every view of the lab headless (ImGui's frames and
// draw lists, where the check that aborted lives), each case in a child process, at the start
// and the end of the run. A case may be refused with a dtl::Error; none may abort. (Without the
// routing view's clip_text the "moe_routing of another shape" case aborts here as the app did.)
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/cli/cli_util.h"
#include "tests/viz/child_process.h"
#include "tests/viz/headless_imgui.h"
#include "tests/viz/trace_fixtures.h"
#include "viz/app/app.h"
#include "viz/app/session.h"

using namespace dtl;
using json = nlohmann::json;

namespace {

const std::string kLong(200000, 'W');  // ~8 px a glyph: 1.6 million pixels of one line

// The first string under each key name in `v` (at any depth; an array's items count as its
// key's) made kLong: every kind of field once (a report's first row's label, unit, source, its
// first note, ...), within the 16 MiB a trace's metadata may hold.
void lengthen_strings(json& v, const std::string& key, std::set<std::string>& done) {
  if (v.is_string() && done.insert(key).second) v = kLong;
  if (v.is_array())
    for (json& item : v) lengthen_strings(item, key, done);
  if (v.is_object())
    for (auto& [k, item] : v.items()) lengthen_strings(item, k, done);
}

// A metadata value with its strings lengthened: the JSON ones keep their shape.
std::string lengthened(const std::string& value) {
  json parsed = json::parse(value, nullptr, false);
  if (parsed.is_discarded() || !(parsed.is_object() || parsed.is_array())) return kLong;
  std::set<std::string> done;
  lengthen_strings(parsed, "", done);
  return parsed.dump();
}

struct Case {
  std::string name, path;
};

// One case per field, each written to its own file (a forked child carries its parent's
// memory: the cases are not kept): the events' names, the ranks' names, each metadata key's
// value, and the prefixed keys' suffixes ("pipeline_simulated.1f1b" → "pipeline_simulated.WWW…").
std::vector<Case> write_cases(const std::string& base_path, const test::TempFolder& dir) {
  const json base = json::parse(test::read_file(base_path));
  std::vector<Case> out;
  auto write = [&](const std::string& name, const json& trace) {
    out.push_back({name, dir.file("case" + std::to_string(out.size()) + ".json")});
    test::write_file(out.back().path, trace.dump());
  };
  json t = base;
  for (json& e : t["traceEvents"])
    if (e.value("ph", "") != "M" && e.contains("name")) e["name"] = kLong;
  write("every event's name", t);
  t = base;
  for (json& e : t["traceEvents"])
    if (e.value("ph", "") == "M" && e.contains("args") && e["args"].contains("name")) e["args"]["name"] = kLong;
  write("every rank's and stream's name", t);
  t = base;
  for (const auto& [key, value] : base["otherData"].items())
    if (const std::size_t dot = key.find('.'); dot != std::string::npos) {
      t["otherData"].erase(key);
      t["otherData"][key.substr(0, dot + 1) + kLong + key.substr(dot + 1)] = value;
    }
  write("every prefixed key's suffix", t);
  for (const auto& [key, value] : base["otherData"].items()) {
    if (!value.is_string()) continue;
    t = base;
    t["otherData"][key] = lengthened(value.get<std::string>());
    write("meta " + key, t);
    const json parsed = json::parse(value.get<std::string>(), nullptr, false);
    if (parsed.is_object() || parsed.is_array()) {  // a shape the view does not know: its message quotes it
      t["otherData"][key] = json{{"omitted", kLong}}.dump();
      write("meta " + key + " of another shape", t);
      t["otherData"][key] = kLong;
      write("meta " + key + " not JSON", t);
    }
  }
  return out;
}

// The app on the trace: every view together at the start and the end of the run, and each
// alone (the whole window: the most text) at the end.
std::string draw_everything(const std::string& path) {
  viz::testing::HeadlessImGui gui(1280, 800);
  // As the OpenGL3 renderer declares (viz/app/main.cpp): with it ImGui reserves a string's
  // vertices where it starts a new 64K block, and the abort came from there; without it the
  // same strings pass.
  ImGui::GetIO().BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;
  viz::App app;
  app.Open(viz::Session::replay(path));
  for (std::size_t at : {std::size_t(0), app.session->steps().size()}) {
    app.controls.cursor = at;
    gui.frame(app), gui.frame(app);  // (the second frame draws what the first laid out)
  }
  for (ViewKind v : app.session->views()) {
    app.solo_view = std::string(view_kind_name(v));
    gui.frame(app), gui.frame(app);
  }
  return "";
}

struct LabRun {
  const char* name;
  const char* args;  // dtlab run ... (small: the test draws each case's trace several times)
};

class LongStrings : public ::testing::TestWithParam<LabRun> {};

TEST_P(LongStrings, EveryFieldDrawsClipped) {
  const LabRun& lab = GetParam();
  test::TempFolder dir(std::string("viz_long_") + lab.name);
  const std::string base_path = dir.file("base.json");
  const test::CliOutput o = test::run_dtlab(std::string(lab.args) + " --trace " + base_path);
  ASSERT_TRUE(o.code == 0 || (o.code == 1 && std::filesystem::exists(base_path)))  // (a short run's checks may fail)
      << lab.args << "\n"
      << o.err;
  std::filesystem::remove(base_path + ".dtlt");  // the JSON is what the cases edit
  const std::vector<Case> cases = write_cases(base_path, dir);
  std::vector<std::string> failures, refused;
  int drawn = 0;
  for (const Case& c : cases) {
    const test::ChildResult r = test::run_in_child([&] { return draw_everything(c.path); }, {.seconds = 60});
    std::filesystem::remove(c.path);
    if (r.exit_code == 0)
      ++drawn;
    else if (r.exit_code == 1 && !r.signal)  // a clear dtl::Error (a count the loader checks): the viewer's exit 1
      refused.push_back(c.name + " (" + r.message.substr(0, 120) + ")");
    else
      failures.push_back(c.name + ": " + r.describe().substr(0, 300));
  }
  std::printf("%s: %zu cases of 200,000 characters, %d drawn, %zu refused with an error:\n", lab.name, cases.size(),
              drawn, refused.size());
  for (const std::string& r : refused) std::printf("  refused: %s\n", r.c_str());
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
  EXPECT_GT(drawn, 0);
}

// Every lab's views: the ring, the pipeline and its simulated schedules, the split, the
// topology, the routing, the activations, the context-parallel picture; and a simulated trace.
INSTANTIATE_TEST_SUITE_P(
    EveryLab, LongStrings,
    ::testing::Values(LabRun{"collectives", "run collectives --ranks 4 --bytes 1K --iters 0"},
                      LabRun{"ddp", "run ddp --ranks 2 --steps 2"},
                      LabRun{"zero", "run zero --ranks 2 --stage 3 --steps 2"},
                      LabRun{"pipeline", "run pipeline --ranks 2 --steps 1"},
                      LabRun{"tensor_parallel", "run tensor_parallel --model gpt --ranks 2 --steps 1 --layers 1"},
                      LabRun{"grid", "run grid --ranks 8 --dp 2 --tp 2 --pp 2 --steps 1 --check off"},
                      LabRun{"gpt", "run gpt --ranks 2 --layers 1 --steps 2 --eval-every 100"},
                      LabRun{"experts", "run experts --ranks 2 --layers 1 --hidden 16 --ffn 32 --steps 1"},
                      LabRun{"context_parallel", "run context_parallel --ranks 2 --seq 16 --steps 1"},
                      LabRun{"simulate",
                             "simulate --layers 4 --hidden 256 --heads 4 --seq 128 --vocab 1000 --cluster a100-80gb "
                             "--gpus 8 --dp 2 --tp 2 --pp 2 --micro-batches 4"}),
    [](const ::testing::TestParamInfo<LabRun>& i) { return std::string(i.param.name); });

}  // namespace
