#!/usr/bin/env python3
"""How long `video-arena import-cases` takes over a long event log with a long V_t series (issue 36: 20,000
rows once took a minute, every time group scanning the whole series).

For N = 2,500, 5,000, 10,000 and 20,000 (or --sizes): N events, each at its own time (so N time groups, the
worst shape), and an N + 1-point V_t series (`--values`), as CSV files.  Prints, per N, the wall and CPU
time of the whole import in this process (reading both files, every check, v_before/v_after from the
series, the ground truth and manifest written) and the ratio to the N before it: about 2 when the work
grows linearly with N, about 4 when it grows with N squared.

The video conversion is replaced by a stand-in of the right length (a 1 fps video one frame longer than
the log): its cost is the video's, not the log's, and benchmarks/media_speed.py measures video work.

    python benchmarks/import_log_speed.py [--sizes 2500,5000,10000,20000]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from video_arena.importing import cli as import_cli  # noqa: E402
from video_arena.importing import media as M  # noqa: E402

GAME, SIDES = "badminton", ("player_a", "player_b")


def write_inputs(d: Path, n: int) -> tuple[Path, Path]:
    """N rally ends one second apart and the V_t series holding a value from 0 and after each."""
    events, values = ["t,type,actor,where"], ["t,v", "0,0.5"]
    for k in range(1, n + 1):
        events.append(f"{k},winner,{SIDES[k % 2]},back")
        values.append(f"{k},{0.45 + 0.1 * (k % 2)}")
    (d / "events.csv").write_text("\n".join(events) + "\n")
    (d / "values.csv").write_text("\n".join(values) + "\n")
    return d / "events.csv", d / "values.csv"


def stand_in(n: int):
    def prepare(src, dst, size, fps=None):
        Path(dst).write_bytes(b"stand-in video")
        return {"method": "re-encode", "fps": 1, "n_frames": n + 2, "width": size[0], "height": size[1],
                "source": {}, "encoder": {"tool": "stand-in"}}
    return prepare


def timed_import(n: int) -> tuple[float, float]:
    """(wall s, CPU s) of one import of N events and an N + 1-point series into a fresh tree."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        events, values = write_inputs(d, n)
        (d / "match.mp4").write_bytes(b"never read")
        M.prepare = stand_in(n)
        argv = ["--tasks-root", str(d / "tree"), "--game", GAME, "--video", str(d / "match.mp4"), "--events", str(events),
                "--values", str(values), "--source", "benchmark", "--licence", "CC0-1.0", "--value-model", "synthetic"]
        w0, c0 = time.perf_counter(), time.process_time()
        with open(os.devnull, "w") as quiet:
            stdout, sys.stdout = sys.stdout, quiet
            try:
                rc = import_cli.main(argv)
            finally:
                sys.stdout = stdout
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        if rc != 0:
            raise SystemExit(f"the import of {n} events failed (exit {rc})")
        return wall, cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="2500,5000,10000,20000", help="the N to time, comma-separated")
    a = ap.parse_args(argv)
    sizes = [int(x) for x in a.sizes.split(",")]
    os.environ.pop("VA_MEDIA_ROOT", None)
    print(f"import-cases, {GAME}: N events at N distinct times + an (N + 1)-point V_t series, video conversion "
          f"stood in; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'N':>7}  {'wall s':>7}  {'CPU s':>7}  {'CPU us/event':>12}  ratio to the N before (2 linear, 4 quadratic)")
    prev = None
    for n in sizes:
        wall, cpu = timed_import(n)
        ratio = f"{cpu / prev[1]:.2f} x CPU for {n / prev[0]:.0f} x N" if prev else "-"
        print(f"{n:>7}  {wall:>7.2f}  {cpu:>7.2f}  {1e6 * cpu / n:>12.1f}  {ratio}")
        prev = (n, cpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
