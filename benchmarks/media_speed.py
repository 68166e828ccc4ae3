#!/usr/bin/env python3
"""What re-rendering the built-in videos costs, per game (issue 14: all 80 videos in 5 minutes or less on
2 cores).

For each game with cases and a renderer, renders ONE case from its committed ground truth with the
package's own code, exactly what `video-arena build-cases --media-only` runs for it
(video_arena.cases.build.media_only_case, whatever encoder settings are current), into a temporary
media folder, and prints its wall and CPU time (user + system of this process and its children,
every thread counted) and the CPU per video frame. The game's total is EXTRAPOLATED from that one
video by frame count (CPU per frame x the frames of all its cases): rendering cost per frame differs
between cases a little, so the total is an estimate, said so in the output. The file's SHA-256 is
compared with the game's manifest (bit-exact rebuild).

    python benchmarks/media_speed.py [--games chess,go] [--quick] [--whole-pictures]
                                     [--compare-encoder PRESET[/X264_PARAMS]]

The case is the median one by frame count (--quick: the shortest). --whole-pictures also encodes that
case the plain way for a game whose frames are each drawn anew (a plugin with `frame_image`:
gfootball): every frame's picture drawn whole and converted whole to yuv420p, against the plugin's
`video` (one canvas redrawn round the sprites, converted round them); it prints the CPU ratio and
whether the bytes are the same. --compare-encoder also renders that case with other x264 settings
(a preset, and x264-params instead of the shipped ones, e.g. the former
`veryfast/me=dia:subme=1:aq-mode=0:mbtree=0`) and prints the shipped settings' CPU and bytes as ratios
to them (docs/CASES.md, "Encoder settings").
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GOAL_S, GOAL_CORES, GOAL_VIDEOS = 300.0, 2, 80
#: The games whose 80 videos the goal was set on (gfootball's 20 came later).
GOAL_GAMES = ("chess", "doudizhu", "go", "gomoku")


def cpu_s() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _frames(gt_path: Path) -> int:
    return int(json.loads(gt_path.read_text(encoding="utf-8"))["video"]["n_frames"])


def measure_game(game: str, tasks_root: Path, quick: bool = False) -> dict:
    """One case of `game` rendered; the figures and the extrapolation to all its cases."""
    from video_arena.cases import build as B
    from video_arena.core.tasks import load_cases

    cases = [c["case_id"] for c in load_cases(game, tasks_root)]
    if not cases:
        return {"game": game, "skipped": "no cases in the tasks tree"}
    frames = {cid: _frames(tasks_root / game / "gt" / f"{cid}.json") for cid in cases}
    order = sorted(cases, key=lambda c: (frames[c], c))
    cid = order[0] if quick else order[len(order) // 2]
    manifest = {}
    mpath = tasks_root / game / "manifest.json"
    if mpath.is_file():
        manifest = {c["case_id"]: c for c in json.loads(mpath.read_text(encoding="utf-8")).get("cases", [])}
    B._plugin(game)  # loaded once per worker in a build-cases run too: not counted
    with tempfile.TemporaryDirectory(prefix="va-media-bench-") as tmp:
        c0, w0 = cpu_s(), time.perf_counter()
        summary = B.media_only_case(game, cid, tasks_root, Path(tmp))
        wall, cpu = time.perf_counter() - w0, cpu_s() - c0
    per_frame = cpu / frames[cid]
    want = manifest.get(cid, {}).get("media_sha256")
    got = summary["manifest"]["media_sha256"]
    return {"game": game, "case_id": cid, "frames": frames[cid], "wall_s": wall, "cpu_s": cpu,
            "cpu_ms_per_frame": per_frame * 1000, "n_cases": len(cases), "game_frames": sum(frames.values()),
            "game_cpu_s_extrapolated": per_frame * sum(frames.values()),
            "bytes": summary["manifest"]["media_bytes"], "sha256": got,
            "manifest_match": None if want is None else want == got}


def measure_whole_pictures(game: str, case_id: str, tasks_root: Path) -> dict | None:
    """The case encoded from `frame_image` of every frame (drawn whole, converted whole by encode_mp4);
    None for a plugin without `frame_image`."""
    from video_arena.cases import build as B
    from video_arena.media.encode import encode_mp4
    from video_arena.digests import sha256_file

    plugin = B._plugin(game)
    if not hasattr(plugin, "frame_image"):
        return None
    gt = json.loads((tasks_root / game / "gt" / f"{case_id}.json").read_text(encoding="utf-8"))
    sched = B.schedule_of_gt(gt)
    with tempfile.TemporaryDirectory(prefix="va-media-bench-") as tmp:
        out = Path(tmp) / "whole.mp4"
        c0 = cpu_s()
        encode_mp4((plugin.frame_image(gt["record"], k) for k in range(sched.n_frames)),
                   list(range(sched.n_frames)), sched.fps, out)
        cpu = cpu_s() - c0
        return {"cpu_s": cpu, "sha256": sha256_file(out)}


def measure_other_encoder(game: str, case_id: str, tasks_root: Path, spec: str) -> dict:
    """The case rendered as `build-cases --media-only` does, with the preset and x264-params of `spec`
    (`PRESET[/X264_PARAMS]`) in place of the shipped ones: its CPU and bytes."""
    from video_arena.cases import build as B
    from video_arena.media import encode as E

    preset, _, params = spec.partition("/")
    saved = E.PRESET, dict(E.encode_mp4.__kwdefaults__)
    E.PRESET, E.encode_mp4.__kwdefaults__["x264_extra"] = preset, params
    try:
        with tempfile.TemporaryDirectory(prefix="va-media-bench-") as tmp:
            c0 = cpu_s()
            summary = B.media_only_case(game, case_id, tasks_root, Path(tmp))
            return {"spec": spec, "cpu_s": cpu_s() - c0, "bytes": summary["manifest"]["media_bytes"]}
    finally:
        E.PRESET, E.encode_mp4.__kwdefaults__ = saved[0], saved[1]


def measure_real_run(games: list[str], tasks_root: Path | None = None) -> dict:
    """Every video of `games` re-rendered for real, as `build-cases --media-only` does (one pool on every
    core, the costliest cases first) into a temporary folder: wall time, the renderers' CPU per game, and
    how many match the manifest."""
    from video_arena import paths
    from video_arena.cases import build as B

    root = paths.tasks_root(tasks_root)
    jobs = B.default_jobs()
    with tempfile.TemporaryDirectory(prefix="va-media-bench-") as tmp:
        t0 = time.perf_counter()
        done, failed = B.render_media_all(games, root, Path(tmp), jobs=jobs, log=lambda s: None)
        wall = time.perf_counter() - t0
    per_game = {g: sum(r.get("cpu_s", 0.0) for r in res) for g, res in done.items()}
    return {"games": games, "jobs": jobs, "wall_s": wall, "cpu_s": per_game,
            "videos": sum(len(res) for res in done.values()),
            "match": sum(1 for res in done.values() for r in res if r.get("media_matches_manifest")),
            "failed": {g: str(e) for g, e in failed.items()}}


def measure(games: list[str] | None = None, tasks_root: Path | None = None, quick: bool = False,
            log=print, whole_pictures: bool = False, compare_encoder: str | None = None) -> dict:
    from video_arena import paths
    from video_arena.cases.build import plugin_games

    root = paths.tasks_root(tasks_root)
    results = []
    for g in games or plugin_games():
        try:
            r = measure_game(g, root, quick)
            if whole_pictures and "skipped" not in r:
                r["whole"] = measure_whole_pictures(g, r["case_id"], root)
            if compare_encoder and "skipped" not in r:
                r["other_encoder"] = measure_other_encoder(g, r["case_id"], root, compare_encoder)
        except Exception as exc:  # one game's renderer failing is a figure to report, not a crash
            r = {"game": g, "skipped": f"render failed: {type(exc).__name__}: {exc}"}
        results.append(r)
        log(line(r))
    done = [r for r in results if "skipped" not in r]
    total_cpu = sum(r["game_cpu_s_extrapolated"] for r in done)
    n_videos = sum(r["n_cases"] for r in done)
    return {"games": results, "videos": n_videos, "total_cpu_s_extrapolated": total_cpu,
            "two_core_s_extrapolated": total_cpu / GOAL_CORES}


def line(r: dict) -> str:
    if "skipped" in r:
        return f"  {r['game']:10s} not measured: {r['skipped']}"
    match = {None: "no manifest entry", True: "same bytes as the manifest",
             False: "DIFFERENT bytes from the manifest"}[r["manifest_match"]]
    out = (f"  {r['game']:10s} case {r['case_id']} ({r['frames']} frames): {r['cpu_s']:.1f} s CPU, "
           f"{r['wall_s']:.1f} s wall, {r['cpu_ms_per_frame']:.2f} ms CPU per frame; {match}; "
           f"extrapolated to its {r['n_cases']} videos ({r['game_frames']} frames): "
           f"{r['game_cpu_s_extrapolated']:.0f} s CPU")
    whole = r.get("whole")
    if whole:
        same = "the same bytes" if whole["sha256"] == r["sha256"] else "DIFFERENT bytes"
        out += (f"\n  {'':10s} every picture drawn and converted whole: {whole['cpu_s']:.1f} s CPU; the plugin's "
                f"video takes {r['cpu_s'] / whole['cpu_s']:.2f} x that, {same}")
    other = r.get("other_encoder")
    if other:
        out += (f"\n  {'':10s} with {other['spec']}: {other['cpu_s']:.1f} s CPU, {other['bytes'] / 1e6:.2f} MB; the shipped "
                f"settings take {r['cpu_s'] / other['cpu_s']:.2f} x the CPU and {r['bytes'] / other['bytes']:.2f} x the bytes")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", default=None, help="comma-separated (default: every game with a renderer)")
    ap.add_argument("--tasks-root", type=Path, default=None)
    ap.add_argument("--quick", action="store_true", help="the shortest case of each game")
    ap.add_argument("--whole-pictures", action="store_true",
                    help="also encode each frame drawn and converted whole (games with frame_image)")
    ap.add_argument("--compare-encoder", metavar="PRESET[/X264_PARAMS]", default=None,
                    help="also render the case with these x264 settings and print the ratios")
    a = ap.parse_args()
    if a.compare_encoder is not None and not a.compare_encoder.partition("/")[0]:
        ap.error("--compare-encoder needs a preset, e.g. veryfast/me=dia:subme=1:aq-mode=0:mbtree=0")
    print(f"media speed (load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores)")
    m = measure(a.games.split(",") if a.games else None, a.tasks_root, a.quick, whole_pictures=a.whole_pictures,
                compare_encoder=a.compare_encoder)
    print(f"all {m['videos']} videos, EXTRAPOLATED from one per game: {m['total_cpu_s_extrapolated']:.0f} s CPU; "
          f"on {GOAL_CORES} cores at best {m['two_core_s_extrapolated']:.0f} s = "
          f"{m['two_core_s_extrapolated'] / GOAL_S:.2f} x the goal ({GOAL_S:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
