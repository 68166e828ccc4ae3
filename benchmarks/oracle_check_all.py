#!/usr/bin/env python3
"""Every built-in case on Harbor: `video-arena oracle-check --all`, timed and tabulated per game.

    sudo python3 benchmarks/oracle_check_all.py [--write-readme] [-- EXTRA oracle-check OPTIONS]

Runs `.venv/bin/video-arena oracle-check --all --no-progress` in this checkout (its media must be
rendered: `video-arena build-cases --media-only`), prints its verdict line and, per game and protocol,
how many oracle trials scored 1.0 and how many nop trials 0.0 out of how many ran. A whole-benchmark
run (every case of every game, both protocols, both agents), not a CI step. --write-readme puts the
result in benchmarks/README.md.
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
BEGIN, END = "<!-- oracle_check_all.py: begin (generated, do not edit) -->", "<!-- oracle_check_all.py: end -->"
ROW = re.compile(r"^(oracle|nop)\s+([AB])\s+\S+?/([a-z0-9]+)-\S+\s.*?\s(ok|FAIL: .*)$")
VERDICT = re.compile(r"^oracle-check (PASSED|FAILED).*")


def tabulate(lines: list[str]) -> dict[tuple[str, str, str], list[int]]:
    """(game, protocol, agent) -> [trials that passed, trials]."""
    counts: dict[tuple[str, str, str], list[int]] = collections.defaultdict(lambda: [0, 0])
    for line in lines:
        m = ROW.match(line)
        if m:
            agent, protocol, game, status = m.groups()
            c = counts[(game, protocol, agent)]
            c[1] += 1
            c[0] += status == "ok"
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write-readme", action="store_true", help="record the result in benchmarks/README.md")
    ap.add_argument("extra", nargs="*", help="more oracle-check options (after --)")
    a = ap.parse_args()
    cli = REPO / ".venv" / "bin" / "video-arena"
    if not cli.is_file():
        raise SystemExit("oracle_check_all.py: no .venv here: run `bash scripts/setup.sh` first")
    cmd = [str(cli), "oracle-check", "--all", "--no-progress", *a.extra]
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    load_before = os.getloadavg()
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    lines = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if not ROW.match(line.rstrip("\n")):
            print(line, end="", flush=True)
    rc = proc.wait()
    total = time.monotonic() - t0
    load_after = os.getloadavg()
    counts = tabulate(lines)
    verdict = next((m.group(0) for m in map(VERDICT.match, reversed(lines)) if m), f"no verdict (exit {rc})")
    verdict = re.sub(r"; jobs in .*$", "", verdict)
    games = sorted({g for g, _, _ in counts})
    rows = []
    for g in games:
        cells = [counts.get((g, p, ag), [0, 0]) for p in ("A", "B") for ag in ("oracle", "nop")]
        rows.append(f"| {g} | " + " | ".join(f"{ok}/{n}" for ok, n in cells) + " |")
    passed = sum(c[0] for c in counts.values())
    trials = sum(c[1] for c in counts.values())
    summary = f"exit {rc} in {total:.0f} s ({total / 60:.1f} min) on {os.cpu_count()} cores; {passed} of {trials} trials as expected"
    print(summary)
    print("\n".join(rows))
    if a.write_readme:
        from run_all import measured_line, write_readme

        text = "\n".join([
            measured_line(head, load_before, load_after,
                          f"`python3 benchmarks/oracle_check_all.py{' -- ' + ' '.join(a.extra) if a.extra else ''}` "
                          f"(`{' '.join(['video-arena', *cmd[1:]])}`)"), "",
            f"**{summary}**; `{verdict}`.", "",
            "Trials that scored what their agent must (oracle 1.0 and nop 0.0 on all four reward keys, the "
            "answer state `wrote` / `never_wrote`, no exception), of the trials run:", "",
            "| game | A oracle | A nop | B oracle | B nop |", "|---|---|---|---|---|", *rows])
        write_readme(text, BEGIN, END, "## Every built-in case on Harbor")
    return rc


if __name__ == "__main__":
    sys.exit(main())
