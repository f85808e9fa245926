#!/usr/bin/env bash
# Issue 46: content that used to crash or hang the viewer, as a table that stays fixed.
#  - strings longer than ImGui can draw in one call (4 vertices a character, 65,536 at most):
#    a report row's label of 100k characters, a note of 200k, 500 notes, an MoE routing
#    message quoting 100k characters: each view draws them clipped ("…") and exits 0;
#  - a trace that is no regular file (a FIFO, a device, a folder) in every mode: exit 2 at once;
#  - a screenshot naming the trace it draws: exit 2 before the work, the trace intact;
#  - a small address-space limit (ulimit -v 300000): the process ends.
#   tests/viz/hostile_content.sh DTLAB DTLAB_VIZ XVFB_RUN FOLDER
set -euo pipefail
dtlab=$1 viz=$2 xvfb=$3 dir=$4/hostile_content
rm -rf "$dir" && mkdir -p "$dir"
"$dtlab" run experts --ranks 2 --layers 1 --hidden 16 --ffn 32 --steps 2 --trace "$dir/ex.json" >/dev/null
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
t = json.load(open(d + "/ex.json"))
od = t["otherData"]
r = json.loads(od["report"])
r["rows"][0]["label"] = "L" * 100000
r["notes"] += ["n" * 200000] + ["note %d" % i for i in range(500)]
od["report"] = json.dumps(r)
od["moe_routing"] = json.dumps({"omitted": "x" * 100000})
json.dump(t, open(d + "/long.json", "w"))
PY
fail=0
for view in report routing timeline; do
  out=$(timeout -s KILL 60 "$xvfb" -a -s '-screen 0 1280x800x24' "$viz" "$dir/long.json" --view "$view" \
        --window-width 1280 --window-height 800 --screenshot "$dir/$view.png" 2>&1) && code=0 || code=$?
  if [ "$code" -ne 0 ]; then echo "--view $view on long strings: exit $code" >&2; echo "$out" >&2; fail=1; fi
done
mkfifo "$dir/pipe"
for args in "$dir/pipe --screenshot $dir/p.png" "--overlap $dir/pipe" "--bench $dir/pipe" "--overlap /dev/zero"; do
  out=$(timeout -s KILL 20 "$viz" $args 2>&1) && code=0 || code=$?
  if [ "$code" -ne 2 ] || ! grep -q "is not a regular file" <<<"$out"; then
    echo "dtlab-viz $args: exit $code (want 2, 'is not a regular file')" >&2; echo "$out" >&2; fail=1
  fi
done
# A folder is a PyTorch run's per-rank traces; one that holds none is exit 2, saying so.
out=$(timeout -s KILL 20 "$viz" --overlap "$dir" 2>&1) && code=0 || code=$?
if [ "$code" -ne 2 ] || ! grep -q "holds no torch.profiler trace" <<<"$out"; then
  echo "dtlab-viz --overlap $dir: exit $code (want 2, 'holds no torch.profiler trace')" >&2; echo "$out" >&2; fail=1
fi
# A screenshot may not replace the trace it draws (or its .dtlt): exit 2, the trace intact.
before=$(md5sum < "$dir/long.json")
for shot in "$dir/long.json" "$dir/./long.json.dtlt"; do
  out=$("$viz" "$dir/long.json" --screenshot "$shot" 2>&1) && code=0 || code=$?
  if [ "$code" -ne 2 ] || ! grep -q "writing it would destroy the input" <<<"$out"; then
    echo "dtlab-viz long.json --screenshot $shot: exit $code (want 2)" >&2; echo "$out" >&2; fail=1
  fi
done
[ "$before" = "$(md5sum < "$dir/long.json")" ] || { echo "the trace changed" >&2; fail=1; }
# Under a small address-space limit the viewer ends (it waited forever for OpenBLAS's threads).
for args in "--help" "--overlap $dir/ex.json"; do
  code=$( (ulimit -v 300000; timeout -s KILL 20 "$viz" $args >/dev/null 2>&1; echo $?) )
  if [ "$code" -ne 0 ]; then echo "ulimit -v 300000; dtlab-viz $args: exit $code (137: a hang)" >&2; fail=1; fi
done
exit $fail
