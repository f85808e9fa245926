// The lab catches what the grader catches (issue 50): each mutant program links one mutant of a
// lab's reference solutions (tests/grade/mutate.cmake) with the graded suites and this file;
// tests/CMakeLists.txt runs the mutated exercise's graded suite (it must report failures) and
// the case below named after the mutant: the lab's own run on it must FAIL, at the row named
// here, because the lab's predictions come from theory or an independent reference (a one-rank
// run, float64), never from the learner's output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/trace/trace.h"
#include "tests/labs/lab_test_util.h"

using namespace dtl;

namespace {

struct MutantRun {
  std::string mutant;                          // tests/grade/mutate.cmake's name
  std::string exercise;                        // the exercise it mutates (LabInfo's id)
  std::string lab;                             // its lab
  int ranks = 2;                               // thread ranks of the run
  std::map<std::string, std::string> options;  // the lab's own options (small: the run takes seconds)
  std::string row;                             // the report row that must fail
  std::string stops_with;                      // or: words of the error that stops the run
  int gpus_per_node = 0;                       // > 0: the ranks in nodes of this many (--topology)
};

// The collectives' runs: 1001 floats (uneven over 3 ranks) once, no warm-up.
MutantRun collectives(std::string mutant, std::string exercise, std::string algo, std::string op, std::string row,
                      int ranks = 3) {
  return {
      std::move(mutant), std::move(exercise), "collectives", ranks, {{"algo", std::move(algo)}, {"op", std::move(op)}},
      std::move(row)};
}

// The hierarchical all-reduce on 2 nodes of 2 ranks.
MutantRun hierarchical(std::string mutant, std::string row) {
  MutantRun m = collectives(std::move(mutant), "hierarchical_all_reduce", "hierarchical", "sum", std::move(row), 4);
  m.gpus_per_node = 2;
  return m;
}

const std::map<std::string, std::string> kDdp = {
    {"variant", "all"}, {"width", "32"}, {"depth", "3"}, {"batch", "8"}, {"steps", "2"}};
// Width 31: a layer's 31·31 + 31 parameters do not divide over 3 ranks (shard padding).
const std::map<std::string, std::string> kZero = {{"width", "31"}, {"depth", "3"}, {"batch", "12"}, {"steps", "2"}};
const std::map<std::string, std::string> kExperts = {{"layers", "1"}, {"hidden", "16"}, {"ffn", "32"}, {"steps", "2"}};
const std::map<std::string, std::string> kTp = {{"layers", "1"}, {"hidden", "16"}, {"seq", "8"}, {"batch", "2"}};
const std::map<std::string, std::string> kCp = {
    {"batch", "2"}, {"hidden", "16"}, {"layers", "1"}, {"seq", "16"}, {"steps", "2"}};

std::map<std::string, std::string> with(std::map<std::string, std::string> base,
                                        const std::map<std::string, std::string>& more) {
  for (const auto& [k, v] : more) base[k] = v;
  return base;
}

const std::vector<MutantRun>& mutant_runs() {
  static const std::vector<MutantRun> runs = {
      collectives("reduce_scatter_divides", "ring_reduce_scatter", "ring", "avg", "ring.wrong_elements"),
      collectives("all_reduce_never_averages", "ring_all_reduce", "ring", "avg", "ring.wrong_elements"),
      collectives("naive_averages_twice", "naive_all_reduce", "naive", "avg", "naive.wrong_elements"),
      collectives("all_gather_equal_chunks", "ring_all_gather", "ring", "sum", "ring.wrong_elements"),
      collectives("library_pieces_never_stage_the_input", "all_reduce_by_reduce_scatter_all_gather", "ring", "sum",
                  "identity.library_pieces"),
      collectives("tree_reduce_overwrites", "tree", "tree", "sum", "tree.wrong_elements"),
      collectives("rhd_divides_by_the_core", "rhd_all_reduce", "rhd", "avg", "rhd.wrong_elements"),
      collectives("cost_counts_one_pass", "all_reduce_cost", "ring", "sum", "calculator.bytes_sent_per_gpu"),
      collectives("double_tree_one_tree_twice", "double_binary_tree", "double_tree", "sum",
                  "double_tree.bytes_sent_per_rank", 4),
      // A wrong tree (issue 51): the lab checks the tree before it runs on it (a run would wait forever).
      collectives("double_tree_two_parents", "double_binary_tree", "double_tree", "sum", "double_tree.tree_problems",
                  4),
      collectives("double_tree_missing_leaf", "double_binary_tree", "double_tree", "sum", "double_tree.tree_problems",
                  4),
      hierarchical("hierarchical_whole_buffer_between_nodes", "hierarchical.bytes_sent_per_rank"),
      {"merge_nan_for_two_empty_sides", "online_softmax_merge", "context_parallel", 2, kCp, "merge_vs_float64"},
      {"zigzag_adjacent_chunks", "zigzag_partition", "context_parallel", 2, with(kCp, {{"split", "zigzag"}}),
       "balance_zigzag"},
      {"ring_step_wrong_direction", "ring_step", "context_parallel", 4, kCp, "ring.loss_vs_one_rank"},
      {"bucket_keeps_its_first_begin", "assign_buckets", "ddp", 2, kDdp, "bucketed.weight_diff_vs_one_rank"},
      {"bucket_all_reduce_sums", "launch_ready_buckets", "ddp", 2, kDdp, "bucketed.grad_diff_vs_one_rank"},
      {"wait_for_buckets_never_clears", "wait_for_buckets", "ddp", 2, kDdp, "bucketed.requests_left_after_wait"},
      {"average_by_integer_division", "average_gradients", "ddp", 2, kDdp, "flat.grad_diff_vs_one_rank"},
      {"sync_counts_from_one", "sync_this_micro_batch", "ddp", 2, kDdp, "accumulate.weight_diff_between_ranks"},
      {"shard_chunk_rounds_down", "shard_range", "zero", 3, kZero, "zero1.weight_diff_vs_one_rank"},
      {"reduce_scatter_gradients_sums", "reduce_scatter_gradients", "zero", 3, kZero, "zero2.grad_diff_vs_one_rank"},
      {"shard_step_from_the_unit_start", "shard_step", "zero", 3, kZero, "zero1.weight_diff_vs_one_rank"},
      {"all_gather_params_sends_block_zero", "all_gather_params", "zero", 3, with(kZero, {{"precision", "fp32"}}),
       "zero1.weight_diff_vs_one_rank"},
      {"units_to_gather_ignores_issued", "units_to_gather", "zero", 3, kZero, "zero3.bus_bytes_per_step"},
      {"router_picks_the_least_likely", "top_k_router", "experts", 2, kExperts, "router_vs_float64"},
      {"dispatch_in_token_order", "dispatch_layout", "experts", 2, kExperts, "dispatch_vs_brute_force"},
      {"combine_ignores_weights", "combine", "experts", 2, kExperts, "combine_vs_float64"},
      {"one_f_one_b_all_forwards_first",
       "one_f_one_b",
       "pipeline",
       4,
       {{"schedule", "1f1b"}, {"width", "16"}, {"depth", "4"}, {"batch", "16"}, {"micro-batches", "8"}, {"steps", "2"}},
       "1f1b.in_flight_stage0"},
      {"run_stage_computes_before_its_input",
       "run_stage",
       "pipeline",
       2,
       {{"schedule", "1f1b"}, {"width", "16"}, {"depth", "4"}, {"batch", "8"}, {"micro-batches", "4"}, {"steps", "2"}},
       "",
       "run_stage (your exercise) ran the"},
      {"split_backward_never_defers",
       "split_backward",
       "pipeline",
       4,
       {{"schedule", "zb-h1"},
        {"width", "16"},
        {"depth", "4"},
        {"batch", "16"},
        {"micro-batches", "8"},
        {"steps", "2"}},
       "zb-h1.in_flight_stage3"},
      // The V laid out as a loop: ZB-V's order on it deadlocks (stage 0's B of virtual stage 4 waits
      // for stage 1's of 5), which the lab's check finds before anything runs.
      {"vee_stage_loops",
       "vee_stage",
       "pipeline",
       4,
       {{"schedule", "zb-v"}, {"width", "16"}, {"depth", "8"}, {"batch", "16"}, {"micro-batches", "8"}, {"steps", "2"}},
       "",
       "vee_stage (your exercise) gave a placement"},
      {"dualpipe_pairs_last_stage_too",
       "dualpipe_pairs",
       "pipeline",
       4,
       {{"schedule", "dualpipev"},
        {"width", "16"},
        {"depth", "8"},
        {"batch", "16"},
        {"micro-batches", "8"},
        {"steps", "2"}},
       "dualpipev.pairs_stage3"},
      {"row_slice_bias_on_every_rank", "tp_slices", "tensor_parallel", 2, kTp, "tp.loss_vs_one_rank"},
      {"f_backward_averages", "f_operator", "tensor_parallel", 2, kTp, "tp.grad_diff_vs_one_rank"},
      {"g_forward_averages", "g_operator", "tensor_parallel", 2, kTp, "tp.loss_vs_one_rank"},
      {"column_backward_reduces_first", "column_parallel_linear", "tensor_parallel", 2, with(kTp, {{"layers", "2"}}),
       "tp.grad_diff_vs_one_rank"},
      {"row_forward_drops_the_bias", "row_parallel_linear", "tensor_parallel", 2, kTp, "tp.loss_vs_one_rank"},
      {"cross_entropy_local_max", "vocab_parallel_cross_entropy", "tensor_parallel", 2, with(kTp, {{"model", "gpt"}}),
       "tp.loss_vs_one_rank"},
  };
  return runs;
}

LabConfig config_of(const MutantRun& m) {
  LabConfig cfg;
  cfg.ranks = m.ranks;
  cfg.repeat = 1;
  cfg.options = m.options;
  if (m.lab == "collectives") cfg.bytes = 4 * 1001, cfg.iters = 1, cfg.warmup = 0;
  if (m.gpus_per_node > 0) cfg.nodes = {m.ranks / m.gpus_per_node, m.gpus_per_node, {}};
  return cfg;
}

// A mistake the lab cannot run past (a forward before its input): the run must stop with
// an error that names the exercise, not crash.
void expect_the_run_stops(const MutantRun& m) {
  const LabInfo* lab = find_lab(m.lab);
  ASSERT_NE(lab, nullptr) << m.lab;
  const LabConfig cfg = with_defaults(*lab, config_of(m));
  Trace trace(m.ranks);
  ThreadsOptions opt;
  opt.world_size = m.ranks;
  opt.trace = &trace;
  opt.timeout_s = 30;
  const RunResult r = run_threads(opt, [&](Comm& c) { lab->run(c, cfg); });
  std::printf("%s: the %s lab on %d ranks stops: %s\n", m.mutant.c_str(), m.lab.c_str(), m.ranks, r.error.c_str());
  EXPECT_FALSE(r.ok()) << "the lab ran the mutant " << m.mutant << " to the end";
  EXPECT_NE(r.error.find(m.stops_with), std::string::npos) << r.error;
}

class MutatedLab : public testing::TestWithParam<MutantRun> {};

}  // namespace

TEST_P(MutatedLab, FailsItsOwnChecks) {
  const MutantRun& m = GetParam();
  if (!m.stops_with.empty()) return expect_the_run_stops(m);
  Trace trace(m.ranks);
  const Report rep = test::run_lab(m.lab, config_of(m), trace);
  std::vector<std::string> failed;
  for (const ReportRow& r : rep.rows)
    if (!r.passed()) failed.push_back(r.id);
  std::printf("%s: the %s lab on %d ranks fails %zu rows:", m.mutant.c_str(), m.lab.c_str(), m.ranks, failed.size());
  for (const std::string& id : failed) std::printf(" %s", id.c_str());
  std::printf("\n");
  EXPECT_FALSE(rep.ok) << "the lab passed the mutant " << m.mutant << ":\n" << rep.to_text();
  const bool named_row_failed = std::find(failed.begin(), failed.end(), m.row) != failed.end();
  EXPECT_TRUE(named_row_failed) << "row " << m.row << " did not fail:\n" << rep.to_text();
}

INSTANTIATE_TEST_SUITE_P(Each, MutatedLab, testing::ValuesIn(mutant_runs()),
                         [](const testing::TestParamInfo<MutantRun>& p) { return p.param.mutant; });

// Every exercise of the registry has a mutant above (tests/CMakeLists.txt builds each one's
// program from DTL_MUTANTS, whose names must be the table's).
TEST(LabCatchesMutant, EveryExerciseHasOne) {
  for (const LabInfo& lab : lab_registry())
    for (const ExerciseInfo& e : lab.exercises) {
      const bool has = std::any_of(mutant_runs().begin(), mutant_runs().end(),
                                   [&](const MutantRun& m) { return m.lab == lab.name && m.exercise == e.id; });
      EXPECT_TRUE(has) << "exercise " << e.id << " of the " << lab.name
                       << " lab has no mutant: add one to tests/grade/mutate.cmake, DTL_MUTANTS and this table";
    }
}

// one_f_one_b_all_forwards_first, further: the failing in-flight rows predict 1F1B's
// min(M, P − s) from core/theory, not the run's own count (which is M for every stage).
TEST(LabCatchesMutant, one_f_one_b_all_forwards_first) {
  const int P = 4, M = 8;
  Trace trace(P);
  const Report rep = test::run_for_results(
      "pipeline", P,
      {{"schedule", "1f1b"}, {"width", "16"}, {"depth", "4"}, {"batch", "16"}, {"micro-batches", std::to_string(M)}},
      trace);
  for (int s = 0; s < P; ++s) {
    const ReportRow* r = rep.find("1f1b.in_flight_stage" + std::to_string(s));
    ASSERT_NE(r, nullptr);
    ASSERT_TRUE(r->predicted.has_value());
    std::printf("stage %d: in flight %g, predicted %g\n", s, r->measured, *r->predicted);
    EXPECT_EQ(*r->predicted, std::min(M, P - s)) << "the prediction is 1F1B's, not the run's";
    EXPECT_EQ(r->measured, M) << "the mutant holds every micro-batch";
  }
}
