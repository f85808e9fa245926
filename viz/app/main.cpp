// dtlab-viz — watch a distributed run: replay a trace, or run a lab live and step it.
//
//   dtlab-viz ring.json                                           # replay any dtlab trace
//   dtlab-viz --lab collectives --algo ring --ranks 4 --bytes 1K  # live, step by step
//   xvfb-run -a dtlab-viz ring.json --screenshot out.png --at-step 5
//   dtlab-viz --bench big.json                                    # load time and frame cost
//
// Keys: space play/pause, right arrow step, shift+right step a phase, +/- speed, home restart.
// A plain linear loop (the ImGui example's shape): poll, new frame, draw, render, swap.
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <stb/stb_image_write.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <new>
#include <thread>

#include "core/error.h"
#include "core/util/units.h"
#include "viz/app/app.h"
#include "viz/app/bench.h"

namespace {

struct Args {
  std::string trace_path, lab, algo = "ring", collective = "all_reduce", op = "sum", bytes = "1K";
  int ranks = 4, frames = 3, width = 1600, height = 1000;
  long at_step = -1;
  std::string screenshot, bench, view;
  float zoom = 1;
};

// Reads the back buffer before the swap (as the GL spec leaves it undefined after).
void save_screenshot(const std::string& path, int w, int h) {
  std::vector<unsigned char> pixels(std::size_t(w) * std::size_t(h) * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  stbi_flip_vertically_on_write(1);
  if (!stbi_write_png(path.c_str(), w, h, 4, pixels.data(), w * 4))
    throw dtl::Error("cannot write the screenshot '" + path + "'; check that its folder exists");
}

// Ranges of the numeric options, checked while parsing (before any window or run), so a
// bad value is a usage error (exit 2) that names the option and its range, never a
// failure deep inside GLFW or the lab.
constexpr long kMinWindow = 64, kMaxWindow = 8192;  // 8192² RGBA is a 256 MiB screenshot
constexpr long kMaxLiveRanks = 64;                   // live runs step every transfer by hand
constexpr std::uint64_t kMaxLiveBytes = 16ull << 20;  // per rank; a live run is for watching chunks move
constexpr long kMaxFrames = 10000, kMaxStep = 1'000'000'000;

CLI::Validator whole_number_in(long lo, long hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi)
          return "must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got '" + text + "'";
        return "";
      },
      std::to_string(lo) + ".." + std::to_string(hi));
}

std::string show(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

CLI::Validator number_in(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi)
          return "must be a number from " + show(lo) + " to " + show(hi) + ", got '" + text + "'";
        return "";
      },
      "");
}

CLI::Validator size_in(std::uint64_t lo, std::uint64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        const std::string range = "from " + dtl::format_size(lo) + " to " + dtl::format_size(hi) + " bytes";
        try {
          const std::uint64_t v = dtl::parse_size(text, "the size");
          if (v >= lo && v <= hi) return "";
        } catch (const dtl::Error&) {
        }
        return "must be a size " + range + " (K/M = 1024-based), got '" + text + "'";
      },
      "");
}

std::unique_ptr<dtl::viz::Session> open_session(const Args& a) {
  if (!a.trace_path.empty()) return dtl::viz::Session::replay(a.trace_path);
  const dtl::LabInfo* lab = dtl::find_lab(a.lab.empty() ? "collectives" : a.lab);
  if (!lab) throw dtl::UsageError("unknown lab '" + a.lab + "'; 'dtlab list' shows the labs");
  dtl::LabConfig cfg;  // --ranks and --bytes were range-checked while parsing
  cfg.ranks = a.ranks;
  cfg.bytes = dtl::parse_size(a.bytes, "--bytes");
  dtl::require_memory(4.0 * double(cfg.ranks) * double(cfg.bytes), "--ranks and --bytes");  // the lab's few buffers per rank
  cfg.options = {{"algo", a.algo}, {"collective", a.collective}, {"op", a.op}};
  return dtl::viz::Session::live(*lab, cfg);
}

// --at-step K: move the cursor to transfer K (a live run is released that far first).
void go_to_step(dtl::viz::App& app, long k) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (app.session->live() && long(app.session->transfers().size()) < k && !app.session->finished() &&
         std::chrono::steady_clock::now() < deadline) {
    app.session->advance_one();
    app.session->refresh();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  app.controls.cursor = std::size_t(std::min<long>(k, long(app.session->transfers().size())));
  app.controls.anim = 1;
}

int run(const Args& a) {
  if (!a.bench.empty()) return dtl::viz::run_bench(a.bench);
  auto session = open_session(a);  // errors in the trace surface before any window opens

  glfwSetErrorCallback([](int code, const char* text) { std::fprintf(stderr, "GLFW error %d: %s\n", code, text); });
  if (!glfwInit())
    throw dtl::Error("no display to open a window on; run under 'xvfb-run -a', or step in the terminal with "
                     "'dtlab run collectives --step'");
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  GLFWwindow* window = glfwCreateWindow(a.width, a.height, "dtlab-viz", nullptr, nullptr);
  if (!window) {
    glfwTerminate();
    throw dtl::Error("could not create an OpenGL 3.3 window; check the display (or use xvfb-run -a)");
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(a.screenshot.empty() ? 1 : 0);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;  // no imgui.ini: the layout is fixed
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330");

  dtl::viz::App app;
  app.session = std::move(session);
  app.controls.ranks = a.ranks;
  app.solo_view = a.view;
  app.timeline.start_zoom = a.zoom;
  std::snprintf(app.controls.bytes, sizeof app.controls.bytes, "%s", a.bytes.c_str());
  for (int i = 0; i < 4; ++i)
    if (a.algo == std::array<const char*, 4>{"naive", "ring", "tree", "rhd"}[std::size_t(i)]) app.controls.algo = i;
  if (a.at_step >= 0) go_to_step(app, a.at_step);

  int frame = 0;
  auto last = std::chrono::steady_clock::now();
  while (!glfwWindowShouldClose(window)) {
    glfwPollEvents();
    const auto now = std::chrono::steady_clock::now();
    const float dt = std::chrono::duration<float>(now - last).count();
    last = now;
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    app.Frame(a.screenshot.empty() ? dt : 0.0f);
    ImGui::Render();
    int w = 0, h = 0;
    glfwGetFramebufferSize(window, &w, &h);
    glViewport(0, 0, w, h);
    glClearColor(0.09f, 0.09f, 0.11f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    if (!a.screenshot.empty() && ++frame >= a.frames) {
      save_screenshot(a.screenshot, w, h);
      std::fprintf(stderr, "screenshot written to %s (%dx%d)\n", a.screenshot.c_str(), w, h);
      break;
    }
    glfwSwapBuffers(window);
  }
  app.session.reset();
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"dtlab-viz: replay a dtlab trace, or run a lab live and step through it", "dtlab-viz"};
  Args a;
  cli.add_option("trace", a.trace_path, "A trace written by dtlab run ... --trace FILE");
  cli.add_option("--lab", a.lab, "Run this lab live instead (default collectives)");
  cli.add_option("--algo", a.algo, "naive ring tree rhd")->check(CLI::IsMember({"naive", "ring", "tree", "rhd"}))->capture_default_str();
  cli.add_option("--collective", a.collective, "all_reduce reduce_scatter all_gather broadcast")->capture_default_str();
  cli.add_option("--op", a.op, "sum avg max min")->capture_default_str();
  cli.add_option("--ranks,-r", a.ranks, "Ranks of a live run")->check(whole_number_in(1, kMaxLiveRanks))->capture_default_str();
  cli.add_option("--bytes,-B", a.bytes, "Bytes per rank of a live run (K/M = 1024-based)")
      ->check(size_in(4, kMaxLiveBytes))
      ->capture_default_str();
  cli.add_option("--screenshot", a.screenshot, "Render, save this PNG, and exit");
  cli.add_option("--frames", a.frames, "Frames to render before the screenshot")
      ->check(whole_number_in(1, kMaxFrames))
      ->capture_default_str();
  cli.add_option("--at-step", a.at_step, "Show the state after this many transfers")->check(whole_number_in(0, kMaxStep));
  cli.add_option("--width", a.width, "Window width")->check(whole_number_in(kMinWindow, kMaxWindow))->capture_default_str();
  cli.add_option("--height", a.height, "Window height")->check(whole_number_in(kMinWindow, kMaxWindow))->capture_default_str();
  cli.add_option("--view", a.view, "Show one view filling the window: ring timeline memory report")
      ->check(CLI::IsMember({"ring", "timeline", "memory", "report"}));
  cli.add_option("--zoom", a.zoom, "Start the timeline this many times closer, around the cursor")->check(number_in(1, 1e9));
  cli.add_option("--bench", a.bench, "Load this trace and time frames at several zooms (no window)");
  try {
    cli.parse(argc, argv);
    return run(a);
  } catch (const CLI::CallForHelp&) {
    return cli.exit(CLI::CallForHelp());
  } catch (const CLI::ParseError& e) {
    std::cerr << "dtlab-viz: error: " << e.what() << " (see dtlab-viz --help)\n";
    return 2;
  } catch (const dtl::UsageError& e) {
    std::cerr << "dtlab-viz: error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {  // the trace limits should prevent it; say what happened if not
    std::cerr << "dtlab-viz: out of memory; the trace is too large for this machine (limits: core/trace/trace_limits.h)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "dtlab-viz: " << e.what() << "\n";
    return 1;
  }
}
