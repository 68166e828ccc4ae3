#!/usr/bin/env python3
"""How fast `video-arena validate` checks Protocol A and B datasets (issue 14: 360 tasks in 10 s).

Generates a Protocol A and a Protocol B dataset (--net docker, mount media) from the tasks tree into a
temporary folder, validates both with compose lint (when the Docker CLI's compose plugin is there),
and prints wall and CPU time (this process and its children: on a shared machine CPU time is the
steadier figure) per task and for the tasks found, then scales to 360 tasks. With --compare it also
validates once with one `docker compose config` per task (what `harbor lint` does alone) and prints
the ratio. Findings are counted, not judged: a checkout whose media are symlinks outside the tree
gets Harbor's compose-symlink-bind-mount finding on every mount-mode task.

    python benchmarks/validate_speed.py [--tasks-root tasks] [--jobs 2] [--compare]
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from video_arena import paths  # noqa: E402
from video_arena.harbor import generate as G  # noqa: E402
from video_arena.harbor import validate as V  # noqa: E402


def cpu_s() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def run(v: V.Validator, datasets: list[Path], jobs: int) -> tuple[float, float, int, int, int]:
    """(wall s, CPU s, tasks, bad tasks, compose runs) for validating every dataset."""
    c0, w0 = cpu_s(), time.perf_counter()
    n = bad = runs = 0
    for ds in datasets:
        reports, _ = v.check_dataset(ds, jobs=jobs, progress=False)
        n += len(reports)
        bad += sum(not r.ok for r in reports)
        runs += v.compose_runs if v.batch_compose else len(reports)
    return time.perf_counter() - w0, cpu_s() - c0, n, bad, runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks-root", type=Path, default=None)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--compare", action="store_true", help="also time one compose run per task")
    a = ap.parse_args()
    root = paths.tasks_root(a.tasks_root)
    with tempfile.TemporaryDirectory(prefix="va-validate-bench-") as tmp:
        datasets = []
        for protocol in ("A", "B"):
            out = Path(tmp) / protocol
            G.generate(G.Options(out=out, protocol=protocol, net="docker", tasks_root=root, progress=False))
            datasets.append(out)
        with_compose = V.compose_available()
        v = V.Validator(root, with_compose)
        v.check(next(p for p in datasets[0].iterdir() if p.is_dir()))  # imports, judge and templates loaded
        wall, cpu, n, bad, runs = run(v, datasets, a.jobs)
        lint = "with" if with_compose else "WITHOUT"
        print(f"validate {n} tasks (A + B, {lint} compose lint, --jobs {a.jobs}): {wall:.1f} s wall, {cpu:.1f} s CPU; "
              f"{wall / n * 1000:.0f} ms wall and {cpu / n * 1000:.0f} ms CPU per task; {runs} compose runs; "
              f"{bad} tasks with findings")
        print(f"scaled to 360 tasks: {wall / n * 360:.1f} s wall, {cpu / n * 360:.1f} s CPU (goal: 10 s wall)")
        if a.compare and with_compose:
            v.batch_compose = False
            o_wall, o_cpu, _, o_bad, o_runs = run(v, datasets, a.jobs)
            print(f"one compose run per task ({o_runs} runs): {o_wall:.1f} s wall, {o_cpu:.1f} s CPU; batched is "
                  f"{o_cpu / cpu:.1f}x less CPU, {o_wall / wall:.1f}x less wall; same tasks with findings: {o_bad == bad}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
