// The collectives lab: all-reduce built from point-to-point messages, six ways.
//
//   dtlab run collectives --algo ring --ranks 4 --bytes 64M --trace ring.json
//   dtlab run collectives --algo all --ranks 8 --bytes 1M        # side by side
//   dtlab run collectives --algo ring --ranks 4 --bytes 256 --step
//
// naive  every rank → rank 0 → every rank           (P-1)·N bytes leave rank 0
// ring   reduce-scatter then all-gather, 2(P-1) steps  2(P-1)/P·N bytes per rank
// tree   binomial reduce then broadcast, 2⌈log2 P⌉ steps
// rhd    recursive halving-doubling (Rabenseifner), 2·log2 P steps, ring's bytes
// ring_sliced  the ring in S slices per chunk (NCCL's), 2(P-1)·S messages; formulas.cpp
// double_tree  NCCL's two complementary binary trees, half the data each, in K chunks
// hierarchical rings inside each node, each rank's chunk between nodes on its rail
//              (--topology nodes=N,gpus=G: two tiers of links)
//
// Each algorithm runs once on crafted inputs (exact in any order) and is checked
// element by element against the exact sums; its bytes, messages and steps are measured
// from the trace events and set beside core/theory's formulas; then it is timed.
// Finally the lab shows AllReduce == AllGather ∘ ReduceScatter, bit for bit.
#include "labs/collectives/collectives_lab.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "core/memory/memory.h"
#include "core/trace/run_clock.h"
#include "core/trace/trace.h"
#include "core/util/units.h"
#include "exercises/collectives.h"
#include "labs/collectives/collectives_cases.h"
#include "labs/collectives/crafted.h"
#include "labs/collectives/lab_buffer.h"
#include "labs/measure.h"

namespace dtl {

namespace {

// The options' words are the vocabulary's names (core/trace/vocab.h): one spelling for the
// command line, the trace and the report.
EnumName<std::optional<AlgorithmKind>> algo_word(AlgorithmKind a) { return {a, algorithm_kind_name(a)}; }
EnumName<CollectiveKind> collective_word(CollectiveKind c) { return {c, collective_kind_name(c)}; }
const EnumNames<std::optional<AlgorithmKind>> kAlgoNames = {
    algo_word(AlgorithmKind::naive),        algo_word(AlgorithmKind::ring),
    algo_word(AlgorithmKind::tree),         algo_word(AlgorithmKind::rhd),
    algo_word(AlgorithmKind::ring_sliced),  algo_word(AlgorithmKind::double_tree),
    algo_word(AlgorithmKind::hierarchical), {std::nullopt, "all"}};
const EnumNames<CollectiveKind> kCollectiveNames = {
    collective_word(CollectiveKind::all_reduce), collective_word(CollectiveKind::reduce_scatter),
    collective_word(CollectiveKind::all_gather), collective_word(CollectiveKind::broadcast)};
const EnumNames<ReduceOp> kOpNames = {
    {ReduceOp::sum, "sum"}, {ReduceOp::avg, "avg"}, {ReduceOp::max, "max"}, {ReduceOp::min, "min"}};

// Elements that differ from the expectation on this rank, summed over ranks; and the largest |diff|.
Mismatch check_buffer(Comm& comm, const ex::BufferView& b, const std::function<double(std::size_t)>& expected) {
  double m[2] = {0, 0};
  for (std::size_t i = 0; i < b.count; ++i) {
    const double want = expected(i);
    if (std::isnan(want)) continue;
    const double d = std::fabs(element_as_double(b.data, i, b.dtype) - want);
    if (d != 0) m[0] += 1;
    m[1] = std::max(m[1], d);
  }
  comm.all_reduce(m, m, 2, DType::f64, ReduceOp::max);
  return {std::size_t(m[0]), m[1]};
}

Role case_role(const Case& c, RunPart part) {
  return {.collective = c.collective, .algorithm = c.algorithm, .part = part};
}

// One traced run: correctness, and the traffic counted from its events beside the
// formulas. Returns the slowest rank's time of it.
double checked_run(Comm& comm, const LabConfig& cfg, const Case& c, LabBuffer& work, Report& rep) {
  const int P = comm.size();
  Trace* tr = comm.trace();
  const ex::BufferView view = work.view();
  c.init(work.host());
  work.upload();
  comm.barrier();
  Traffic mine;
  const double t0 = double(tr->now_ns());
  {
    // Every run is a phase (its begin mark tells the view where the run starts: each run
    // is drawn from every rank holding its own data, beside its formula).
    ScopedSpan phase(tr, comm.global_rank(), EventKind::phase, tr->label(c.name, case_role(c, RunPart::timed)));
    const std::size_t mark = traffic_mark(comm);
    c.run(comm, view);
    // The hierarchical form's node rings and rails reuse the ring's tags, each on its own tier.
    mine = traffic_since(comm, mark, c.algorithm == AlgorithmKind::hierarchical ? cfg.nodes : NodeLayout{});
  }
  const double seconds = max_over_ranks(comm, (double(tr->now_ns()) - t0) * 1e-9);
  work.download();
  const Mismatch m = check_buffer(comm, work.host(), c.expected);
  const Traffic most = traffic_max(comm, mine);

  const std::string n = c.id + ".";
  rep.check(n + "bytes_sent_per_rank", "bytes sent per rank (max)", most.bytes_sent, c.predicted.bytes_per_rank, "B",
            bytes_tolerance(P, view.count, view.dtype, c.channels))
      .from(c.formulas.bytes);
  rep.check(n + "messages_sent_per_rank", "messages sent per rank (max)", most.messages_sent,
            c.predicted.messages_per_rank, "")
      .from(c.formulas.messages);
  rep.check(n + "steps", "steps (distinct tags, max)", most.steps, c.predicted.steps, "").from(c.formulas.steps);
  rep.check(n + "wrong_elements", "wrong elements vs exact result", double(m.wrong), 0, "").from("crafted: exact");
  rep.add(n + "max_abs_diff", "largest |difference|", m.max_abs_diff, "");
  return seconds;
}

// Timed runs (none while stepping): the slowest rank's time of each, their median and range.
void timed_runs(Comm& comm, const LabConfig& cfg, const Case& c, LabBuffer& work, double first_run_s, Report& rep) {
  const int P = comm.size();
  const ex::BufferView view = work.view();
  const double N = double(view.bytes());
  std::vector<double> times, algbw;
  const std::uint16_t label = comm.trace()->label(c.name, case_role(c, RunPart::timed));
  for (int it = 0; it < cfg.warmup + cfg.iters; ++it) {
    report_progress(comm, cfg,
                    c.name + ": run " + std::to_string(it + 1) + " of " + std::to_string(cfg.warmup + cfg.iters));
    c.init(work.host());
    work.upload();
    comm.barrier();
    double s = 0;
    {
      ScopedSpan phase(comm.trace(), comm.global_rank(), EventKind::phase, label);
      const auto start = RunClock::now();
      c.run(comm, view);
      s = std::chrono::duration<double>(RunClock::now() - start).count();
    }
    const double slowest = max_over_ranks(comm, s);
    if (it < cfg.warmup) continue;
    times.push_back(slowest);
    algbw.push_back(N / slowest);
  }
  if (times.empty()) {  // the traced run is all there is
    times.push_back(first_run_s);
    algbw.push_back(N / first_run_s);
  }
  const Repeated t = repeated(times), bw = repeated(algbw);
  ReportRow& time = rep.add(c.id + ".time", "time (slowest rank)", 0, "s").over(t);
  // With an emulated link the α-β model predicts the time; on bare memory it has no link to model.
  if (cfg.link.active() && c.time_predicted) time.predict(c.predicted.time_s, c.formulas.time);
  rep.add(c.id + ".algbw", "algbw (N / time)", 0, "B/s").over(bw);
  const double factor = theory::busbw_factor(c.collective, P);
  Repeated bus = bw;
  bus.median *= factor;
  bus.spread.min *= factor;
  bus.spread.max *= factor;
  rep.add(c.id + ".busbw", "busbw (algbw × nccl-tests factor)", 0, "B/s").over(bus);
}

// AllReduce == AllGather(ReduceScatter(x)) twice: with the ring exercises on crafted
// input, and with the library collectives on random input (any input, same bits).
void check_identity(Comm& comm, const LabConfig& cfg, ReduceOp op, MemoryTracker& mem, std::size_t count, Report& rep) {
  const DType t = cfg.dtype;
  const Device device = rank_device(cfg.device, comm);
  LabBuffer a(mem, count, t, device), b(mem, count, t, device);
  const ex::BufferView av = a.view(), bv = b.view();
  auto differing = [&] {
    a.download();
    b.download();
    double n = 0;
    const std::size_t es = dtype_size(t);
    for (std::size_t i = 0; i < count; ++i) n += std::memcmp(a.host().at(i), b.host().at(i), es) != 0;
    return max_over_ranks(comm, n);
  };

  Trace* tr = comm.trace();
  fill_crafted(a.host().data, count, t, comm.rank());
  a.upload();
  copy_bytes(bv.data, av.data, av.bytes());
  comm.all_reduce(av.data, av.data, count, t, op);
  {
    ScopedSpan check(
        tr, comm.global_rank(), EventKind::phase,
        tr->label(
            "identity check: ring all_gather(reduce_scatter(x))",
            {.collective = CollectiveKind::all_reduce, .algorithm = AlgorithmKind::ring, .part = RunPart::check}));
    ex::ring_reduce_scatter(comm, bv, op);
    const ChunkRange mine = chunk_range(count, comm.size(), comm.rank());
    finish_average(bv.at(mine.offset), mine.count, t, op, comm.size());
    ex::ring_all_gather(comm, bv);
  }
  rep.check("identity.ring_pieces", "elements differing: ring AG∘RS(x) vs all_reduce(x)", differing(), 0, "")
      .from("same bits");

  std::mt19937 rng(1234u + unsigned(comm.rank()));
  std::uniform_real_distribution<double> dist(-1, 1);
  for (std::size_t i = 0; i < count; ++i) {  // random values, stored in the lab's dtype
    const double v = dist(rng);
    store_element(a.host().data, i, t, (t == DType::i32 || t == DType::i64) ? std::round(v * 1000) : v);
  }
  a.upload();
  copy_bytes(bv.data, av.data, av.bytes());
  comm.all_reduce(av.data, av.data, count, t, op);
  {
    ScopedSpan check(
        tr, comm.global_rank(), EventKind::phase,
        tr->label(
            "identity check: library all_gather(reduce_scatter(x))",
            {.collective = CollectiveKind::all_reduce, .algorithm = AlgorithmKind::library, .part = RunPart::check}));
    ex::all_reduce_by_reduce_scatter_all_gather(comm, bv, op);
  }
  rep.check("identity.library_pieces", "elements differing: library AG∘RS(x) vs all_reduce(x), random x", differing(),
            0, "")
      .from("same bits");
}

// The learner's double binary tree, checked as a tree before anything runs on it (a rank with
// two parents, or one its parent does not list, would leave ranks waiting for messages that
// never come): a failing row and its first problems in the notes, and no run.
bool trees_hold(int P, Report& rep) {
  const std::vector<std::string> problems = double_tree_problems(P);
  rep.check("double_tree.tree_problems", "tree problems (ex::double_binary_tree)", double(problems.size()), 0, "")
      .from("one root; every other rank one parent, which lists it");
  for (std::size_t i = 0; i < problems.size() && i < 3; ++i)
    rep.notes.push_back("double_binary_tree: " + problems[i] + " (so the double tree did not run)");
  return problems.empty();
}

// Each rank keeps its input, the working buffer, the exact reference and the library's
// result: about 4 buffers of --bytes, for each of `ranks_here` ranks in this process (thread
// ranks: all of them). Checked before the run starts too (its LabInfo::check_config).
void require_collectives_memory(const LabConfig& cfg, int ranks_here) {
  require_memory(4.0 * double(cfg.bytes) * ranks_here, "--bytes (or --ranks)");
}

}  // namespace

Report run_collectives_lab(Comm& comm, const LabConfig& cfg) {
  const CollectivesSettings s = collectives_option_table().parse(cfg.options);
  require_slices_apply(cfg, s);
  const std::size_t es = dtype_size(cfg.dtype);
  if (cfg.bytes < es)
    throw UsageError("--bytes " + std::to_string(cfg.bytes) + " holds no " + std::string(dtype_name(cfg.dtype)) +
                     " element; give at least " + std::to_string(es));
  if (!comm.trace()) throw Error("the collectives lab measures from trace events; run it with tracing on");
  ex::require_supported_world(comm.size());  // every phase's tags distinct (exercises/collectives.h)
  require_collectives_memory(cfg, comm.backend() == BackendKind::threads ? comm.size() : 1);
  const std::size_t count = cfg.bytes / es;

  Report rep = start_report(comm, cfg, "collectives");
  describe_collectives_setup(comm, cfg, s, count, rep);
  MemoryTracker mem(comm.global_rank(), comm.trace());
  LabBuffer work(mem, count, cfg.dtype, rank_device(cfg.device, comm));

  const std::vector<Case> cases = make_cases(comm, cfg, s, count);
  if (cases.size() > 1)
    for (const Case& c : cases) rep.columns.push_back(c.id);
  for (const Case& c : cases) {
    if (c.algorithm == AlgorithmKind::double_tree && !trees_hold(comm.size(), rep)) continue;
    const double first_run_s = checked_run(comm, cfg, c, work, rep);
    timed_runs(comm, cfg, c, work, first_run_s, rep);
  }
  if (s.collective == CollectiveKind::all_reduce)
    ask_the_cost_calculator(comm.size(), double(count * es), es, cfg.nodes.two_tier() ? cfg.nodes.inter : cfg.link,
                            rep);  // a flat ring on two tiers waits on the link between nodes
  if (s.collective == CollectiveKind::all_reduce && cfg.iters > 0) {
    check_identity(comm, cfg, s.op, mem, count, rep);
    rep.notes.push_back("identity: AG∘RS(x) = all_gather(reduce_scatter(x)) must equal all_reduce(x) bit for bit.");
  }
  return rep;
}

int collectives_chunk_grid(const LabConfig& cfg) {
  const std::optional<AlgorithmKind> algo = collectives_option_table().parse(cfg.options).algo;
  // The hierarchical form's two rings cut the buffer in G and then N/G in n: no one grid of
  // chunks holds both, so its transfers are shown without the chunk picture (0: none).
  if (algo == AlgorithmKind::hierarchical) return 0;
  return algo == AlgorithmKind::rhd ? theory::floor_pow2(cfg.ranks) : cfg.ranks;
}

const OptionTable<CollectivesSettings>& collectives_option_table() {
  static const OptionTable<CollectivesSettings> table = [] {
    OptionTable<CollectivesSettings> t;
    t.choice("algo", &CollectivesSettings::algo, AlgorithmKind::ring, kAlgoNames, "algorithm")
        .choice("collective", &CollectivesSettings::collective, CollectiveKind::all_reduce, kCollectiveNames,
                "which collective to build")
        .choice("op", &CollectivesSettings::op, ReduceOp::sum, kOpNames, "reduction")
        .integer("slices", &CollectivesSettings::slices, 0, 0, 4096,
                 "ring_sliced's slices per chunk, double_tree's chunks per half (0: ~256 KiB)")
        .integer("channels", &CollectivesSettings::channels, 1, 1, 64,
                 "NCCL's channels: ring_sliced or double_tree on C rings or tree pairs at once, N/C bytes each");
    return t;
  }();
  return table;
}

LabInfo collectives_lab_info() {
  return {
      "collectives",
      "all-reduce from point-to-point: naive, ring, ring in slices, binomial tree, double binary tree, recursive "
      "halving-doubling, vs the formulas",
      {RunOption::bytes, RunOption::dtype, RunOption::iters, RunOption::device, RunOption::step, RunOption::faults},
      collectives_option_table().specs(),
      // The curriculum's order: the ring first, then trees, halving-doubling, the cost model, NCCL's trees.
      {{"naive_all_reduce", "NaiveAllReduce", 5},
       {"ring_reduce_scatter", "RingReduceScatter", 15},
       {"ring_all_gather", "RingAllGather", 10},
       {"ring_all_reduce", "RingAllReduce", 15},
       {"all_reduce_by_reduce_scatter_all_gather", "AllReduceByReduceScatterAllGather", 10},
       {"tree", "TreeBroadcast", 10},
       {"tree", "TreeAllReduce", 10},
       {"rhd_all_reduce", "RhdAllReduce", 20},
       {"all_reduce_cost", "AllReduceCost", 5},
       {"double_binary_tree", "DoubleBinaryTree", 10},
       {"hierarchical_all_reduce", "HierarchicalAllReduce", 10}},
      run_collectives_lab,
      collectives_chunk_grid,
      StepUnit::transfers,
      false,
      {kRingView, ViewKind::report, ViewKind::memory, ViewKind::timeline},
      {},
      collectives_option_table().settings_text(),
      ex::collectives_hints(),
      [](const LabConfig& cfg) { require_collectives_memory(cfg, cfg.backend == "threads" ? cfg.ranks : 1); },
      {{"ranks", "2"}, {"bytes", "4K"}, {"iters", "2"}},  // small_run: the tests start from it (lab.h)
      {{{"ranks", "4"}, {"bytes", "4K"}, {"iters", "2"}, {"algo", "hierarchical"}, {"topology", "nodes=2,gpus=2"}}},
  };
}

}  // namespace dtl
