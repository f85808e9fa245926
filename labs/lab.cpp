#include "labs/lab.h"

#include <algorithm>

#include "core/comm/launch_env.h"
#include "core/error.h"
#include "core/memory/device_ops.h"

namespace dtl {

nlohmann::json LabConfig::to_json() const {
  nlohmann::json j = {{"ranks", ranks}, {"bytes", bytes}, {"dtype", std::string(dtype_name(dtype))},
                      {"iters", iters}, {"warmup", warmup}};
  if (device != Device::Kind::cpu) j["device"] = "cuda";
  for (const auto& [k, v] : options.text()) j[k] = v;
  if (slow_rank >= 0) j["slow_rank"] = {{"rank", slow_rank}, {"factor", slow_factor}};
  if (link.active()) j["link"] = {{"name", link.name}, {"bandwidth_GBps", link.bandwidth_GBps}, {"latency_us", link.latency_us}};
  return j;
}

Device rank_device(Device::Kind kind, const Comm& comm) {
  if (kind == Device::Kind::cpu) return Device::cpu();
  const int gpus = device_ops(Device::cuda(0)).device_count();
  const std::optional<LaunchEnv> env = detect_launch_env();
  const int local = env ? env->local_rank : comm.global_rank();
  return Device::cuda(local % gpus);
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

}  // namespace dtl
