// Dear ImGui without a window: fonts built, frames run, nothing rendered to pixels. The
// view tests draw a viz::App's panels through it and read what each panel showed.
#pragma once

#include <imgui.h>

#include "viz/app/app.h"

namespace dtl::viz::testing {

struct HeadlessImGui {
  explicit HeadlessImGui(float width = 1280, float height = 800) {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(width, height);
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
  }
  ~HeadlessImGui() { ImGui::DestroyContext(); }
  HeadlessImGui(const HeadlessImGui&) = delete;
  HeadlessImGui& operator=(const HeadlessImGui&) = delete;
  void frame(App& app) {
    ImGui::GetIO().DeltaTime = 1.0f / 60;
    ImGui::NewFrame();
    app.Frame(0);
    ImGui::Render();
  }
};

}  // namespace dtl::viz::testing
