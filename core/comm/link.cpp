#include "core/comm/link.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <map>

#include "core/error.h"

namespace dtl {

const std::vector<LinkSpec>& link_presets() {
  static const std::vector<LinkSpec> presets = {
      {"nvlink4", 450, 2},     {"nvlink3", 300, 2},     {"pcie5", 64, 5},           {"pcie4", 32, 5},
      {"ib-ndr", 50, 5, true}, {"ib-hdr", 25, 5, true}, {"eth100", 12.5, 20, true},
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

namespace {

// "key=value,key=value" into a map; a piece without '=' or a repeated key is an error.
std::map<std::string, std::string> topology_fields(std::string_view text) {
  std::map<std::string, std::string> fields;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view piece = text.substr(0, comma);
    const std::size_t eq = piece.find('=');
    if (eq == std::string_view::npos || eq == 0)
      throw UsageError("--topology: '" + std::string(piece) + "' is not key=value; write e.g. " +
                       "nodes=2,gpus=4,intra=nvlink4,inter=ib-ndr");
    const std::string key(piece.substr(0, eq));
    if (!fields.emplace(key, std::string(piece.substr(eq + 1))).second)
      throw UsageError("--topology gives '" + key + "' twice");
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
  }
  for (const auto& [key, value] : fields)
    if (key != "nodes" && key != "gpus" && key != "intra" && key != "inter")
      throw UsageError("--topology has no key '" + key + "'; it takes nodes, gpus, intra and inter");
  return fields;
}

int topology_count(const std::map<std::string, std::string>& f, const std::string& key) {
  const auto it = f.find(key);
  if (it == f.end()) throw UsageError("--topology needs " + key + "=N (e.g. nodes=2,gpus=4)");
  int n = 0;
  const auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), n);
  if (ec != std::errc{} || end != it->second.data() + it->second.size() || n < 1 || n > 4096)
    throw UsageError("--topology " + key + "=" + it->second + ": give a whole number from 1 to 4096");
  return n;
}

}  // namespace

void set_protocol(std::string_view name, LinkSpec& link, LinkSpec* inter) {
  std::string upper(name);
  for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "SIMPLE") upper = "Simple";
  if (upper != "LL" && upper != "LL128" && upper != "Simple")
    throw UsageError("--protocol is LL, LL128 or Simple (NCCL's protocols), not '" + std::string(name) + "'");
  const theory::NcclProto p = theory::parse_nccl_proto(upper);
  if (!link.active())
    throw UsageError(
        "--protocol changes how an emulated link carries messages; add --link NAME (or --topology "
        "with intra=..,inter=..)");
  link.protocol = p;
  if (inter) inter->protocol = p;
}

ClusterLinks parse_topology(std::string_view text, double slowdown) {
  const auto f = topology_fields(text);
  ClusterLinks c;
  c.layout.nodes = topology_count(f, "nodes");
  c.layout.gpus_per_node = topology_count(f, "gpus");
  const bool intra = f.count("intra") > 0, inter = f.count("inter") > 0;
  if (intra != inter)
    throw UsageError("--topology names " + std::string(intra ? "intra" : "inter") + " but not " +
                     (intra ? "inter" : "intra") + ": give both links (e.g. intra=nvlink4,inter=ib-ndr) or neither");
  if (intra) {
    c.intra = make_link(f.at("intra"), 0, 0, slowdown);
    c.layout.inter = make_link(f.at("inter"), 0, 0, slowdown);
  } else if (slowdown > 1.0) {
    throw UsageError("--link-slowdown needs links: add intra=...,inter=... to --topology");
  }
  return c;
}

}  // namespace dtl
