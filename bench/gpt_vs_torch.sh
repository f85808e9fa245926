#!/usr/bin/env bash
# dtlab's GPT forward + backward on one CPU rank against the same model in PyTorch (CPU, one
# thread each, the same shapes), timed in the same run: the median and min–max of the steps
# after a warm-up, and the ratio dtlab / PyTorch (issue 16's goal: ≤ 1.5).
#   bash bench/gpt_vs_torch.sh [build/release/labs/cli/dtlab] [--layers 2 --hidden 256 ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dtlab=${1:-$here/../build/release/labs/cli/dtlab}
shift || true
shape=(--layers 2 --hidden 256 --heads 4 --seq 256 --batch 8 --vocab 64)
[ $# -gt 0 ] && shape=("$@")
python=""
for p in python3 /usr/bin/python3; do
  if "$p" -c "import torch" 2>/dev/null; then python=$p; break; fi
done
stats() { sort -g | awk '{v[NR]=$1} END {printf "%.4f %.4f %.4f\n", v[int((NR+1)/2)], v[1], v[NR]}'; }
read -r d_med d_min d_max < <("$dtlab" run tensor_parallel --model gpt --ranks 1 "${shape[@]}" --steps 6 --check off --json 2>/dev/null |
  "${python:-python3}" -c 'import json,sys; r=[x for x in json.load(sys.stdin)["rows"] if x["id"]=="tp.step_time"][0]; print(r["measured"], r["spread"]["min"], r["spread"]["max"])')
echo "shape: ${shape[*]}"
printf "%-28s %10s %10s %10s\n" "forward+backward, 1 thread" median min max
printf "%-28s %9.1fms %9.1fms %9.1fms\n" dtlab "$(echo "$d_med*1000" | bc -l)" "$(echo "$d_min*1000" | bc -l)" "$(echo "$d_max*1000" | bc -l)"
if [ -z "$python" ]; then
  echo "PyTorch: skipped (no python3 with torch; Debian: apt-get install python3-torch)"
  exit 0
fi
args=()
for ((i = 0; i < ${#shape[@]}; i += 2)); do args+=("${shape[i]}" "${shape[i+1]}"); done
read -r t_med t_min t_max < <("$python" "$here/torch_gpt_step.py" "${args[@]}" --steps 5 | stats)
printf "%-28s %9.1fms %9.1fms %9.1fms\n" "PyTorch $("$python" -c 'import torch; print(torch.__version__)')" \
  "$(echo "$t_med*1000" | bc -l)" "$(echo "$t_min*1000" | bc -l)" "$(echo "$t_max*1000" | bc -l)"
printf "ratio dtlab / PyTorch (medians): %.2f×  (goal ≤ 1.5×)\n" "$(echo "$d_med/$t_med" | bc -l)"
