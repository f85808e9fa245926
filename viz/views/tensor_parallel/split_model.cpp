// The tensor-parallel split: the meta "tp_split" as matrices cut into the bands each rank
// owns, f/g markers, and the layout (split_model.h). The collective at the cursor is
// split_moment.cpp.
#include "viz/views/tensor_parallel/split_model.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace dtl::viz {

namespace {

constexpr std::int64_t kMaxDim = std::int64_t(1) << 30;

bool split_kind_from(const std::string& s, SplitKind& out) {
  for (SplitKind k :
       {SplitKind::column, SplitKind::qkv_column, SplitKind::row, SplitKind::vocab_rows, SplitKind::replicated})
    if (s == split_kind_name(k)) return out = k, true;
  return false;
}

// Rank r's share of n things split T ways: [n·r/T, n·(r+1)/T) tiles [0, n) whatever n and T.
std::int64_t cut(std::int64_t n, int r, int T) { return n * r / T; }

std::string rank_label(const char* prefix, int r) { return std::string(prefix) + "rank " + std::to_string(r); }

// Q, K and V ([h × in] each, stacked) cut by heads: rank r holds heads [A·r/T, A·(r+1)/T).
void qkv_bands(SplitMatrix& m, int T, int heads) {
  const std::int64_t h = m.rows / 3;
  const bool by_heads = heads > 0 && h % heads == 0 && heads % T == 0;
  static const char* kPart[] = {"Q ", "K ", "V "};
  for (int q = 0; q < 3; ++q) {
    const std::int64_t base = q * h;
    for (int r = 0; r < T; ++r) {
      const std::int64_t a = by_heads ? cut(heads, r, T) * (h / heads) : cut(h, r, T);
      const std::int64_t b = by_heads ? cut(heads, r + 1, T) * (h / heads) : cut(h, r + 1, T);
      m.bands.push_back({0, m.cols, base + a, base + b, r, rank_label(kPart[q], r)});
    }
  }
}

void make_bands(SplitMatrix& m, int T, int heads) {
  switch (m.split) {
    case SplitKind::replicated: m.bands.push_back({0, m.cols, 0, m.rows, -1, "every rank"}); return;
    case SplitKind::qkv_column: qkv_bands(m, T, heads); return;
    case SplitKind::row:
      for (int r = 0; r < T; ++r)
        m.bands.push_back({cut(m.cols, r, T), cut(m.cols, r + 1, T), 0, m.rows, r, rank_label("", r)});
      return;
    case SplitKind::column:
    case SplitKind::vocab_rows:
      for (int r = 0; r < T; ++r)
        m.bands.push_back({0, m.cols, cut(m.rows, r, T), cut(m.rows, r + 1, T), r, rank_label("", r)});
      return;
  }
}

std::int64_t dim(const nlohmann::json& t, const char* key) {
  const auto it = t.find(key);
  if (it == t.end() || !it->is_number_integer()) return -1;
  const std::int64_t v = it->get<std::int64_t>();
  return v >= 1 && v <= kMaxDim ? v : -1;
}

std::string text(const nlohmann::json& t, const char* key) {
  const auto it = t.find(key);
  return it != t.end() && it->is_string() ? printable(it->get<std::string>(), 80) : std::string();
}

int count(const nlohmann::json& j, const char* key, int limit) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return 0;
  const std::int64_t v = it->get<std::int64_t>();
  return v >= 1 && v <= limit ? int(v) : 0;
}

// One entry of "tensors"; false and `why` when it cannot be drawn.
bool parse_tensor(const nlohmann::json& t, int T, int heads, SplitMatrix& m, std::string& why) {
  if (!t.is_object()) return why = "not an object", false;
  m.name = text(t, "name");
  m.region = text(t, "region");
  m.rows = dim(t, "rows");
  m.cols = dim(t, "cols");
  if (m.name.empty()) return why = "no name", false;
  if (m.rows < 0 || m.cols < 0) return why = m.name + ": rows and cols must be integers in 1..2^30", false;
  if (!split_kind_from(text(t, "split"), m.split))
    return why = m.name + ": split \"" + text(t, "split") + "\" is not known", false;
  if (m.split == SplitKind::qkv_column && m.rows % 3 != 0)
    return why = m.name + ": Q, K, V need rows divisible by 3", false;
  make_bands(m, T, heads);
  return true;
}

void add_markers(SplitModel& s) {
  for (std::size_t i = 0; i < s.matrices.size(); ++i) {
    const SplitMatrix& m = s.matrices[i];
    if (m.split == SplitKind::column || m.split == SplitKind::qkv_column)
      s.markers.push_back({'f', i, false, m.region});
    if (m.split == SplitKind::row) s.markers.push_back({'g', i, true, m.region});
  }
}

}  // namespace

const char* split_kind_name(SplitKind k) {
  switch (k) {
    case SplitKind::column: return "column";
    case SplitKind::qkv_column: return "qkv_column";
    case SplitKind::row: return "row";
    case SplitKind::vocab_rows: return "vocab_rows";
    case SplitKind::replicated: return "replicated";
  }
  return "?";
}

const char* marker_tooltip(char op) {
  return op == 'f' ? "f (Megatron's copy to the tensor-parallel region): identity forward, all-reduce backward.\n"
                     "Sequence parallel: all-gather forward, reduce-scatter backward."
                   : "g (reduce from the tensor-parallel region): all-reduce forward, identity backward.\n"
                     "Sequence parallel: reduce-scatter forward, all-gather backward.";
}

std::string SplitMatrix::short_name() const {
  std::string n = name;
  if (n.size() > 7 && n.compare(n.size() - 7, 7, ".weight") == 0) n.resize(n.size() - 7);
  if (n.rfind("h.", 0) == 0) {
    const std::size_t dot = n.find('.', 2);
    if (dot != std::string::npos) n = n.substr(dot + 1);
  }
  return n;
}

int SplitModel::marker_of(char op, std::string_view region) const {
  for (std::size_t i = 0; i < markers.size(); ++i)
    if (markers[i].op == op && markers[i].region == region) return int(i);
  return -1;
}

SplitModel parse_split_model(std::string_view json) {
  SplitModel s;
  const nlohmann::json j = nlohmann::json::parse(json.begin(), json.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return s.message = "the meta \"tp_split\" is not a JSON object", s;
  s.T = count(j, "T", kMaxSplitRanks);
  if (s.T == 0) return s.message = "tp_split: \"T\" must be an integer in 1..4096", s;
  s.layers = count(j, "layers", 1 << 20);
  s.hidden = count(j, "hidden", 1 << 30);
  s.heads = count(j, "heads", 1 << 20);
  s.model = text(j, "model");
  const auto tensors = j.find("tensors");
  if (tensors == j.end() || !tensors->is_array() || tensors->empty())
    return s.message = "tp_split: no \"tensors\" list", s;
  for (std::size_t i = 0; i < tensors->size(); ++i) {
    if (s.matrices.size() == kMaxSplitTensors) {
      s.notes.push_back(std::to_string(tensors->size() - i) + " more tensors not shown (the limit is 64)");
      break;
    }
    SplitMatrix m;
    std::string why;
    if (parse_tensor((*tensors)[i], s.T, s.heads, m, why))
      s.matrices.push_back(std::move(m));
    else
      s.notes.push_back("tensor " + std::to_string(i) + ": " + why);
  }
  if (s.matrices.empty()) s.message = "tp_split: no tensor could be read";
  add_markers(s);
  return s;
}

SplitModel split_model(const TraceData& d) {
  const auto it = d.meta.find(kTpSplitMeta);
  if (it == d.meta.end()) {
    SplitModel s;
    s.message = "this trace has no meta \"tp_split\" (the tensor-parallel lab writes it)";
    return s;
  }
  return parse_split_model(it->second);
}

// ---- layout ----

namespace {

struct Sized {
  float w = 0, h = 0;  // the matrix in pixels
};
Sized sized(const SplitMatrix& m, float scale, float min_px) {
  return {std::max(float(m.cols) * scale, min_px), std::max(float(m.rows) * scale, min_px)};
}

// Rows of slots at `scale`: the slot widths and where each row starts; the total height.
float flow(const SplitModel& m, float scale, const Rect& area, const std::vector<float>& label_w, float label_h,
           float gap, float min_px, std::vector<std::size_t>* row_starts) {
  float x = 0, row_h = 0, total = 0;
  for (std::size_t i = 0; i < m.matrices.size(); ++i) {
    const Sized s = sized(m.matrices[i], scale, min_px);
    const float w = 2 * gap + std::max(s.w, i < label_w.size() ? label_w[i] : 0.0f);
    if (i > 0 && x + w > area.w) {  // wrap
      total += row_h + label_h + gap;
      x = 0, row_h = 0;
      if (row_starts) row_starts->push_back(i);
    } else if (i == 0 && row_starts) {
      row_starts->push_back(0);
    }
    x += w;
    row_h = std::max(row_h, s.h);
  }
  return total + row_h + label_h;
}

}  // namespace

SplitLayout layout_split(const SplitModel& m, Rect area, const std::vector<float>& label_w, float label_h, float gap,
                         float min_px) {
  SplitLayout out;
  if (m.matrices.empty() || area.w <= 0 || area.h <= 0) return out;
  // The largest scale whose rows fit the height (the height grows with the scale).
  float lo = 0, hi = area.h;
  for (int it = 0; it < 40; ++it) {
    const float mid = (lo + hi) / 2;
    (flow(m, mid, area, label_w, label_h, gap, min_px, nullptr) <= area.h ? lo : hi) = mid;
  }
  out.scale = lo;
  std::vector<std::size_t> starts;
  flow(m, lo, area, label_w, label_h, gap, min_px, &starts);
  starts.push_back(m.matrices.size());
  float y = area.y;
  for (std::size_t r = 0; r + 1 < starts.size(); ++r) {
    float row_h = 0;
    for (std::size_t i = starts[r]; i < starts[r + 1]; ++i) row_h = std::max(row_h, sized(m.matrices[i], lo, min_px).h);
    float x = area.x;
    for (std::size_t i = starts[r]; i < starts[r + 1]; ++i) {
      const Sized s = sized(m.matrices[i], lo, min_px);
      const float content = std::max(s.w, i < label_w.size() ? label_w[i] : 0.0f);
      out.slots.push_back({x, y, 2 * gap + content, row_h + label_h});
      out.matrices.push_back({x + gap + (content - s.w) / 2, y + (row_h - s.h) / 2, s.w, s.h});
      out.spine.push_back(y + row_h / 2);
      x += 2 * gap + content;
    }
    y += row_h + label_h + gap;
  }
  for (const SplitMarker& k : m.markers) {
    const Rect& slot = out.slots[k.matrix];
    out.marker_x.push_back(k.after ? slot.x + slot.w - gap / 2 : slot.x + gap / 2);
  }
  return out;
}

std::string split_bytes(std::uint64_t b) {
  char buf[32];
  const double v = double(b);
  if (b >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.3g GiB", v / double(1ull << 30));
  else if (b >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.3g MiB", v / double(1ull << 20));
  else if (b >= (1ull << 10))
    std::snprintf(buf, sizeof buf, "%.3g KiB", v / double(1ull << 10));
  else
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

}  // namespace dtl::viz
