#include "core/comm/link.h"

#include "core/error.h"

namespace dtl {

const std::vector<LinkSpec>& link_presets() {
  static const std::vector<LinkSpec> presets = {
      {"nvlink4", 450, 2}, {"nvlink3", 300, 2}, {"pcie5", 64, 5},      {"pcie4", 32, 5},
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

LinkSpec make_link(const std::string& preset, double bandwidth_GBps, double latency_us) {
  if (!preset.empty()) {
    if (bandwidth_GBps > 0) throw UsageError("give either --link or --link-bw/--link-latency, not both");
    return find_link(preset);
  }
  if (bandwidth_GBps < 0 || latency_us < 0) throw UsageError("--link-bw and --link-latency must be >= 0");
  if (bandwidth_GBps == 0 && latency_us > 0) throw UsageError("--link-latency needs --link-bw too");
  return {bandwidth_GBps > 0 ? "custom" : "", bandwidth_GBps, latency_us};
}

}  // namespace dtl
