#include "core/comm/link.h"

#include <cstdio>

#include "core/error.h"

namespace dtl {

const std::vector<LinkSpec>& link_presets() {
  static const std::vector<LinkSpec> presets = {
      {"nvlink4", 450, 2}, {"nvlink3", 300, 2}, {"pcie5", 64, 5},     {"pcie4", 32, 5},
      {"ib-ndr", 50, 5},   {"ib-hdr", 25, 5},   {"eth100", 12.5, 20},
  };
  return presets;
}

LinkSpec find_link(std::string_view name) {
  std::string names;
  for (const auto& l : link_presets()) {
    if (l.name == name) return l;
    names += (names.empty() ? "" : " ") + l.name;
  }
  throw UsageError("unknown --link '" + std::string(name) + "'; use one of " + names +
                   ", or --link-bw GBPS --link-latency US");
}

LinkSpec make_link(const std::string& preset, double bandwidth_GBps, double latency_us, double slowdown) {
  if (!(slowdown >= 1.0) || slowdown > 1e6) throw UsageError("--link-slowdown must be between 1 and 1e6");
  LinkSpec link;
  if (!preset.empty()) {
    if (bandwidth_GBps > 0) throw UsageError("give either --link or --link-bw/--link-latency, not both");
    link = find_link(preset);
  } else {
    if (bandwidth_GBps < 0 || latency_us < 0) throw UsageError("--link-bw and --link-latency must be >= 0");
    if (bandwidth_GBps == 0 && latency_us > 0) throw UsageError("--link-latency needs --link-bw too");
    link = {bandwidth_GBps > 0 ? "custom" : "", bandwidth_GBps, latency_us};
  }
  if (slowdown > 1.0) {
    if (!link.active()) throw UsageError("--link-slowdown needs a link: --link NAME or --link-bw");
    char name[64];
    std::snprintf(name, sizeof name, "%s/%g", link.name.c_str(), slowdown);  // "pcie4/100"
    link.name = name;
    link.bandwidth_GBps /= slowdown;
    link.latency_us *= slowdown;
  }
  return link;
}

}  // namespace dtl
