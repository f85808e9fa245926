#!/usr/bin/env python3
"""dtlab's exercises beside the PyTorch calls that do the same job (docs/path.md's
"In PyTorch:" lines), run on CPU with gloo, one figure of each compared with the lab's:

    /usr/bin/python3 tests/python/pytorch_peers.py build/release/labs/cli/dtlab   # from the repo root

  ring      ring_all_reduce: a ring reduce-scatter + all-gather written with dist.isend /
            dist.recv on 4 processes gives the same bits as dist.all_reduce, and the bytes it
            sends per rank (max over ranks) and its messages equal the collectives lab's
            ring.bytes_sent_per_rank and ring.messages_sent_per_rank for --ranks 4 --bytes 4012.
  ddp       assign_buckets / launch_ready_buckets: torch's DDP(model, bucket_cap_mb=4) on the
            DDP lab's MLP (--width 1024 --depth 6: nn.Linear 64→1024, 4 × 1024→1024, 1024→64)
            on 4 processes; a comm hook (register_comm_hook) records each bucket it all-reduces.
            Its bucket count and bytes all-reduced per step equal the lab's bucketed.buckets and
            bucketed.grad_bytes_reduced rows (--bucket-mb 4).
  no_sync   sync_this_micro_batch: 4 micro-batches, the first 3 under `with ddp.no_sync():`;
            the hook runs on the last only, and the bytes equal accumulate.grad_bytes_reduced.
  zero1     shard_range / shard_step: torch's ZeroRedundancyOptimizer(optimizer_class=AdamW)
            on 4 processes; each rank's AdamW state (exp_avg + exp_avg_sq bytes) equals the
            ZeRO lab's zero1.optimizer_bytes (--stage 1 --precision fp32), within its padding.
            torch gives each rank whole tensors (greedy by size) where the lab splits each layer
            element-wise, so the model is 4 layers of 64×64: one weight and one bias per rank.

Every comparison prints both numbers and their difference. Exit 0 when all agree, 1 when one
differs beyond its tolerance (or a lab run or a torch process fails), 2 on a usage error, 77 (ctest: skipped)
when this python has no torch. No network and no GPU: gloo on 127.0.0.1, a free port.
"""
import datetime
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    import torch.nn as nn
except ImportError:  # ctest counts exit 77 as skipped
    print("skipped: this python3 has no torch (Debian: apt-get install python3-torch; /usr/bin/python3 has it)")
    sys.exit(77)

WORLD = 4                # processes, and the labs' --ranks
RING_BYTES = 4012        # --bytes of the ring run: 1003 floats, chunks of 251, 251, 251, 250
DDP_WIDTH, DDP_DEPTH, DDP_BUCKET_MB, DDP_MICRO = 1024, 6, 4, 4
ZERO_WIDTH, ZERO_DEPTH = 64, 4
MLP_IN = MLP_OUT = 64    # labs/train/mlp.h: MlpShape's in and out (no option changes them)
DEADLINE_S = 120         # the whole torch part; a hung gloo rank is killed, not waited for


def lab_args():
    ddp = ["--ranks", str(WORLD), "--width", str(DDP_WIDTH), "--depth", str(DDP_DEPTH), "--bucket-mb",
           str(DDP_BUCKET_MB), "--batch", "16", "--steps", "1", "--repeat", "1"]
    return {
        "ring": ["collectives", "--algo", "ring", "--ranks", str(WORLD), "--bytes", str(RING_BYTES), "--iters", "1"],
        "bucketed": ["ddp", "--variant", "bucketed"] + ddp,
        "accumulate": ["ddp", "--variant", "accumulate", "--micro-batches", str(DDP_MICRO)] + ddp,
        "zero1": ["zero", "--stage", "1", "--ranks", str(WORLD), "--width", str(ZERO_WIDTH), "--depth",
                  str(ZERO_DEPTH), "--precision", "fp32", "--steps", "1", "--repeat", "1"],
    }


def run_lab(binary, args):
    """The report's rows by id, from `dtlab run ARGS --json`."""
    cmd = [binary, "run"] + args + ["--json"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, universal_newlines=True)
    if p.returncode != 0:
        raise RuntimeError("`%s` exited %d:\n%s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    report = json.loads(p.stdout)
    if not report.get("ok", False):
        raise RuntimeError("`%s`: the lab reports a failure" % " ".join(cmd))
    return {row["id"]: row for row in report["rows"]}


# ---- the layer sizes, the lab's bucket rule and torch's -------------------------------------

def mlp(width, depth):
    """The lab's MLP (labs/train/mlp.h): Linear → GELU per layer, no GELU after the last."""
    dims = [MLP_IN] + [width] * (depth - 1) + [MLP_OUT]
    layers = []
    for l in range(depth):
        layers.append(nn.Linear(dims[l], dims[l + 1]))
        if l + 1 < depth:
            layers.append(nn.GELU())
    return nn.Sequential(*layers)


def lab_buckets(layer_floats, capacity_floats):
    """assign_buckets' rule (exercises/ddp.h): whole layers in reverse order, a bucket closed
    once it holds at least the capacity. Returns each bucket's floats, in the order they fill."""
    out = []
    for n in reversed(layer_floats):
        if not out or out[-1] >= capacity_floats:
            out.append(0)
        out[-1] += n
    return out


def torch_buckets(tensor_bytes, limits):
    """torch DDP's rule after its first iteration (Reducer::rebuild_buckets, then
    compute_bucket_assignment_by_size): single tensors in gradient-ready order, a bucket closed
    once it holds at least its limit; the first limit is dist._DEFAULT_FIRST_BUCKET_BYTES (1 MiB),
    then bucket_cap_mb. Returns each bucket's bytes."""
    out, size, k = [], 0, 0
    for b in tensor_bytes:
        size += b
        if size >= limits[k]:
            out.append(size)
            size, k = 0, min(k + 1, len(limits) - 1)
    if size:
        out.append(size)
    return out


# ---- the torch side, one process per rank -------------------------------------------------

def chunk_range(n, parts, i):
    """core/comm/chunking.h: the first n % parts chunks get one extra element."""
    base, extra = divmod(n, parts)
    return i * base + min(i, extra), base + (1 if i < extra else 0)


def ring_all_reduce(buf, rank, world):
    """What the exercise ring_all_reduce does, on torch tensors with point-to-point calls:
    reduce-scatter (P-1 steps), then all-gather (P-1 steps). Returns (bytes sent, messages)."""
    right, left = (rank + 1) % world, (rank - 1) % world
    sent = messages = 0

    def exchange(send_chunk, recv_chunk):
        nonlocal sent, messages
        so, sc = chunk_range(buf.numel(), world, send_chunk)
        ro, rc = chunk_range(buf.numel(), world, recv_chunk)
        out = buf[so:so + sc]
        req = dist.isend(out, right)  # post the send, then receive: a blocking pair would deadlock
        incoming = torch.empty(rc, dtype=buf.dtype)
        dist.recv(incoming, left)
        req.wait()
        sent += out.numel() * out.element_size()
        messages += 1
        return buf[ro:ro + rc], incoming

    for s in range(world - 1):  # reduce-scatter: send (r-s-1), add (r-s-2)
        dst, incoming = exchange((rank - s - 1) % world, (rank - s - 2) % world)
        dst.add_(incoming)
    for s in range(world - 1):  # all-gather: send (r-s), copy (r-s-1)
        dst, incoming = exchange((rank - s) % world, (rank - s - 1) % world)
        dst.copy_(incoming)
    return sent, messages


def ring_part(rank, world):
    n = RING_BYTES // 4
    i = torch.arange(n, dtype=torch.float32)
    x = torch.remainder(i * 7 + rank * 13, 31) - 15  # small integers: every sum order is exact
    ours, theirs = x.clone(), x.clone()
    sent, messages = ring_all_reduce(ours, rank, world)
    dist.all_reduce(theirs)  # gloo's own all-reduce
    return {"bytes_sent": sent, "messages": messages, "differing": int((ours != theirs).sum())}


def ddp_part(rank, world):
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    torch.manual_seed(0)
    model = mlp(DDP_WIDTH, DDP_DEPTH)
    names = {id(p): n for n, p in model.named_parameters()}
    ddp = DDP(model, bucket_cap_mb=DDP_BUCKET_MB)
    log = []

    def counting_hook(state, bucket):  # DDP checks the argument names: (state, bucket)
        buf = bucket.buffer()
        log.append({"bytes": buf.numel() * buf.element_size(), "params": [names[id(p)] for p in bucket.parameters()]})
        return default_hooks.allreduce_hook(None, bucket)  # sum all-reduce, then / world, as DDP's own

    ddp.register_comm_hook(None, counting_hook)
    rows = 16 // world
    steps = []
    for _ in range(2):  # step 1: one bucket of everything; DDP rebuilds its buckets before step 2
        log.clear()
        ddp(torch.randn(rows, MLP_IN)).square().mean().backward()
        steps.append(list(log))
    # gradient accumulation: the first DDP_MICRO - 1 micro-batches under no_sync, the last synchronizes
    log.clear()
    micro_rows = rows // DDP_MICRO
    with ddp.no_sync():
        for _ in range(DDP_MICRO - 1):
            ddp(torch.randn(micro_rows, MLP_IN)).square().mean().backward()
    hooks_in_no_sync = len(log)
    ddp(torch.randn(micro_rows, MLP_IN)).square().mean().backward()
    params = dict(model.named_parameters())
    ready_order = [name for b in steps[1] for name in b["params"]]  # the order DDP recorded in step 1
    return {"first_step": steps[0], "rebuilt_step": steps[1], "hooks_in_no_sync": hooks_in_no_sync,
            "accumulate_step": log[hooks_in_no_sync:], "first_bucket_bytes": dist._DEFAULT_FIRST_BUCKET_BYTES,
            "ready_order_bytes": [params[n].numel() * params[n].element_size() for n in ready_order]}


def zero_part(rank, world):
    from torch.distributed.optim import ZeroRedundancyOptimizer

    torch.manual_seed(0)
    model = mlp(ZERO_WIDTH, ZERO_DEPTH)
    opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-3)
    model(torch.randn(4, MLP_IN)).square().mean().backward()
    opt.step()  # AdamW creates its state, on this rank's parameters only
    mv = other = 0
    for state in opt.optim.state.values():  # opt.optim: this rank's local AdamW
        for key, t in state.items():
            if torch.is_tensor(t):
                if key in ("exp_avg", "exp_avg_sq"):
                    mv += t.numel() * t.element_size()
                else:
                    other += t.numel() * t.element_size()  # 'step' (a scalar tensor in torch 1.13)
    return {"optimizer_state_bytes": mv, "other_state_bytes": other,
            "params_owned": sum(p.numel() for g in opt.optim.param_groups for p in g["params"]),
            "tensors_owned": sum(len(g["params"]) for g in opt.optim.param_groups)}


def worker(rank, world, port, out_dir):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    result = {"ring": ring_part(rank, world), "ddp": ddp_part(rank, world), "zero1": zero_part(rank, world)}
    with open(os.path.join(out_dir, "rank%d.json" % rank), "w") as f:
        json.dump(result, f)
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip the interpreter's teardown: torch 1.13's ~ProcessGroupGloo (run by DDP's Reducer at
    # exit, holding the GIL) can join a gloo thread that waits for the GIL: a hang at exit.
    os._exit(0)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_torch(out_dir):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    if "GLOO_SOCKET_IFNAME" not in os.environ and os.path.exists("/sys/class/net/lo"):
        os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # never look up the host name's interface
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    port = free_port()
    os.environ["MASTER_PORT"] = str(port)
    ctx = mp.start_processes(worker, args=(WORLD, port, out_dir), nprocs=WORLD, join=False, start_method="spawn")
    deadline = time.monotonic() + DEADLINE_S
    try:
        while not ctx.join(timeout=1):
            if time.monotonic() > deadline:
                raise RuntimeError("the torch processes did not finish in %d s" % DEADLINE_S)
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.kill()
    results = []
    for r in range(WORLD):
        with open(os.path.join(out_dir, "rank%d.json" % r)) as f:
            results.append(json.load(f))
    return results


# ---- the comparisons -------------------------------------------------------------------

failures = []


def compare(what, torch_value, lab_value, tolerance=0, unit=""):
    diff = torch_value - lab_value
    ok = abs(diff) <= tolerance
    tol = " (tolerance %g%s)" % (tolerance, unit) if tolerance else ""
    print("  %s %s: torch %s%s, dtlab %s%s, difference %s%s%s" % (
        "ok  " if ok else "FAIL", what, fmt(torch_value), unit, fmt(lab_value), unit, fmt(diff), unit, tol))
    if not ok:
        failures.append(what)


def expect_zero(what, value):
    """A check on the torch side alone (no lab figure to set beside it)."""
    print("  %s %s: %s" % ("ok  " if value == 0 else "FAIL", what, fmt(value)))
    if value != 0:
        failures.append(what)


def fmt(v):
    return ("%d" % v) if float(v).is_integer() else ("%g" % v)


def mib(b):
    return "%.3f" % (b / 2.0 ** 20)


def report_ring(res, labs):
    """ring_all_reduce beside dist.all_reduce and the collectives lab."""
    ring = labs["ring"]
    print("\nring_all_reduce ↔ dist.all_reduce (NCCL's ring with NCCL_ALGO=Ring): dtlab run %s"
          % " ".join(lab_args()["ring"]))
    expect_zero("elements differing, the python ring vs dist.all_reduce (all ranks, integer-valued floats)",
                sum(r["ring"]["differing"] for r in res))
    compare("bytes sent per rank (max over ranks), 2(P-1)/P·N rounded to whole chunks",
            max(r["ring"]["bytes_sent"] for r in res), ring["ring.bytes_sent_per_rank"]["measured"], unit=" B")
    compare("messages sent per rank, 2(P-1)",
            max(r["ring"]["messages"] for r in res), ring["ring.messages_sent_per_rank"]["measured"])


def report_ddp(res, labs):
    """DDP's buckets and no_sync beside the DDP lab's bucketed and accumulate variants."""
    ddp, bucketed, accumulate = res[0]["ddp"], labs["bucketed"], labs["accumulate"]
    model = mlp(DDP_WIDTH, DDP_DEPTH)
    layer_floats = [m.weight.numel() + m.bias.numel() for m in model if isinstance(m, nn.Linear)]
    cap_bytes = DDP_BUCKET_MB * 2 ** 20
    ours = [4 * n for n in lab_buckets(layer_floats, cap_bytes // 4)]
    seen = [b["bytes"] for b in ddp["rebuilt_step"]]
    predicted = torch_buckets(ddp["ready_order_bytes"], [ddp["first_bucket_bytes"], cap_bytes])
    print("\nassign_buckets / launch_ready_buckets ↔ DDP(model, bucket_cap_mb=%d) + register_comm_hook: dtlab run %s"
          % (DDP_BUCKET_MB, " ".join(lab_args()["bucketed"])))
    print("  torch's step 1 all-reduces %d bucket(s) (%s MiB): DDP 1.13 with find_unused_parameters=False starts "
          "with one bucket, then rebuilds them in gradient-ready order before step 2"
          % (len(ddp["first_step"]), ", ".join(mib(b["bytes"]) for b in ddp["first_step"])))
    print("  torch's buckets from step 2, MiB: %s (params %s)" % (
        ", ".join(mib(b) for b in seen), " | ".join(",".join(b["params"]) for b in ddp["rebuilt_step"])))
    print("  the lab's rule (whole layers, every bucket ≥ %d MiB), MiB: %s"
          % (DDP_BUCKET_MB, ", ".join(mib(b) for b in ours)))
    same = seen == ours
    print("  the rules differ: torch closes a bucket after any tensor (a bias apart from its weight), its first one at "
          "dist._DEFAULT_FIRST_BUCKET_BYTES = %s MiB; %s" % (mib(ddp["first_bucket_bytes"]), (
              "here they cut at the same layers (each bias is ready before its weight, and every 1024×1024 weight, "
              "4 MiB, closes a bucket), so the sizes are the same" if same else
              "here the sizes differ (not checked; the count and the bytes are)")))
    expect_zero("buckets where torch differs from its rule above (sizes in its gradient-ready order)",
                sum(a != b for a, b in zip(seen, predicted)) + abs(len(seen) - len(predicted)))
    compare("buckets per step", len(seen), bucketed["bucketed.buckets"]["measured"])
    compare("gradient bytes all-reduced per rank per step", sum(seen),
            bucketed["bucketed.grad_bytes_reduced"]["measured"], unit=" B")
    print("\nsync_this_micro_batch ↔ `with ddp.no_sync():` on micro-batches 1..k-1: dtlab run %s"
          % " ".join(lab_args()["accumulate"]))
    expect_zero("buckets all-reduced under no_sync (micro-batches 1-%d)" % (DDP_MICRO - 1), ddp["hooks_in_no_sync"])
    compare("buckets on the last micro-batch", len(ddp["accumulate_step"]),
            accumulate["accumulate.buckets"]["measured"])
    compare("gradient bytes all-reduced per rank per step of %d micro-batches" % DDP_MICRO,
            sum(b["bytes"] for b in ddp["accumulate_step"]),
            accumulate["accumulate.grad_bytes_reduced"]["measured"], unit=" B")


def report_zero(res, labs):
    """ZeroRedundancyOptimizer's AdamW state per rank beside the ZeRO lab's stage 1."""
    zero = labs["zero1"]
    padding = zero["zero1.padding"]["measured"]
    lab_bytes = zero["zero1.optimizer_bytes"]["measured"]
    print("\nshard_range / shard_step ↔ ZeroRedundancyOptimizer(params, optimizer_class=torch.optim.AdamW) "
          "(DeepSpeed zero_optimization.stage=1): dtlab run %s" % " ".join(lab_args()["zero1"]))
    print("  torch shards whole tensors (largest first, to the least-loaded rank): each rank owns %s tensors, %s "
          "parameters; the lab (like DeepSpeed) splits every layer element-wise, padded to %d equal pieces: they "
          "agree when the tensors divide evenly, as %d layers of %d×%d on %d ranks do" % (
              "/".join(str(r["zero1"]["tensors_owned"]) for r in res),
              "/".join(str(r["zero1"]["params_owned"]) for r in res), WORLD, ZERO_DEPTH, ZERO_WIDTH, ZERO_WIDTH, WORLD))
    print("  torch 1.13's AdamW also keeps a 'step' scalar tensor per parameter tensor: %s B per rank, not counted"
          % "/".join(str(r["zero1"]["other_state_bytes"]) for r in res))
    for r, rr in enumerate(res):
        compare("rank %d: AdamW m + v bytes (fp32, 8 B per owned parameter) vs the lab's rank 0, ±8 B per padding "
                "element (%d)" % (r, padding), rr["zero1"]["optimizer_state_bytes"], lab_bytes,
                tolerance=8 * padding, unit=" B")


def main():
    if len(sys.argv) != 2 or not os.access(sys.argv[1], os.X_OK):
        print("usage: %s path/to/dtlab   (from the repository root)" % sys.argv[0], file=sys.stderr)
        return 2
    binary = sys.argv[1]
    t0 = time.monotonic()
    print("torch %s, gloo on 127.0.0.1, %d processes; dtlab: %s" % (torch.__version__, WORLD, binary))
    try:
        labs = {name: run_lab(binary, args) for name, args in lab_args().items()}
    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
        print("FAIL: a lab run failed: %s" % e)
        return 1
    out_dir = tempfile.mkdtemp(prefix="dtl_pytorch_peers_")
    try:
        res = run_torch(out_dir)
    except Exception as e:  # a rank's exception, a hang, a missing result file
        print("FAIL: the torch part did not run: %s" % e)
        return 1
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)

    report_ring(res, labs)
    report_ddp(res, labs)
    report_zero(res, labs)
    print("\n%s in %.1f s" % ("all agree" if not failures else "%d comparison(s) differ (FAIL above)" % len(failures),
                              time.monotonic() - t0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
