#include "viz/app/bench.h"

#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "viz/app/app.h"

namespace dtl::viz {

int run_bench(const std::string& path) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  std::unique_ptr<Session> session = Session::replay(path);
  const double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const TraceData& d = session->data();
  std::printf("loaded %zu events, %d ranks, %zu tracks in %.3f s\n", d.events.size(), d.ranks, session->tracks().size(),
              load_s);
  std::fflush(stdout);

  // Headless ImGui: fonts built, no renderer; a frame is the CPU work of building draw lists.
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  io.DisplaySize = ImVec2(1600, 1000);
  io.BackendFlags |=
      ImGuiBackendFlags_RendererHasVtxOffset;  // as the OpenGL3 renderer declares: >64K vertices per list
  unsigned char* pixels = nullptr;
  int w = 0, h = 0;
  io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
  App app;
  app.Open(std::move(session));
  app.controls.cursor = app.session->steps().size() / 2;
  auto* timeline = dynamic_cast<TimelineView*>(app.panel(ViewKind::timeline));
  std::printf("%-22s %12s %12s\n", "visible window", "median ms", "p99 ms");
  const double span = double(d.t_end - d.t_begin);
  for (double fraction : {1.0, 0.1, 0.01, 0.001, 1e-5}) {
    std::vector<double> ms;
    for (int i = 0; i < 60; ++i) {
      io.DeltaTime = 1.0f / 60;
      ImGui::NewFrame();
      if (timeline && timeline->fitted) {  // keep the window centered at this zoom
        const double mid = double(d.t_begin) + span / 2;
        timeline->follow = false;
        timeline->axis.t0 = mid - span * fraction / 2;
        timeline->axis.t1 = mid + span * fraction / 2;
      }
      const auto f0 = Clock::now();
      app.Frame(0);
      ImGui::Render();
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - f0).count());
    }
    std::sort(ms.begin(), ms.end());
    char label[32];
    std::snprintf(label, sizeof label, "%g of the trace", fraction);
    std::printf("%-22s %12.2f %12.2f\n", label, ms[ms.size() / 2], ms[std::size_t(double(ms.size()) * 0.99)]);
  }
  app.session.reset();
  ImGui::DestroyContext();
  return 0;
}

}  // namespace dtl::viz
