#!/usr/bin/env python3
"""Harbor throughput on this host: oracle trials per hour at `harbor run -n 1, 2, 4`, and Harbor's
per-trial overhead against the trial's own work (issue 24).

Generates a Protocol B dataset of the first case of every game whose video exists (--net compose-none;
mount media by default, as oracle-check runs it; `--media copy` for the published form, whose
trials build a small image each), then runs `harbor run -a oracle -k K -n N` once per N on Docker (or
`--runtime podman`). Every trial must score 1.0 on all four keys with no exception, else the figure is
marked invalid. For each N it prints the wall time, trials per hour and the ratio to N=1, with the
load average sampled every 5 s during the run (the machine may be shared: that is the context of
the figure).

Per trial (from Harbor's result.json): the whole trial, the agent environment's start, the agent's
run (solve.sh), the verifier phase (a fresh container with tests/, test.sh, its teardown). The
trial's own work is the agent's run plus what the judge costs on that case (the judge timed here on
the task's tests/gt.json and solution/answer.json, best of 3); Harbor's overhead is the rest.

    python benchmarks/harbor_throughput.py [--ns 1,2,4] [--attempts 2] [--media mount|copy]
                                           [--runtime docker|podman] [--json OUT] [--markdown]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def _ts(s: str) -> float:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def _span(d: dict | None) -> float | None:
    if not d or not d.get("started_at") or not d.get("finished_at"):
        return None
    return _ts(d["finished_at"]) - _ts(d["started_at"])


class LoadSampler:
    def __init__(self, every: float = 5.0):
        self.every, self.samples, self._stop = every, [], threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while True:
            self.samples.append(os.getloadavg()[0])
            if self._stop.wait(self.every):
                return

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def judge_seconds(dataset: Path) -> dict[str, float]:
    """task folder -> the judge's time on its oracle answer (best of 3), in this process."""
    from video_arena.core.judge_loader import load_judge

    J = load_judge()
    out = {}
    for task in sorted(p for p in dataset.iterdir() if (p / "task.toml").is_file()):
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            J.judge_files(str(task / "tests" / "gt.json"), str(task / "solution" / "answer.json"))
            best = min(best, time.perf_counter() - t0)
        out[task.name] = best
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ns", default="1,2,4", help="harbor run -n values (default 1,2,4)")
    ap.add_argument("--attempts", type=int, default=2, help="harbor run -k: trials per task (default 2)")
    ap.add_argument("--media", choices=("mount", "copy"), default="mount")
    ap.add_argument("--runtime", choices=("docker", "podman"), default="docker")
    ap.add_argument("--games", default=None, help="comma-separated games (default: every game whose first video exists)")
    ap.add_argument("--tasks-root", type=Path, default=None)
    ap.add_argument("--work", type=Path, default=None, help="where the dataset and jobs go (default: a temporary folder)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown (for benchmarks/README.md)")
    a = ap.parse_args(argv)

    from video_arena import paths
    from video_arena.core import list_games, load_cases
    from video_arena.harbor.generate import Options, generate
    from video_arena.harbor.oracle_check import read_trials, run_harbor
    from video_arena.harbor.spec import DEFAULT_BASE_IMAGE
    from video_arena.harbor_api.trials import trial_task

    ns = [int(x) for x in a.ns.split(",") if x.strip()]
    root = paths.tasks_root(a.tasks_root)
    games = [g for g in (a.games.split(",") if a.games else list_games(root))
             if load_cases(g, root) and (root / g / "media" / f"{load_cases(g, root)[0]['case_id']}.mp4").is_file()]
    if not games:
        print(f"harbor_throughput: no game of {root} has its first video; run video-arena build-cases --media-only",
              file=sys.stderr)
        return 2
    if a.runtime == "podman":
        from video_arena.container_host.podman import load_image, podman_status

        ok, why = podman_status()
        if not ok:
            print(f"harbor_throughput: Podman is not usable: {why}", file=sys.stderr)
            return 2
        print(load_image(DEFAULT_BASE_IMAGE))
        if a.media != "copy":
            print("harbor_throughput: --runtime podman runs the copy-mode form (--media copy)", file=sys.stderr)
            return 2
    work = (a.work or Path(tempfile.mkdtemp(prefix="va-throughput-"))).resolve()
    ds = work / "dataset"
    generate(Options(out=ds, protocol="B", net="compose-none", media=a.media, tasks_root=root, games=games, limit=1,
                     force=True, progress=False))
    jt = judge_seconds(ds)
    n_trials = len(games) * a.attempts
    stamp = time.strftime("%Y%m%d-%H%M%S")
    rows, per_trial = [], []
    print(f"{len(games)} tasks ({', '.join(games)}) x {a.attempts} attempts = {n_trials} oracle trials per run; "
          f"--media {a.media}, -e {a.runtime}; {os.cpu_count()} CPUs; work {work}", flush=True)
    for n in ns:
        job = f"tp-{a.runtime}-{a.media}-n{n}-{stamp}"
        before = os.getloadavg()
        with LoadSampler() as load:
            t0 = time.monotonic()
            rc = run_harbor(ds, "oracle", job, work / "jobs", paths.media_root(root), n, to_log=True,
                            env_type=a.runtime, extra=("-k", str(a.attempts)))
            wall = time.monotonic() - t0
        trials = read_trials(work / "jobs" / job, "oracle", "B")
        valid = rc == 0 and len(trials) == n_trials and all(t.ok for t in trials)
        results = [json.loads(p.read_text()) for p in (work / "jobs" / job).glob("*/result.json")]
        for r in results:
            task = Path(r["task_id"]["path"]).name if isinstance(r.get("task_id"), dict) else trial_task(r["trial_name"])
            per_trial.append({"n": n, "total": _span(r), "env_setup": _span(r.get("environment_setup")),
                              "agent": _span(r.get("agent_execution")), "verifier": _span(r.get("verifier")),
                              "judge": jt.get(task, 0.0)})
        rows.append({"n": n, "trials": len(trials), "wall_s": round(wall, 1), "valid": valid,
                     "trials_per_hour": round(len(trials) / wall * 3600, 1) if wall > 0 else None,
                     "load_before": [round(x, 2) for x in before],
                     "load_mean_during": round(statistics.mean(load.samples), 2) if load.samples else None,
                     "load_max_during": round(max(load.samples), 2) if load.samples else None})
        print(f"-n {n}: {len(trials)} trials in {wall:.0f} s = {rows[-1]['trials_per_hour']} trials/h "
              f"({'valid' if valid else 'INVALID: a trial failed or is missing'}); load during "
              f"{rows[-1]['load_mean_during']} mean, {rows[-1]['load_max_during']} max", flush=True)
    base = next((r["trials_per_hour"] for r in rows if r["n"] == 1), None)
    for r in rows:
        r["ratio_to_n1"] = round(r["trials_per_hour"] / base, 2) if base and r["trials_per_hour"] else None

    def mean(key, n=None):
        vals = [t[key] for t in per_trial if t[key] is not None and (n is None or t["n"] == n)]
        return statistics.mean(vals) if vals else float("nan")

    n0 = min(ns)
    work_s = mean("agent", n0) + mean("judge", n0)
    overhead = mean("total", n0) - work_s
    split = {"total": mean("total", n0), "env_setup": mean("env_setup", n0), "agent": mean("agent", n0),
             "verifier": mean("verifier", n0), "judge": mean("judge", n0), "work": work_s, "overhead": overhead,
             "overhead_to_work": overhead / work_s if work_s > 0 else float("nan"), "at_n": n0}
    lines = [f"Harbor throughput, `python benchmarks/harbor_throughput.py --ns {a.ns} --attempts {a.attempts} "
             f"--media {a.media} --runtime {a.runtime}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"{os.cpu_count()} CPUs; {len(games)} tasks x {a.attempts} = {n_trials} oracle trials per run "
             f"(Protocol B, --net compose-none, --media {a.media}, -e {a.runtime}).", "",
             "| `harbor run -n` | trials | wall | trials per hour | ratio to -n 1 | load average during (mean / max) | valid |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['n']} | {r['trials']} | {r['wall_s']:.0f} s | {r['trials_per_hour']} | {r['ratio_to_n1']} "
                     f"| {r['load_mean_during']} / {r['load_max_during']} | {'yes' if r['valid'] else 'NO'} |")
    lines += ["", f"Per trial at -n {n0} (mean of {sum(1 for t in per_trial if t['n'] == n0)} trials):", "",
              "| part | seconds |", "|---|---|",
              f"| whole trial | {split['total']:.1f} |",
              f"| agent environment start | {split['env_setup']:.1f} |",
              f"| agent run (solve.sh, the oracle's work) | {split['agent']:.2f} |",
              f"| verifier phase (fresh container, test.sh, teardown) | {split['verifier']:.1f} |",
              f"| the judge's own time on the case (host, best of 3) | {split['judge']:.3f} |",
              f"| **the trial's own work** (agent run + judge) | {split['work']:.2f} |",
              f"| **Harbor's overhead** (the rest) | {split['overhead']:.1f} |",
              f"| overhead / own work | {split['overhead_to_work']:.0f} x |"]
    text = "\n".join(lines) + "\n"
    print()
    print(text if a.markdown else text.replace("**", ""))
    if a.json:
        a.json.write_text(json.dumps({"rows": rows, "per_trial": per_trial, "split": split}, indent=1) + "\n")
    return 0 if all(r["valid"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
