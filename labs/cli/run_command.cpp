// `dtlab run LAB ...`: run a lab on thread ranks, print its report, write its trace,
// or step through it one transfer at a time (--step).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include "core/comm/threads_backend.h"
#include "core/error.h"
#include "core/trace/chrome_writer.h"
#include "core/trace/chunk_state.h"
#include "core/trace/step_gate.h"
#include "core/trace/trace.h"
#include "core/util/files.h"
#include "core/util/units.h"
#include "kernels/cuda/device.h"
#include "labs/cli/backend.h"
#include "labs/cli/commands.h"
#include "labs/cli/progress.h"
#include "labs/cli/step_through.h"
#include "labs/cli/validators.h"
#include "labs/lab.h"
#include "labs/launch.h"
#include "labs/report_format.h"
#include "labs/train/train_ops.h"

namespace dtl::cli {

namespace {

// The largest world --ranks accepts on thread ranks (each rank is a thread and two buffers).
constexpr int kMaxThreadRanks = 4096;

struct RunArgs {
  int ranks = -1;  // -1: not given (threads: 4; mpi: what mpirun started)
  std::string bytes = "1M";
  std::string dtype = "f32";
  std::string backend = "threads";
  std::string device;  // "": cpu, or cuda for --backend nccl
  std::string trace_path;
  bool json = false;
  bool step = false;
  double timeout_s = 0;  // not given: 8 s on thread ranks (which say what they wait on after 2 s), 60 s under MPI/NCCL
  int iters = 5, warmup = 1;
  int repeat = 5;
  std::string inject_fault, inject_hang;
  std::string slow_rank;
  std::string link;
  double link_bw = 0, link_latency = 0, link_slowdown = 1;
  std::string topology;  // --topology nodes=N,gpus=G[,intra=..,inter=..]
  std::string protocol;  // --protocol LL|LL128|Simple on the emulated links
  std::map<std::string, std::string> lab_options;
};

// Where the lab's tensors live, after --backend and --device (nccl implies cuda). The
// stand-in device takes the GPU code path: its memory is Device::Kind::cuda memory.
Device::Kind choose_device(const LabInfo& lab, RunArgs& a) {
  if (a.backend == "nccl") {  // NCCL moves GPU memory only
    if (a.device == "cpu" || a.device == "standin")
      throw UsageError("--backend nccl moves GPU memory; drop --device " + a.device +
                       " (nccl implies --device cuda), or use --backend threads for --device " + a.device);
    if (!lab.uses(RunOption::device))
      throw UsageError("--backend nccl: the " + lab.name + " lab has no device path; use --backend threads or mpi");
    a.device = "cuda";
  }
  if (a.device != "cuda" && a.device != "standin") return Device::Kind::cpu;
  if (a.backend == "mpi")
    throw UsageError("--device " + a.device +
                     " with --backend mpi: the Open MPI backend moves host buffers; use "
                     "--backend threads (ranks sharing devices), --backend nccl, or --device cpu");
  if (a.device == "standin")
    use_standin_device();  // a GPU's rules on the CPU: no GPU needed
  else
    cuda::use_cuda_memory();  // no GPU or no CUDA build: says so, exit 2
  return Device::Kind::cuda;
}

// The watchdog's patience: --timeout, else 8 s on thread ranks (they share one clock and say
// what they wait on after 2 s) and a minute under MPI and NCCL, whose processes start and run
// unevenly on a loaded machine.
// --topology: ranks grouped in nodes, with two tiers of emulated links when it names them.
void apply_topology(const RunArgs& a, LabConfig& cfg) {
  if (!a.link.empty() || a.link_bw > 0 || a.link_latency > 0)
    throw UsageError("--topology names its own links (intra=..,inter=..); drop --link, --link-bw and --link-latency");
  const ClusterLinks c = parse_topology(a.topology, a.link_slowdown);
  const int ranks = c.layout.nodes * c.layout.gpus_per_node;
  if (ranks != cfg.ranks)
    throw UsageError("--topology " + a.topology + " places " + std::to_string(ranks) + " ranks but the run has " +
                     std::to_string(cfg.ranks) + "; make nodes × gpus equal --ranks");
  if (c.layout.nodes < 2)
    throw UsageError("--topology with one node is one tier; use --link " +
                     (c.intra.active() ? c.intra.name : std::string("NAME")) + " instead, or nodes=2 or more");
  cfg.link = c.intra;
  cfg.nodes = c.layout;
}

double watchdog_seconds(const RunArgs& a, const Backend& backend) {
  return a.timeout_s > 0 ? a.timeout_s : (backend.kind == BackendKind::threads ? 8 : 60);
}

// The run the command line asks for (UsageError naming the option); the lab's options are
// validated by the launch.
RunRequest make_request(const LabInfo& lab, RunArgs& a, const Backend& backend) {
  RunRequest request;
  LabConfig& cfg = request.cfg;
  cfg.ranks = backend.ranks;
  cfg.bytes = parse_size(a.bytes, "--bytes");
  cfg.dtype = parse_dtype(a.dtype);
  cfg.backend = a.backend;
  cfg.device = choose_device(lab, a);
  cfg.iters = a.iters;
  cfg.warmup = a.warmup;
  cfg.repeat = a.repeat;
  cfg.options = LabOptions(a.lab_options);
  if (a.topology.empty())
    cfg.link = make_link(a.link, a.link_bw, a.link_latency, a.link_slowdown);
  else
    apply_topology(a, cfg);
  if (!a.protocol.empty()) set_protocol(a.protocol, cfg.link, &cfg.nodes.inter);
  if (cfg.link.active() && backend.kind != BackendKind::threads)
    throw UsageError("--link emulates an interconnect between thread ranks; with --backend " + a.backend +
                     " the real one is used");
  if (cfg.link.active() && a.step)
    throw UsageError("--link has no meaning while stepping (you set the pace); drop one of them");
  // One message's latency at or above the watchdog's patience would always read as a hang.
  const double slowest_latency_us = std::max(cfg.link.latency_us, cfg.nodes.inter.latency_us);
  if (cfg.link.active() && slowest_latency_us * 1e-6 >= watchdog_seconds(a, backend))
    throw UsageError("the emulated link's latency (" + format_g(slowest_latency_us) + " µs) is not below --timeout " +
                     format_g(watchdog_seconds(a, backend)) +
                     " s: every message would fire the watchdog; lower --link-latency or "
                     "--link-slowdown, or raise --timeout");
  if (!a.slow_rank.empty()) parse_slow_rank(a.slow_rank, backend.ranks, cfg.slow_rank, cfg.slow_factor);
  request.mode = a.step ? RunMode::stepped : RunMode::free;
  FaultPlan& faults = request.faults;
  if (!a.inject_fault.empty())
    parse_rank_step(a.inject_fault, "--inject-fault", cfg.ranks, faults.fault_rank, faults.fault_step);
  if (!a.inject_hang.empty())
    parse_rank_step(a.inject_hang, "--inject-hang", cfg.ranks, faults.hang_rank, faults.hang_step);
  request.timeout_s = watchdog_seconds(a, backend);
  return request;
}

// The report, or why the run failed; the exit code.
int report_result(const RunArgs& a, const RunResult& result, const Report& report) {
  if (!result.ok()) {
    try {  // a usage error found inside a rank (e.g. an option combination) is still a usage error
      if (result.first_failure) std::rethrow_exception(result.first_failure);
    } catch (const UsageError&) { throw; } catch (...) {
    }
    std::cerr << wrap_hanging("dtlab: the run failed: " + result.error, std::size_t(terminal_width()));
    return 1;
  }
  if (a.json)
    std::cout << report.to_json().dump(2) << "\n";
  else
    std::cout << report.to_text(terminal_width());
  return report.ok ? 0 : 1;
}

// Rank 0's side after the run: the report (or the failure), then the trace. The report
// comes first so that a trace that cannot be written (a full disk) loses no result; a
// usage error found inside a rank writes no trace at all.
int finish_run(const RunArgs& a, const Backend& backend, Trace& trace, const RunResult& result, const Report& report) {
  std::ostream& human = a.json ? std::cerr : std::cout;                       // with --json, stdout holds only JSON
  if (result.ok()) trace.set_meta(MetaKey::report, report.to_json().dump());  // the visualizer's report view
  std::unique_ptr<Trace> gathered = backend.gather(trace);                    // MPI: every rank's events on rank 0
  if (!backend.root) return 0;                                                // under MPI, rank 0 reports for everyone
  const int code = report_result(a, result, report);
  if (a.trace_path.empty()) return code;
  try {
    std::cout.flush();  // the report is out before the (long) write
    write_chrome_trace(gathered ? *gathered : trace, a.trace_path, result.error);
    human << "trace written to " << a.trace_path << " (open it in dtlab-viz or https://ui.perfetto.dev)\n";
  } catch (const std::exception& e) {
    std::cerr << "dtlab: " << e.what() << "\n";
    return code == 0 ? 1 : code;
  }
  return code;
}

// The files this run names (the trace, its .dtlt companion, the lab's --save and --load):
// none may overwrite another or an input (exit 2 before the run).
void require_distinct_outputs(const LabInfo& lab, const RunArgs& a) {
  std::vector<NamedFile> files = {{"--trace", a.trace_path, true}};
  if (!a.trace_path.empty()) files.push_back({"--trace's companion", a.trace_path + ".dtlt", true});
  for (const OptionSpec& spec : lab.options) {
    const auto given = a.lab_options.find(spec.name);
    if (spec.kind == OptionKind::path && given != a.lab_options.end())
      files.push_back({"--" + spec.name, given->second, spec.writes});
  }
  require_distinct_files(files);
}

int run_lab(const LabInfo& lab, RunArgs& a) {
  if (a.step && a.backend != "threads") throw UsageError("--step needs --backend threads (all ranks in this process)");
  require_distinct_outputs(lab, a);
  require_writable_file(a.trace_path, "--trace");  // before the run, not after it
  // (/dev/stdout is a regular file when stdout is redirected to one: refused all the same)
  if (a.json && !a.trace_path.empty() && a.trace_path.rfind("/dev/std", 0) == 0)
    throw UsageError("--trace " + a.trace_path +
                     " with --json would mix the trace into the report on stdout; give "
                     "--trace a file");
  const Backend backend = Backend::choose(a.backend, a.ranks);  // nccl: says so when there is no GPU
  RunRequest request = make_request(lab, a, backend);
  std::string stepping_sizes;  // the lab's live_options a stepped run starts from (labs/launch.cpp)
  for (const auto& [name, value] : lab.live_options)
    if (a.step && !request.cfg.options.has(name)) stepping_sizes += " --" + name + " " + value;
  Launch run = launch(lab, std::move(request));
  LabConfig& cfg = run.cfg;
  if (cfg.bytes < dtype_size(cfg.dtype))
    throw UsageError("--bytes " + a.bytes + " holds no " + std::string(dtype_name(cfg.dtype)) +
                     " element; give at least " + std::to_string(dtype_size(cfg.dtype)));
  // The lab's own rules (its memory estimate, a batch that divides over the ranks) before any
  // rank starts: under MPI a usage error is then printed once, by rank 0, not by every rank
  // between MPI_Abort banners. Thread ranks: their room and each rank's trace tables too,
  // before anything per rank is allocated (--ranks 4096 took 2.5 GB and 12 s to be refused).
  if (lab.check_config) lab.check_config(cfg);
  if (backend.kind == BackendKind::threads)
    require_thread_room(cfg.ranks, Trace::kStreams * double(EventLog::kIndexBytes));
  ProgressPrinter progress(std::cerr, ProgressPrinter::quiet_from_env());
  if (!a.step) cfg.progress = std::ref(progress);  // (stepping prints every transfer itself)
  Trace trace(cfg.ranks);
  run.start_trace(trace);
  ThreadsOptions opt = run.threads;
  opt.say_still_waiting = [](const std::string& message) {  // at the terminal's width, as the report
    std::cerr << wrap_hanging(message, std::size_t(terminal_width())) << std::flush;
  };
  opt.trace = &trace;
  std::unique_ptr<StepGate> gate;
  const StepSetup step_setup{run.unit, run.chunks, std::size_t(terminal_width()), stepping_sizes};
  if (a.step) {
    if (run.chunks > 0 && cfg.ranks > 64)
      throw UsageError("--step draws a chunk picture per transfer, readable up to 64 ranks; give --ranks 64 or fewer");
    gate = std::make_unique<StepGate>(cfg.ranks, step_setup.unit);
    opt.gate = gate.get();
  }
  Report report;
  RunResult result;
  auto body = [&](Comm& comm) {
    Report r = lab.run(comm, cfg);
    if (comm.rank() == 0) report = std::move(r);
  };
  if (gate) {
    std::thread runner([&] { result = run_threads(opt, body); });
    step_through(*gate, trace, step_setup, a.json ? std::cerr : std::cout);
    runner.join();
  } else {
    result = backend.run(opt, a.trace_path, body);
  }
  return finish_run(a, backend, trace, result, report);
}

}  // namespace

namespace {

// Options every lab takes: how many ranks and where, what to write, the watchdog, the link.
void add_common_options(CLI::App* sub, RunArgs& a) {
  sub->add_option("--ranks,-r", a.ranks, "Number of ranks (threads: default 4; mpi: as started by mpirun)")
      ->check(whole_range(1, kMaxThreadRanks));
  sub->add_option("--backend", a.backend,
                  "threads; mpi under mpirun/srun; nccl (a GPU per rank: one process, or mpirun/srun)")
      ->check(CLI::IsMember({"threads", "mpi", "nccl"}))
      ->capture_default_str();
  sub->add_option("--trace", a.trace_path, "Write a Chrome/Perfetto trace to this file");
  sub->add_flag("--json", a.json, "Print the report as JSON on stdout (everything else goes to stderr)");
  sub->add_option(
         "--timeout", a.timeout_s,
         "Watchdog: abort after this many seconds without progress (default: 8 on thread ranks, 60 under MPI/NCCL)")
      ->check(finite_range(0.001, 1e6));
  sub->add_option("--link", a.link, "Emulate an interconnect: nvlink4 nvlink3 pcie5 pcie4 ib-ndr ib-hdr eth100");
  sub->add_option("--link-bw", a.link_bw, "Emulated link bandwidth, GB/s per direction")
      ->check(finite_range(1e-6, 1e6));
  sub->add_option("--link-latency", a.link_latency, "Emulated link latency, microseconds")->check(finite_range(0, 1e9));
  sub->add_option("--topology", a.topology,
                  "Ranks in nodes, with two tiers of emulated links: nodes=2,gpus=4,intra=nvlink4,inter=ib-ndr "
                  "(ranks numbered node by node; without intra/inter only the grouping)");
  sub->add_option("--protocol", a.protocol,
                  "How the emulated links carry messages, as NCCL's protocols: LL (twice the bytes, the lowest "
                  "latency), LL128 (128/120 the bytes), Simple (the default)");
  sub->add_option("--link-slowdown", a.link_slowdown,
                  "Slow the emulated link K times (a CPU computes ~1000x slower than a GPU; keeps a GPU's "
                  "compute:communication ratio)")
      ->check(finite_range(1, 1e6));
}

// The run-wide options only some labs read (LabInfo::run_options).
void add_run_option(CLI::App* sub, RunArgs& a, RunOption o, const LabInfo& lab) {
  switch (o) {
    case RunOption::bytes:
      sub->add_option("--bytes,-B", a.bytes, "Buffer size per rank: 4096, 64K, 64M, 1G (powers of 1024)")
          ->capture_default_str();
      return;
    case RunOption::dtype:
      sub->add_option("--dtype", a.dtype, "Element type: f32 f64 i32 i64 f16 bf16")->capture_default_str();
      return;
    case RunOption::iters:
      sub->add_option("--iters", a.iters, "Timed repetitions")->check(whole_range(0, 1000000))->capture_default_str();
      sub->add_option("--warmup", a.warmup, "Untimed repetitions before timing")
          ->check(whole_range(0, 1000000))
          ->capture_default_str();
      return;
    case RunOption::device:
      sub->add_option("--device", a.device,
                      "Where tensors live: cpu (default); cuda (rank r on GPU r mod count; implied by --backend "
                      "nccl); standin (a CPU stand-in for a GPU: memory the host cannot read, work on streams, "
                      "two devices; runs the GPU code path without a GPU)")
          ->check(CLI::IsMember({"cpu", "cuda", "standin"}));
      return;
    case RunOption::step:
      sub->add_flag("--step", a.step,
                    "Step through the run in the terminal: one transfer, or one collective for labs built on them");
      return;
    case RunOption::faults: {
      const std::string op = lab.step_unit == StepUnit::transfers ? "send" : "library collective (all-reduce, ...)";
      sub->add_option("--inject-fault", a.inject_fault,
                      "RANK[:STEP]: that rank throws at its STEP-th " + op + " (0 = first)");
      sub->add_option("--inject-hang", a.inject_hang,
                      "RANK[:STEP]: that rank goes silent from its STEP-th " + op + " on");
    }
      return;
    case RunOption::slow_rank:
      sub->add_option("--slow-rank", a.slow_rank, "RANK:FACTOR: that rank computes FACTOR times slower (a straggler)");
      return;
    case RunOption::repeat:
      sub->add_option("--repeat", a.repeat, "Timed runs: a timing is their median, shown with min–max")
          ->check(whole_range(1, 1000))
          ->capture_default_str();
      return;
  }
}

// The lab's own options, as text: LabOptions::validate parses them by their declared type.
void add_lab_options(CLI::App* sub, const LabInfo& lab, RunArgs& a) {
  for (const OptionSpec& spec : lab.options) {
    RunArgs* args = &a;
    sub->add_option_function<std::string>(
        "--" + spec.name, [args, name = spec.name](const std::string& v) { args->lab_options[name] = v; },
        spec.help + ": " + spec.describe_valid() + " (default " + spec.default_value + ")");
  }
}

// The options this lab takes, for the message about one it does not.
std::string option_names(const CLI::App* sub) {
  std::string all;
  for (const CLI::Option* o : sub->get_options())
    if (!o->get_lnames().empty() && o->get_lnames().front().rfind("help", 0) != 0)
      all += (all.empty() ? "--" : ", --") + o->get_lnames().front();
  return all;
}

}  // namespace

Command add_run_command(CLI::App& app) {
  CLI::App* run = app.add_subcommand("run", "Run a lab: dtlab run LAB [options] (see 'dtlab list')");
  run->allow_extras();  // so an unknown lab name reaches us and gets a clear message
  auto args = std::make_shared<std::map<std::string, RunArgs>>();
  for (const LabInfo& lab : lab_registry()) {
    CLI::App* sub = run->add_subcommand(lab.name, lab.description);
    RunArgs& a = (*args)[lab.name];
    add_common_options(sub, a);
    for (RunOption o : lab.run_options) add_run_option(sub, a, o, lab);
    add_lab_options(sub, lab, a);
  }
  return [run, args] {
    const auto extra = run->remaining(true);  // true: include what the lab subcommand left over
    for (const LabInfo& lab : lab_registry()) {
      const CLI::App* sub = run->get_subcommand(lab.name);
      if (!sub->parsed()) continue;
      if (!extra.empty() && sub->get_option_no_throw(extra.front()))  // `dtlab run --ranks 2 gpt`
        throw UsageError(extra.front() + " came before the lab's name; options follow it: 'dtlab run " + lab.name +
                         " " + extra.front() + " ...'");
      if (!extra.empty())
        throw UsageError("the " + lab.name + " lab has no option " + extra.front() + "; its options are " +
                         option_names(sub) + " (see 'dtlab run " + lab.name + " --help')");
      return run_lab(lab, (*args)[lab.name]);
    }
    if (!extra.empty()) throw UsageError("unknown lab '" + extra.front() + "'; 'dtlab list' shows the labs");
    throw UsageError("name a lab to run, e.g. 'dtlab run collectives'; 'dtlab list' shows them");
  };
}

}  // namespace dtl::cli
