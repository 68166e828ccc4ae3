#!/usr/bin/env python3
"""How fast `video-arena validate` checks the full benchmark's datasets (issue 14: 360 tasks, Protocol A
and B, 9 games x 20 cases each, in 10 s or less wall with every check, compose lint included).

Builds a temporary 9 x 20 tasks tree (benchmarks/bench_tree.py: the real cases first, the rest copies
of real cases under new ids or synthetic stand-ins, all said in the output), generates a Protocol A and
a Protocol B dataset from it with make-harbor's defaults as oracle-check uses them (--net compose-none,
mount media), then runs the real command, `video-arena validate DIR --tasks-root TREE`, once per
dataset in a child process, as a user would. Prints the wall time of both runs together (imports and
start-up included) and their CPU time (user + system of the children: on a shared machine the
steadier figure), per task, and the ratio to the goal. Any task with findings is printed and makes
the exit status 1: a fast validate that rejects good tasks measures nothing.

    python benchmarks/validate_speed.py [--per-game 20] [--jobs 2] [--media mount|copy] [--profile]

--profile validates the Protocol B dataset once more in this process under cProfile and prints the
top functions by cumulative time (in-process, so forked workers are off: --jobs 1).
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

GOAL_S, GOAL_TASKS = 10.0, 360


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VA_TASKS_ROOT", "VA_MEDIA_ROOT")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def measure(src: Path | None = None, per_game: int = 20, jobs: int = 2, media: str = "mount",
            profile: bool = False, log=print) -> dict:
    """Build, generate, validate; returns the figures (and prints as it goes with `log`)."""
    from bench_tree import build_tree, describe

    from video_arena import paths
    from video_arena.harbor import generate as G
    from video_arena.harbor import validate as V

    src = paths.tasks_root(src)
    with tempfile.TemporaryDirectory(prefix="va-validate-bench-") as tmp:
        tree = Path(tmp) / "tasks"
        summary = build_tree(tree, src, per_game=per_game)
        log(f"  tasks tree: {describe(summary)}")
        datasets = []
        t0 = time.perf_counter()
        for protocol in ("A", "B"):
            out = Path(tmp) / f"dataset-{protocol}"
            G.generate(G.Options(out=out, protocol=protocol, net="compose-none", media=media, tasks_root=tree,
                                 progress=False))
            datasets.append(out)
        log(f"  make-harbor A + B ({media} media): {time.perf_counter() - t0:.1f} s (not counted)")
        compose = V.compose_available()
        wall = cpu = 0.0
        n_tasks, bad_lines = 0, []
        for ds in datasets:
            n_tasks += sum(1 for p in ds.iterdir() if p.is_dir())
            c0, w0 = children_cpu(), time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "video_arena.cli", "validate", str(ds), "--tasks-root",
                                str(tree), "--jobs", str(jobs), "--no-progress"],
                               capture_output=True, text=True, env=child_env(), cwd=tmp)
            wall += time.perf_counter() - w0
            cpu += children_cpu() - c0
            last = (r.stdout.strip().splitlines() or ["(no output)"])[-1]
            log(f"  validate {ds.name}: {last}")
            if r.returncode != 0:
                bad_lines += [ln for ln in r.stdout.splitlines() if ln.startswith(("BAD", "    -"))][:12]
                bad_lines += r.stderr.strip().splitlines()[-3:]
        for ln in bad_lines:
            log(f"    {ln}")
        if profile:
            import cProfile
            import pstats

            v = V.Validator(tree, compose)
            prof = cProfile.Profile()
            prof.enable()
            v.check_dataset(datasets[1], jobs=1, progress=False, processes=False)
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
    return {"tasks": n_tasks, "wall_s": wall, "cpu_s": cpu, "compose": compose, "ok": not bad_lines,
            "scaled_wall_s": wall / n_tasks * GOAL_TASKS, "tree": describe(summary)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks-root", type=Path, default=None, help="the source tasks tree (default: the checkout's)")
    ap.add_argument("--per-game", type=int, default=20, help="cases per game (9 games; 20 gives 360 tasks)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--media", choices=("mount", "copy"), default="mount")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    print(f"validate speed (load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores)")
    m = measure(a.tasks_root, a.per_game, a.jobs, a.media, a.profile)
    lint = "with" if m["compose"] else "WITHOUT"
    print(f"validate {m['tasks']} tasks (A + B, {lint} compose lint, --jobs {a.jobs}): {m['wall_s']:.1f} s wall, "
          f"{m['cpu_s']:.1f} s CPU; {m['wall_s'] / m['tasks'] * 1000:.0f} ms wall and "
          f"{m['cpu_s'] / m['tasks'] * 1000:.0f} ms CPU per task")
    print(f"goal {GOAL_TASKS} tasks in {GOAL_S:.0f} s wall: {m['scaled_wall_s']:.1f} s = "
          f"{m['scaled_wall_s'] / GOAL_S:.2f} x the goal" + ("" if m["tasks"] == GOAL_TASKS else " (scaled linearly with the start-up costs: an over-estimate)"))
    if not m["ok"]:
        print("FINDINGS on generated tasks: the measurement is not of a passing validate")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
