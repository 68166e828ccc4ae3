#!/usr/bin/env python3
"""How fast `video-arena explore` writes a site for a full benchmark run: 9 games x 20 cases, 500 truth
events and about 500 answer rows per case (seeded synthetic matches in a temporary tasks tree).

Prints the wall time, the cost per cell and per page, and the ratio to the goal (180 cells in 60 s).

    python benchmarks/explore_speed.py [--games 9] [--cases 20] [--rows 500] [--jobs N]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

GOAL_S, GOAL_CELLS = 60.0, 180
SQUARES = [f + r for f in "abcdefgh" for r in "12345678"]


def make_tree(root: Path, games: int, cases: int, rows: int, seed: int = 7) -> Path:
    from video_arena.core.tasks import GT_FORMAT
    from video_arena.games.base import load_definition
    from video_arena.games.cli import expected_files

    rng = random.Random(seed)
    d = load_definition("chess")
    results = root / "results"
    for gi in range(games):
        game = f"bench{gi}"
        gdir = root / "tasks" / game
        (gdir / "gt").mkdir(parents=True)
        for name, data in expected_files("chess").items():
            if name == "game.toml":
                data = data.replace(b'name = "chess"', f'name = "{game}"'.encode())
            (gdir / name).write_bytes(data)
        ids = [f"B{gi}c{k:05d}" for k in range(cases)]
        (gdir / "cases.json").write_text(json.dumps({"game": game, "cases": [{"case_id": c} for c in ids]}))
        for cid in ids:
            t, v, events = 0.0, 0.5, []
            for k in range(rows):
                t += rng.uniform(2, 8)
                v2 = min(1.0, max(0.0, v + rng.gauss(0, 0.06)))
                events.append({"t": round(t, 1), "type": rng.choice(d.event_types), "actor": ("white", "black")[k % 2],
                               "where": rng.choice(SQUARES), "delta": d.delta_of(v, v2), "state": d.state_of(v2),
                               "v_before": v, "v_after": v2})
                v = v2
            gt = {"format": GT_FORMAT, "game": game, "case_id": cid, "spec": {**d.judge_spec(), "game": game},
                  "duration_s": t + 5, "events": events, "v_series": [[0.0, 0.5]] + [[e["t"], e["v_after"]] for e in events],
                  "v_definition": "synthetic", "record": {}}
            (gdir / "gt" / f"{cid}.json").write_text(json.dumps(gt))
            answer = [{**{k: e[k] for k in ("type", "actor", "where", "delta", "state")},
                       "t": round(e["t"] + rng.uniform(-4, 4), 1)} for e in events if rng.random() < 0.9]
            answer += [{"t": round(rng.uniform(0, t), 1), "type": "move", "actor": "white", "where": rng.choice(SQUARES),
                        "delta": "flat", "state": "even"} for _ in range(rows // 10)]
            cell = results / game / cid
            cell.mkdir(parents=True)
            (cell / "answer.json").write_text(json.dumps({"events": answer}))
            (cell / "run.json").write_text(json.dumps({"protocol": "B", "model": "bench", "game": game, "case_id": cid,
                                                       "stop_reason": "completed", "answer_state": "wrote",
                                                       "n_rows": len(answer), "audit": {"verdict": "clean"}}))
    return root


def measure(games: int = 9, cases: int = 20, rows: int = 500, jobs: int | None = None) -> dict:
    """Write the fixture and the site in a temporary folder; the figures as a dict."""
    from video_arena.explore.site import build_site

    with tempfile.TemporaryDirectory(prefix="va-explore-bench-") as tmp:
        t0 = time.perf_counter()
        root = make_tree(Path(tmp), games, cases, rows)
        t_make = time.perf_counter() - t0
        t0 = time.perf_counter()
        s = build_site([root / "results"], root / "site", tasks_root=root / "tasks", jobs=jobs, progress=False)
        wall = time.perf_counter() - t0
    cells = s["cells"]
    per_cell = wall / max(1, cells)
    return {"cells": cells, "pages": s["pages"], "rows": rows, "jobs": jobs or os.cpu_count(), "make_s": t_make,
            "wall_s": wall, "per_cell_s": per_cell, "goal_s": GOAL_S, "goal_cells": GOAL_CELLS,
            "scaled_s": per_cell * GOAL_CELLS}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", type=int, default=9)
    ap.add_argument("--cases", type=int, default=20)
    ap.add_argument("--rows", type=int, default=500)
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: every core)")
    a = ap.parse_args()
    m = measure(a.games, a.cases, a.rows, a.jobs)
    print(f"explore: {m['cells']} cells x {a.rows} rows, {m['pages']} pages, {m['jobs']} worker(s)")
    print(f"  fixture written in {m['make_s']:.1f} s (not counted)")
    print(f"  site: {m['wall_s']:.1f} s, {m['per_cell_s'] * 1000:.0f} ms per cell, "
          f"{m['wall_s'] / m['pages'] * 1000:.0f} ms per page")
    print(f"  goal {GOAL_CELLS} cells in {GOAL_S:.0f} s: at this rate {m['scaled_s']:.1f} s "
          f"= {m['scaled_s'] / GOAL_S:.2f} x the goal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
