"""Gather a ``tools/gpu_check.sh`` run into OUTDIR/summary.json and print it: per check its exit
code, seconds and pytest's closing and FAILED lines; every figure line the checks printed."""
import json
import sys
from pathlib import Path


def pytest_lines(text):
    lines = text.splitlines()
    failed = []             # "FAILED id - why" at the end, or "[gw3] [ 40%] FAILED id" as they ran
    ordered = sorted(lines, key=lambda line: not line.startswith(("FAILED ", "ERROR ")))
    for line in ordered:
        if line.startswith(("FAILED ", "ERROR ")) or "] FAILED " in line or "] ERROR " in line:
            test = line.split("FAILED " if "FAILED " in line else "ERROR ", 1)[1].split(" ")[0]
            if not any(test in seen for seen in failed):
                failed.append(line.strip()[:300])
    closing = [line for line in lines if " passed" in line or " failed" in line
               or " error" in line][-1:]
    return closing, failed[:60]


def figures(text):
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("FIGURE "):
            line = line[len("FIGURE "):]
        elif not (line.startswith("{") and line.endswith("}")):
            continue
        try:
            found.append(json.loads(line))
        except ValueError:
            pass
    return found


def main(out):
    out = Path(out)
    checks, seen = [], set()
    for row in (out / "checks.tsv").read_text().splitlines():
        name, rc, seconds, log = row.split("\t")
        entry = {"check": name, "rc": int(rc), "seconds": int(seconds),
                 "timed_out": rc in ("124", "137")}
        text = Path(log).read_text(errors="replace") if Path(log).exists() else ""
        if name in ("tests", "suite"):
            entry["closing"], entry["failed"] = pytest_lines(text)
        checks.append(entry)
    all_figures = []
    for log in sorted(out.glob("*.log")):
        if log.name not in seen:
            seen.add(log.name)
            all_figures += figures(log.read_text(errors="replace"))
    summary = {"checks": checks, "figures": all_figures}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    for entry in checks:
        print(json.dumps(entry))
    for figure in all_figures:
        print(json.dumps(figure))


if __name__ == "__main__":
    main(sys.argv[1])
