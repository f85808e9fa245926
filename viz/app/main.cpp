// dtlab-viz — watch a distributed run: replay a trace, or run a lab live and step it.
//
//   dtlab-viz ring.json                                           # replay any dtlab trace
//   dtlab-viz --lab collectives --algo ring --ranks 4 --bytes 1K  # live, step by step
//   dtlab-viz --lab ddp --ranks 4 --variant bucketed              # live DDP, one all-reduce a step
//   dtlab-viz --lab zero --ranks 2 --device cuda                  # live, tensors on the GPU
//   xvfb-run -a dtlab-viz ring.json --screenshot out.png --at-step 5
//   dtlab-viz pipe.json --view pipeline [--pipeline-schedule zb-h1] [--pipeline-compare]
//   dtlab-viz grid.json --view topology [--highlight-rank 5]
//   dtlab-viz --bench big.json                                    # load time and frame cost
//   dtlab-viz naive.json bucketed.json --compare                  # two runs side by side
//   dtlab-viz --which-algorithm bench.json [--nccl-gpu h100-sxm5]  # NCCL's pick per size
//
// A lab's own options (--algo, --variant, ...) are the ones it declares (LabInfo::options).
// Keys: space play/pause, right arrow step, shift+right step a phase, +/- speed, home restart.
// The window and its plain loop (poll, new frame, draw, render, swap): viz/app/window.h.
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/comm/threads_backend.h"
#include "core/error.h"
#include "core/theory/gpu_profile.h"
#include "core/trace/trace_limits.h"
#include "core/util/files.h"
#include "core/util/units.h"
#include "exercises/track/unwritten.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cuda/device.h"
#include "labs/cli/validators.h"
#include "labs/train/train_ops.h"
#include "viz/app/algo_chart_view.h"
#include "viz/app/app.h"
#include "viz/app/bench.h"
#include "viz/app/compare_view.h"
#include "viz/app/window.h"
#include "viz/model/comm_overlap.h"
#include "viz/model/step_idle.h"

namespace {

struct Args {
  std::string trace_path, lab, bytes = "1K", device;  // trace_path: the first of trace_paths
  std::vector<std::string> trace_paths;
  std::map<std::string, std::string> lab_options;  // as typed; the lab validates them
  bool bytes_given = false;
  int ranks = 4, frames = 3, width = 1600, height = 1000;
  long at_step = -1;
  std::string screenshot, bench, view;
  std::string which_algorithm, nccl_gpu = "h100-sxm5";  // --which-algorithm BENCH.json: on this GPU's fabric
  int nccl_per_node = 0;                                // 0: every rank on one node
  float zoom = 1;
  bool overlap = false, compare = false, idle = false;
  std::map<std::string, std::string> view_options;  // the options the views declare (PanelKind::options)
};

// Ranges of the numeric options, checked while parsing (before any window or run), so a
// bad value is a usage error (exit 2) that names the option and its range, never a
// failure deep inside GLFW or the lab.
constexpr long kMinWindow = 64, kMaxWindow = 8192;    // 8192² RGBA is a 256 MiB screenshot
constexpr long kMaxLiveRanks = 64;                    // live runs step every transfer by hand
constexpr std::uint64_t kMaxLiveBytes = 16ull << 20;  // per rank; a live run is for watching chunks move
constexpr long kMaxFrames = 10000, kMaxStep = 1'000'000'000;

// Every lab's own options, each once (labs may share a name): the chosen lab checks them.
void add_lab_options(CLI::App& cli, Args& a) {
  std::map<std::string, std::string> help;  // option → "lab: help" of every lab declaring it
  for (const dtl::LabInfo& lab : dtl::lab_registry())
    for (const dtl::OptionSpec& spec : lab.options) {
      const auto live = lab.live_options.find(spec.name);  // what a live run here starts from instead
      help[spec.name] += (help[spec.name].empty() ? "" : "; ") + lab.name + ": " + spec.help + ", " +
                         spec.describe_valid() + " (default " +
                         (live == lab.live_options.end() ? spec.default_value : live->second + " here") + ")";
    }
  for (const auto& [name, text] : help)
    cli.add_option_function<std::string>(
        "--" + name, [&a, name = name](const std::string& v) { a.lab_options[name] = v; }, text);
}

std::string option_names(const dtl::LabInfo& lab) {
  std::string all = lab.uses(dtl::RunOption::bytes) ? "--bytes" : "";
  for (const dtl::OptionSpec& spec : lab.options) all += (all.empty() ? "--" : ", --") + spec.name;
  return all.empty() ? "none" : all;
}

// "; the window's size is --window-width": for the names dtlab-viz once used for it.
std::string window_hint(const std::string& option) {
  return option == "width" || option == "height" ? "; the window's size is --window-width and --window-height" : "";
}

// --device: where the live lab's tensors live (its memory view then shows device memory).
dtl::Device::Kind choose_device(const dtl::LabInfo& lab, const std::string& device) {
  if (device.empty() || device == "cpu") return dtl::Device::Kind::cpu;
  if (!lab.uses(dtl::RunOption::device))
    throw dtl::UsageError("the " + lab.name + " lab has no device path (--device); drop --device");
  if (device == "standin")
    dtl::use_standin_device();  // a GPU's rules on the CPU
  else
    dtl::cuda::use_cuda_memory();  // no GPU or no CUDA build: says so, exit 2
  return dtl::Device::Kind::cuda;
}

std::unique_ptr<dtl::viz::Session> open_session(const Args& a) {
  if (!a.trace_path.empty()) {
    if (!a.lab_options.empty())
      throw dtl::UsageError("--" + a.lab_options.begin()->first +
                            " is an option of a live run (--lab); a trace replays as it was recorded" +
                            window_hint(a.lab_options.begin()->first));
    if (!a.device.empty())
      throw dtl::UsageError("--device is an option of a live run (--lab); a trace replays as it was recorded");
    // A path that names no readable file is a usage error (exit 2); a damaged trace is exit 1
    // in every mode (--overlap, --bench, the window), as docs/viewer.md says.
    return dtl::viz::Session::replay(a.trace_paths);
  }
  const dtl::LabInfo* lab = dtl::find_lab(a.lab.empty() ? "collectives" : a.lab);
  if (!lab) throw dtl::UsageError("unknown lab '" + a.lab + "'; 'dtlab list' shows the labs");
  auto refuse = [&](const std::string& option) {
    throw dtl::UsageError("the " + lab->name + " lab has no option --" + option + "; its options are " +
                          option_names(*lab) + " (see 'dtlab run " + lab->name + " --help')" + window_hint(option));
  };
  for (const auto& option : a.lab_options) {
    const std::string& name = option.first;  // (clang 14, which clang-tidy runs on, cannot capture a binding)
    if (std::none_of(lab->options.begin(), lab->options.end(),
                     [&](const dtl::OptionSpec& s) { return s.name == name; }))
      refuse(name);
  }
  if (a.bytes_given && !lab->uses(dtl::RunOption::bytes)) refuse("bytes");
  dtl::LabConfig cfg;  // --ranks and --bytes were range-checked while parsing
  cfg.ranks = a.ranks;
  cfg.bytes = dtl::parse_size(a.bytes, "--bytes");
  if (lab->uses(dtl::RunOption::bytes))  // the lab's few buffers per rank (others check their own memory)
    dtl::require_memory(4.0 * double(cfg.ranks) * double(cfg.bytes), "--ranks and --bytes");
  cfg.options = dtl::LabOptions(a.lab_options);
  cfg.device = choose_device(*lab, a.device);
  return dtl::viz::Session::live(*lab, cfg);
}

// --view NAME must be one of the lab's views.
void check_view(const dtl::viz::Session& s, const std::string& view) {
  if (view.empty()) return;
  for (dtl::ViewKind v : s.views())
    if (dtl::view_kind_name(v) == view) return;
  throw dtl::UsageError("the " + s.lab_name() + " lab has no " + view + " view; its views are " +
                        dtl::viz::view_names(s.views()));
}

// --at-step K: move the cursor to step K (a live run is released that far first).
void go_to_step(dtl::viz::App& app, long k) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (app.session->live() && long(app.session->steps().size()) < k && !app.session->finished() &&
         std::chrono::steady_clock::now() < deadline) {
    app.session->advance_one();
    app.session->refresh();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  app.controls.cursor = std::size_t(std::min<long>(k, long(app.session->steps().size())));
  app.controls.anim = 1;
}

dtl::viz::WindowOptions window_options(const Args& a) { return {a.width, a.height, a.screenshot, a.frames}; }

// --compare: two traces, replayed side by side; the options of one run's window are refused
// (an option without effect is an error).
void check_compare(const Args& a) {
  if (a.trace_paths.size() != 2)
    throw dtl::UsageError(
        "--compare shows two runs side by side: give exactly two traces (dtlab-viz a.json b.json "
        "--compare), not " +
        std::to_string(a.trace_paths.size()));
  const std::pair<bool, const char*> refused[] = {{!a.lab.empty(), "--lab"},
                                                  {a.overlap, "--overlap"},
                                                  {!a.bench.empty(), "--bench"},
                                                  {!a.view.empty(), "--view"},
                                                  {a.at_step >= 0, "--at-step"},
                                                  {a.zoom != 1, "--zoom"},
                                                  {!a.device.empty(), "--device"},
                                                  {!a.lab_options.empty(), "a lab's option"},
                                                  {a.idle, "--idle"}};
  for (const auto& [given, name] : refused)
    if (given)
      throw dtl::UsageError(std::string(name) +
                            " has no effect with --compare (it shows both runs' timed steps and reports); drop it");
  if (!a.view_options.empty())
    throw dtl::UsageError("--" + a.view_options.begin()->first + " has no effect with --compare; drop it");
}

int run_compare(const Args& a) {
  check_compare(a);
  for (const std::string& path : a.trace_paths)  // the screenshot may replace neither trace
    dtl::require_distinct_files({{"the trace", path, false}, {"--screenshot", a.screenshot, true}});
  dtl::require_writable_file(a.screenshot, "--screenshot");
  // Both traces are read before any window opens: a bad one is its error, no window.
  dtl::viz::CompareWindow compare(dtl::viz::Session::replay(a.trace_paths[0]), a.trace_paths[0],
                                  dtl::viz::Session::replay(a.trace_paths[1]), a.trace_paths[1]);
  GLFWwindow* window = dtl::viz::open_window(window_options(a));
  dtl::viz::main_loop(window, window_options(a), [&](float) { compare.Frame(); });
  dtl::viz::close_window(window);
  return 0;
}

// --idle: the timeline's idle per step, beside the report's bubble (viz/model/step_idle.h).
int run_idle(const Args& a) {
  if (a.trace_paths.empty()) throw dtl::UsageError("--idle reads a trace: dtlab-viz TRACE --idle");
  if (a.overlap || !a.bench.empty() || !a.screenshot.empty() || !a.view.empty() || a.at_step >= 0 || a.zoom != 1)
    throw dtl::UsageError(
        "--idle prints and exits: --overlap, --bench and the window's options have no effect with it");
  const auto session = dtl::viz::Session::replay(a.trace_paths);
  std::cout << dtl::viz::describe_step_idle(session->data(), session->index());
  return 0;
}

// --which-algorithm BENCH.json: NCCL's predicted time per algorithm × protocol over sizes, the
// model's pick and the run's measured points (viz/model/algo_chart.h); no trace, no lab.
int run_which_algorithm(const Args& a) {
  if (!a.trace_paths.empty() || !a.lab.empty() || a.compare || a.idle || a.overlap || !a.bench.empty() ||
      !a.view.empty() || a.at_step >= 0 || a.zoom != 1 || !a.device.empty() || !a.lab_options.empty() ||
      !a.view_options.empty())
    throw dtl::UsageError(
        "--which-algorithm draws a bench JSON alone: drop the trace, --lab and the other views' options");
  dtl::require_distinct_files({{"the bench JSON", a.which_algorithm, false}, {"--screenshot", a.screenshot, true}});
  dtl::require_writable_file(a.screenshot, "--screenshot");
  dtl::require_readable_file(a.which_algorithm, "--which-algorithm", 64ull << 20);  // a bench JSON is kilobytes
  std::ifstream file(a.which_algorithm);
  const nlohmann::json j = nlohmann::json::parse(file, nullptr, false);
  if (j.is_discarded())
    throw dtl::UsageError(a.which_algorithm + " is not JSON; write one with dtlab bench ... --json FILE");
  const dtl::viz::AlgoChartInput in = dtl::viz::read_bench_json(j);
  const dtl::viz::AlgoChart chart =
      dtl::viz::make_algo_chart(in, a.nccl_gpu, a.nccl_per_node > 0 ? a.nccl_per_node : in.ranks);
  GLFWwindow* window = dtl::viz::open_window(window_options(a));
  dtl::viz::main_loop(window, window_options(a), [&](float) { dtl::viz::draw_algo_chart_window(chart); });
  dtl::viz::close_window(window);
  return 0;
}

int run(const Args& a) {
  if (!a.which_algorithm.empty()) return run_which_algorithm(a);
  if (a.nccl_gpu != "h100-sxm5" || a.nccl_per_node > 0)
    throw dtl::UsageError(
        "--nccl-gpu and --nccl-per-node set the --which-algorithm chart's fabric; give --which-algorithm BENCH.json");
  if (a.compare) return run_compare(a);
  if (a.idle) return run_idle(a);
  if (!a.bench.empty()) return dtl::viz::run_bench(a.bench);
  if (a.overlap) {  // the report's figures, for dtlab's traces and torch.profiler's alike
    std::cout << dtl::viz::describe_overlap_of(a.trace_paths);
    return 0;
  }
  // The screenshot may not replace the trace it draws, and must be writable before the work.
  dtl::require_distinct_files({{"the trace", a.trace_path, false},
                               {"the trace's companion", a.trace_path.empty() ? "" : a.trace_path + ".dtlt", false},
                               {"--screenshot", a.screenshot, true}});
  dtl::require_writable_file(a.screenshot, "--screenshot");
  auto session = open_session(a);  // errors in the trace surface before any window opens
  check_view(*session, a.view);
  dtl::viz::App app;
  app.settings.zoom = a.zoom;
  app.settings.given = a.view_options;
  app.solo_view = a.view;
  app.Open(std::move(session));  // the views' options checked (exit 2) before a window opens
  GLFWwindow* window = dtl::viz::open_window(window_options(a));
  if (a.at_step >= 0) go_to_step(app, a.at_step);
  dtl::viz::main_loop(window, window_options(a), [&](float dt) { app.Frame(dt); });
  app.session.reset();  // finishes a live run before the window goes
  dtl::viz::close_window(window);
  return 0;
}

// One option a view declared (its file's register_panel): given, it lands in Args::view_options.
void add_view_option(CLI::App& cli, Args& a, const dtl::viz::ViewOption& o) {
  using Kind = dtl::viz::ViewOption::Kind;
  const std::string name = o.name, flag = "--" + name;
  if (o.kind == Kind::flag) {
    cli.add_flag_function(
        flag, [&a, name](std::int64_t) { a.view_options[name] = "on"; }, o.help);
    return;
  }
  CLI::Option* opt = cli.add_option_function<std::string>(
      flag, [&a, name](const std::string& v) { a.view_options[name] = v; }, o.help);
  if (o.kind == Kind::rank) opt->check(dtl::cli::whole_range(0, dtl::trace_limits::kMaxRanks - 1));
}

// What the window shows and where it starts: a view, a zoom, each view's own start-up options
// (the pipeline view's run, the topology's highlighted rank); and the modes without a window
// (--overlap, --bench).
void add_view_options(CLI::App& cli, Args& a) {
  std::vector<dtl::ViewKind> all_views;  // the viewer's and every lab's that registered a panel
  std::vector<std::string> view_names;
  for (const dtl::viz::PanelKind& p : dtl::viz::panel_registry())
    all_views.push_back(p.kind), view_names.emplace_back(dtl::view_kind_name(p.kind));
  cli.add_option("--view", a.view, "Show one of the lab's views filling the window: " + dtl::viz::view_names(all_views))
      ->check(CLI::IsMember(view_names));
  cli.add_option("--zoom", a.zoom, "Start the timeline this many times closer, around the cursor")
      ->check(dtl::cli::finite_range(1, 1e9));
  cli.add_flag("--overlap", a.overlap,
               "Print each rank's compute, communication, overlapped and exposed time in the trace and exit (no "
               "window); for torch.profiler traces, what `dtlab analyze` prints");
  cli.add_flag("--compare", a.compare,
               "Show the two traces given side by side: their timed steps on one time scale, starts aligned, and "
               "their reports' rows with the differences");
  cli.add_flag("--idle", a.idle,
               "Print the timeline's idle (no compute on the rank) over each timed step and beside the report's "
               "bubble, and exit (no window)");
  cli.add_option(
      "--which-algorithm", a.which_algorithm,
      "Draw NCCL's predicted time per size for each algorithm x protocol (the model `dtlab bench all_reduce "
      "--algo auto` prints), its pick per size, and the measured points of this `dtlab bench ... --json` file");
  cli.add_option("--nccl-gpu", a.nccl_gpu, "The GPU whose fabric --which-algorithm predicts for")
      ->check(CLI::IsMember(dtl::theory::gpu_profile_names()))
      ->capture_default_str();
  cli.add_option("--nccl-per-node", a.nccl_per_node, "Ranks per node for --which-algorithm (default: all on one node)")
      ->check(dtl::cli::whole_range(1, 1 << 16));
  cli.add_option("--bench", a.bench, "Load this trace and time frames at several zooms (no window)");
  for (const dtl::viz::PanelKind& p : dtl::viz::panel_registry())
    for (const dtl::viz::ViewOption& o : p.options) add_view_option(cli, a, o);
}

}  // namespace

namespace {

int run_viz(int argc, char** argv) {
  mallopt(M_ARENA_MAX, dtl::kMallocArenas);           // live runs are thread ranks: as dtlab's main
  dtl::ex::run_references_for_unwritten_exercises();  // as dtlab's main: a stub not written yet runs the reference
  CLI::App cli{"dtlab-viz: replay a dtlab trace, or run a lab live and step through it", "dtlab-viz"};
  Args a;
  cli.add_option("trace", a.trace_paths,
                 "A trace written by dtlab run ... --trace FILE, or the per-rank torch.profiler traces of one PyTorch "
                 "run (the files or their folder), opened together");
  cli.add_option("--lab", a.lab, "Run this lab live instead (default collectives); its own options follow");
  cli.add_option("--device", a.device,
                 "A live lab's tensors: cpu (default), cuda (the GPUs; the memory view shows device memory), or "
                 "standin (the CPU stand-in for a GPU)")
      ->check(CLI::IsMember({"cpu", "cuda", "standin"}));
  cli.add_option("--ranks,-r", a.ranks, "Ranks of a live run")
      ->check(dtl::cli::whole_range(1, kMaxLiveRanks))
      ->capture_default_str();
  cli.add_option("--bytes,-B", a.bytes, "Bytes per rank of a live run, for labs that read it (K/M = 1024-based)")
      ->check(dtl::cli::size_range(4, kMaxLiveBytes))
      ->capture_default_str();
  cli.add_option("--screenshot", a.screenshot, "Render, save this PNG, and exit");
  cli.add_option("--frames", a.frames, "Frames to render before the screenshot")
      ->check(dtl::cli::whole_range(1, kMaxFrames))
      ->capture_default_str();
  cli.add_option("--at-step", a.at_step, "Show the state after this many steps (transfers, or collectives for DDP)")
      ->check(dtl::cli::whole_range(0, kMaxStep));
  // (--width is the DDP lab's MLP width: the window's size has its own names)
  cli.add_option("--window-width", a.width, "Window width")
      ->check(dtl::cli::whole_range(kMinWindow, kMaxWindow))
      ->capture_default_str();
  cli.add_option("--window-height", a.height, "Window height")
      ->check(dtl::cli::whole_range(kMinWindow, kMaxWindow))
      ->capture_default_str();
  add_view_options(cli, a);
  add_lab_options(cli, a);
  try {
    cli.parse(argc, argv);
    dtl::cli::require_no_empty_values(cli);
    a.bytes_given = cli.get_option("--bytes")->count() > 0;
    if (!a.trace_paths.empty()) a.trace_path = a.trace_paths.front();
    return run(a);
  } catch (const CLI::CallForHelp&) { return cli.exit(CLI::CallForHelp()); } catch (const CLI::ParseError& e) {
    std::cerr << "dtlab-viz: error: " << e.what() << " (see dtlab-viz --help)\n";
    return 2;
  } catch (const dtl::UsageError& e) {
    std::cerr << "dtlab-viz: error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {  // the trace limits should prevent it; say what happened if not
    std::cerr
        << "dtlab-viz: out of memory; the trace is too large for this machine (limits: core/trace/trace_limits.h)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "dtlab-viz: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGXFSZ, SIG_IGN);  // past ulimit -f a screenshot fails with EFBIG, named (as dtlab's main)
  const int code = run_viz(argc, argv);
  dtl::kernels::end_without_waiting_for_blas_threads(code);  // (ulimit -v: see kernels/cpu/kernels.h)
  return code;
}
