#include "bench/plot_canvas.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_easy_font.h>
#include <stb/stb_image_write.h>

#include "core/error.h"

namespace dtl::plot {

Canvas::Canvas(int width, int height, Rgb bg) : w_(width), h_(height), rgb_(std::size_t(width) * height * 3) {
  fill_rect(0, 0, width, height, bg);
}

void Canvas::fill_rect(int x0, int y0, int x1, int y1, Rgb c) {
  x0 = std::max(0, x0), y0 = std::max(0, y0), x1 = std::min(w_, x1), y1 = std::min(h_, y1);
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) {
      std::uint8_t* p = &rgb_[(std::size_t(y) * w_ + x) * 3];
      p[0] = c.r, p[1] = c.g, p[2] = c.b;
    }
}

void Canvas::dot(int x, int y, Rgb c, int thickness) {
  const int lo = -(thickness - 1) / 2;
  fill_rect(x + lo, y + lo, x + lo + thickness, y + lo + thickness, c);
}

// Steps along the longer axis one pixel at a time; dashes count those pixels.
void Canvas::line(double x0, double y0, double x1, double y1, Rgb c, int thickness, int dash) {
  const double dx = x1 - x0, dy = y1 - y0;
  const int steps = std::max(1, int(std::ceil(std::max(std::abs(dx), std::abs(dy)))));
  for (int i = 0; i <= steps; ++i) {
    if (dash > 0 && (i / dash) % 2 == 1) continue;
    const double t = double(i) / steps;
    dot(int(std::lround(x0 + t * dx)), int(std::lround(y0 + t * dy)), c, thickness);
  }
}

// stb_easy_font emits quads (4 vertices of 16 bytes: x, y, z floats and a colour); each
// is an axis-aligned rectangle, filled here at `scale`.
void Canvas::text(int x, int y, const std::string& s, Rgb c, int scale) {
  std::vector<char> buffer(s.size() * 1024 + 1024);  // room for the busiest glyphs
  std::string copy = s;
  const int quads = stb_easy_font_print(0, 0, copy.data(), nullptr, buffer.data(), int(buffer.size()));
  for (int q = 0; q < quads; ++q) {
    float v0[2], v2[2];  // the quad's first and third corners
    std::memcpy(v0, buffer.data() + q * 64, sizeof v0);
    std::memcpy(v2, buffer.data() + q * 64 + 32, sizeof v2);
    fill_rect(x + int(v0[0] * scale), y + int(v0[1] * scale), x + int(v2[0] * scale), y + int(v2[1] * scale), c);
  }
}

int Canvas::text_width(const std::string& s, int scale) {
  std::string copy = s;
  return stb_easy_font_width(copy.data()) * scale;
}

void Canvas::save_png(const std::string& path) const {
  if (!stbi_write_png(path.c_str(), w_, h_, 3, rgb_.data(), w_ * 3)) throw Error("cannot write the PNG " + path);
}

}  // namespace dtl::plot
