#!/usr/bin/env python3
"""The README's test command, timed from a fresh clone, with pytest's durations summarised.

    sudo python3 benchmarks/fresh_test_command.py [--write-readme] [--keep]

Clones the checkout's HEAD into a temporary folder and runs the README's line marked `# tests` there
(read from the README, so the measurement follows the README) with `--durations=0` added, which
changes what pytest prints, not what it runs. Prints the wall time against the 20-minute goal, pytest's
own summary line, and the test time per folder, per file and per test (setup, call and teardown
summed). Under pytest-xdist the tests of the two workers overlap, so the sums exceed the wall time.
Docker images already on the daemon are reused, as on a developer's machine after the main job.
--write-readme puts the result in benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from fresh_main_job import discard, fresh_clone, readme_command  # noqa: E402

GOAL_S = 20 * 60
BEGIN, END = "<!-- fresh_test_command.py: begin (generated, do not edit) -->", "<!-- fresh_test_command.py: end -->"
DURATION = re.compile(r"^(\d+(?:\.\d+)?)s (setup|call|teardown)\s+(\S+)")
SUMMARY = re.compile(r"^=+ (.*\d+ (passed|failed).*) =+$")


def summarise(lines: list[str]) -> tuple[dict[str, float], dict[str, float], dict[str, float], str]:
    """Per test, per file and per folder seconds from pytest's --durations lines, and its summary line."""
    per_test: dict[str, float] = collections.defaultdict(float)
    for line in lines:
        m = DURATION.match(line.strip())
        if m:
            per_test[m.group(3)] += float(m.group(1))
    per_file: dict[str, float] = collections.defaultdict(float)
    per_folder: dict[str, float] = collections.defaultdict(float)
    for nodeid, s in per_test.items():
        path = nodeid.split("::", 1)[0]
        per_file[path] += s
        per_folder[str(Path(path).parent)] += s
    summary = next((m.group(1) for m in map(SUMMARY.match, reversed(lines)) if m), "no pytest summary line")
    return per_test, per_file, per_folder, summary


def top(d: dict[str, float], n: int) -> list[tuple[str, float]]:
    return sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write-readme", action="store_true", help="record the result in benchmarks/README.md")
    ap.add_argument("--keep", action="store_true", help="keep the clone and its log")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("fresh_test_command.py: run as root (the test command installs Debian packages and starts dockerd)")
    cmd = readme_command(REPO / "README.md", "tests") + " --durations=0"
    work, clone, head = fresh_clone("va-fresh-tests-")
    load_before = os.getloadavg()
    print(f"fresh clone of {head}; running: {cmd}", flush=True)
    t0 = time.monotonic()
    log = work / "tests.log"
    lines: list[str] = []
    with open(log, "w", encoding="utf-8") as fh:
        proc = subprocess.Popen(["bash", "-c", cmd], cwd=clone, env=dict(os.environ, PYTHONUNBUFFERED="1"),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            fh.write(line)
            lines.append(line.rstrip("\n"))
            if SUMMARY.match(line.rstrip()) or "NOT RUN" in line:
                print(line.rstrip(), flush=True)
        rc = proc.wait()
    total = time.monotonic() - t0
    load_after = os.getloadavg()
    per_test, per_file, per_folder, pytest_summary = summarise(lines)
    summary = (f"test command exit {rc} in {total:.0f} s ({total / 60:.1f} min) on {os.cpu_count()} cores, "
               f"set-up included; goal 20 min: {total / GOAL_S:.2f} x")
    print(summary)
    print(f"pytest: {pytest_summary}")
    for folder, s in top(per_folder, 10):
        print(f"  {s:8.1f} s  {folder}/")
    for path, s in top(per_file, 15):
        print(f"  {s:8.1f} s  {path}")
    if rc:
        print("the end of the log:\n" + "\n".join(lines[-30:]))
    if a.write_readme:
        from run_all import measured_line, write_readme

        text = "\n".join([
            measured_line(head, load_before, load_after, "`python3 benchmarks/fresh_test_command.py`"), "",
            f"`{cmd}` from a fresh clone: **{summary}**; pytest: `{pytest_summary}`.", "",
            f"Test time summed over setup, call and teardown ({len(per_test)} tests took 5 ms or more; the "
            "workers run side by side, so the sums exceed the wall time; the sandbox image was already on the "
            "daemon):", "",
            "| folder | seconds |", "|---|---|",
            *[f"| `{folder}/` | {s:.0f} |" for folder, s in top(per_folder, 10)], "",
            "| slowest files | seconds |", "|---|---|",
            *[f"| `{path}` | {s:.0f} |" for path, s in top(per_file, 15)], "",
            "| slowest tests | seconds |", "|---|---|",
            *[f"| `{nodeid[:140]}` | {s:.0f} |" for nodeid, s in top(per_test, 10)]])
        write_readme(text, BEGIN, END, "## The README test command from a fresh clone")
    discard(work, a.keep)
    return rc


if __name__ == "__main__":
    sys.exit(main())
