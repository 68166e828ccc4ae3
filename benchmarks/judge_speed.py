#!/usr/bin/env python3
"""How fast the judge scores a full benchmark: 180 cases x 500 rows (seeded synthetic matches).

Prints the time for the whole set (wall clock and CPU time of this process: on a shared machine the
CPU time is the steadier figure), per case and per row, and the ratio of the worst case (every row
with the same key, a long chain of rows less than 3 s apart) to a typical case. The goal (issue 14)
is under 1 s for 180 x 500.

With --baseline REV it also times judge/judge.py as it was at git revision REV on the same cases,
checks that both give the same records, and prints the speed-up.

    python benchmarks/judge_speed.py [--cases 180] [--rows 500] [--repeat 3] [--baseline REV]
"""
from __future__ import annotations

import argparse
import importlib.util
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "judge"))
import judge as J  # noqa: E402

SPEC = {"game": "bench", "sides": ["white", "black"], "event_types": ["move", "capture", "check"],
        "delta_labels": ["up", "down", "flat"], "state_labels": ["white", "black", "even"], "band": 0.05}
GOAL_S = 1.0
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


def timed(judge_mod, cases, repeat: int) -> tuple[float, float, list]:
    """(best wall s, best CPU s, records) over `repeat` runs of the whole set."""
    best_wall = best_cpu = float("inf")
    records = []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        records = [judge_mod.judge(gt, ans) for gt, ans in cases]
        best_wall = min(best_wall, time.perf_counter() - w0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return best_wall, best_cpu, records


def judge_at(rev: str):
    """judge/judge.py as it was at git revision `rev`, loaded as its own module."""
    text = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:judge/judge.py"], capture_output=True,
                          text=True, check=True).stdout
    path = Path(tempfile.mkdtemp(prefix="judge-baseline-")) / "judge.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("judge_baseline", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def measure(n_cases: int = 180, rows: int = 500, repeat: int = 3) -> dict:
    """Seeded cases judged `repeat` times (the best run counts) and the worst-case shape."""
    rng = random.Random(0)
    cases = [make_case(rng, rows, dense=False) for _ in range(n_cases)]
    n_rows = sum(len(gt["events"]) + len(ans["events"]) for gt, ans in cases)
    wall, cpu, records = timed(J, cases, repeat)
    worst = make_case(rng, rows, dense=True)
    _, worst_cpu, _ = timed(J, [worst], repeat)
    return {"n_cases": n_cases, "rows": rows, "wall_s": wall, "cpu_s": cpu, "per_case_s": cpu / n_cases,
            "per_row_us": cpu / n_rows * 1e6, "worst_cpu_s": worst_cpu, "cases": cases, "records": records,
            "worst": worst, "goal_s": GOAL_S}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=180)
    ap.add_argument("--rows", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3, help="runs of the whole set; the best is reported")
    ap.add_argument("--baseline", metavar="REV", help="also time judge/judge.py at this git revision")
    a = ap.parse_args()
    m = measure(a.cases, a.rows, a.repeat)
    cases, records, worst, per_case = m["cases"], m["records"], m["worst"], m["per_case_s"]
    print(f"{a.cases} cases x {a.rows} rows: {m['cpu_s']:.2f} s CPU ({m['wall_s']:.2f} s wall), "
          f"{per_case * 1000:.2f} ms per case, {m['per_row_us']:.2f} us per row (ground truth + answer); goal < 1 s")
    worst_cpu = m["worst_cpu_s"]
    print(f"worst case (one key, rows < 3 s apart): {worst_cpu * 1000:.1f} ms CPU = {worst_cpu / per_case:.1f}x "
          f"a typical case")
    cpu = m["cpu_s"]
    if a.baseline:
        base = judge_at(a.baseline)
        b_wall, b_cpu, b_records = timed(base, cases, a.repeat)
        same = all(x == y for x, y in zip(records, b_records))
        print(f"baseline {a.baseline}: {b_cpu:.2f} s CPU ({b_wall:.2f} s wall); this judge is {b_cpu / cpu:.1f}x "
              f"faster; records identical on all {a.cases} cases: {same}")
        _, b_worst, _ = timed(base, [worst], a.repeat)
        print(f"baseline worst case: {b_worst * 1000:.1f} ms CPU ({b_worst / worst_cpu:.1f}x this judge's)")
        if not same:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
