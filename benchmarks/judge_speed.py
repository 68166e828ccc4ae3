#!/usr/bin/env python3
"""How fast the judge scores a full benchmark: 180 cases x 500 rows (seeded synthetic matches).

Prints the wall time per case and for the whole set, and the ratio of the worst case (every row
with the same key, a long chain of rows less than 3 s apart) to a typical case.

    python benchmarks/judge_speed.py [--cases 180] [--rows 500]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judge"))
import judge as J  # noqa: E402

SPEC = {"game": "bench", "sides": ["white", "black"], "event_types": ["move", "capture", "check"],
        "delta_labels": ["up", "down", "flat"], "state_labels": ["white", "black", "even"], "band": 0.05}
SQUARES = [f + r for f in "abcdefgh" for r in "12345678"]


def make_case(rng: random.Random, n: int, dense: bool):
    t, gt_rows = 0.0, []
    for k in range(n):
        t += rng.uniform(0.5, 2.5) if dense else rng.uniform(2, 12)
        key = ("move", "white", "e4") if dense else (rng.choice(SPEC["event_types"]),
                                                    ("white", "black")[k % 2], rng.choice(SQUARES))
        gt_rows.append({"t": round(t, 1), "type": key[0], "actor": key[1], "where": key[2],
                        "delta": rng.choice(["up", "down", "flat"]), "state": rng.choice(["white", "black", "even"]),
                        "v_before": 0.5, "v_after": 0.5})
    gt = {"format": J.GT_FORMAT, "spec": SPEC, "events": gt_rows}
    pred = [dict({k: r[k] for k in J.ROW_FIELDS}, t=max(0.0, r["t"] + rng.uniform(-4, 4)))
            for r in gt_rows if rng.random() < 0.9]
    return gt, {"events": pred}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=180)
    ap.add_argument("--rows", type=int, default=500)
    a = ap.parse_args()
    rng = random.Random(0)
    cases = [make_case(rng, a.rows, dense=False) for _ in range(a.cases)]
    t0 = time.perf_counter()
    for gt, ans in cases:
        J.judge(gt, ans)
    typical = time.perf_counter() - t0
    gt, ans = make_case(rng, a.rows, dense=True)
    t0 = time.perf_counter()
    J.judge(gt, ans)
    worst = time.perf_counter() - t0
    per_case = typical / a.cases
    print(f"{a.cases} cases x {a.rows} rows: {typical:.2f} s in all, {per_case * 1000:.1f} ms per case")
    print(f"worst case (one key, rows < 3 s apart): {worst * 1000:.1f} ms = {worst / per_case:.1f}x a typical case")
    return 0


if __name__ == "__main__":
    sys.exit(main())
