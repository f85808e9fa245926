#!/usr/bin/env bash
# Builds the trace-parser fuzz target with clang's libFuzzer (+ ASan, UBSan) and runs it
# for a bounded time on a seed corpus: a real dtlab trace and some hostile snippets.
#   tests/viz/fuzz.sh [SECONDS] [DTLAB]      (default 30 s; DTLAB writes the seed trace)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-30}
dtlab=${2:-build/release/labs/cli/dtlab}
out=build/fuzz
mkdir -p "$out/corpus"
sources=(tests/viz/trace_parser_fuzz.cpp viz/model/trace_data.cpp viz/model/chrome_trace_reader.cpp viz/model/json_splitter.cpp
  viz/model/layout.cpp viz/model/trace_index.cpp viz/model/memory_model.cpp viz/views/pipeline/pipeline_model.cpp viz/views/pipeline/simulated_pipeline_model.cpp viz/model/torch_trace.cpp viz/model/text_fit.cpp viz/model/checkpoint_marks.cpp
  core/trace/trace.cpp core/trace/binary_trace.cpp core/trace/vocab.cpp core/theory/schedule.cpp core/theory/schedule_zero_bubble.cpp
  core/trace/content_stamp.cpp core/trace/chunk_state.cpp core/trace/steps.cpp core/trace/chrome_writer.cpp core/trace/run_clock.cpp core/util/files.cpp core/util/atomic_file.cpp
  core/trace/torch_profile.cpp core/trace/run_breakdown.cpp)
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I.)
# One object per source, compiled on every core (one clang++ call for all took 70 s on 2).
mkdir -p "$out/obj"
printf '%s\n' "${sources[@]}" | xargs -P "${DTL_JOBS:-2}" -I{} sh -c \
  'clang++ "$@" -c "{}" -o "'"$out"'/obj/$(echo "{}" | tr / _).o"' sh "${flags[@]}"
objects=()
for f in "${sources[@]}"; do objects+=("$out/obj/$(echo "$f" | tr / _).o"); done
clang++ "${flags[@]}" "${objects[@]}" -lsimdjson -o "$out/trace_parser_fuzz"
"$dtlab" run collectives --ranks 3 --bytes 96 --iters 0 --trace "$out/corpus/seed.json" >/dev/null
printf '{"traceEvents":[{"ph":"X","pid":0,"tid":0,"ts":1,"dur":2,"cat":"send","args":{"peer":1,"flow":3}}]}' > "$out/corpus/small.json"
printf '{"traceEvents":[{"ph":"C","pid":0,"ts":1,"args":{"param":5}}],"otherData":{"world_size":"2"}}' > "$out/corpus/counter.json"
printf '{"traceEvents":[{"ph":"X","pid":0,"tid":0,"ts":1,"dur":9,"cat":"phase","name":"ZeRO-1"},{"ph":"C","pid":0,"ts":2,"args":{"param":5,"gather":3}},{"ph":"C","pid":1,"ts":4,"args":{"master":7}}],"otherData":{"world_size":"2","phase_formula_bytes.ZeRO-1":"12","phase_formula_text.ZeRO-1":"4+12/N"}}' > "$out/corpus/phases.json"
printf '{"traceEvents":[{"ph":"X","pid":0,"tid":0,"ts":0,"dur":9,"cat":"phase","name":"1f1b"},{"ph":"X","pid":0,"tid":0,"ts":1,"dur":2,"cat":"compute","name":"F","args":{"step":1,"micro_batch":0,"chunk":0}},{"ph":"X","pid":1,"tid":0,"ts":3,"dur":2,"cat":"compute","name":"F","args":{"step":1,"micro_batch":0,"chunk":0}},{"ph":"X","pid":1,"tid":0,"ts":5,"dur":3,"cat":"compute","name":"B","args":{"step":1,"micro_batch":0,"chunk":0}},{"ph":"X","pid":0,"tid":0,"ts":8,"dur":1,"cat":"compute","name":"B","args":{"step":1,"micro_batch":0,"chunk":0}}],"otherData":{"world_size":"2","pipeline_simulated.1f1b":"{\\"stages\\":2,\\"micro_batches\\":1,\\"chunks\\":1,\\"makespan\\":8,\\"bubble\\":0.5,\\"actions\\":[[0,\\"F\\",0,0,0,2],[1,\\"B\\",0,0,4,7]]}","report":"{\\"rows\\":[{\\"id\\":\\"1f1b.bubble\\",\\"measured\\":0.5,\\"predicted\\":0.5,\\"source\\":\\"(P-1)/(M+P-1)\\"}]}"}}' > "$out/corpus/pipeline.json"
"$out/trace_parser_fuzz" -max_total_time="$seconds" -max_len=4096 -timeout=10 "$out/corpus" 2>&1 | tail -3
