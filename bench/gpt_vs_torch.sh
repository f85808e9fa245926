#!/usr/bin/env bash
# dtlab's GPT training step on the CPU (`dtlab bench-step --model gpt`: forward, cross-entropy,
# backward, AdamW) against the same model and step in PyTorch (bench/torch_gpt_step.py
# --adamw), the same shapes and threads, timed in the same run: the median and min–max of
# the timed steps after a warm-up, and the ratio dtlab / PyTorch of the medians (issue 34's
# goal: ≤ 1.0 at every shape).
#
#   bash bench/gpt_vs_torch.sh [DTLAB] [--threads N] [--steps N] [--layers L --hidden H ...]
#   bash bench/gpt_vs_torch.sh [DTLAB] --ops [shape]   # also both per-op tables, one shape
#   bash bench/gpt_vs_torch.sh [DTLAB] --sweep         # h 64…1024 × s 64…512 × 1 and 2 threads
#   bash bench/gpt_vs_torch.sh [DTLAB] --mlp           # the labs' MLP step (1024 wide, 4 layers, 512
#                                                      # rows) against PyTorch's, 1 and 2 threads
#
# DTLAB defaults to build/release/labs/cli/dtlab. The sweep keeps 2048 tokens per step
# (batch = 2048 / s), 2 layers, heads = h / 64, vocab 64, and prints a Markdown table.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dtlab=$here/../build/release/labs/cli/dtlab
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then dtlab=$1; shift; fi
mode=one threads=1 steps=7
shape=(--layers 2 --hidden 256 --heads 4 --seq 256 --batch 8 --vocab 64)
given=()
while [ $# -gt 0 ]; do
  case $1 in
    --ops) mode=ops; shift ;;
    --sweep) mode=sweep; shift ;;
    --mlp) mode=mlp; shift ;;
    --threads) threads=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --layers | --hidden | --heads | --seq | --batch | --vocab) given+=("$1" "$2"); shift 2 ;;
    *) echo "gpt_vs_torch.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ ${#given[@]} -gt 0 ] && shape=("${given[@]}")
python=""
for p in python3 /usr/bin/python3; do
  if "$p" -c "import torch" 2>/dev/null; then python=$p; break; fi
done

# "median min max" in ms of one side at a shape: dtlab's bench-step, or PyTorch's steps.
dtlab_ms() {
  "$dtlab" bench-step --model gpt --device cpu --threads "$1" --steps "$steps" --warmup 1 "${@:2}" |
    awk '/^step_ms / {m = $2} /^step_spread_ms / {lo = $2; hi = $3} END {printf "%.2f %.2f %.2f\n", m, lo, hi}'
}
torch_ms() {
  "$python" "$here/torch_gpt_step.py" --adamw --threads "$1" --steps "$steps" "${@:2}" | sort -g |
    awk '{v[NR] = $1 * 1000} END {printf "%.2f %.2f %.2f\n", v[int((NR + 1) / 2)], v[1], v[NR]}'
}
compare() {  # threads, then the shape: one Markdown row
  local d t
  read -r -a d < <(dtlab_ms "$@")
  read -r -a t < <(torch_ms "$@")
  printf "| %s | %s | %s (%s–%s) | %s (%s–%s) | **%.2f×** |\n" "$1" "${*:2}" "${d[0]}" "${d[1]}" "${d[2]}" "${t[0]}" \
    "${t[1]}" "${t[2]}" "$(echo "${d[0]} / ${t[0]}" | bc -l)"
}
mlp_row() {  # threads: the MLP step, dtlab's and PyTorch's, as one Markdown row
  local d t
  read -r -a d < <("$dtlab" bench-step --model mlp --device cpu --threads "$1" --steps "$steps" --warmup 1 |
    awk '/^step_ms / {m = $2} /^step_spread_ms / {lo = $2; hi = $3} END {printf "%.2f %.2f %.2f\n", m, lo, hi}')
  read -r -a t < <("$python" "$here/torch_mlp_step.py" --threads "$1" --steps "$steps" | sort -g |
    awk '{v[NR] = $1 * 1000} END {printf "%.2f %.2f %.2f\n", v[int((NR + 1) / 2)], v[1], v[NR]}')
  printf "| %s | MLP 1024 wide, 4 layers, 512 rows | %s (%s–%s) | %s (%s–%s) | **%.2f×** |\n" "$1" "${d[0]}" "${d[1]}" \
    "${d[2]}" "${t[0]}" "${t[1]}" "${t[2]}" "$(echo "${d[0]} / ${t[0]}" | bc -l)"
}
header() {
  echo "dtlab $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?') vs PyTorch" \
    "$("$python" -c 'import torch; print(torch.__version__)'), a training step with AdamW, median of $steps steps (min–max)"
  echo "| threads | shape | dtlab ms | PyTorch ms | dtlab / PyTorch |"
  echo "|---|---|---|---|---|"
}

if [ -z "$python" ]; then
  echo "PyTorch: skipped (no python3 with torch; Debian: apt-get install python3-torch)"
  read -r -a d < <(dtlab_ms "$threads" "${shape[@]}")
  echo "dtlab ${shape[*]}: ${d[0]} ms (${d[1]}–${d[2]})"
  exit 0
fi
case $mode in
  one) header; compare "$threads" "${shape[@]}" ;;
  ops)
    header; compare "$threads" "${shape[@]}"
    echo; echo "== dtlab"; "$dtlab" bench-step --model gpt --device cpu --threads "$threads" --steps "$steps" \
      --warmup 1 --profile-ops "${shape[@]}" | sed -n '/^per op/,$p'
    echo; echo "== PyTorch"; "$python" "$here/torch_gpt_step.py" --adamw --profile --threads "$threads" \
      --steps "$steps" "${shape[@]}" | awk 'NR <= 22'
    ;;
  mlp) header; mlp_row 1; mlp_row 2 ;;
  sweep)
    header
    for t in 1 2; do
      for h in 64 128 256 512 1024; do
        for s in 64 128 256 512; do
          compare "$t" --layers 2 --hidden "$h" --heads $((h / 64)) --seq "$s" --batch $((2048 / s)) --vocab 64
        done
      done
    done
    ;;
esac
