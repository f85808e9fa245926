#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the length of the test: munged with its
# own key and socket, slurmctld and slurmd configured in a temporary directory (8 CPUs
# declared, however many the machine has), then `srun -n 8 --mpi=pmix dtlab ...` — the
# grid lab (dp 2 × tp 2 × pp 2) and the collectives lab with a merged trace — checked
# from their JSON. Everything is stopped and removed on exit, failed or not.
#
#   tests/mpi/slurm_test.sh [path/to/dtlab]     (default: dtlab on PATH)
#
# Exit 77 (ctest SKIP_RETURN_CODE) when Slurm or MUNGE is not installed
# (Debian: apt-get install slurm-wlm munge). Needs root, as slurmd does to start jobs.
set -euo pipefail

dtlab=${1:-$(command -v dtlab || true)}
skip() { echo "slurm_test: SKIP: $*"; exit 77; }
for cmd in slurmctld slurmd srun sinfo munged munge python3; do
  command -v "$cmd" >/dev/null || skip "$cmd is not installed (Debian: apt-get install slurm-wlm munge)"
done
[ "$(id -u)" -eq 0 ] || skip "slurmd must run as root to start job steps"
[ -n "$dtlab" ] && [ -x "$dtlab" ] || { echo "slurm_test: no dtlab executable ('$dtlab')" >&2; exit 1; }
dtlab=$(readlink -f "$dtlab")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dtlab-slurm.XXXXXX")
chmod 700 "$tmp"
pids=()
cleanup() {
  local rc=$?
  local i pid
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do  # slurmd, slurmctld, then munged
    pid=${pids[i]}
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
    for log in "$tmp"/*.log; do
      [ -f "$log" ] || continue
      echo "---- $(basename "$log") (last 30 lines)"; tail -n 30 "$log"
    done
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t0=$(date +%s%N)
phase() {  # phase NAME: prints how long since the previous phase ended
  local now; now=$(date +%s%N)
  local ms=$(((now - t0) / 1000000))
  printf 'slurm_test: %-42s %3d.%02d s\n' "$1" $((ms / 1000)) $((ms % 1000 / 10))
  t0=$now
}

# ---- MUNGE: its own key, socket, pid, log and seed files ----
mkdir -m 711 "$tmp/munge"
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge/munge.key"
sock="$tmp/munge/munge.socket"
munged --foreground --force --key-file="$tmp/munge/munge.key" --socket="$sock" \
  --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/munged.log" --seed-file="$tmp/munge/seed" >"$tmp/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
munge --socket="$sock" -n </dev/null | unmunge --socket="$sock" >/dev/null ||
  { echo "slurm_test: munged does not answer on $sock" >&2; exit 1; }
phase "munged started"

# ---- two free TCP ports, one for slurmctld, one for slurmd ----
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for _ in $(seq 100); do
  ctld_port=$((20000 + RANDOM % 30000)); slurmd_port=$((ctld_port + 1))
  port_free "$ctld_port" && port_free "$slurmd_port" && break
done

host=$(hostname -s)
mkdir -p "$tmp/state" "$tmp/spool" "$tmp/tmpfs"
export SLURM_CONF="$tmp/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=dtlab-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
TmpFS=$tmp/tmpfs
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=pmix
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MailProg=/bin/true
PlugStackConfig=$tmp/plugstack.conf
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=10 State=UP OverSubscribe=YES
EOF
: >"$tmp/plugstack.conf"

slurmctld -D -c -f "$SLURM_CONF" >"$tmp/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$host" >"$tmp/slurmd.out" 2>&1 &
pids+=($!)
state=""
for _ in $(seq 150); do
  state=$(sinfo -h -N -o %t 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.1
done
[ "$state" = idle ] || { echo "slurm_test: node state '$state', not idle, after 15 s" >&2; exit 1; }
phase "slurmctld + slurmd up, node idle"

# srun starts the ranks itself; Open MPI's processes find each other through PMIx
# (Slurm's mpi/pmix plugin), no mpirun.
srun --mpi=list 2>&1 | grep -q pmix || skip "this Slurm has no mpi/pmix plugin (srun --mpi=list)"
# (No OMPI_ALLOW_RUN_AS_ROOT: only mpirun refuses root; srun's tasks run without it.)
# 8 ranks on 2 cores: mpirun --oversubscribe makes a waiting rank yield its core; a
# direct launch does not know it is oversubscribed, and its spinning ranks took 3.9 s
# for the grid run below instead of 1.2 s.
export OMPI_MCA_mpi_yield_when_idle=1
cd "$tmp"

srun -n 8 --mpi=pmix --kill-on-bad-exit=1 --time=2 \
  "$dtlab" run grid --backend mpi --dp 2 --tp 2 --pp 2 --steps 2 --json >grid.json 2>grid.err ||
  { echo "slurm_test: srun grid failed (exit $?)" >&2; cat grid.err >&2; exit 1; }
phase "srun -n 8 dtlab run grid (dp2 tp2 pp2)"

srun -n 8 --mpi=pmix --kill-on-bad-exit=1 --time=2 \
  "$dtlab" run collectives --backend mpi --algo ring --bytes 1M --trace "$tmp/trace.json" --json \
  >collectives.json 2>collectives.err ||
  { echo "slurm_test: srun collectives failed (exit $?)" >&2; cat collectives.err >&2; exit 1; }
phase "srun -n 8 dtlab run collectives --trace"

python3 - "$tmp" <<'EOF'
import json, sys, os
tmp = sys.argv[1]
def fail(msg):
    sys.exit("slurm_test: " + msg)
for lab in ("grid", "collectives"):
    r = json.load(open(os.path.join(tmp, lab + ".json")))
    if r.get("backend") != "mpi": fail(f"{lab}: backend {r.get('backend')!r}, expected 'mpi'")
    if r.get("ranks") != 8: fail(f"{lab}: {r.get('ranks')} ranks, expected 8 (one per srun task)")
    if r.get("ok") is not True: fail(f"{lab}: \"ok\" is {r.get('ok')!r}")
    failed = [row["id"] for row in r["rows"] if row.get("passed") is False]
    if failed: fail(f"{lab}: checks failed: {failed}")
    print(f"slurm_test: {lab}: ok, 8 ranks, {sum('passed' in row for row in r['rows'])} checks passed")
t = json.load(open(os.path.join(tmp, "trace.json")))
ev = t["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
if names != {r: f"rank {r}" for r in range(8)}: fail(f"trace: process names {names}, expected rank 0..7")
pids = {e["pid"] for e in ev if e.get("ph") == "X"}
if pids != set(range(8)): fail(f"trace: spans from ranks {sorted(pids)}, expected 0..7")
starts = sum(e.get("ph") == "s" for e in ev)
ends = sum(e.get("ph") == "f" for e in ev)
if starts == 0 or starts != ends: fail(f"trace: {starts} flow starts vs {ends} flow ends (each send joined to its receive)")
if t.get("otherData", {}).get("world_size") != "8": fail(f"trace: world_size {t.get('otherData', {}).get('world_size')!r}")
print(f"slurm_test: trace: one file, {len(ev)} events from ranks 0..7, {starts} sends joined to their receives")
EOF
[ ! -e "$tmp/trace.rank0.json" ] || { echo "slurm_test: a rank dumped its own trace (it failed)" >&2; exit 1; }
phase "checks"
echo "slurm_test: PASS"
