#include "labs/launch.h"

#include <utility>

namespace dtl {

StepUnit step_unit(const LabInfo* lab) { return lab ? lab->step_unit : StepUnit::transfers; }

namespace {

// The trace's metadata: the lab's settings as its option table writes them, then the run-wide
// keys (an option of the same name, the pipeline lab's --chunks, is overwritten: options.h,
// run_wide_meta_key).
std::map<std::string, std::string> trace_meta(const LabInfo& lab, const LabConfig& cfg, int chunks) {
  std::map<std::string, std::string> meta =
      lab.settings_text.write ? lab.settings_text.write(cfg.options) : cfg.options.text();
  meta[meta_key_name(MetaKey::lab)] = lab.name;
  meta[meta_key_name(MetaKey::bytes)] = std::to_string(cfg.bytes);
  meta[meta_key_name(MetaKey::device)] = device_meta(cfg);
  meta[meta_key_name(MetaKey::dtype)] = std::string(dtype_name(cfg.dtype));
  // 0 for a lab without a chunk picture, as the vocabulary says: the ring view is the one
  // view that reads the grid, and only the collectives lab (which has one) or a foreign
  // trace shows it. (dtlab-viz once wrote the rank count here instead.)
  meta[meta_key_name(MetaKey::chunks)] = std::to_string(chunks);
  // --topology: the topology view draws the node boundaries (ranks r / gpus_per_node share one).
  if (cfg.nodes.two_tier()) meta[meta_key_name(MetaKey::gpus_per_node)] = std::to_string(cfg.nodes.gpus_per_node);
  return meta;
}

}  // namespace

Launch launch(const LabInfo& lab, RunRequest request) {
  LabConfig& cfg = request.cfg;
  // What a stepped run (the viewer's, `dtlab run --step`) starts from, unless given.
  if (request.mode == RunMode::live || request.mode == RunMode::stepped)
    for (const auto& [name, value] : lab.live_options)
      if (!cfg.options.has(name)) cfg.options.set_default(name, value);
  // --step and fault injection count the lab's transfers (or collectives): a configuration
  // that makes none refuses them. (The viewer plays such a run through: it has no steps.)
  const bool faults = request.faults.fault_rank >= 0 || request.faults.hang_rank >= 0;
  cfg.counts_steps = request.mode == RunMode::stepped || faults;
  Launch run;
  run.cfg = with_defaults(lab, std::move(cfg));
  if (request.mode == RunMode::live && lab.check_config) lab.check_config(run.cfg);
  if (request.mode != RunMode::free) {  // one traced pass: every transfer (or collective) is a step
    run.cfg.iters = 0;
    run.cfg.warmup = 0;
  }
  run.unit = step_unit(&lab);
  run.chunks = lab.chunk_grid ? lab.chunk_grid(run.cfg) : 0;
  run.meta = trace_meta(lab, run.cfg, run.chunks);

  ThreadsOptions& opt = run.threads;
  opt.world_size = run.cfg.ranks;
  opt.faults = request.faults;
  opt.faults.counted = lab.step_unit;
  opt.timeout_s = request.timeout_s;
  opt.link = run.cfg.link;
  opt.nodes = run.cfg.nodes;
  opt.compute_nice = lab.overlaps_compute ? 10 : 0;  // collectives get the cores the moment they are ready
  return run;
}

void Launch::start_trace(Trace& trace) const {
  for (const auto& [key, value] : meta) trace.set_meta(key, value);
}

}  // namespace dtl
