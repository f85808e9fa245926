// The collectives lab's header: what runs, with which operation and algorithm, and how to
// read its times (the lab: collectives_lab.cpp).
#include <string>

#include "core/comm/dtype.h"
#include "core/theory/collectives.h"
#include "labs/collectives/collectives_lab.h"
#include "labs/report_format.h"

namespace dtl {

// The header's words for this run, and how to read the times.
void describe_collectives_setup(const Comm& comm, const LabConfig& cfg, const CollectivesSettings& s, std::size_t count,
                                Report& rep) {
  const int P = comm.size();
  const std::string collective = collective_kind_name(s.collective);
  rep.setup.push_back(collective + " of " + format_value(double(cfg.bytes), "B") + " per rank (" +
                      std::to_string(count) + " × " + std::string(dtype_name(cfg.dtype)) + ")");
  if (s.collective == CollectiveKind::all_reduce || s.collective == CollectiveKind::reduce_scatter)
    rep.setup.push_back("op " + std::string(reduce_op_name(s.op)));
  rep.setup.push_back(std::string("algo ") + (s.algo ? algorithm_kind_name(*s.algo) : "all"));
  if (cfg.device != Device::Kind::cpu) rep.setup.push_back("buffers on GPUs");
  const char* busbw = s.collective == CollectiveKind::all_reduce  ? "2(P-1)/P"
                      : s.collective == CollectiveKind::broadcast ? "1"
                                                                  : "(P-1)/P";
  if (cfg.iters > 0)
    rep.notes.push_back("Times: the slowest rank's, median of " + count_of(cfg.iters, "run") + " (min–max) after " +
                        std::to_string(cfg.warmup) + " warm-up; algbw = N / time, busbw = algbw × " + busbw +
                        " (nccl-tests); N = bytes per rank, P = ranks.");
  const double N = double(count * dtype_size(cfg.dtype));
  if (s.collective == CollectiveKind::all_reduce &&
      (s.algo == AlgorithmKind::ring_sliced || s.algo == AlgorithmKind::double_tree))
    rep.setup.push_back("pipelined: ring_sliced " + std::to_string(lab_slices(s, N, P)) +
                        " slices per chunk, double_tree " + std::to_string(lab_tree_chunks(s, N)) + " chunks per half" +
                        (s.channels > 1 ? " (of each channel's N/C)" : ""));
  if (s.channels > 1) {
    rep.setup.push_back(std::to_string(s.channels) + " channels (NCCL's): the buffer split over " +
                        std::to_string(s.channels) + " rings or tree pairs running at once, each its own connections");
    if (cfg.link.active() || cfg.nodes.inter.active())
      rep.notes.push_back(
          "Channels on the emulated link: a channel is a connection (its messages one after the other); a rank's "
          "channels share its bandwidth and overlap their latencies, so a round of C messages of b bytes, one per "
          "channel, takes α + C·b/β (core/theory channels_time): S, the slices of one channel's N/C, is C times "
          "smaller, and so is the latency term.");
  }
  if ((!s.algo || s.algo == AlgorithmKind::rhd) && theory::floor_pow2(P) != P)
    rep.notes.push_back("rhd on " + std::to_string(P) +
                        " ranks: the largest power of two, Q = " + std::to_string(theory::floor_pow2(P)) +
                        ", halves and doubles; the other ranks fold in first and out last.");
}

}  // namespace dtl
