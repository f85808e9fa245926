#!/usr/bin/env bash
# Under mpirun: the zero lab on 3 processes (or the tensor_parallel lab on 2) saves a checkpoint
# every 2 steps; one rank goes silent (--inject-hang) and is killed with kill -9 once step 2's
# checkpoint is there; a new mpirun resumes from the newest complete checkpoint on as many
# processes and on another number (zero: 2; tensor_parallel: 4). Both end with the uninterrupted
# run's final state: bit for bit on the same layout (the same sums), within fp32's 1e-5 on the
# other (another summation order). The checkpoints are read back here by a plain reader in Python
# (the manifest's pieces, each file's safetensors header), not by dtlab.
#
#   tests/mpi/checkpoint_resume.sh MPIRUN DTLAB [zero|tensor_parallel]
#                                                   (MPIRUN may carry options: "mpirun --oversubscribe")
set -euo pipefail

read -r -a mpirun <<<"${1:?usage: checkpoint_resume.sh MPIRUN DTLAB}"
dtlab=${2:?usage: checkpoint_resume.sh MPIRUN DTLAB}
dir=$(mktemp -d)
job=
cleanup() {
  [ -n "$job" ] && kill -9 "$job" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
# 5 steps each; rank 1 stops communicating at a collective after step 2's save (of 37 in the
# tensor_parallel run), the others wait for it.
case ${3:-zero} in
  zero)
    run=(run zero --backend mpi --width 32 --depth 4 --batch 24 --steps 2 --repeat 2 --stage 2 --precision fp32)
    np=3 other=2 hang=1:60 ;;
  tensor_parallel)
    run=(run tensor_parallel --backend mpi --layers 2 --hidden 16 --seq 8 --batch 2 --steps 5 --check off)
    np=2 other=4 hang=1:20 ;;
  *) echo "checkpoint_resume: lab zero or tensor_parallel, not $3"; exit 2 ;;
esac

"${mpirun[@]}" -np "$np" "$dtlab" "${run[@]}" --checkpoint-every 5 --checkpoint-dir "$dir/clean" >"$dir/clean.log" 2>&1

"${mpirun[@]}" -np "$np" "$dtlab" "${run[@]}" --checkpoint-every 2 --checkpoint-dir "$dir/killed" \
  --inject-hang "$hang" --timeout 120 >"$dir/killed.log" 2>&1 &
job=$!
for _ in $(seq 600); do
  [ -f "$dir/killed/step-000002/model.safetensors.index.json" ] && break
  sleep 0.1
done
sleep 1
victim=
for pid in $(pgrep -f -- "$dir/killed"); do
  if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then victim=$pid; fi
done
[ -n "$victim" ] || { echo "checkpoint_resume: rank 1's process not found"; cat "$dir/killed.log"; exit 1; }
kill -9 "$victim"
if wait "$job"; then
  echo "checkpoint_resume: the job with a killed rank exited 0"
  exit 1
fi
job=
ls "$dir/killed"

for n in "$np" "$other"; do
  "${mpirun[@]}" -np "$n" "$dtlab" "${run[@]}" --resume "$dir/killed" --checkpoint-every 5 \
    --checkpoint-dir "$dir/resumed$n" >"$dir/resumed$n.log" 2>&1 || { cat "$dir/resumed$n.log"; exit 1; }
  grep -E "resumed from checkpoint step" "$dir/resumed$n.log"
done

python3 - "$dir" "$np" "$other" <<'EOF'
import array, json, struct, sys

def tensors(folder):
    """Every global tensor of a sharded checkpoint, assembled from its pieces (F32 only here)."""
    manifest = json.load(open(folder + "/model.safetensors.index.json"))
    out = {}
    for name, t in manifest["tensors"].items():
        n = 1
        for d in t["shape"]:
            n *= d
        out[name] = array.array("f", bytes(4 * n))
    for p in manifest["pieces"]:
        with open(folder + "/" + p["file"], "rb") as f:
            header_len = struct.unpack("<Q", f.read(8))[0]
            begin, end = json.loads(f.read(header_len))[p["name"]]["data_offsets"]
            f.seek(8 + header_len + begin)
            piece = array.array("f")
            piece.frombytes(f.read(end - begin))
        out[p["tensor"]][p["elements"][0]:p["elements"][1]] = piece
    return out

root = sys.argv[1]
clean = tensors(root + "/clean/step-000005")
for np, bound in ((sys.argv[2], 0.0), (sys.argv[3], 1e-5)):
    resumed = tensors(root + "/resumed" + np + "/step-000005")
    worst = max(abs(a - b) for name in clean for a, b in zip(clean[name], resumed[name]))
    print(f"resumed on {np} processes: largest difference from the uninterrupted run {worst:g} (bound {bound:g})")
    if sorted(clean) != sorted(resumed) or worst > bound:
        sys.exit(1)
EOF
