// The stand-in device (core/memory/standin_device.h, labs/train/train_ops_standin.cpp):
// it must punish what a GPU punishes — host code reading device memory, a kernel given a
// host pointer, a buffer handed to another thread before its kernels ran — and every lab's
// device path must pass its checks on it, as it will on a GPU.
#include "core/memory/standin_device.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "labs/measure.h"
#include "labs/train/data.h"
#include "labs/train/device_batch.h"
#include "labs/train/mlp.h"
#include "labs/train/train_ops.h"
#include "tests/labs/lab_test_util.h"

using namespace dtl;

namespace {

std::vector<float> read_back(const Tensor& t) {
  std::vector<float> h(t.numel());
  copy_to_host_floats(t.data(), DType::f32, h);
  return h;
}

}  // namespace

TEST(StandIn, AKernelGivenHostMemoryFailsAtTheCall) {
  StandInDeviceScope scope;
  MemoryTracker mem(0, nullptr);
  Tensor y(mem, {4}, DType::f32, MemTag::other, Device::cuda(0));
  const float host_x[4] = {1, 2, 3, 4};
  try {
    train_ops(Device::cuda(0)).gelu_forward(host_x, y.as<float>(), 4);
    FAIL() << "a kernel read host memory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gelu_forward's x is host memory"), std::string::npos) << e.what();
  }
}

// Queued work runs when its own thread synchronizes: another thread that reads the buffer
// first (a comm stream, a peer) still sees the old bytes, as on a GPU.
TEST(StandIn, KernelsRunWhenTheirThreadSynchronizes) {
  StandInDeviceScope scope;
  MemoryTracker mem(0, nullptr);
  Tensor x(mem, {3}, DType::f32, MemTag::other, Device::cuda(0));
  const float ones[3] = {1, 1, 1};
  copy_bytes(x.data(), ones, sizeof ones);
  TrainOps& ops = train_ops(Device::cuda(0));
  ops.scale(5.0f, x.as<float>(), 3);  // queued on this thread's stream
  std::vector<float> seen_by_other;
  std::thread([&] { seen_by_other = read_back(x); }).join();
  EXPECT_EQ(seen_by_other, std::vector<float>(3, 1.0f)) << "another thread saw queued work done";
  ops.synchronize();
  std::thread([&] { seen_by_other = read_back(x); }).join();
  EXPECT_EQ(seen_by_other, std::vector<float>(3, 5.0f));
}

// A backend waits for the posting thread's kernels before another thread touches the
// buffer: rank r scales its ones by r + 1 (queued), then all-reduces.
TEST(StandIn, CommunicationWaitsForTheKernelsOfItsThread) {
  StandInDeviceScope scope;
  std::vector<std::vector<float>> results(2);
  test::run_ranks(2, [&](Comm& c) {
    MemoryTracker mem(c.rank(), nullptr);
    Tensor x(mem, {1000}, DType::f32, MemTag::comm, rank_device(Device::Kind::cuda, c));
    const std::vector<float> ones(1000, 1.0f);
    copy_bytes(x.data(), ones.data(), 4000);
    train_ops(x.device()).scale(float(c.rank() + 1), x.as<float>(), 1000);
    c.all_reduce(x.data(), x.data(), 1000, DType::f32, ReduceOp::sum);
    results[std::size_t(c.rank())] = read_back(x);
  });
  for (const auto& r : results) EXPECT_EQ(r, std::vector<float>(1000, 3.0f)) << "1·1 + 2·1 on every element";
}

// The control for every lab test below: a training step whose loss is read from the host
// (kernels::mse_loss on the model's device output) gets a wrong loss on the stand-in, the
// same step through the device's ops gets the CPU's.
TEST(StandIn, ALabReadingDeviceMemoryFromTheHostGetsWrongNumbers) {
  const MlpShape shape{8, 16, 4, 3};
  const Dataset data = make_teacher_data(shape, 32, 3);
  const auto first_loss = [&](Device device, bool read_on_host) {
    MemoryTracker mem(0, nullptr);
    Mlp model(shape, mem, 1, DType::f32, device);
    DeviceBatch batch(mem, device, shape.in, shape.out, 32);
    batch.load(data, 0, 32);
    const float* y = model.forward(batch.x(), 32);
    if (!read_on_host) return double(batch.mse_loss(model.ops(), y, 1.0f));
    std::vector<float> dy(32 * 4);
    return double(kernels::mse_loss(y, data.y_row(0), dy.data(), dy.size()));  // the mistake
  };
  const double cpu = first_loss(Device::cpu(), false);
  StandInDeviceScope scope;
  const double right = first_loss(Device::cuda(1), false), wrong = first_loss(Device::cuda(1), true);
  std::printf("first loss: cpu %.7g, stand-in through its ops %.7g, stand-in read from the host %.7g\n", cpu, right,
              wrong);
  EXPECT_NEAR(right, cpu, 1e-6 * cpu);
  EXPECT_FALSE(std::fabs(wrong - cpu) < 0.1 * cpu) << "host reads of device memory went unnoticed";
}

// What the labs' "device allocator - tracker" row measures can differ from 0: memory a
// rank takes from its device without its tracker.
TEST(StandIn, TheDeviceCountSeesMemoryTheTrackerMissed) {
  StandInDeviceScope scope;
  std::vector<double> diff(2);
  test::run_ranks(2, [&](Comm& c) {
    MemoryTracker mem(c.rank(), nullptr);
    const Device d = rank_device(Device::Kind::cuda, c);
    Tensor tracked(mem, {256}, DType::f32, MemTag::param, d);
    const double before = device_vs_tracker_bytes(c, mem, d);
    void* untracked = device_ops(d).allocate(4096, d.index);
    const double after = device_vs_tracker_bytes(c, mem, d);  // (collectives: every rank calls them)
    device_ops(d).release(untracked);
    if (c.rank() == 0) diff = {before, after};
  });
  EXPECT_EQ(diff[0], 0.0);
  EXPECT_EQ(diff[1], 4096.0);
}

// Every lab's device path, on 2 thread ranks sharing the stand-in's two devices: the same
// checks as on the CPU (equivalence with one rank, bytes, memory by tag, the device's own
// allocation count against the tracker), all passing.
TEST(StandIn, EveryLabPassesItsChecksOnTheStandIn) {
  StandInDeviceScope scope;
  const std::vector<std::pair<std::string, std::map<std::string, std::string>>> runs = {
      {"collectives", {{"algo", "all"}}},
      {"ddp", {{"variant", "all"}, {"steps", "2"}}},
      {"ddp", {{"variant", "bucketed"}, {"precision", "bf16"}, {"steps", "2"}}},
      {"zero", {{"stage", "all"}, {"steps", "2"}, {"width", "128"}}},
      {"pipeline", {{"schedule", "all"}, {"steps", "1"}, {"micro-batches", "4"}, {"depth", "4"}}},
      {"tensor_parallel", {{"model", "mlp"}, {"sequence-parallel", "both"}}},
      {"tensor_parallel", {{"model", "gpt"}, {"sequence-parallel", "both"}, {"seq", "16"}}},
      {"grid", {{"tp", "1"}, {"pp", "2"}, {"steps", "2"}}},
      {"grid", {{"model", "gpt"}, {"tp", "2"}, {"pp", "1"}, {"zero", "1"}, {"steps", "2"}}},
      {"gpt", {{"steps", "30"}, {"eval-every", "10"}, {"seq", "16"}}},
  };
  for (const auto& [lab, options] : runs) {
    LabConfig cfg;
    cfg.ranks = 2;
    cfg.repeat = 1;
    cfg.iters = 1;
    cfg.device = Device::Kind::cuda;
    cfg.options = options;
    Trace trace(2);
    const long copies = scope.ops.copies;
    const Report r = test::run_lab(lab, cfg, trace);
    EXPECT_TRUE(r.ok) << lab << "\n" << r.to_text();
    EXPECT_GT(scope.ops.copies, copies) << lab << ": nothing went through the stand-in";
    bool said = false;
    for (const std::string& s : r.setup) said |= s.find("stand-in device") != std::string::npos;
    EXPECT_TRUE(said) << lab << ": the report does not say it ran on the stand-in";
    if (lab != "collectives") {
      int device_rows = 0;
      for (const ReportRow& row : r.rows) {
        if (row.id.find("device_vs_tracker_bytes") == std::string::npos) continue;
        ++device_rows;
        EXPECT_EQ(row.measured, 0.0) << row.id;
      }
      EXPECT_GT(device_rows, 0) << lab << " has no device allocator row";
    }
  }
}
