// The typed vocabulary (core/trace/vocab.h) survives every way a trace travels: a label
// with every field set (each enum at each of its values) written as Chrome JSON and as a
// .dtlt, read back by the visualizer, keeps its role; the words of a label do not matter;
// a role value no build knows is an error naming it; and the labs' own traces carry the
// roles the viewer reads (a run of the tensor-parallel and pipeline labs).
#include "core/trace/vocab.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/comm/threads_backend.h"
#include "core/error.h"
#include "core/trace/binary_trace.h"
#include "core/trace/chrome_writer.h"
#include "labs/lab.h"
#include "viz/model/trace_data.h"
#include "viz/views/pipeline/pipeline_model.h"

using namespace dtl;
using namespace dtl::viz;

namespace {

// Roles covering every value of every field (one field varied at a time, then all at once).
std::vector<Role> every_role() {
  std::vector<Role> out;
  for (int c = 1; c <= int(kLastCollectiveKind); ++c) out.push_back({.collective = CollectiveKind(c)});
  for (int a = 1; a <= int(AlgorithmKind::rhd); ++a) out.push_back({.algorithm = AlgorithmKind(a)});
  for (int p = 1; p <= int(RunPart::reference); ++p) out.push_back({.part = RunPart(p)});
  for (int p = 1; p <= int(Pass::optimizer); ++p) out.push_back({.pass = Pass(p)});
  for (int s = 0; s <= int(kLastScheduleKind); ++s) out.push_back({.schedule = ScheduleKind(s)});
  for (int z = 0; z <= 3; ++z) out.push_back({.zero_stage = std::int8_t(z)});
  out.push_back({.zero_stage = 3, .prefetch = 64});
  out.push_back({.block = 32767});
  out.push_back({.bucket = 12});
  out.push_back({.bucket = 16382});
  for (int x = 1; x <= int(ExpertExchange::combine); ++x) out.push_back({.exchange = ExpertExchange(x)});
  out.push_back({.collective = CollectiveKind::reduce_scatter,
                 .algorithm = AlgorithmKind::ring,
                 .part = RunPart::check,
                 .pass = Pass::weight,
                 .schedule = ScheduleKind::interleaved,
                 .zero_stage = 2,
                 .prefetch = 0,
                 .block = 0,
                 .bucket = 0,
                 .exchange = ExpertExchange::dispatch});
  return out;
}

// One span per role on rank 0, all with the same words: only the roles tell them apart.
std::unique_ptr<Trace> trace_of(const std::vector<Role>& roles) {
  auto trace = std::make_unique<Trace>(1);
  Trace& t = *trace;
  for (std::size_t i = 0; i < roles.size(); ++i)
    t.record(Event{.begin_ns = std::int64_t(i) * 1000,
                   .end_ns = std::int64_t(i) * 1000 + 500,
                   .label = t.label("the same words", roles[i]),
                   .kind = EventKind::compute});
  return trace;
}

void expect_roles(const TraceData& d, const std::vector<Role>& roles, const char* how) {
  ASSERT_EQ(d.events.size(), roles.size()) << how;
  for (std::size_t i = 0; i < roles.size(); ++i) {
    const Event& e = d.events[i];  // sorted by begin: the i-th recorded
    EXPECT_EQ(d.label(e.label), "the same words") << how;
    EXPECT_TRUE(d.role(e) == roles[i]) << how << ": span " << i << " read back as '" << role_key(d.role(e))
                                       << "', written as '" << role_key(roles[i]) << "'";
  }
}

}  // namespace

TEST(Vocabulary, EveryRoleFieldSurvivesChromeJsonAndTheBinaryTrace) {
  const std::vector<Role> roles = every_role();
  const std::unique_ptr<Trace> trace = trace_of(roles);
  const Trace& t = *trace;
  expect_roles(parse_chrome_trace(chrome_trace_json(t)), roles, "Chrome JSON");
  const std::string path =
      (std::filesystem::temp_directory_path() / ("dtl_vocab_" + std::to_string(::getpid()) + ".json")).string();
  write_chrome_trace(t, path);
  expect_roles(load_trace(path + ".dtlt"), roles, ".dtlt");
  const BinaryTrace b = read_binary_trace(path + ".dtlt");
  ASSERT_EQ(b.roles.size(), b.labels.size());
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".dtlt");
}

TEST(Vocabulary, NamesRoundTripAndUnknownNamesAreNone) {
  for (int c = 0; c <= int(kLastCollectiveKind); ++c)
    EXPECT_EQ(parse_collective_kind(collective_kind_name(CollectiveKind(c))), CollectiveKind(c));
  for (int s = 0; s <= int(kLastScheduleKind); ++s)
    EXPECT_EQ(parse_schedule_kind(schedule_kind_name(ScheduleKind(s))), ScheduleKind(s));
  EXPECT_EQ(parse_pass("fwd"), std::nullopt);
  EXPECT_EQ(role_key(Role{.zero_stage = 2}), "zero_stage=2");
  EXPECT_EQ(role_key(Role{}), "");
  EXPECT_EQ(meta_key_name(MetaKey::phase_formula_bytes, "zero_stage=2"), "phase_formula_bytes.zero_stage=2");
}

TEST(Vocabulary, AnUnknownRoleValueInATraceIsAnErrorNamingIt) {
  const std::string json = R"({"traceEvents":[{"ph":"X","cat":"compute","name":"F","pid":0,"tid":0,"ts":0,"dur":1,)"
                           R"("args":{"pass":"sideways"}}]})";
  try {
    parse_chrome_trace(json);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'pass' 'sideways'"), std::string::npos) << e.what();
  }
}

// A label renamed keeps its picture: the pipeline view finds F/B/W and the schedule by role.
TEST(Vocabulary, RenamedLabelsKeepThePipelinePicture) {
  Trace t(2);
  const std::uint16_t phase =
      t.label("a schedule by any other name", Role{.part = RunPart::timed, .schedule = ScheduleKind::gpipe});
  const std::uint16_t fwd = t.label("vorwärts", Role{.pass = Pass::forward}),
                      bwd = t.label("rückwärts", Role{.pass = Pass::backward});
  for (int r = 0; r < 2; ++r) {
    t.record(Event{.begin_ns = 0, .end_ns = 100, .rank = r, .label = phase, .kind = EventKind::phase});
    t.record(Event{.begin_ns = 10 + r,
                   .end_ns = 20 + r,
                   .rank = r,
                   .step = 0,
                   .micro_batch = 0,
                   .label = fwd,
                   .kind = EventKind::compute});
    t.record(Event{.begin_ns = 30 + r,
                   .end_ns = 50 + r,
                   .rank = r,
                   .step = 0,
                   .micro_batch = 0,
                   .label = bwd,
                   .kind = EventKind::compute});
  }
  const PipelineRuns runs = pipeline_runs(parse_chrome_trace(chrome_trace_json(t)));
  ASSERT_EQ(runs.runs.size(), 1u);
  EXPECT_EQ(runs.runs[0].schedule, "gpipe");
  ASSERT_NE(runs.find(ScheduleKind::gpipe), nullptr);
  EXPECT_EQ(runs.runs[0].actions.size(), 4u);
  EXPECT_EQ(runs.runs[0].last_complete, 0);
}

// The labs' traces carry what the viewer reads: blocks by pass and number, collectives by
// kind, the reference phase by its part, the schedule phases by kind.
TEST(Vocabulary, LabTracesCarryTheRolesTheViewerReads) {
  auto roles_of = [](const char* lab_name, int ranks, LabOptions options) {
    const LabInfo* lab = find_lab(lab_name);
    LabConfig cfg;
    cfg.ranks = ranks;
    cfg.options = std::move(options);
    cfg = with_defaults(*lab, cfg);
    Trace trace(ranks);
    ThreadsOptions opt;
    opt.world_size = ranks;
    opt.trace = &trace;
    run_threads(opt, [&](Comm& c) { lab->run(c, cfg); });
    return trace.roles();
  };
  auto has = [](const std::vector<Role>& roles, auto pred) { return std::any_of(roles.begin(), roles.end(), pred); };
  const std::vector<Role> tp = roles_of("tensor_parallel", 2, {{"model", "gpt"}, {"layers", "1"}, {"steps", "1"}});
  EXPECT_TRUE(has(tp, [](const Role& r) { return r.pass == Pass::forward && r.block == 0; }));
  EXPECT_TRUE(has(tp, [](const Role& r) { return r.pass == Pass::backward && r.block == 0; }));
  EXPECT_TRUE(has(tp, [](const Role& r) {
    return r.collective == CollectiveKind::all_reduce && r.algorithm == AlgorithmKind::library;
  }));
  EXPECT_TRUE(has(tp, [](const Role& r) { return r.part == RunPart::reference; }));
  const std::vector<Role> pp = roles_of("pipeline", 2, {{"schedule", "all"}, {"steps", "1"}});
  for (int s = 0; s < int(ScheduleKind::csv); ++s)  // every built-in one (csv: a file's, --schedule-csv)
    EXPECT_TRUE(has(pp, [&](const Role& r) { return r.schedule == ScheduleKind(s); }))
        << schedule_kind_name(ScheduleKind(s));
  EXPECT_TRUE(has(pp, [](const Role& r) { return r.pass == Pass::weight; }));  // zb-h1's W
}

// One name under many roles (a hostile trace, or a model of many blocks): each role keeps its
// own label id, read back exactly, without a scan per event over the name's roles.
TEST(Vocabulary, OneNameUnderManyRolesKeepsEachRole) {
  constexpr int kBlocks = 20000;
  std::string json = R"({"traceEvents":[)";
  for (int b = 0; b < kBlocks; ++b)
    json += std::string(b ? "," : "") + R"({"ph":"X","cat":"compute","name":"block","pid":0,"tid":0,"ts":)" +
            std::to_string(b) + R"(,"dur":1,"args":{"pass":")" + (b % 2 ? "backward" : "forward") + R"(","block":)" +
            std::to_string(b) + "}}";
  json += "]}";
  const TraceData d = parse_chrome_trace(json);
  ASSERT_EQ(d.events.size(), std::size_t(kBlocks));
  EXPECT_EQ(d.labels.size(), std::size_t(kBlocks) + 1);  // "" and one per (name, role)
  int wrong = 0;
  for (const Event& e : d.events) {
    const int b = int(e.begin_ns / 1000);
    wrong += d.role(e).block != b || d.role(e).pass != (b % 2 ? Pass::backward : Pass::forward);
  }
  EXPECT_EQ(wrong, 0);
}

// role_code gives each field its own bits: a ZeRO stage past its 4 bits would alias another
// Role (stage 16 reads as prefetch 0), so it is refused; every stage in range stays apart.
TEST(Vocabulary, RoleCodeRefusesAFieldPastItsBits) {
  EXPECT_THROW(role_code(Role{.zero_stage = 15}), Error);
  EXPECT_NE(role_code(Role{.zero_stage = 14}), role_code(Role{.zero_stage = 14, .prefetch = 0}));
  for (int a = -1; a <= 14; ++a)
    for (int b = a + 1; b <= 14; ++b)
      EXPECT_NE(role_code(Role{.zero_stage = std::int8_t(a)}), role_code(Role{.zero_stage = std::int8_t(b)}));
  // The bucket shares its 16 bits with the MoE exchange's 2: a bucket past 16382 is refused.
  EXPECT_THROW(role_code(Role{.bucket = 16383}), Error);
  EXPECT_NE(role_code(Role{.bucket = 16382}), role_code(Role{.bucket = 16382, .exchange = ExpertExchange::counts}));
  for (int x = 0; x <= 3; ++x)
    for (int y = x + 1; y <= 3; ++y)
      EXPECT_NE(role_code(Role{.exchange = ExpertExchange(x)}), role_code(Role{.exchange = ExpertExchange(y)}));
}

// What a caller says about its library collectives stays on its thread and ends with its scope.
TEST(Vocabulary, ScopedCollectiveRoleAddsToTheCollectivesOfItsThreadOnly) {
  EXPECT_EQ(library_collective_role(CollectiveKind::all_reduce).bucket, -1);
  {
    ScopedCollectiveRole says(Role{.bucket = 3});
    const Role r = library_collective_role(CollectiveKind::all_reduce);
    EXPECT_EQ(r.bucket, 3);
    EXPECT_EQ(r.collective, CollectiveKind::all_reduce);
    EXPECT_EQ(r.algorithm, AlgorithmKind::library);
    std::thread([] { EXPECT_EQ(library_collective_role(CollectiveKind::all_reduce).bucket, -1); }).join();
  }
  EXPECT_EQ(library_collective_role(CollectiveKind::all_reduce).bucket, -1);
}
