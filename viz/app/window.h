// The window dtlab-viz draws in (GLFW + OpenGL 3.3 + ImGui) and its plain loop: poll, new
// frame, draw, render, swap; with a screenshot path, save the PNG after a few frames and stop.
#pragma once

#include <functional>
#include <string>

struct GLFWwindow;

namespace dtl::viz {

struct WindowOptions {
  int width = 1600, height = 1000;
  std::string screenshot;  // "" : an interactive window
  int frames = 3;          // frames drawn before the screenshot
};

// Opens the window with ImGui on it; throws dtl::Error when there is no display.
GLFWwindow* open_window(const WindowOptions& o);
void close_window(GLFWwindow* window);
// Runs until the window closes (or the screenshot is saved); `frame(dt)` draws one frame of
// ImGui inside NewFrame/Render, dt the seconds since the last (0 while taking a screenshot).
void main_loop(GLFWwindow* window, const WindowOptions& o, const std::function<void(float)>& frame);

}  // namespace dtl::viz
