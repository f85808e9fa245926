#include "labs/pipeline/pipeline_stage.h"

#include <chrono>
#include <thread>

#include "core/error.h"
#include "core/memory/device_ops.h"
#include "core/trace/trace.h"

namespace dtl {

namespace {

enum MessageKind { kActivation = 0, kGradient = 1 };

// A message's tag: what it carries, for which micro-batch, to which virtual stage.
int message_tag(int kind, int m, int vs) { return (kind * 8192 + m) * 512 + vs; }

double now_s(Comm& comm) { return double(comm.trace()->now_ns()) * 1e-9; }

}  // namespace

LayerSpan virtual_stage_layers(int layers, int virtual_stages, int vs) {
  const int base = layers / virtual_stages, extra = layers % virtual_stages;
  const int first = vs * base + std::min(vs, extra);
  return {first, first + base + (vs < extra ? 1 : 0) - 1};
}

double predicted_activation_peak(const PipelineSettings& s, const pipeline::Schedule& sched, int stage) {
  auto out = [&](int l) { return double(l == s.shape.layers - 1 ? s.shape.out : s.shape.width); };
  // Per chunk: what F allocates (z, and GELU(z) but after the model's last layer), what
  // zb's B adds (dL/dz per layer, until W), and the backward workspace.
  std::vector<double> forward_bytes, dz_bytes, workspace;
  for (int c = 0; c < sched.config.chunks; ++c) {
    const LayerSpan span = virtual_stage_layers(s.shape.layers, sched.virtual_stages(), sched.virtual_stage(stage, c));
    double acts = 0, dz = 0, widest = span.first == 0 ? s.shape.in : s.shape.width;
    for (int l = span.first; l <= span.last; ++l) {
      acts += out(l) * (l < s.shape.layers - 1 ? 2 : 1);
      dz += out(l);
      widest = std::max(widest, out(l));
    }
    forward_bytes.push_back(4.0 * s.rows() * acts);
    dz_bytes.push_back(4.0 * s.rows() * dz);
    workspace.push_back(3 * 4.0 * s.rows() * widest);
  }
  double alive = 0, peak = 0;
  for (const pipeline::Action& a : sched.stages[std::size_t(stage)]) {
    const std::size_t c = std::size_t(a.chunk);
    const bool split = a.op == Pass::backward && sched.splits_backward(stage, a.micro_batch, a.chunk);
    if (a.op == Pass::forward) alive += forward_bytes[c];
    if (split) alive += dz_bytes[c];
    peak = std::max(peak, alive);
    if (a.op == Pass::weight) alive -= forward_bytes[c] + dz_bytes[c];
    if (a.op == Pass::backward && !split) alive -= forward_bytes[c];
  }
  for (double w : workspace) peak += w;
  return peak;
}

PipelineStage::PipelineStage(Comm& comm, const LabConfig& cfg, const PipelineSettings& s,
                             const pipeline::Schedule& schedule)
    : comm_(comm),
      cfg_(cfg),
      s_(s),
      schedule_(schedule),
      P_(comm.size()),
      device_(rank_device(cfg.device, comm)),
      mem_(comm.global_rank(), comm.trace()) {
  for (int c = 0; c < schedule.config.chunks; ++c) {
    Chunk chunk;
    chunk.virtual_stage = schedule.virtual_stage(comm.rank(), c);
    chunk.span = virtual_stage_layers(s.shape.layers, schedule.virtual_stages(), chunk.virtual_stage);
    // The same seed as the whole model: a stage's layers start equal to one rank's.
    chunk.model = std::make_unique<Mlp>(s.shape, mem_, 1, DType::f32, device_, chunk.span);
    chunk.opt = std::make_unique<AdamW>(whole_model(*chunk.model), device_, mem_, s.adamw);
    chunks_.push_back(std::move(chunk));
  }
}

std::size_t PipelineStage::local_params() const {
  std::size_t n = 0;
  for (const Chunk& c : chunks_) n += c.model->num_params();
  return n;
}

// An action's span in the trace (its micro-batch and chunk on the event), and its time
// added to the step's totals: the op's and the stage's busy time.
void PipelineStage::record(Pass op, int m, int c, int step, double begin, double end, double& op_total, int& op_count,
                           StageStep& rec) {
  Trace* tr = comm_.trace();
  tr->record(Event{.begin_ns = std::int64_t(begin * 1e9),
                   .end_ns = std::int64_t(end * 1e9),
                   .rank = comm_.global_rank(),
                   .step = step,
                   .chunk = c,
                   .micro_batch = std::int16_t(m),
                   .label = tr->label(pass_letter(op), Role{.pass = op}),
                   .kind = EventKind::compute});
  op_total += end - begin;
  rec.busy += end - begin;
  if (rec.first < 0) rec.first = begin;
  rec.end = std::max(rec.end, end);  // the last action's end, as the trace has it
  ++op_count;
}

void PipelineStage::pace(double begin, double target_us) {
  if (target_us <= 0) return;
  // --compute-us is a stage's time for one micro-batch: a chunk of v holds 1/v of its layers.
  const double until = begin + target_us * 1e-6 / schedule_.config.chunks;
  const double left = until - now_s(comm_);
  if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
}

Request PipelineStage::post_send(Tensor buffer, int m, int to_vs, int kind, int step, StageStep& rec) {
  rec.sent_bytes += double(buffer.bytes());
  // What the watchdog says when the receiver never takes it (a send completes when it does).
  const std::string what = "for stage " + std::to_string(stage_of(to_vs)) + " to take the " +
                           (kind == kActivation ? "activation" : "gradient") + " of micro-batch " + std::to_string(m) +
                           (schedule_.config.chunks > 1 ? " (virtual stage " + std::to_string(to_vs) + ")" : "");
  Request r = comm_.isend(buffer.data(), buffer.bytes(), stage_of(to_vs), message_tag(kind, m, to_vs),
                          TransferInfo{step, m, 1, what});
  sent_.push_back({r, std::move(buffer)});  // kept until the step ends: the send may still read it
  return r;
}

Request PipelineStage::post_recv(Tensor& into, std::size_t floats, int m, int from_vs, int kind, int step) {
  into = Tensor(mem_, {std::int64_t(floats)}, DType::f32, MemTag::comm, device_);
  const int my_vs = kind == kActivation ? from_vs + 1 : from_vs - 1;
  const std::string what = std::string("for the ") + (kind == kActivation ? "activation" : "gradient") +
                           " of micro-batch " + std::to_string(m) + " from stage " + std::to_string(stage_of(from_vs)) +
                           (schedule_.config.chunks > 1 ? " (virtual stage " + std::to_string(from_vs) + ")" : "");
  return comm_.irecv(into.data(), floats * 4, stage_of(from_vs), message_tag(kind, m, my_vs),
                     TransferInfo{step, m, 1, what});
}

Tensor PipelineStage::rows_on_device(const float* host_rows, int width) {
  Tensor t;
  rows_on_device(host_rows, width, t);
  return t;
}

void PipelineStage::rows_on_device(const float* host_rows, int width, Tensor& into) {
  const std::size_t n = std::size_t(s_.rows()) * std::size_t(width);
  if (into.numel() != n) into = Tensor(mem_, {std::int64_t(n)}, DType::f32, MemTag::data, device_);
  copy_bytes(into.data(), host_rows, n * sizeof(float));
}

void PipelineStage::forward(const Dataset& data, int step, int m, int c, StageStep& rec) {
  Chunk& ch = chunks_[std::size_t(c)];
  InFlight& f = in_flight_[{m, c}];
  const double t0 = now_s(comm_);
  const int row = step * s_.batch + m * s_.rows();
  if (ch.virtual_stage == 0) f.input = rows_on_device(data.x_row(row), s_.shape.in);  // the data: the first input
  if (!f.input.numel())  // the learner's run_stage computed before it received: stop with the exercise's name
    throw Error("run_stage (your exercise) ran the forward of micro-batch " + std::to_string(m) + " on stage " +
                std::to_string(ch.virtual_stage) +
                " before it received its input (recv_activation, then wait): dtlab grade --exercise run_stage");
  const float* x = f.input.as<float>();
  f.acts = ch.model->make_activations(s_.rows());
  in_flight_peak_ = std::max(in_flight_peak_, int(in_flight_.size()));
  const float* y = ch.model->forward(x, f.acts);
  f.output = y;
  if (last_virtual(ch.virtual_stage)) {  // the loss, and its gradient for B; mean over the M micro-batches
    const std::size_t n = std::size_t(s_.rows()) * std::size_t(s_.shape.out);
    f.grad_in = Tensor(mem_, {std::int64_t(n)}, DType::f32, MemTag::comm, device_);
    rows_on_device(data.y_row(row), s_.shape.out, target_);
    loss_sum_ += ch.model->ops().mse_loss(y, target_.as<float>(), f.grad_in.as<float>(), n);
    ++rec.losses;
    ch.model->ops().scale(1.0f / float(s_.micro_batches), f.grad_in.as<float>(), n);
  }
  pace(t0, s_.forward_us);
  const double t1 = now_s(comm_);
  record(Pass::forward, m, c, step, t0, t1, rec.forward, rec.forwards, rec);
}

void PipelineStage::backward(int m, int c, int step, StageStep& rec, bool split) {
  Chunk& ch = chunks_[std::size_t(c)];
  InFlight& f = in_flight_.at({m, c});
  if (!f.grad_in.numel())  // as in forward: the learner's run_stage computed before it received
    throw Error("run_stage (your exercise) ran the backward of micro-batch " + std::to_string(m) + " on stage " +
                std::to_string(ch.virtual_stage) +
                " before it received its gradient (recv_gradient, then wait): dtlab grade --exercise run_stage");
  const double t0 = now_s(comm_);
  const bool input_grad = ch.virtual_stage > 0;
  const float* dx = nullptr;
  if (split) {
    dx = ch.model->backward_input(f.grad_in.as<float>(), f.acts, {}, input_grad);
  } else {
    dx = ch.model->backward(f.grad_in.as<float>(), f.acts, ch.gradients_started, {}, input_grad);
    ch.gradients_started = true;
  }
  pace(t0, split ? s_.backward_us - s_.weight_us : s_.backward_us);
  const double t1 = now_s(comm_);
  record(Pass::backward, m, c, step, t0, t1, rec.backward, rec.backwards, rec);
  if (input_grad) {  // dX for the previous virtual stage, until the loop sends it
    const std::size_t n = std::size_t(s_.rows()) * std::size_t(ch.model->in_features(ch.span.first));
    dx_ = Tensor(mem_, {std::int64_t(n)}, DType::f32, MemTag::comm, device_);
    copy_bytes(dx_.data(), dx, n * 4);
  }
  f.grad_in = Tensor();
  if (!split) in_flight_.erase({m, c});  // zb keeps the activations (and input) for W
}

void PipelineStage::weight(int m, int c, int step, StageStep& rec) {
  Chunk& ch = chunks_[std::size_t(c)];
  InFlight& f = in_flight_.at({m, c});
  const double t0 = now_s(comm_);
  ch.model->backward_weight(f.acts, ch.gradients_started);
  ch.gradients_started = true;
  pace(t0, s_.weight_us);
  const double t1 = now_s(comm_);
  record(Pass::weight, m, c, step, t0, t1, rec.weight, rec.weights, rec);
  in_flight_.erase({m, c});
}

ex::StageOps PipelineStage::stage_ops(const Dataset& data, int step, StageStep& rec) {
  ex::StageOps ops;
  const auto vs = [this](int c) { return chunks_[std::size_t(c)].virtual_stage; };
  ops.has_previous = [vs](int c) { return vs(c) > 0; };
  ops.has_next = [this, vs](int c) { return !last_virtual(vs(c)); };
  ops.recv_activation = [this, vs, step](int m, int c) {
    InFlight& f = in_flight_[{m, c}];
    const Mlp& model = *chunks_[std::size_t(c)].model;
    const std::size_t n = std::size_t(s_.rows()) * std::size_t(model.in_features(model.first_layer()));
    return post_recv(f.input, n, m, vs(c) - 1, kActivation, step);
  };
  ops.send_activation = [this, vs, step, &rec](int m, int c) {
    const InFlight& f = in_flight_.at({m, c});
    const Mlp& model = *chunks_[std::size_t(c)].model;
    const std::size_t n = std::size_t(s_.rows()) * std::size_t(model.out_features(model.last_layer()));
    Tensor out(mem_, {std::int64_t(n)}, DType::f32, MemTag::comm, device_);
    copy_bytes(out.data(), f.output, n * 4);
    return post_send(std::move(out), m, vs(c) + 1, kActivation, step, rec);
  };
  ops.recv_gradient = [this, vs, step](int m, int c) {
    InFlight& f = in_flight_.at({m, c});
    const Mlp& model = *chunks_[std::size_t(c)].model;
    const std::size_t n = std::size_t(s_.rows()) * std::size_t(model.out_features(model.last_layer()));
    return post_recv(f.grad_in, n, m, vs(c) + 1, kGradient, step);
  };
  ops.send_gradient = [this, vs, step, &rec](int m, int c) {
    if (!dx_.numel()) throw Error("send_gradient of micro-batch " + std::to_string(m) + " before its backward");
    return post_send(std::move(dx_), m, vs(c) - 1, kGradient, step, rec);
  };
  ops.forward = [this, &data, step, &rec](int m, int c) { forward(data, step, m, c, rec); };
  ops.backward = [this, step, &rec](int m, int c) {
    backward(m, c, step, rec, schedule_.splits_backward(comm_.rank(), m, c));  // I, when the stage runs a W
  };
  ops.weight = [this, step, &rec](int m, int c) { weight(m, c, step, rec); };
  return ops;
}

StageStep PipelineStage::train_step(const Dataset& data, int step) {
  StageStep rec;
  loss_sum_ = 0;
  for (Chunk& ch : chunks_) ch.gradients_started = false;
  comm_.barrier();
  rec.begin = now_s(comm_);
  const ex::StageOps ops = stage_ops(data, step, rec);
  std::vector<Request> sends;
  ex::run_stage(schedule_.stages[std::size_t(comm_.rank())], ops, sends);  // the learner's loop (exercise 19)
  if (rec.first < 0) rec.end = now_s(comm_);                               // (a stage without actions)
  for (Request& r : sends) r.wait();
  for (Sent& s : sent_) s.request.wait();
  sent_.clear();
  if (!in_flight_.empty())
    throw Error("the schedule left " + std::to_string(in_flight_.size()) + " micro-batches in flight on stage " +
                std::to_string(comm_.rank()));
  {
    ScopedSpan span(comm_.trace(), comm_.global_rank(), EventKind::compute,
                    comm_.trace()->label(pass_name(Pass::optimizer), Role{.pass = Pass::optimizer}), step);
    for (Chunk& ch : chunks_) ch.opt->step(whole_model(*ch.model));
  }
  rec.loss = loss_sum_ / float(s_.micro_batches);
  return rec;
}

std::vector<float> PipelineStage::weights_on_rank0() {
  // The whole model's flat layout: layer l's weight and bias follow layers 0..l-1.
  std::vector<std::size_t> offset(std::size_t(s_.shape.layers) + 1, 0);
  for (int l = 0; l < s_.shape.layers; ++l) {
    const std::size_t in = l == 0 ? s_.shape.in : s_.shape.width,
                      out = l == s_.shape.layers - 1 ? s_.shape.out : s_.shape.width;
    offset[std::size_t(l) + 1] = offset[std::size_t(l)] + in * out + out;
  }
  std::vector<float> mine(offset.back(), 0.0f), all(comm_.rank() == 0 ? offset.back() : 0);
  for (Chunk& ch : chunks_) {
    std::vector<float> p(ch.model->num_params());
    copy_to_host_floats(ch.model->param_data(), DType::f32, p);  // from the stage's device
    std::copy(p.begin(), p.end(), mine.begin() + std::ptrdiff_t(offset[std::size_t(ch.span.first)]));
  }
  // Each element comes from one stage (the others add 0): the sum is exact.
  comm_.reduce(mine.data(), comm_.rank() == 0 ? all.data() : mine.data(), mine.size(), DType::f32, ReduceOp::sum, 0);
  return all;
}

}  // namespace dtl
