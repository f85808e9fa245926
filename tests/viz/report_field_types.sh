#!/usr/bin/env bash
# Issue 31 (11): a trace whose report holds a field of the wrong type ("ok": "yes", a row
# id that is a number) is drawn, not stopped with nlohmann's raw "[json.exception.type_error.302]".
#   tests/viz/report_field_types.sh DTLAB DTLAB_VIZ XVFB_RUN FOLDER
set -euo pipefail
dtlab=$1 viz=$2 xvfb=$3 dir=$4
mkdir -p "$dir"
trace="$dir/report_types.json"
"$dtlab" run collectives --ranks 2 --bytes 1K --trace "$trace" >/dev/null
rm -f "$trace.dtlt"  # the JSON is what is edited
sed -i 's/\\"ok\\":true/\\"ok\\":\\"yes\\"/; s/\\"id\\":\\"[a-z_.]*\\"/\\"id\\":7/' "$trace"
grep -q '\\"ok\\":\\"yes\\"' "$trace" || { echo "the edit did not apply" >&2; exit 1; }
out=$("$xvfb" -a -s '-screen 0 1280x800x24' "$viz" "$trace" --view report --window-width 1280 --window-height 800 \
      --screenshot "$dir/report_types.png" 2>&1) || { echo "$out" >&2; exit 1; }
if grep -q "json.exception" <<<"$out"; then echo "$out" >&2; exit 1; fi
echo "drawn: $dir/report_types.png"
