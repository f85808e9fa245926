#!/usr/bin/env python3
"""The design's dependency rule, read from the code's own #include lines.

    viz -> labs -> (exercises API, kernels) -> core        (../shared/DESIGN.md, docs/reference.md)

Each file may include only the folders its layer may see (ALLOWED below); nothing includes
solutions/ (the labs reach a solution only through its exercise API header); the shared
training code (labs/train/) and the labs' framework (labs/*.h) include no lab; a lab's own
view (viz/views/<lab>/) includes no other lab's view; the lab folders include each other
without a circle. tests/test_lab/ is a copy of the top level holding one lab, checked by the
same rules. Prints every include that runs back up and exits 1 when there is one.

    python3 tests/style/layers.py [REPO]
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
PROJECT_TOPS = {"core", "kernels", "exercises", "solutions", "labs", "viz", "tests", "bench"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = (".h", ".cpp", ".cu", ".cuh")
TEST_LAB = "tests/test_lab/"

# The layer of a file: the longest key its path starts with. Values: what it may include.
BELOW_LABS = ["exercises/", "kernels/", "core/"]
ALLOWED = {
    "core/": ["core/"],
    "kernels/": ["kernels/", "core/"],
    "exercises/": ["exercises/", "kernels/", "core/"],
    "solutions/": ["exercises/", "kernels/", "core/"],
    "labs/": ["labs/"] + BELOW_LABS,  # a lab folder, cli/, simulate/: refined below
    "labs/train/": ["labs/train/", "labs/:root"] + BELOW_LABS,
    "labs/:root": ["labs/:root"] + BELOW_LABS,  # lab.h, options.h, report.h, ...: the framework
    "viz/model/": ["viz/model/", "labs/"] + BELOW_LABS,
    "viz/app/": ["viz/app/", "viz/model/", "labs/"] + BELOW_LABS,
    "viz/views/": ["viz/views/:own", "viz/app/", "viz/model/", "labs/"] + BELOW_LABS,
}


def layer(path):
    """The ALLOWED key of a repository path, or None for a file no rule covers."""
    if path.startswith("labs/") and path.count("/") == 1:
        return "labs/:root"
    best = None
    for key in ALLOWED:
        if not key.endswith(":root") and path.startswith(key) and (best is None or len(key) > len(best)):
            best = key
    return best


def may_include(src, target):
    """Whether file `src` may include `target` (both repository paths)."""
    if target.startswith("solutions/"):
        return False
    if src == "labs/registry.cpp":  # the registry lists every lab: the top of labs/
        return target.startswith(("labs/",) + tuple(BELOW_LABS))
    for allowed in ALLOWED[layer(src)]:
        if allowed == "labs/:root" and target.startswith("labs/") and target.count("/") == 1:
            return True
        if allowed == "viz/views/:own":
            own = "/".join(src.split("/")[:3]) + "/"
            if target.startswith(own):
                return True
        elif not allowed.endswith(":root") and not allowed.endswith(":own") and target.startswith(allowed):
            return True
    return False


def repository_path(path):
    """A path as the rules read it: the test lab's copy of the top level maps onto it."""
    rel = path.relative_to(ROOT).as_posix()
    return rel[len(TEST_LAB):] if rel.startswith(TEST_LAB) else rel


def includes(path):
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        m = INCLUDE.match(line)
        if m and m.group(1).split("/")[0] in PROJECT_TOPS:
            target = m.group(1)
            yield n, target[len(TEST_LAB):] if target.startswith(TEST_LAB) else target


def lab_folder(path):
    parts = path.split("/")
    return parts[1] if parts[0] == "labs" and len(parts) > 2 and parts[1] not in ("train",) else None


def find_circle(edges):
    """A circle among the lab folders' includes, as a list of names, or None."""
    state = {}

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                return trail[trail.index(nxt):] + [nxt] if nxt in trail else [node, nxt]
            if nxt not in state:
                found = visit(nxt, trail + [nxt])
                if found:
                    return found
        state[node] = "done"
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return None


def main():
    files = [p for top in ("core", "kernels", "exercises", "solutions", "labs", "viz", TEST_LAB.rstrip("/"))
             for p in sorted((ROOT / top).rglob("*")) if p.suffix in SOURCES]
    bad, lab_edges, checked = [], {}, 0
    for path in files:
        src = repository_path(path)
        if layer(src) is None:
            continue
        for n, target in includes(path):
            checked += 1
            if not may_include(src, target):
                bad.append(f"{path.relative_to(ROOT)}:{n}: includes {target} ({layer(src)} may include "
                           f"{', '.join(ALLOWED[layer(src)])})")
            a, b = lab_folder(src), lab_folder(target)
            if a and b and a != b:
                lab_edges.setdefault(a, set()).add(b)
    circle = find_circle(lab_edges)
    if circle:
        bad.append("the lab folders include each other in a circle: " + " -> ".join(circle))
    for line in bad:
        print(line)
    print(f"{checked} includes in {len(files)} files checked against the layers; {len(bad)} run back up")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
