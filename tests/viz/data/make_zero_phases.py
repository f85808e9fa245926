# Writes zero_phases.json beside it: a synthetic trace shaped like the ZeRO lab's `--stage all`
# run (4 ranks, phase spans ZeRO-0..3 of roles zero_stage 0..3, memory counters by tag, phase_formula_bytes/_text meta, a
# report with one plot), for viz_views_test and for looking at the memory and report views:
#   python3 tests/viz/data/make_zero_phases.py
#   xvfb-run -a build/release/viz/dtlab-viz tests/viz/data/zero_phases.json --view memory --screenshot memory.png
import json
import os
P, PSI = 4, 1_000_000
tags = ["param","grad","optimizer","activation","comm","other","master","gather"]
stages = {  # bytes per rank at the stage's steady state (mixed precision: 2+2+12 bytes per param, sharded by stage)
  0: dict(param=2*PSI, grad=2*PSI, master=4*PSI, optimizer=8*PSI),
  1: dict(param=2*PSI, grad=2*PSI, master=4*PSI//P, optimizer=8*PSI//P),
  2: dict(param=2*PSI, grad=2*PSI//P, master=4*PSI//P, optimizer=8*PSI//P),
  3: dict(param=2*PSI//P, grad=2*PSI//P, master=4*PSI//P, optimizer=8*PSI//P),
}
formula = {0: 16*PSI, 1: 4*PSI + 12*PSI//P, 2: 2*PSI + 14*PSI//P, 3: 16*PSI//P}
text = {0: "16Ψ = 16 B/param × 1M params", 1: "4Ψ + 12Ψ/N = 7 B/param × 1M params",
        2: "2Ψ + 14Ψ/N = 5.5 B/param × 1M params", 3: "16Ψ/N = 4 B/param × 1M params"}
ev = []
for r in range(P):
  ev.append({"ph":"M","pid":r,"name":"process_name","args":{"name":f"rank {r}"}})
for s in range(4):
  t0 = 1000 + s * 120_000  # µs
  for r in range(P):
    ev.append({"ph":"X","pid":r,"tid":0,"ts":t0,"dur":100_000,"cat":"phase","name":f"ZeRO-{s}",
               "args":{"part":"timed","zero_stage":s}})
    ev.append({"ph":"X","pid":r,"tid":0,"ts":t0+10_000,"dur":30_000,"cat":"compute","name":"forward","args":{"pass":"forward"}})
    ev.append({"ph":"X","pid":r,"tid":0,"ts":t0+40_000,"dur":40_000,"cat":"compute","name":"backward","args":{"pass":"backward"}})
    state = dict.fromkeys(tags, 0)
    def c(t):
      ev.append({"ph":"C","pid":r,"tid":0,"ts":t,"name":"memory (bytes)","args":dict(state)})
    for k, v in stages[s].items():
      state[k] = v
    c(t0 + 100)
    state["activation"] = 1_500_000 + 100_000 * r; c(t0 + 10_000)
    if s == 3: state["gather"] = 600_000; c(t0 + 12_000)
    if s == 2: state["comm"] = 500_000; c(t0 + 45_000)
    state["activation"] = 0; state["gather"] = 0; state["comm"] = 0; c(t0 + 80_000)
    for k in tags: state[k] = 0
    c(t0 + 99_000)
report = {"lab":"zero","backend":"threads","ranks":P,"ok":True,"setup":["synthetic"],"notes":[],"columns":[],
  "rows":[{"id":f"zero{s}.peak_bytes_per_rank","label":f"ZeRO-{s} peak bytes per rank","measured":float(sum(stages[s].values())+1_800_000),
           "unit":"B","source":"formula","predicted":float(formula[s]),"tolerance":None} for s in range(4)],
  "plots":[{"id":"prefetch","title":"ZeRO-3 prefetch depth","x_label":"peak memory per rank","x_unit":"B",
            "y_label":"exposed all-gather per step","y_unit":"s","x":[4_600_000, 5_100_000, 5_700_000, 6_900_000],
            "y":[0.0042, 0.0021, 0.0012, 0.0011],"point_labels":["depth 0","depth 1","depth 2","depth 4"]}]}
meta = {"world_size": str(P), "lab_note": "synthetic fixture for the memory view's per-phase pictures", "report": json.dumps(report)}
for s in range(4):
  meta[f"phase_formula_bytes.part=timed,zero_stage={s}"] = str(formula[s])  # keyed by the phase's role (vocab.h's role_key)
  meta[f"phase_formula_text.part=timed,zero_stage={s}"] = text[s]
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "zero_phases.json"), "w") as f:
  json.dump({"traceEvents": ev, "otherData": meta}, f, ensure_ascii=False, separators=(",", ":"))
