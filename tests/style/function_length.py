#!/usr/bin/env python3
"""Functions over the quality bar's 60 lines, and files over 400, in the project's code.

A function is a brace block opened at the end of a line that reads like a definition
(a name and a parameter list before the brace, not a control statement, class, namespace,
lambda or initializer); its length is from that line to its closing brace. Prints each
offender and exits 1 when there is one, so the test fails.
"""
import pathlib, re, sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
DIRS = ["core", "kernels", "labs", "viz", "exercises", "solutions"]
MAX_FUNCTION, MAX_FILE = 60, 400
NOT_A_FUNCTION = re.compile(r"^\s*(if|for|while|switch|else|do|try|catch|namespace|class|struct|enum|union|extern)\b|=\s*\{?$|\[[^\]]*\]\s*(\([^)]*\))?\s*(mutable\s*)?(->\s*[\w:<>]+\s*)?\{$")
DEFINITION = re.compile(r"[\w~>\]]\s*\(.*\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(->\s*[\w:<>&*]+\s*)?(:\s*.*)?\{\s*$")


def strip(line):
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//")[0]


def functions(path):
    lines = path.read_text(errors="replace").splitlines()
    out, depth, start, head = [], 0, None, ""
    for i, raw in enumerate(lines):
        line = strip(raw)
        if start is None:
            head = (head + " " + line.strip())[-300:] if line.strip() else head
            # A definition may span lines: the text since the last ';', '{' or '}' at depth.
            if line.rstrip().endswith("{") and DEFINITION.search(head) and not NOT_A_FUNCTION.search(line):
                start, base = i, depth
        for ch in line:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if start is not None and depth == base:
                    n = i - start + 1
                    if n > MAX_FUNCTION:
                        out.append((n, start + 1, lines[start].strip()[:80]))
                    start = None
        if start is None and re.search(r"[;{}]\s*$", line):
            head = ""
    return out, len(lines)


def main():
    bad = 0
    for d in DIRS:
        for path in sorted((ROOT / d).rglob("*")):
            if path.suffix not in (".cpp", ".h", ".cu", ".cuh"):
                continue
            found, n = functions(path)
            rel = path.relative_to(ROOT)
            for length, line, text in found:
                print(f"{rel}:{line}: a function of {length} lines (at most {MAX_FUNCTION}): {text}")
                bad += 1
            if n > MAX_FILE:
                print(f"{rel}: {n} lines (at most {MAX_FILE})")
                bad += 1
    print(f"{bad} over the limits")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
