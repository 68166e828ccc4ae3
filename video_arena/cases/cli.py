"""The command line of `video-arena build-cases` (video_arena/cases/build.py builds; this module parses and
reports).

    video-arena build-cases [--games g,..] [--tasks-root DIR] [--media-root DIR] [--media-only]
                            [--force-values] [--cases N] [--case-ids ID,..] [--seed N] [--jobs N]
        the built-in cases (video_arena/cases/build.py says how they are selected and built)
    video-arena build-cases --records DIR --games G --tasks-root T [--count N] [--seed S]
                            [--licence L] [--source S] [--media-root DIR] [--replace]
        a private set: cases of a folder of a user's own match records in the game's format (its game.toml's
        [import] record_formats, the files found by their endings, e.g. *.pgn), selected by the game's own
        rules (a record they refuse, a match the V_t model was fitted on and a second copy of a match are
        left out, one line each), then a seeded pick of N (default: all), stable for one seed and one set of
        matches whatever the file names.  Each case is written as `import-cases --FORMAT` writes it (the
        same code): events, V_t and video from the plugin, the files' SHA-256 in the manifest, a match that
        is a built-in case's flagged ("public_match").  Nothing is written unless every chosen case builds.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from video_arena import paths
from video_arena.cases import build as B
from video_arena.cases.build import (CASE_ID_RE, DEFAULT_CASES, DEFAULT_SEED, BuildError, build_game, class_shares,
                                     default_jobs, planned_cases, plugin_games, render_media_all)
from video_arena.cli_args import comma_list
from video_arena.core.tasks import TasksTree
from video_arena.progress import bar as progress_bar

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="video-arena build-cases", description=B.__doc__ + __doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", default=None, help="comma-separated games (default: every game with a plugin)")
    ap.add_argument("--tasks-root", default=None, help="tasks tree to write (default: the checkout's tasks/)")
    ap.add_argument("--media-root", default=None, help="where <game>/media/ goes (default: $VA_MEDIA_ROOT or the tasks root)")
    ap.add_argument("--media-only", action="store_true",
                    help="re-render media from the committed ground truth (no engine) and check it against the manifest")
    ap.add_argument("--record-media", action="store_true",
                    help="with --media-only: record the re-rendered media's digests in the manifest instead of "
                         "failing on a difference (after a deliberate renderer or encoder change)")
    ap.add_argument("--force-values", action="store_true", help="recompute V_t even when the ground truth holds it")
    ap.add_argument("--cases", type=int, default=DEFAULT_CASES, help=f"cases per game (default {DEFAULT_CASES})")
    ap.add_argument("--case-ids", default=None, help="comma-separated case ids: rebuild only these")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"selection seed (default {DEFAULT_SEED})")
    ap.add_argument("--jobs", type=int, default=None,
                    help="cases built in parallel (processes; default: every core, here %d)" % default_jobs())
    ap.add_argument("--no-progress", action="store_true", help="no progress bar (also: VA_NO_PROGRESS=1)")
    ap.add_argument("--records", type=Path, default=None, metavar="DIR",
                    help="a private set from a folder of match records in the game's format (with --games G)")
    ap.add_argument("--count", type=int, default=None, metavar="N",
                    help="with --records: N cases, a seeded pick of the records that qualify (default: all of them)")
    ap.add_argument("--licence", default=None, help="with --records: the records' licence (default: not stated)")
    ap.add_argument("--source", default=None, help="with --records: where the records come from")
    ap.add_argument("--replace", action="store_true", help="with --records: overwrite cases whose id already exists")
    a = ap.parse_args(argv)
    if a.records is not None:
        from video_arena.cases.records import records_main

        return records_main(ap, a)
    for name in ("count", "licence", "source"):
        if getattr(a, name) is not None:
            ap.error(f"--{name} goes with --records")
    if a.replace:
        ap.error("--replace goes with --records")
    if a.media_only and a.force_values:
        ap.error("--media-only never runs the engine; drop --force-values")
    if a.record_media and not a.media_only:
        ap.error("--record-media goes with --media-only (a full build writes the manifest anyway)")
    if a.cases < 1:
        ap.error("--cases must be >= 1")
    if a.jobs is not None and a.jobs < 1:
        ap.error("--jobs must be >= 1")
    jobs = a.jobs or default_jobs()
    available = plugin_games()
    games = comma_list(a.games) if a.games else available
    unknown = [g for g in games if g not in available]
    if unknown:
        ap.error(f"no built-in cases for {unknown}; games with a plugin: {', '.join(available) or 'none'}")
    only = set(comma_list(a.case_ids)) if a.case_ids else None
    if only:
        bad = [c for c in only if not CASE_ID_RE.match(c)]
        if bad:
            ap.error(f"bad case ids {bad}")
    tasks_root = Path(a.tasks_root).resolve() if a.tasks_root else paths.default_tasks_root()
    tasks_root.mkdir(parents=True, exist_ok=True)
    if a.media_only and not a.games:  # every game that has cases: a plugin whose cases are not built yet is no error
        unbuilt = [g for g in games if not TasksTree(tasks_root).listed_case_ids(g)]
        for g in unbuilt:
            print(f"{g}: no cases in {TasksTree(tasks_root).cases_path(g)} yet; skipped "
                  "(build them without --media-only)")
        games = [g for g in games if g not in unbuilt]
        if not games:
            print(f"build-cases: no game has cases in {tasks_root}: nothing to re-render", file=sys.stderr)
            return 1
    media_root = paths.media_root(tasks_root, a.media_root)

    n_total = planned_cases(tasks_root, games, a.cases, a.media_only, only)
    failed = 0
    # a bar with total and ETA on a terminal, silent in logs and CI (the per-game lines stay)
    with progress_bar(n_total, "build-cases", "case", enabled=not a.no_progress) as bar:
        if a.media_only:
            t0 = time.monotonic()

            def game_done(game: str, res: list[dict[str, Any]]) -> None:
                nonlocal failed
                mism = sum(1 for r in res if r.get("media_matches_manifest") is False)
                cpu = sum(r.get("cpu_s", 0.0) for r in res)
                sizes = [r["manifest"]["media_bytes"] for r in res if r.get("manifest", {}).get("media_bytes")]
                size = (f"; {sum(sizes) / 1e6:.1f} MB, {min(sizes) / 1e6:.2f}-{max(sizes) / 1e6:.2f} MB each"
                        if sizes else "")
                bar.write(f"{game}: {len(res)} media re-rendered from the committed gt ({cpu:.1f}s CPU in the "
                          f"renderers; all done {time.monotonic() - t0:.1f}s after the start); "
                          f"{len(res) - mism} match the manifest" + (f", {mism} DIFFER" if mism else "") + size)
                failed += bool(mism)

            _, stopped = render_media_all(games, tasks_root, media_root, jobs=jobs, only=only, bar=bar,
                                          log=bar.write, record_media=a.record_media, on_game_done=game_done)
            for game, exc in stopped.items():
                bar.write(f"{game}: FAILED: {exc}")
            failed += len(stopped)
            bar.write(f"media: {sum(1 for g in games if g not in stopped)} game(s) in {time.monotonic() - t0:.1f}s "
                      f"on {jobs} process(es)")
            return 1 if failed else 0
        for game in games:
            t0 = time.monotonic()
            try:
                res = build_game(game, tasks_root, media_root, n_cases=a.cases, seed=a.seed, jobs=jobs,
                                 force_values=a.force_values, only=only, bar=bar, log=bar.write)
            except BuildError as exc:
                bar.write(f"{game}: FAILED: {exc}")
                failed += 1
                continue
            n_eval = sum(r["evaluated"] for r in res)
            bar.write(f"{game}: {len(res)} cases in {time.monotonic() - t0:.1f}s "
                      f"({n_eval} evaluated by the engine, {len(res) - n_eval} from committed V_t)")
            sh = class_shares(tasks_root, game)
            bar.write(f"{game}: {sh['n_events']} events {sh['types']}; delta {sh['delta']}; state {sh['state']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
