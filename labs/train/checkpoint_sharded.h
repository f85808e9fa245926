// Sharded checkpoints: every rank writes what it owns, a manifest maps every global tensor to
// its pieces, and a run on another number of ranks reads back only the byte ranges it needs
// (docs/checkpoints.md, "Sharded checkpoints: every rank saves its part").
//
//   ROOT/step-000010/rank-00001-of-00004.safetensors   rank 1's pieces, one tensor each,
//                                                      named "<tensor>@<first element>"
//   ROOT/step-000010/model.safetensors.index.json      the manifest, written last
//
// The manifest is Hugging Face's sharded index ("metadata", "weight_map": piece name → file),
// so a plain reader can open every piece, extended with what resharding and checking need:
//   "tensors"  every global tensor's dtype and shape
//   "pieces"   per piece: its tensor, the element range [begin, end) of the flattened global
//              tensor and the byte range it covers there, the rank that wrote it, its FNV-1a
//              64-bit checksum (hex)
//   metadata   the step, the data position (samples consumed), the RNG state, the lab, the world
//
// Atomic: the ranks write into ROOT/step-000010.partial/ (each file itself through a temporary
// name), all-gather whether each write succeeded (a barrier that also carries failures), then
// rank 0 writes the manifest and renames the folder to ROOT/step-000010. A crash before the
// rename leaves a .partial folder that resume skips and the loader refuses; a write that fails
// (a full disk) removes it (CheckpointNotSaved). Either way the checkpoint before it is untouched.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/comm/comm.h"
#include "core/comm/dtype.h"
#include "core/error.h"

namespace dtl {

// FNV-1a, 64 bits (Fowler, Noll, Vo): h = 14695981039346656037; per byte h = (h ^ b) · 1099511628211.
std::uint64_t fnv1a64(const void* data, std::size_t n);

// One piece a rank owns: elements [begin, end) of the global tensor `tensor` (row-major,
// flattened), whose whole shape is `shape`.
struct PieceView {
  std::string tensor;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::size_t begin = 0, end = 0;
  const void* data = nullptr;  // end − begin elements, on the host
};

// Where training stands: what a resumed run needs beside the tensors.
struct TrainPosition {
  int step = 0;                     // steps completed
  std::uint64_t data_position = 0;  // samples (rows) consumed from the data
  std::uint64_t rng_state = 0;      // the data order's RNG (its seed while data is not shuffled)
  std::string lab;
};

// For tests of a failed save: `fault_rank` stops half-way through its file (a crash between the
// pieces: the other ranks' files are written, its own never reaches its name); -1: none.
struct SaveFaults {
  int fault_rank = -1;
};

// A save that every rank got through but that could not be written (a full disk, a file-size
// limit, a folder that cannot be made): the message names the file and the reason, the .partial
// folder is removed and nothing else changes, so a lab reports it and trains on. A crash
// (SaveFaults) is not one of these: it ends the run and leaves its .partial folder.
class CheckpointNotSaved : public Error {
 public:
  using Error::Error;
};

// Collective over comm: writes ROOT/step-<step>/ as above and returns its path.
// CheckpointNotSaved on every rank when any rank's file or the manifest could not be written.
std::string save_sharded_checkpoint(Comm& comm, const std::string& root, const std::vector<PieceView>& pieces,
                                    const TrainPosition& pos, const SaveFaults& faults = {});

// One save in two halves, so that a save can overlap training (asynchronous checkpointing, as
// PyTorch DCP's async_save: copy to host, write on a thread, finish later). The constructor
// (collective) makes the staging folder and writes this rank's file, now or, with `async`, on
// a writer thread; finish() (collective) waits for the writer, then the barrier that carries
// failures, the manifest and the rename, as save_sharded_checkpoint. `pieces` must stay valid
// until the writer is done: they point into `staging`, host copies the save keeps alive.
class ShardedSave {
 public:
  ShardedSave(Comm& comm, const std::string& root, std::vector<PieceView> pieces, const TrainPosition& pos, bool async,
              std::shared_ptr<const void> staging = nullptr, const SaveFaults& faults = {});
  ~ShardedSave();  // joins the writer (a run that fails before finish())
  ShardedSave(const ShardedSave&) = delete;
  ShardedSave& operator=(const ShardedSave&) = delete;
  std::string finish();
  double write_seconds() const { return write_s_; }  // this rank's file, on whichever thread wrote it
  // When this rank's file was written, on the trace's clock (0, 0 without a trace): the viewer's span.
  std::int64_t write_begin_ns() const { return write_begin_ns_; }
  std::int64_t write_end_ns() const { return write_end_ns_; }
  int step() const { return pos_.step; }

 private:
  void write();
  Comm& comm_;
  std::vector<PieceView> pieces_;
  TrainPosition pos_;
  std::shared_ptr<const void> staging_;
  SaveFaults faults_;
  std::string final_dir_, staging_dir_, file_;
  std::thread writer_;
  std::exception_ptr crash_;  // the injected fault (or a UsageError), rethrown by finish()
  std::string why_;           // a failed write: why
  double write_s_ = 0;
  std::int64_t write_begin_ns_ = 0, write_end_ns_ = 0;
  std::int64_t launch_ns_ = -1;  // the trace's clock when the write was launched (-1: no trace)
  std::chrono::steady_clock::time_point launch_;
};

struct PieceEntry {
  std::string name, tensor, file;
  int rank = 0;
  std::size_t begin = 0, end = 0;  // elements of the global tensor
  std::uint64_t checksum = 0;
};
struct TensorEntry {
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::size_t elements() const;
};
struct Manifest {
  std::string dir;
  TrainPosition position;
  int world = 0;
  std::map<std::string, TensorEntry> tensors;
  std::vector<PieceEntry> pieces;
};

// The checkpoint PATH names: a checkpoint folder (it has a manifest), or a ROOT whose newest
// complete step-* folder is taken (.partial folders and folders without a manifest skipped,
// each named in `skipped`). UsageError when there is none, or PATH is a folder whose save
// did not finish (naming the rank files it has and lacks).
std::string resolve_checkpoint(const std::string& path, std::vector<std::string>* skipped = nullptr);
// Reads and checks the manifest: UsageError naming the file and the entry when it is not one,
// or when a tensor's pieces do not tile it exactly (a gap or an overlap, named).
Manifest read_manifest(const std::string& dir);
// Collective: each piece's checksum verified by one rank (piece i by rank i mod size), every
// byte read once over the ranks. UsageError on every rank naming the first piece that is
// missing, short or changed, and its file.
void verify_checkpoint(Comm& comm, const Manifest& m);
// The same on one rank (every piece).
void verify_checkpoint(const Manifest& m);
// UsageError unless the checkpoint has `tensor` with this dtype and shape (naming both).
void require_tensor(const Manifest& m, const std::string& tensor, DType dtype, const std::vector<std::int64_t>& shape);
// Elements [begin, end) of `tensor` into `out`, reading from each piece file only the byte
// range that overlaps it. Returns the bytes read from the files' data sections.
std::size_t read_tensor_range(const Manifest& m, const std::string& tensor, std::size_t begin, std::size_t end,
                              void* out);

}  // namespace dtl
