// The largest trace dtlab's readers accept, in one place. Both readers (the Chrome JSON
// parser in viz/model and the .dtlt reader in core/trace) and the visualizer's indexes
// check these, so a hostile or damaged file gets a one-line error naming the limit instead
// of a crash, a hang or a machine's worth of memory.
//
// Why these numbers: every structure the visualizer builds is O(events) or O(ranks), at
// about 200 bytes per event, so kMaxEvents bounds memory near 7 GB. The only structure
// that grows faster is the ring view's chunk picture (ranks x chunks x ranks bits); it has
// its own budget and is switched off, not rejected, beyond it.
#pragma once

#include <cstdint>

namespace dtl::trace_limits {

// Ranks a trace may name (pid, peer, otherData.world_size). `dtlab run` threads stop at
// 4096; this leaves room for MPI/NCCL jobs of 2048 nodes x 8 GPUs.
inline constexpr int kMaxRanks = 16384;

// Events (spans, instants, memory samples) in one trace. A real 512-rank ring run holds
// 4.2M; 1024 ranks hold 16.8M.
inline constexpr std::uint64_t kMaxEvents = std::uint64_t(1) << 25;  // 33,554,432

// Payload of one event, in bytes (1 PiB): larger is a corrupt field, not a transfer.
inline constexpr std::uint64_t kMaxEventBytes = std::uint64_t(1) << 50;

// Timestamps and durations, in µs as the JSON writes them (about 11.6 days).
inline constexpr double kMaxMicroseconds = 1e12;
inline constexpr std::int64_t kMaxNanoseconds = 1'000'000'000'000'000;

// Chunks in the lab's chunk grid (otherData.chunks) and a chunk index (Event::chunk is
// stored as int32, chunk_count as int16).
inline constexpr int kMaxChunks = 32767;

// Chrome tids: dtlab writes stream * 1000 + lane.
inline constexpr double kMaxTid = 1e6;

// Distinct span names: Event::label is a uint16 index (0 = none).
inline constexpr std::uint64_t kMaxLabels = 65535;

// Metadata entries, and bytes in one label or metadata value (the report is the largest).
inline constexpr std::uint64_t kMaxMetaEntries = 1 << 16;
inline constexpr std::uint64_t kMaxStringBytes = 1 << 24;

// JSON only: one element of "traceEvents" (dtlab writes ~300 bytes), and everything outside
// "traceEvents" together (otherData with its report). The reader holds no more than these
// plus a batch of events in memory, whatever the file's size.
inline constexpr std::uint64_t kMaxJsonEventBytes = 1 << 20;
inline constexpr std::uint64_t kMaxJsonOtherBytes = 16 << 20;

// Lanes per rank and stream in the timeline: spans that overlap more than this share the
// last lane (drawn over each other) instead of costing lanes x spans to place.
inline constexpr int kMaxLanes = 64;

// The ring view's chunk picture holds ranks x chunks x ranks bits (who contributed to each
// chunk of each rank). Beyond this it is not built and the view says why; 1024 ranks with
// 1024 chunks is 128 MiB.
inline constexpr std::uint64_t kMaxChunkPictureBytes = std::uint64_t(128) << 20;
// Checkpoints of the chunk picture kept for scrubbing (at least the starting one).
inline constexpr std::uint64_t kChunkCheckpointBytes = std::uint64_t(64) << 20;

}  // namespace dtl::trace_limits
