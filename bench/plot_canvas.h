// An RGB pixel canvas for the bench's charts: lines (solid or dashed, a few pixels wide),
// filled rectangles, and text in stb_easy_font's small bitmap font, scaled up; saved as
// PNG with stb_image_write. No Python and no plotting library in the build.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtl::plot {

struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
};

class Canvas {
 public:
  Canvas(int width, int height, Rgb background = {255, 255, 255});
  int width() const { return w_; }
  int height() const { return h_; }
  void fill_rect(int x0, int y0, int x1, int y1, Rgb c);
  // dash = 0: solid; else on/off runs of `dash` pixels.
  void line(double x0, double y0, double x1, double y1, Rgb c, int thickness = 2, int dash = 0);
  // Text with its top-left corner at (x, y), `scale` pixels per font pixel.
  void text(int x, int y, const std::string& s, Rgb c, int scale = 2);
  static int text_width(const std::string& s, int scale = 2);
  void save_png(const std::string& path) const;  // throws dtl::Error when it cannot write

 private:
  void dot(int x, int y, Rgb c, int thickness);
  int w_, h_;
  std::vector<std::uint8_t> rgb_;
};

}  // namespace dtl::plot
