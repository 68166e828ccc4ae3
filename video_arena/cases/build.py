"""`video-arena build-cases`: build the built-in cases of every game that has a plugin.

    video-arena build-cases [--games g,..] [--tasks-root DIR] [--media-root DIR] [--media-only | --gt-only]
                            [--force-values] [--cases N] [--case-ids ID,..] [--seed N] [--jobs N]

Cases are built in parallel, one process per core by default (`--jobs N`); the bytes do not depend
on the number of processes.

For each game: the plugin selects N records (seeded), each gets an 8-character case id derived from
the seed and the record's source id (stable across rebuilds), its events are paced on the video's
1/fps grid (seeded per case), V_t is taken from the committed ground truth when it already holds
values for the same record and evaluator (else the engine computes them), and the build writes

    tasks/<game>/gt/<case_id>.json     ground truth (docs/ARCHITECTURE.md), incl. the record and V_t
    tasks/<game>/cases.json            case ids, duration, event count, a source summary (no events)
    tasks/<game>/media/<case_id>.mp4   H.264, bit-exact across rebuilds (gitignored)
    tasks/<game>/manifest.json         provenance and the SHA-256 of every gt and media file

`build-cases --records DIR --games G --tasks-root T [--count N]` makes a private set of a folder of a
user's own records instead (video_arena/importing/private_set.py; docs/IMPORTING.md).

`--media-only` re-renders the media of the cases in cases.json from their committed ground truth
(never runs an engine, needs no data file) and checks the bytes against the manifest; the cases of
all the games share one pool, the costliest first.  `--gt-only` re-makes the committed ground truth and
manifests from themselves (no engine, no data file, no media) after a change of a game's definition (its
`version`): the command that re-stamps the built-in cases.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import string
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any
import multiprocessing
from collections import Counter

from video_arena.digests import sha256_file
from video_arena import paths
from video_arena.progress import bar as progress_bar
from video_arena.media.encode import encode_mp4, encoder_info, picture_size
from video_arena.media.pacing import Schedule, schedule_from_times
from video_arena.core.tasks import (CASE_ID_RE, GAME_VERSION_KEY, GT_FORMAT, MAX_GT_BYTES, MANIFEST_FORMAT,
                                    VALUE_DECIMALS, TasksTree, TasksTreeError, read_tree_json, tree_json,
                                    write_tree_file)
from video_arena.games.base import BUILTIN_CASES, SELECTION_SEED, GamePlugin, game_names, load_plugin
from video_arena.cli_args import comma_list

DEFAULT_SEED = SELECTION_SEED
DEFAULT_CASES = BUILTIN_CASES
ID_ALPHABET = string.ascii_letters + string.digits


class BuildError(RuntimeError):
    pass


# -- ids, rng, serialization ------------------------------------------------------------------------

def case_id_for(game: str, seed: int, source_id: str, taken: set[str] | None = None) -> str:
    """8 random [A-Za-z0-9] characters, a pure function of (game, seed, source id): stable across
    rebuilds. `taken` resolves the (astronomically unlikely) collision deterministically."""
    for attempt in range(100):
        rng = random.Random(f"video-arena/case-id/{game}/{seed}/{source_id}/{attempt}")
        cid = "".join(rng.choice(ID_ALPHABET) for _ in range(8))
        if not taken or cid not in taken:
            return cid
    raise BuildError(f"cannot find a free case id for {game}/{source_id}")  # pragma: no cover


def pacing_rng(game: str, case_id: str) -> random.Random:
    return random.Random(f"video-arena/pacing/{game}/{case_id}")


def source_id(record: dict[str, Any]) -> str:
    try:
        sid = record["source"]["id"]
    except (KeyError, TypeError):
        raise BuildError("a record must carry source.id (a stable identifier of the match)") from None
    return str(sid)


# -- ground truth ------------------------------------------------------------------------------------

def round_value(v: float, lo: float, hi: float, where: str) -> float:
    v = float(v)
    if not math.isfinite(v) or not (lo - 1e-9 <= v <= hi + 1e-9):
        raise BuildError(f"{where}: V_t {v!r} is outside [{lo}, {hi}]")
    return round(min(hi, max(lo, v)), VALUE_DECIMALS)


def make_gt(plugin: GamePlugin, case_id: str, record: dict[str, Any], values: list[float],
            sched: Schedule, evaluator: dict[str, Any]) -> dict[str, Any]:
    d = plugin.definition
    steps = plugin.replay(record)
    if len(values) != len(steps) + 1:
        raise BuildError(f"{plugin.name}/{case_id}: {len(values)} values for {len(steps)} steps (need steps + 1)")
    if len(sched.event_frames) != len(steps):
        raise BuildError(f"{plugin.name}/{case_id}: {len(sched.event_frames)} event times for {len(steps)} steps")
    lo, hi = plugin.value_range
    vals = [round_value(v, lo, hi, f"{plugin.name}/{case_id} position {i}") for i, v in enumerate(values)]
    times = sched.times
    events = []
    for i, (step, t) in enumerate(zip(steps, times)):
        if step.type not in d.event_types or step.actor not in d.sides:
            raise BuildError(f"{plugin.name}/{case_id} step {i}: {step} is outside the game's vocabulary")
        where = "" if step.type in d.types_without_where else step.where
        vb, va = vals[i], vals[i + 1]
        events.append({"t": t, "type": step.type, "actor": step.actor, "where": where,
                       "delta": d.delta_of(vb, va), "state": d.state_of(va), "v_before": vb, "v_after": va})
    return {
        "format": GT_FORMAT,
        "game": plugin.name,
        GAME_VERSION_KEY: d.version,
        "case_id": case_id,
        "spec": d.judge_spec(),
        "duration_s": sched.duration_s,
        "events": events,
        "v_series": [[0.0, vals[0]]] + [[t, v] for t, v in zip(times, vals[1:])],
        "v_definition": " ".join(d.value_definition.split()),
        "evaluator": evaluator,
        "video": {"fps": sched.fps, "n_frames": sched.n_frames,
                  "width": d.render_size[0], "height": d.render_size[1]},
        "record": record,
    }


def values_of_gt(gt: dict[str, Any]) -> list[float]:
    return [float(v) for _, v in gt["v_series"]]


def schedule_of_gt(gt: dict[str, Any]) -> Schedule:
    return schedule_from_times([e["t"] for e in gt["events"]], int(gt["video"]["fps"]), int(gt["video"]["n_frames"]))


def cached_values(gt_path: Path, record: dict[str, Any], evaluator: dict[str, Any], steps: list[Any],
                  times: list[float] | None = None) -> list[float] | None:
    """V_t from the committed ground truth if it is for the same record, evaluator and events (type and
    actor of each; with `times`, for a continuous game whose V_t depends on when, also each event's time),
    else None: a change to a plugin's event rules must not keep values computed for other events."""
    if not gt_path.is_file():
        return None
    try:
        gt = read_tree_json(gt_path, cap=MAX_GT_BYTES)
        if gt.get("record") != json.loads(json.dumps(record)) or gt.get("evaluator") != evaluator:
            return None
        events = gt["events"]
        if [(e["type"], e["actor"]) for e in events] != [(s.type, s.actor) for s in steps]:
            return None
        if times is not None and [float(e["t"]) for e in events] != [float(t) for t in times]:
            return None
        values = values_of_gt(gt)
    except (ValueError, KeyError, TypeError):
        return None
    return values if len(values) == len(steps) + 1 else None


# -- media -------------------------------------------------------------------------------------------

def _checked_positions(plugin: GamePlugin, images):
    size = tuple(plugin.definition.render_size)
    for i, image in enumerate(images):
        if picture_size(image) != size:
            raise BuildError(f"{plugin.name}: position {i} renders at {picture_size(image)}, game.toml says {size}")
        yield image


def render_media(plugin: GamePlugin, gt: dict[str, Any], media_path: Path) -> None:
    sched = schedule_of_gt(gt)
    images, position_of_frame = plugin.video(gt["record"], sched)
    encode_mp4(_checked_positions(plugin, images), position_of_frame, sched.fps, media_path)


# -- one case ----------------------------------------------------------------------------------------

def build_case(game: str, record: dict[str, Any], case_id: str, tasks_root: str | Path, media_root: str | Path,
               force_values: bool = False, progress=None, with_media: bool = True) -> dict[str, Any]:
    """Build one case's ground truth (and media); returns its summary (no events)."""
    t0 = time.monotonic()
    plugin = _plugin(game)
    tree = TasksTree(tasks_root, media_root)
    gt_path, media_path = tree.gt(game, case_id), tree.media(game, case_id)
    steps = plugin.replay(record)
    evaluator = plugin.evaluator()
    sched = plugin.pace(record, pacing_rng(game, case_id))
    values = None if force_values else cached_values(gt_path, record, evaluator, steps,
                                                     list(sched.times) if plugin.continuous else None)
    evaluated = values is None
    if values is None:
        values = plugin.evaluate(record, progress=progress)
    t_eval = time.monotonic() - t0
    gt = make_gt(plugin, case_id, record, list(values), sched, evaluator)
    write_tree_file(gt_path, tree_json(gt))
    t1 = time.monotonic()
    if with_media:
        render_media(plugin, gt, media_path)
    return _summary(plugin, gt, gt_path, media_path if with_media else None) | {
        "evaluated": evaluated, "eval_s": round(t_eval, 2), "media_s": round(time.monotonic() - t1, 2)}


def media_only_case(game: str, case_id: str, tasks_root: str | Path, media_root: str | Path) -> dict[str, Any]:
    t1, c1 = time.monotonic(), time.process_time()
    plugin = _plugin(game)
    tree = TasksTree(tasks_root, media_root)
    gt_path, media_path = tree.gt(game, case_id), tree.media(game, case_id)
    if not gt_path.is_file():
        raise BuildError(f"{gt_path} is missing: --media-only renders from committed ground truth")
    gt = tree.read_gt(game, case_id)
    render_media(plugin, gt, media_path)
    return _summary(plugin, gt, gt_path, media_path) | {"evaluated": False, "eval_s": 0.0,
                                                        "media_s": round(time.monotonic() - t1, 2),
                                                        "cpu_s": time.process_time() - c1}


def _summary(plugin: GamePlugin, gt: dict[str, Any], gt_path: Path, media_path: Path | None) -> dict[str, Any]:
    out = {
        "case_id": gt["case_id"],
        "duration_s": gt["duration_s"],
        "n_events": len(gt["events"]),
        "source": plugin.case_summary(gt["record"]),
        "manifest": {
            "source": gt["record"].get("source", {}),
            "evaluator": gt.get("evaluator", {}),
            "gt_sha256": sha256_file(gt_path),
        },
    }
    if media_path is not None:
        out["manifest"] |= {"media_sha256": sha256_file(media_path), "media_bytes": media_path.stat().st_size}
    return out


_PLUGINS: dict[str, GamePlugin] = {}


def _plugin(game: str) -> GamePlugin:
    if game not in _PLUGINS:
        plugin = load_plugin(game)
        if plugin is None:
            raise BuildError(f"game {game!r} has no plugin.py: its cases come from an external tasks tree")
        _PLUGINS[game] = plugin
    return _PLUGINS[game]


# -- one game ----------------------------------------------------------------------------------------

def select(game: str, n: int, seed: int) -> list[tuple[str, dict[str, Any]]]:
    """[(case_id, record)] in selection order."""
    records = _plugin(game).select_records(n, seed)
    if len(records) != n:
        raise BuildError(f"{game}: select_records({n}) returned {len(records)} records")
    taken: set[str] = set()
    out = []
    for rec in records:
        cid = case_id_for(game, seed, source_id(rec), taken)
        taken.add(cid)
        out.append((cid, rec))
    return out


def build_game(game: str, tasks_root: Path, media_root: Path, n_cases: int = DEFAULT_CASES, seed: int = DEFAULT_SEED,
               jobs: int = 1, force_values: bool = False, media_only: bool = False, only: set[str] | None = None,
               bar=None, log=print, record_media: bool = False) -> list[dict[str, Any]]:
    if media_only:
        done_, failed_ = render_media_all([game], tasks_root, media_root, jobs=jobs, only=only, bar=bar, log=log,
                                          record_media=record_media)
        if game in failed_:
            raise failed_[game]
        return done_[game]
    plugin = _plugin(game)
    tree = TasksTree(tasks_root, media_root)
    _game_dir(game, tasks_root)
    selected = select(game, n_cases, seed)
    kept = set(_subset(game, [cid for cid, _ in selected], only))
    work = [(cid, rec) for cid, rec in selected if cid in kept]

    results: dict[str, dict[str, Any]] = {}

    def done(summary):
        results[summary["case_id"]] = summary
        if bar is not None:
            bar.set_postfix_str(f"{game}/{summary['case_id']} eval {summary['eval_s']}s media {summary['media_s']}s")
            bar.update(1)

    def call(cid, rec, progress=None):
        return build_case, (game, rec, cid, tasks_root, media_root, force_values, progress)

    jobs = max(1, min(jobs, len(work)))
    if jobs <= 1:
        for cid, rec in work:
            progress = _inner_progress(bar, game, cid)
            fn, args = call(cid, rec, progress)
            done(fn(*args))
    else:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=_pool_context(),
                                 initializer=_register_plugins, initargs=({game: plugin},)) as pool:
            futures = [pool.submit(*((fn,) + args)) for fn, args in (call(cid, rec) for cid, rec in work)]
            for fut in as_completed(futures):
                done(fut.result())

    # cases.json and the manifest describe the whole selection; cases outside a --case-ids subset keep
    # their previous manifest entries.
    old_entries = tree.manifest_cases(game)
    cases, entries = [], []
    for cid, rec in selected:
        if cid in results:
            s = results[cid]
            cases.append({k: s[k] for k in ("case_id", "duration_s", "n_events", "source")})
            entries.append({"case_id": cid, **s["manifest"]})
        elif cid in old_entries and tree.gt(game, cid).is_file():
            gt = tree.read_gt(game, cid)
            cases.append({"case_id": cid, "duration_s": gt["duration_s"], "n_events": len(gt["events"]),
                          "source": plugin.case_summary(gt["record"])})
            entries.append(old_entries[cid])
        else:
            raise BuildError(f"{game}/{cid} was not built and has no previous build: build it too")
    write_tree_file(tree.cases_path(game), tree_json({"game": game, "cases": cases}))
    tree.write_manifest(game, _manifest(plugin, seed, entries))
    if not only:
        keep = {cid for cid, _ in selected}
        for stale in tree.gt_files(game):
            if stale.stem not in keep:
                log(f"{game}: removing stale ground truth {stale.name} (not in this selection)")
                stale.unlink()
    return [results[cid] for cid, _ in selected if cid in results]


def restamp_game(game: str, tasks_root: Path) -> int:
    """`--gt-only`: re-make each listed ground truth of `game` from the record, event times and V_t it holds
    (no engine, no data file, no media) under the game's current definition (its version, `spec`,
    `v_definition`), and the manifest's version and gt digests with them; its media digests are kept (the
    picture is the record's and the times').  Returns the number of files rewritten."""
    plugin, tree = _plugin(game), TasksTree(tasks_root)
    manifest = tree.read_manifest(game)
    if manifest is None:
        raise BuildError(f"{tree.manifest_path(game)} is missing: build the game's cases first")
    entries = {c.get("case_id"): c for c in manifest.get("cases") or []}
    changed = 0
    for cid in tree.listed_case_ids(game):
        if cid not in entries or not tree.gt(game, cid).is_file():
            raise BuildError(f"{game}/{cid} has no ground truth or manifest entry: build it (--case-ids {cid})")
        old = tree.read_gt(game, cid)
        try:
            new = make_gt(plugin, cid, old["record"], values_of_gt(old), schedule_of_gt(old), old["evaluator"])
            same = [(e["t"], e["type"], e["actor"]) for e in new["events"]] == \
                [(e["t"], e["type"], e["actor"]) for e in old["events"]] and new["duration_s"] == old["duration_s"]
        except (KeyError, TypeError, ValueError, BuildError) as exc:
            same, new = False, str(exc)
        if not same:
            raise BuildError(f"{game}/{cid}: the ground truth cannot be re-made from itself (its events or times are "
                             f"not the plugin's now{': ' + new if isinstance(new, str) else ''}): rebuild it with "
                             f"the engine (build-cases --games {game} --case-ids {cid})")
        changed += write_tree_file(tree.gt(game, cid), tree_json(new))
        entries[cid]["gt_sha256"] = sha256_file(tree.gt(game, cid))
    doc: dict[str, Any] = {}
    for k, v in manifest.items():  # the version right after the game, as _manifest writes it
        if k != GAME_VERSION_KEY:
            doc[k] = v
        if k == "game":
            doc[GAME_VERSION_KEY] = plugin.definition.version
    return changed + tree.write_manifest(game, doc)


def _game_dir(game: str, tasks_root: Path) -> Path:
    gdir = tasks_root / game
    if not (gdir / "game.toml").is_file():
        raise BuildError(f"{gdir}/game.toml is missing: run `video-arena games sync` first")
    return gdir


def _subset(game: str, ids: list[str], only: set[str] | None) -> list[str]:
    """The case ids a `--case-ids` subset keeps (all without one); a subset that keeps none is an error."""
    kept = [cid for cid in ids if not only or cid in only]
    if only and not kept:
        raise BuildError(f"{game}: none of the case ids {sorted(only)} is in this build")
    return kept


def _media_case_ids(game: str, tasks_root: Path, only: set[str] | None) -> list[str]:
    gdir = _game_dir(game, tasks_root)
    ids = TasksTree(tasks_root).listed_case_ids(game)
    if not ids:
        raise BuildError(f"{gdir}/cases.json lists no cases: build them first (without --media-only)")
    return _subset(game, ids, only)


#: Rough CPU per video frame, relative: a continuous-play frame is drawn and encoded anew, a board game
#: repeats its position between events (measured: about 6 ms against 2 ms).
CONTINUOUS_FRAME_COST = 3


def render_media_all(games: list[str], tasks_root: Path, media_root: Path, jobs: int = 1,
                     only: set[str] | None = None, bar=None, log=print, record_media: bool = False,
                     on_game_done=None) -> tuple[dict[str, list[dict[str, Any]]], dict[str, BuildError]]:
    """`--media-only` for several games in one pool: every case of every game, the costliest first
    (frames, times CONTINUOUS_FRAME_COST for continuous play), so no core waits at one game's end while
    another game's videos are still to do. Each game's videos are checked against its manifest as soon
    as its last case is done, and `on_game_done(game, summaries)` is called then.
    Returns ({game: summaries}, {game: the BuildError that stopped it})."""
    plugins, failed, work = {}, {}, []
    tree = TasksTree(tasks_root, media_root)
    for game in games:
        try:
            plugins[game] = _plugin(game)
            ids = _media_case_ids(game, tasks_root, only)
        except BuildError as exc:
            failed[game] = exc
            continue
        weight = CONTINUOUS_FRAME_COST if plugins[game].continuous else 1
        work += [(weight * _n_frames(tree, game, cid), game, cid) for cid in ids]
    work.sort(key=lambda w: -w[0])
    left = {g: sum(1 for _, game, _ in work if game == g) for g in plugins if g not in failed}
    results: dict[str, dict[str, dict[str, Any]]] = {g: {} for g in left}
    done: dict[str, list[dict[str, Any]]] = {}

    def finished(game: str, summary: dict[str, Any] | None, exc: BuildError | None = None) -> None:
        if exc is not None and game not in failed:
            failed[game] = exc
        if summary is not None:
            results[game][summary["case_id"]] = summary
            if bar is not None:
                bar.set_postfix_str(f"{game}/{summary['case_id']} media {summary['media_s']}s")
                bar.update(1)
        left[game] -= 1
        if left[game] == 0 and game not in failed:
            done[game] = _check_media_against_manifest(game, tree, results[game], log, record_media)
            if on_game_done is not None:
                on_game_done(game, done[game])

    jobs = max(1, min(jobs, len(work)))
    if jobs <= 1:
        for _, game, cid in work:
            try:
                finished(game, media_only_case(game, cid, tasks_root, media_root))
            except BuildError as exc:
                finished(game, None, exc)
    elif work:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=_pool_context(),
                                 initializer=_register_plugins, initargs=(plugins,)) as pool:
            futures = {pool.submit(media_only_case, game, cid, tasks_root, media_root): game for _, game, cid in work}
            for fut in as_completed(futures):
                try:
                    finished(futures[fut], fut.result())
                except BuildError as exc:
                    finished(futures[fut], None, exc)
    return done, failed


def _manifest(plugin: GamePlugin, seed: int, entries: list[dict[str, Any]]) -> dict[str, Any]:
    prov = plugin.provenance()
    licence = prov.get("licence", "")
    cases = []
    for e in entries:
        e = dict(e)
        e.setdefault("licence", e.get("source", {}).get("licence", licence))
        cases.append(e)
    return {
        "format": MANIFEST_FORMAT,
        "game": plugin.name,
        GAME_VERSION_KEY: plugin.definition.version,
        "seed": seed,
        "n_cases": len(cases),
        "provenance": prov,
        "pacing": {"fps": plugin.fps, "lead_in_s": plugin.lead_in_s, "tail_s": plugin.tail_s},
        "encoder": encoder_info(),
        "rebuild": f"video-arena build-cases --games {plugin.name}  (media only: add --media-only)",
        "cases": cases,
    }


def _check_media_against_manifest(game: str, tree: TasksTree, results: dict[str, dict[str, Any]], log,
                                  record: bool = False) -> list[dict[str, Any]]:
    """Compare each re-rendered video with the manifest; with `record` (`--record-media`), write the new
    digests, sizes and encoder versions into the manifest instead (after a deliberate renderer or encoder
    change; the ground truth is untouched, and the log names every case whose digest changed)."""
    manifest = tree.read_manifest(game) or {"cases": []}
    entries = {c["case_id"]: c for c in manifest.get("cases", [])}
    out, changed = [], []
    for cid, s in results.items():
        want = entries.get(cid, {}).get("media_sha256")
        got = s["manifest"].get("media_sha256")
        if want != got and record and cid in entries:
            log(f"{game}/{cid}: media SHA-256 {str(want)[:12]} -> {got[:12]} recorded in the manifest")
            entries[cid]["media_sha256"] = got
            entries[cid]["media_bytes"] = s["manifest"].get("media_bytes")
            changed.append(cid)
            want = got
        s["media_matches_manifest"] = want == got
        if want != got:
            log(f"{game}/{cid}: media SHA-256 {got[:12]} differs from the manifest's {str(want)[:12]} "
                f"(different PyAV/x264/Pillow/font versions? see docs/CASES.md; --record-media records it)")
        out.append(s)
    if record:
        manifest["encoder"] = encoder_info()
        tree.write_manifest(game, manifest)
    return out


def class_shares(tasks_root: Path, game: str) -> dict[str, Any]:
    """Share of events per delta and per state class over a game's built cases (a T2 that is ~95 %
    `flat` measures little: docs/CASES.md)."""

    delta, state, types, n = Counter(), Counter(), Counter(), 0
    tree = TasksTree(tasks_root)
    for case_id in tree.listed_case_ids(game):
        gt = tree.read_gt(game, case_id, None)
        if gt is None:
            continue
        for e in gt["events"]:
            delta[e["delta"]] += 1
            state[e["state"]] += 1
            types[e["type"]] += 1
            n += 1
    share = lambda c: {k: round(v / n, 3) for k, v in sorted(c.items())} if n else {}  # noqa: E731
    return {"n_events": n, "delta": share(delta), "state": share(state), "types": dict(types.most_common())}


def _n_frames(tree: TasksTree, game: str, case_id: str) -> int:
    try:
        return int(tree.read_gt(game, case_id, {})["video"]["n_frames"])
    except (KeyError, TypeError, ValueError):
        return 0


def _pool_context():
    """forkserver/spawn, never fork: a forked child inherits PyAV/FFmpeg state mid-use and can hang."""

    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _register_plugins(plugins: dict[str, GamePlugin]) -> None:
    """Worker initializer: the parent's plugin objects (pickled), so a worker builds with exactly the
    plugin the caller registered (a test's synthetic game too)."""
    _PLUGINS.update(plugins)


def default_jobs() -> int:
    """Every core this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def planned_cases(tasks_root: Path, games: list[str], n_cases: int, media_only: bool, only: set[str] | None) -> int:
    """How many cases a build-cases run will build (the progress bar's total)."""
    total = 0
    for game in games:
        if media_only:
            ids = TasksTree(tasks_root).listed_case_ids(game)
            total += sum(1 for cid in ids if not only or cid in only)
        else:
            total += n_cases
    return min(total, len(only)) if only else total


def _inner_progress(bar, game: str, cid: str):
    if bar is None:
        return None

    def progress(done: int, total: int) -> None:
        bar.set_postfix_str(f"{game}/{cid} V_t {done}/{total}", refresh=done == total or done % 10 == 0)

    return progress


# -- CLI ---------------------------------------------------------------------------------------------

def plugin_games() -> list[str]:
    """Games with built-in cases: every game folder with a plugin.py (plus plugins registered in
    _PLUGINS by a caller, e.g. a test's synthetic game)."""
    return sorted({g for g in game_names() if load_plugin(g) is not None} | set(_PLUGINS))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="video-arena build-cases", description=__doc__,
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
    ap.add_argument("--gt-only", action="store_true",
                    help="re-make the committed ground truth and manifests from themselves (no engine, no media): "
                         "after a change of a game's definition (game.toml `version`, texts)")
    ap.add_argument("--cases", type=int, default=DEFAULT_CASES, help=f"cases per game (default {DEFAULT_CASES})")
    ap.add_argument("--case-ids", default=None, help="comma-separated case ids: rebuild only these")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"selection seed (default {DEFAULT_SEED})")
    ap.add_argument("--jobs", type=int, default=None,
                    help="cases built in parallel (processes; default: every core, here %d)" % default_jobs())
    ap.add_argument("--no-progress", action="store_true", help="no progress bar (also: VA_NO_PROGRESS=1)")
    a = ap.parse_args(argv)
    if a.media_only and a.force_values:
        ap.error("--media-only never runs the engine; drop --force-values")
    if a.gt_only and (a.media_only or a.force_values or a.case_ids):
        ap.error("--gt-only re-makes every listed case from its own ground truth; drop --media-only, "
                 "--force-values and --case-ids")
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
    if a.gt_only:
        for game in games:
            try:
                n = restamp_game(game, tasks_root)
            except (BuildError, TasksTreeError) as exc:
                print(f"{game}: FAILED: {exc}", file=sys.stderr)
                return 1
            print(f"{game}: {n} file(s) rewritten from the committed ground truth (game version "
                  f"{_plugin(game).definition.version})")
        return 0

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
