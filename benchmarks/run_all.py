#!/usr/bin/env python3
"""Every speed and size figure of issue 14 in one run, each as a ratio to its goal (or a per-unit cost).

    python benchmarks/run_all.py [--quick] [--write-readme] [--skip media,explore,...]

  media     one video per game re-rendered with the package's current code (build-cases --media-only's
            function), the game's total EXTRAPOLATED by frame count (benchmarks/media_speed.py), and
            the goal's 80 videos (chess, doudizhu, go, gomoku) re-rendered for real in one pool;
            goal: those 80 videos in 300 s on 2 cores
  judge     180 cases x 500 rows, CPU of the best of 3 runs (benchmarks/judge_speed.py); goal < 1 s
  validate  `video-arena validate` on 360 tasks (A + B, 9 games x 20 cases, compose lint), wall time of the
            real command (benchmarks/validate_speed.py); goal <= 10 s
  image     `docker image inspect video-arena/base:latest` (read, not built); goal <= 1.2 GB
  explore   `explore` site for 180 cells x 500 rows (benchmarks/explore_speed.py); goal 60 s

--quick: the shortest video per game and explore on 2 x 20 cells (scaled linearly to 180 cells and said
to be scaled); validate always checks the full 360 tasks. --write-readme replaces the generated
table in benchmarks/README.md (date, cores, load average, commit) with this run's figures.

Times on a shared machine move with its load; the load average is printed before and after, and the
CPU time is given beside the wall time where the goal is wall time.
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

SECTIONS = ("media", "judge", "validate", "image", "explore")
IMAGE = "video-arena/base:latest"
IMAGE_GOAL_BYTES = 1.2e9
README = HERE / "README.md"
BEGIN, END = "<!-- run_all.py: begin (generated, do not edit) -->", "<!-- run_all.py: end -->"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def image_size() -> tuple[int | None, str]:
    try:
        r = subprocess.run(["docker", "image", "inspect", IMAGE, "--format", "{{.Size}}"], capture_output=True,
                           text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"docker not usable ({type(exc).__name__})"
    if r.returncode != 0:
        return None, "not built" if "No such image" in r.stderr or "no such image" in r.stderr.lower() else \
            f"docker image inspect failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}"
    return int(r.stdout.strip()), ""


def run(a) -> list[dict]:
    """[{figure, measured, goal, ratio, note}] in SECTIONS order."""
    rows: list[dict] = []

    def add(figure: str, measured: str, goal: str, ratio: float | None, note: str = "") -> None:
        rows.append({"figure": figure, "measured": measured, "goal": goal, "ratio": ratio, "note": note})
        print(f"  -> {figure}: {measured}; goal {goal}; "
              + (f"ratio {ratio:.2f}" if ratio is not None else "no ratio") + (f" ({note})" if note else ""),
              flush=True)

    if "media" in a.sections:
        import media_speed as M

        print(f"media (load {load()}):", flush=True)
        m = M.measure(quick=a.quick, log=lambda s: print(s, flush=True), whole_pictures=True)
        case = "shortest" if a.quick else "median"
        for g in m["games"]:
            if "skipped" in g:
                add(f"media {g['game']}", g["skipped"], "-", None)
                continue
            bad = {False: "; BYTES DIFFER FROM THE MANIFEST", None: "; no manifest entry"}.get(
                g["manifest_match"], "; bytes as in the manifest")
            add(f"media {g['game']}", f"{g['cpu_s']:.1f} s CPU ({g['wall_s']:.1f} s wall) for one video "
                f"({g['frames']} frames, {case} case), "
                f"{g['cpu_ms_per_frame']:.2f} ms/frame; {g['n_cases']} videos ~{g['game_cpu_s_extrapolated']:.0f} s CPU"
                f"{bad}", "-", None, "per game total extrapolated by frames")
            whole = g.get("whole")
            if whole:
                same = "same bytes" if whole["sha256"] == g["sha256"] else "BYTES DIFFER"
                add(f"media {g['game']}: canvas vs whole pictures", f"{g['cpu_s'] / whole['cpu_s']:.2f} x the CPU "
                    f"({g['cpu_s']:.1f} s against {whole['cpu_s']:.1f} s with every picture drawn and converted "
                    f"whole); {same}", "-", None, "the plugin's video against the plain path, same case")
        add("media all videos, extrapolated", f"{m['videos']} videos ~{m['total_cpu_s_extrapolated']:.0f} s CPU, "
            f"on 2 cores at best ~{m['two_core_s_extrapolated']:.0f} s", "-", None,
            "extrapolated from one video per game; CPU / 2, not a wall time")
        if a.quick:
            add("media: the goal's 80 videos re-rendered", "not run with --quick", "-", None)
        else:
            r = M.measure_real_run(list(M.GOAL_GAMES))
            cpu = ", ".join(f"{g} {c:.0f} s" for g, c in r["cpu_s"].items())
            bad = f"; FAILED: {r['failed']}" if r["failed"] else ""
            add("media: the goal's 80 videos re-rendered", f"{r['videos']} videos in {r['wall_s']:.0f} s wall on "
                f"{r['jobs']} processes ({', '.join(M.GOAL_GAMES)}; renderers' CPU: {cpu}); {r['match']} match the "
                f"manifest{bad}", f"{M.GOAL_VIDEOS} videos <= {M.GOAL_S:.0f} s on 2 cores", r["wall_s"] / M.GOAL_S,
                "a real build-cases --media-only run into a temporary folder")

    if "judge" in a.sections:
        import judge_speed as J

        print(f"judge (load {load()}):", flush=True)
        m = J.measure(180, 500, 3)
        add("judge 180 x 500", f"{m['cpu_s']:.2f} s CPU ({m['wall_s']:.2f} s wall), {m['per_case_s'] * 1000:.2f} ms/case, "
            f"worst-case shape {m['worst_cpu_s'] * 1000:.0f} ms", f"< {J.GOAL_S:.0f} s", m["cpu_s"] / J.GOAL_S,
            f"Python {platform.python_version()}, best of 3")

    if "validate" in a.sections:
        import validate_speed as V

        print(f"validate (load {load()}):", flush=True)
        m = V.measure(per_game=20)  # always the goal's 360 tasks: start-up costs do not scale down
        lint = "compose lint" if m["compose"] else "NO compose lint (docker compose missing)"
        scaled = "" if m["tasks"] == V.GOAL_TASKS else f"; scaled from {m['tasks']} tasks"
        bad = "" if m["ok"] else "; TASKS WITH FINDINGS"
        add("validate 360 tasks", f"{m['scaled_wall_s']:.1f} s wall ({m['cpu_s'] / m['tasks'] * V.GOAL_TASKS:.1f} s CPU), "
            f"{m['cpu_s'] / m['tasks'] * 1000:.0f} ms CPU/task{scaled}{bad}", f"<= {V.GOAL_S:.0f} s wall",
            m["scaled_wall_s"] / V.GOAL_S, f"A + B, {lint}; {m['tree']}")

    if "image" in a.sections:
        print("image:", flush=True)
        size, why = image_size()
        if size is None:
            add(f"image {IMAGE}", why, "<= 1.2 GB", None)
        else:
            add(f"image {IMAGE}", f"{size / 1e9:.2f} GB ({size} bytes)", "<= 1.2 GB", size / IMAGE_GOAL_BYTES,
                "read, not rebuilt")

    if "explore" in a.sections:
        import explore_speed as E

        print(f"explore (load {load()}):", flush=True)
        games = 2 if a.quick else 9
        m = E.measure(games=games)
        scaled = "" if m["cells"] == m["goal_cells"] else f"; scaled from {m['cells']} cells"
        add("explore 180 cells", f"{m['scaled_s']:.1f} s wall, {m['per_cell_s'] * 1000:.0f} ms/cell{scaled}",
            f"{m['goal_cells']} cells in {m['goal_s']:.0f} s", m["scaled_s"] / m["goal_s"], f"{m['jobs']} workers")
    return rows


def table(rows: list[dict], header: dict) -> str:
    out = [f"Measured {header['date']} on {header['cores']} cores ({header['machine']}), load average "
           f"{header['load_before']} before and {header['load_after']} after; commit {header['commit']}"
           f"{' (uncommitted changes)' if header['dirty'] else ''}; command `{header['command']}` "
           f"in {header['seconds']:.0f} s.", "",
           "| figure | measured | goal | ratio to goal | note |", "|---|---|---|---|---|"]
    for r in rows:
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "-"
        out.append(f"| {r['figure']} | {r['measured']} | {r['goal']} | {ratio} | {r['note']} |".replace("\n", " "))
    return "\n".join(out)


def measured_line(head: str, load_before: tuple[float, ...], load_after: tuple[float, ...], command: str) -> str:
    """The first line of a whole-run measurement's README block: when, which commit, the load around it
    and the command (Markdown) that made it."""
    return (f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {head}, load average "
            f"{load_before[0]:.2f} before and {load_after[0]:.2f} after; command {command}.")


def write_readme(text: str, begin: str = BEGIN, end: str = END, title: str = "## Latest measurements") -> None:
    """Replace the generated block between `begin` and `end` (appended under `title` when missing)."""
    old = README.read_text(encoding="utf-8") if README.is_file() else ""
    block = f"{begin}\n{text}\n{end}"
    if begin in old and end in old:
        new = re.sub(re.escape(begin) + r".*?" + re.escape(end), lambda _m: block, old, flags=re.S)
    else:
        new = old.rstrip("\n") + ("\n\n" if old else "") + title + "\n\n" + block + "\n"
    README.write_text(new, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller inputs, scaled to the goals' sizes (said so)")
    ap.add_argument("--write-readme", action="store_true", help="replace the generated table in benchmarks/README.md")
    ap.add_argument("--skip", default="", help=f"comma-separated sections to skip: {','.join(SECTIONS)}")
    a = ap.parse_args(argv)
    skip = {s for s in a.skip.split(",") if s}
    unknown = skip - set(SECTIONS)
    if unknown:
        ap.error(f"unknown sections {sorted(unknown)}; sections: {','.join(SECTIONS)}")
    a.sections = [s for s in SECTIONS if s not in skip]
    from video_arena.toolkit_info import toolkit_provenance

    prov = toolkit_provenance()
    before, t0 = load(), time.monotonic()
    print(f"run_all: {os.cpu_count()} cores, load average {before}, Python {platform.python_version()}, "
          f"commit {(prov.get('git_commit') or 'unknown')[:12]}{' (dirty)' if prov.get('git_dirty') else ''}", flush=True)
    rows = run(a)
    header = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "cores": os.cpu_count(),
              "machine": f"{platform.machine()}, {platform.system()}", "load_before": before, "load_after": load(),
              "commit": (prov.get("git_commit") or "unknown")[:12], "dirty": bool(prov.get("git_dirty")),
              "command": "python benchmarks/run_all.py" + (" --quick" if a.quick else "")
              + (f" --skip {a.skip}" if skip else ""), "seconds": time.monotonic() - t0}
    text = table(rows, header)
    print()
    print(text)
    if a.write_readme:
        write_readme(text)
        print(f"\nwrote the table into {README.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
