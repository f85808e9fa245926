#include "viz/app/window.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <stb/stb_image_write.h>

#include <cfloat>
#include <chrono>
#include <cstdio>
#include <vector>

#include "core/error.h"
#include "core/util/atomic_file.h"

namespace dtl::viz {

namespace {

// Reads the back buffer before the swap (as the GL spec leaves it undefined after), encodes
// the PNG in memory and writes it as every dtlab file is written (core/util/atomic_file.h):
// a full disk leaves an older screenshot as it was.
void save_screenshot(const std::string& path, int w, int h) {
  std::vector<unsigned char> pixels(std::size_t(w) * std::size_t(h) * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  stbi_flip_vertically_on_write(1);
  std::string png;
  auto append = [](void* out, void* data, int n) {
    static_cast<std::string*>(out)->append(static_cast<char*>(data), std::size_t(n));
  };
  if (!stbi_write_png_to_func(append, &png, w, h, 4, pixels.data(), w * 4))
    throw dtl::Error("cannot encode the screenshot '" + path + "' as PNG");
  dtl::write_file_atomically(path, png, "--screenshot");
}

// A font that draws the symbols dtlab prints (Ψ α β · − × ≤ ⌈⌉ → ∘ ✓): DejaVu Sans Mono
// from Debian's fonts-dejavu-core, at ImGui's own 13 px; without the file, ImGui's built-in
// font (ASCII and Latin-1 only: those symbols then show as '?').
void load_font() {
  static const ImWchar ranges[] = {0x0020, 0x00FF,  // Latin
                                   0x0370, 0x03FF,  // Greek
                                   0x1D00, 0x1DBF,  // phonetic superscripts (ᵀ)
                                   0x2000, 0x23FF,  // punctuation, super/subscripts, arrows, math, ⌈⌉
                                   0x2500, 0x25FF,  // boxes, blocks, shapes
                                   0x2700, 0x27BF,  // ✓ ✗
                                   0};
  const char* path = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
  if (std::FILE* f = std::fopen(path, "rb")) {
    std::fclose(f);
    ImGui::GetIO().Fonts->AddFontFromFileTTF(path, 13.0f, nullptr, ranges);
  }
}

}  // namespace

GLFWwindow* open_window(const WindowOptions& o) {
  glfwSetErrorCallback([](int code, const char* text) { std::fprintf(stderr, "GLFW error %d: %s\n", code, text); });
  if (!glfwInit())
    throw dtl::Error(
        "no display to open a window on; run under 'xvfb-run -a', or step in the terminal with "
        "'dtlab run collectives --step'");
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  GLFWwindow* window = glfwCreateWindow(o.width, o.height, "dtlab-viz", nullptr, nullptr);
  if (!window) {
    glfwTerminate();
    throw dtl::Error("could not create an OpenGL 3.3 window; check the display (or use xvfb-run -a)");
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(o.screenshot.empty() ? 1 : 0);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;  // no imgui.ini: the layout is fixed
  ImGui::StyleColorsDark();
  load_font();
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330");
  return window;
}

void close_window(GLFWwindow* window) {
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
}

void main_loop(GLFWwindow* window, const WindowOptions& o, const std::function<void(float)>& frame) {
  int drawn = 0;
  auto last = std::chrono::steady_clock::now();
  while (!glfwWindowShouldClose(window)) {
    glfwPollEvents();
    const auto now = std::chrono::steady_clock::now();
    const float dt = std::chrono::duration<float>(now - last).count();
    last = now;
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    if (!o.screenshot.empty())
      ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);  // no tooltip where Xvfb left the pointer
    ImGui::NewFrame();
    frame(o.screenshot.empty() ? dt : 0.0f);
    ImGui::Render();
    int w = 0, h = 0;
    glfwGetFramebufferSize(window, &w, &h);
    glViewport(0, 0, w, h);
    glClearColor(0.09f, 0.09f, 0.11f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    if (!o.screenshot.empty() && ++drawn >= o.frames) {
      save_screenshot(o.screenshot, w, h);
      std::fprintf(stderr, "screenshot written to %s (%dx%d)\n", o.screenshot.c_str(), w, h);
      break;
    }
    glfwSwapBuffers(window);
  }
}

}  // namespace dtl::viz
