"""Fill the Go V_t cache (<repo>/.cache/go-vt/) for the built-in selection ahead of `build-cases`.

    nice -n 5 python -m video_arena.games.go.precompute [--cases 20] [--seed 20250]

Resumable: values are saved per game as they arrive; a rerun continues where it stopped.  The build
pipeline's plugin.evaluate() reads the same cache, so a later `video-arena build-cases --games go`
only pays for positions that are still missing.
"""
from __future__ import annotations

import argparse
import sys
import time

from video_arena.games.go.plugin import PLUGIN


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=20)
    ap.add_argument("--seed", type=int, default=20250)
    a = ap.parse_args(argv)
    # in selection order: select_records(k) is a prefix of select_records(n), so when time runs out
    # the first k finished games can be built with `video-arena build-cases --games go --cases k`
    records = PLUGIN.select_records(a.cases, a.seed)
    total = sum(len(r["moves"]) + 1 for r in records)
    print(f"{len(records)} games, {total} positions", flush=True)
    t_all = time.monotonic()
    for k, rec in enumerate(records):
        t0 = time.monotonic()
        done_before = []

        def progress(done, n, _first=done_before):
            if not _first:
                _first.append(done)

        values = PLUGIN.evaluate(rec, progress=progress)
        dt = time.monotonic() - t0
        new = len(values) - done_before[0]
        per = dt / new if new else 0.0
        print(f"[{k + 1}/{len(records)}] {rec['source']['id']}: {len(values)} positions ({new} new) in {dt:.0f}s"
              f" ({per:.2f} s/position); final V {values[-1]:.3f}, result {rec['result']}", flush=True)
    print(f"done in {time.monotonic() - t_all:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
