#include "labs/lab.h"

#include <algorithm>
#include <thread>

#include "core/comm/launch_env.h"
#include "core/error.h"
#include "core/memory/device_ops.h"
#include "core/memory/standin_device.h"
#include "labs/report_format.h"

namespace dtl {

nlohmann::json LabConfig::to_json() const {
  nlohmann::json j = {{"ranks", ranks}, {"bytes", bytes},   {"dtype", std::string(dtype_name(dtype))},
                      {"iters", iters}, {"warmup", warmup}, {"repeat", repeat}};
  if (device != Device::Kind::cpu) j["device"] = device_meta(*this);
  for (const auto& [k, v] : options.text()) j[k] = v;
  if (slow_rank >= 0) j["slow_rank"] = {{"rank", slow_rank}, {"factor", slow_factor}};
  if (link.active())
    j["link"] = {{"name", link.name},
                 {"bandwidth_GBps", link.bandwidth_GBps},
                 {"latency_us", link.latency_us},
                 {"protocol", theory::nccl_proto_name(link.protocol)}};
  if (nodes.two_tier()) {
    j["topology"] = {{"nodes", nodes.nodes}, {"gpus_per_node", nodes.gpus_per_node}};
    if (nodes.inter.active())
      j["topology"]["inter"] = {{"name", nodes.inter.name},
                                {"bandwidth_GBps", nodes.inter.bandwidth_GBps},
                                {"latency_us", nodes.inter.latency_us}};
  }
  return j;
}

Device rank_device(Device::Kind kind, const Comm& comm) {
  if (kind == Device::Kind::cpu) return Device::cpu();
  const int gpus = device_ops(Device::cuda(0)).device_count();
  const std::optional<LaunchEnv> env = detect_launch_env();
  const int local = env ? env->local_rank : comm.global_rank();
  return Device::cuda(local % gpus);
}

std::string device_meta(const LabConfig& cfg) {
  return cfg.device == Device::Kind::cpu ? "cpu" : device_ops(Device::cuda(0)).name();  // cuda, or standin
}

void report_progress(const Comm& comm, const LabConfig& cfg, const std::string& line) {
  if (cfg.progress && comm.global_rank() == 0) cfg.progress(line);
}

Report start_report(const Comm& comm, const LabConfig& cfg, const std::string& lab) {
  Report rep;
  rep.lab = lab;
  rep.backend = comm.backend_name();
  rep.ranks = comm.size();
  rep.config = cfg.to_json();
  auto describe = [](const LinkSpec& l) {
    std::string text =
        l.name + ": " + format_number(l.bandwidth_GBps) + " GB/s, α " + format_number(l.latency_us) + " µs";
    if (l.protocol != theory::NcclProto::simple)  // what the protocol makes of it (link.h)
      text += std::string(" under ") + theory::nccl_proto_name(l.protocol) + " (" + format_number(l.beta_Bps() * 1e-9) +
              " GB/s of data, α " + format_number(l.alpha_s() * 1e6) + " µs)";
    return text;
  };
  if (cfg.nodes.two_tier())
    rep.setup.push_back(std::to_string(cfg.nodes.nodes) + " nodes of " + std::to_string(cfg.nodes.gpus_per_node) +
                        " ranks" +
                        (cfg.link.active() ? "; within a node " + describe(cfg.link) + "; between nodes " +
                                                 describe(cfg.nodes.inter) + ", a NIC per rank"
                                           : ""));
  else if (cfg.link.active())
    rep.setup.push_back("link " + describe(cfg.link));
  if (!cfg.link.active() && comm.backend() == BackendKind::threads)
    rep.setup.push_back("no link emulated (memory copies)");
  if (cfg.device != Device::Kind::cpu && cuda_ops() == &standin_device())  // --device standin
    rep.setup.push_back("on the stand-in device (a GPU's rules on the CPU; timings are not a GPU's)");
  const int cores = int(std::thread::hardware_concurrency());
  if (comm.backend() == BackendKind::threads && cores > 0 && comm.size() > cores)
    rep.notes.push_back(std::to_string(comm.size()) + " ranks share " + std::to_string(cores) +
                        " cores here: timings include waiting for a core, and vary from run to run.");
  return rep;
}

bool LabInfo::uses(RunOption o) const {
  return std::find(run_options.begin(), run_options.end(), o) != run_options.end();
}

LabConfig with_defaults(const LabInfo& lab, LabConfig cfg) {
  cfg.options.validate(lab.name, lab.options);
  return cfg;
}

const LabInfo* find_lab(std::string_view name) {
  for (const auto& lab : lab_registry())
    if (lab.name == name) return &lab;
  return nullptr;
}

std::vector<ex::ExerciseHints> exercise_hints() {
  std::vector<ex::ExerciseHints> all;
  for (const LabInfo& lab : lab_registry()) all.insert(all.end(), lab.hints.begin(), lab.hints.end());
  return all;
}

std::string_view exercise_hint(std::string_view id, int level) {
  if (level < 1 || level > ex::kHintLevels) return {};
  for (const LabInfo& lab : lab_registry())
    for (const ex::ExerciseHints& h : lab.hints)
      if (h.id == id) return h.level[level - 1];
  return {};
}

}  // namespace dtl
