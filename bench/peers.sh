#!/usr/bin/env bash
# dtlab against its peers on this machine, in one run, as one report (bench/peers_report.cpp):
#   - all-reduce busbw, 2 and 4 ranks: dtlab threads (library, ring), dtlab --backend mpi
#     (library, ring), Open MPI's MPI_Allreduce (bench/mpi_allreduce.cpp), torch gloo
#     (bench/torch_allreduce.py); repeats interleaved, ratios paired repeat by repeat;
#   - the DDP step on the lab's MLP: dtlab threads and mpi vs PyTorch DDP gloo (bench/torch_ddp.py);
#   - ceilings with their derivation, α–β fitted to the naive/tree/ring/rhd sweeps and to a
#     point-to-point ping-pong (dtlab bench ping_pong) per backend, with the ring all-reduce
#     the ping-pong's α–β predicts against the one measured; tracing's cost;
#   - the DDP step vs ranks (1, 2, 4) and link (none, pcie4, eth100, pcie4 slowed 100×);
#   - PyTorch DDP's own profiler trace (build/peers/torch-ddp-trace.json; open it in dtlab-viz)
#     with its overlapped and exposed communication.
#
#   bash bench/peers.sh                 # sizes 1K 16K 256K 4M 64M, 3 repeats (a few minutes)
#   bash bench/peers.sh --full          # 1K ... 256M in steps of 2
#   bash bench/peers.sh --repeats 5 --out build/peers --plot-dir docs
# A peer that is missing (no mpirun, no torch) is listed as skipped with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${DTL_BUILD:-build/release}
repeats=3 out=build/peers plot_dir="" max=$((64 << 20)) factor=16
while [ $# -gt 0 ]; do
  case "$1" in
    --full) max=$((256 << 20)) factor=2 ;;
    --repeats) repeats=$2; shift ;;
    --out) out=$2; shift ;;
    --plot-dir) plot_dir=$2; shift ;;
    *) echo "usage: bash bench/peers.sh [--full] [--repeats N] [--out DIR] [--plot-dir DIR]" >&2; exit 2 ;;
  esac
  shift
done
cmake --build "$build" -j2 --target dtlab dtl-peers-report >/dev/null
cmake --build "$build" -j2 --target dtl-mpi-allreduce >/dev/null 2>&1 || true
dtlab=$build/labs/cli/dtlab
# Debian's python3-torch lives in the system Python (a pyenv or venv python3 may lack it).
python=${DTL_PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3 )}
rm -rf "$out" && mkdir -p "$out"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
sweep=(-b 1K -e "$max" -f "$factor" -n 8 -w 2)
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
skip() { echo "$1" >>"$out/skipped.txt"; }

have_mpi=1
if ! command -v mpirun >/dev/null; then have_mpi=0; skip "Open MPI (dtlab --backend mpi, MPI_Allreduce): no mpirun on PATH"
elif [ ! -x "$build/bench/dtl-mpi-allreduce" ]; then have_mpi=0; skip "Open MPI: the build has no MPI (libopenmpi-dev missing)"
fi
have_torch=1
if ! why=$("$python" -c "import torch.distributed as d; assert d.is_gloo_available(), 'no gloo'" 2>&1); then
  have_torch=0; skip "torch gloo and PyTorch DDP: $python -c 'import torch.distributed' failed: ${why##*$'\n'}"
fi

all_reduce_round() {  # $1 ranks, $2 repeat: every implementation once, side by side
  local P=$1 r=$2 tag="p$1-r$2"
  "$dtlab" bench all_reduce --impl library --ranks "$P" "${sweep[@]}" --json "$out/ar-threads-library-$tag.json" >/dev/null
  "$dtlab" bench all_reduce --impl ring --ranks "$P" "${sweep[@]}" --json "$out/ar-threads-ring-$tag.json" >/dev/null
  if [ $have_mpi = 1 ]; then
    "${mpirun[@]}" -np "$P" "$dtlab" bench all_reduce --backend mpi --impl library "${sweep[@]}" --json "$out/ar-mpi-library-$tag.json" >/dev/null
    "${mpirun[@]}" -np "$P" "$dtlab" bench all_reduce --backend mpi --impl ring "${sweep[@]}" --json "$out/ar-mpi-ring-$tag.json" >/dev/null
    "${mpirun[@]}" -np "$P" "$build/bench/dtl-mpi-allreduce" 1024 "$max" "$factor" 8 2 "$out/ar-MPI_Allreduce-$tag.json"
  fi
  if [ $have_torch = 1 ]; then
    "$python" bench/torch_allreduce.py --ranks "$P" --min 1024 --max "$max" --factor "$factor" --iters 8 --warmup 2 \
      --json "$out/ar-gloo-$tag.json"
  fi
}

fit_round() {  # $1 repeat: the sweeps α–β is fitted to (their in-place rows); "link": threads on an emulated link
  local fit=(-b 1K -e 16M -f 4 -n 8 -w 2) p2p=(-b 1K -e 64M -f 4 -n 8 -w 2) algo
  # point-to-point: ranks 0 and 1 ping-pong, one way = round trip / 2
  "$dtlab" bench ping_pong --ranks 2 "${p2p[@]}" --json "$out/p2p-threads-p2-r$1.json" >/dev/null
  "$dtlab" bench ping_pong --ranks 2 "${p2p[@]}" --link-bw 1 --link-latency 20 --json "$out/p2p-link-p2-r$1.json" >/dev/null
  if [ $have_mpi = 1 ]; then
    "${mpirun[@]}" -np 2 "$dtlab" bench ping_pong --backend mpi "${p2p[@]}" --json "$out/p2p-mpi-p2-r$1.json" >/dev/null
  fi
  for algo in naive tree ring rhd; do
    "$dtlab" bench all_reduce --impl $algo --ranks 4 "${fit[@]}" --json "$out/fit-threads-$algo-p4-r$1.json" >/dev/null
    "$dtlab" bench all_reduce --impl $algo --ranks 4 "${fit[@]}" --link-bw 1 --link-latency 20 \
      --json "$out/fit-link-$algo-p4-r$1.json" >/dev/null  # emulated: α = 20 µs, β = 1/(1 GB/s)
    if [ $have_mpi = 1 ]; then
      "${mpirun[@]}" -np 4 "$dtlab" bench all_reduce --backend mpi --impl $algo "${fit[@]}" --json "$out/fit-mpi-$algo-p4-r$1.json" >/dev/null
    fi
  done
}

for r in $(seq 1 "$repeats"); do
  for P in 2 4; do
    echo "peers: all-reduce, $P ranks, repeat $r of $repeats" >&2
    all_reduce_round "$P" "$r"
  done
  echo "peers: α–β sweeps (ping-pong, 2 ranks; naive, tree, ring, rhd, 4 ranks), repeat $r" >&2
  fit_round "$r"
  echo "peers: tracing off and on, 4 ranks, 64M, repeat $r" >&2
  for t in off on; do
    trace=(); [ $t = on ] && trace=(--trace "$out/trace.json")
    "$dtlab" bench all_reduce --ranks 4 -b 64M -e 64M -n 8 -w 2 "${trace[@]}" --json "$out/trace-$t-p4-r$r.json" >/dev/null
  done
done

echo "peers: DDP step (MLP 64-512-512-512-64, AdamW, global batch 256)" >&2
ddp=(--variant bucketed --width 512 --depth 4 --batch 256 --steps 4)
for P in 2 4; do
  "$dtlab" run ddp --ranks "$P" "${ddp[@]}" --json >"$out/ddp-dtlab-threads-p$P.json"
  if [ $have_mpi = 1 ]; then
    "${mpirun[@]}" -np "$P" "$dtlab" run ddp --backend mpi "${ddp[@]}" --json >"$out/ddp-dtlab-mpi-p$P.json"
  fi
  if [ $have_torch = 1 ]; then
    profile=(); [ "$P" = 2 ] && profile=(--profile "$out/torch-ddp-trace.json")
    "$python" bench/torch_ddp.py --ranks "$P" --width 512 --depth 4 --batch 256 --steps 4 "${profile[@]}" \
      --json "$out/ddp-pytorch-p$P.json"
  fi
done

echo "peers: DDP step vs ranks and link (threads)" >&2
for link in none pcie4 eth100 pcie4/100; do  # NAME or NAME/SLOWDOWN (--link-slowdown)
  case $link in
    none) how=() ;;
    */*) how=(--link "${link%/*}" --link-slowdown "${link#*/}") ;;
    *) how=(--link "$link") ;;
  esac
  for P in 1 2 4; do
    "$dtlab" run ddp --ranks "$P" "${ddp[@]}" "${how[@]}" --json >"$out/ddpscale-${link/\//x}-p$P.json"
  done
done

{
  echo "# dtlab vs peers on $(nproc) cores, $(date -u +%Y-%m-%d), ${repeats} repeats"
  echo
  echo "load average (1, 5, 15 min) before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  "$build/bench/dtl-peers-report" "$out" ${plot_dir:+--plot-dir "$plot_dir"}
  if [ -x "$build/viz/dtlab-viz" ] && [ -f "$out/torch-ddp-trace.json" ]; then
    echo
    echo "PyTorch DDP, 2 ranks, rank 0's torch.profiler trace of 2 steps (dtlab-viz --overlap $out/torch-ddp-trace.json):"
    "$build/viz/dtlab-viz" --overlap "$out/torch-ddp-trace.json"
  fi
} | tee "$out/report.md"
