"""Import matches from outside (footage + event log + V_t) as cases of a tasks tree, atomically.

An `Importer` collects cases (each fully checked and its video converted into a staging folder on
the same filesystem as the tree), then `commit()` renames everything into place: media and ground
truth first, manifest.json, and cases.json last (a case is visible once cases.json names it). Any
error before the commit discards the staging folder: one bad case, nothing written.

The ground truth has the built-in format (docs/ARCHITECTURE.md, `video_arena.cases.build`): the same
GT_FORMAT, spec, rounding of V_t to 4 decimals, `delta`/`state` from `GameDefinition.delta_of` /
`state_of`, written with the same `dump_json`.  Event times are snapped to the nearest frame of the
converted video (at most half a frame); the largest shift is reported.
"""
from __future__ import annotations

import datetime as _dt
import errno
import json
import math
import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from video_arena import paths
from video_arena.cases.build import ID_ALPHABET, BuildError, build_case, round_value
from video_arena.media.pacing import frame_time
from video_arena.core.tasks import (CASE_ID_RE, DELTA_LABELS, GAME_RE, GAME_VERSION_KEY, GT_FORMAT, MANIFEST_FORMAT,
                                    GameDefinition, TasksTree, TasksTreeError, load_cases, manifest_cases,
                                    parse_game_toml, read_tree_json, tree_json)
from video_arena.digests import sha256_file
from video_arena.games.base import game_names, load_plugin
from video_arena.importing import media as M
from video_arena.core.case_origins import PUBLIC_MATCH
from video_arena.importing.contamination import fitting_refusal, public_match, record_label
from video_arena.importing.logs import ImportCaseError, LogRow, read_input
from video_arena.importing.records import RecordRefused, chosen_or_refused, read_records
from video_arena.importing.rules import NoWhereRule, where_error
from video_arena.importing.signals import Interrupted, uninterrupted
from video_arena.safe_io import link_below
from video_arena.toolkit_info import toolkit_provenance
from video_arena.games.cli import expected_files

TIME_EPS = 1e-6
IMPORTED_COLLECTION = "imported"


@dataclass
class Provenance:
    source: str
    licence: str
    value_model: str

    def check(self) -> None:
        for name in ("source", "licence", "value_model"):
            if not str(getattr(self, name)).strip():
                raise ImportCaseError(f"--{name.replace('_', '-')} must not be empty")


@dataclass
class _GameChanges:
    definition: GameDefinition
    value_range: tuple[float, float]
    new_game_files: dict[str, bytes]
    cases: list[dict[str, Any]] = field(default_factory=list)        # cases.json entries to add/replace
    manifest_entries: list[dict[str, Any]] = field(default_factory=list)


# -- definitions -------------------------------------------------------------------------------------

def game_definition(game: str, tasks_root: Path) -> tuple[GameDefinition, dict[str, bytes]]:
    """The tree's own game.toml when it has one, else the toolkit's (then its files get written too)."""
    toml = tasks_root / game / "game.toml"
    if toml.is_file():
        try:
            return parse_game_toml(read_input(toml).decode("utf-8", "replace"), source=str(toml)), {}
        except TasksTreeError as exc:
            raise ImportCaseError(str(exc)) from None
    if game not in game_names():
        raise ImportCaseError(f"unknown game {game!r}: games are {', '.join(game_names())}")

    files = expected_files(game)
    return parse_game_toml(files["game.toml"].decode("utf-8"), source=f"{game}/game.toml"), files


def value_range(game: str) -> tuple[float, float]:
    try:
        plugin = load_plugin(game) if game in game_names() else None
    except Exception:  # noqa: BLE001 - a plugin's engine import failing must not block an import
        plugin = None
    return tuple(plugin.value_range) if plugin is not None else (0.0, 1.0)  # type: ignore[return-value]


# -- checks ------------------------------------------------------------------------------------------

def check_rows(gd: GameDefinition, rows: list[LogRow]) -> None:
    prev = None
    for r in rows:
        if r.t < 0:
            raise ImportCaseError(f"{r.label}: t {r.t} is before the start of the video (t < 0)")
        if prev is not None and r.t < prev - TIME_EPS:
            raise ImportCaseError(f"{r.label}: t {r.t} is earlier than the row before it ({prev}): "
                                  f"events must be in time order")
        prev = r.t
        if r.type not in gd.event_types:
            raise ImportCaseError(f"{r.label}: unknown type {r.type!r} for {gd.name} "
                                  f"(types: {', '.join(gd.event_types)})")
        if r.actor not in gd.sides:
            raise ImportCaseError(f"{r.label}: unknown actor {r.actor!r} for {gd.name} (sides: {', '.join(gd.sides)})")
        if r.state is not None and r.state not in gd.state_labels:
            raise ImportCaseError(f"{r.label}: unknown state {r.state!r} for {gd.name} "
                                  f"(states: {', '.join(gd.state_labels)})")
        if r.delta is not None and r.delta not in DELTA_LABELS:
            raise ImportCaseError(f"{r.label}: unknown delta {r.delta!r} (deltas: {', '.join(DELTA_LABELS)})")
        try:
            err = where_error(gd, r.type, r.where)
        except NoWhereRule as exc:
            raise ImportCaseError(str(exc)) from None
        if err:
            raise ImportCaseError(f"{r.label}: {err}")


def values_from_series(rows: list[LogRow], series: list[tuple[str, float, float]]) -> list[tuple[float, float]]:
    """(v_before, v_after) per event from a step-function V_t series (docs/IMPORTING.md, "V_t").

    One pass over both (rows and points are in time order): for the events at one time T (a run of rows
    within TIME_EPS of T), `before` is the last point earlier than T - TIME_EPS and `at` the points within
    TIME_EPS of T, found by moving one index forward through the series; O(rows + points)."""
    prev_t = None
    for label, t, _ in series:
        if t < 0:
            raise ImportCaseError(f"{label}: t {t} is before the start of the video (t < 0)")
        if prev_t is not None and t < prev_t - TIME_EPS:
            raise ImportCaseError(f"{label}: t {t} is earlier than the row before it: V_t rows must be in time order")
        prev_t = t
    if abs(series[0][1]) > TIME_EPS:
        raise ImportCaseError(f"{series[0][0]}: the V_t series must start at t=0 (V at the start of the video), "
                              f"starts at {series[0][1]}")
    out: list[tuple[float, float]] = []
    i = j = 0   # j: the first point not earlier than T - TIME_EPS
    while i < len(rows):
        T = rows[i].t
        n_group = 1
        while i + n_group < len(rows) and abs(rows[i + n_group].t - T) <= TIME_EPS:
            n_group += 1
        while j < len(series) and series[j][1] < T - TIME_EPS:
            j += 1
        k = j
        while k < len(series) and abs(series[k][1] - T) <= TIME_EPS:
            k += 1
        at = series[j:k]
        if j > 0:
            vb = series[j - 1][2]
        elif at:   # events at t=0: the first point at 0 is V at the start
            vb, at = at[0][2], at[1:]
        if not at:
            raise ImportCaseError(f"{rows[i].label}: the V_t series has no point at t={T} "
                                  f"(the value just after this event)")
        if len(at) == n_group:
            for p in at:
                out.append((vb, p[2]))
                vb = p[2]
        elif len(at) == 1:
            out.append((vb, at[0][2]))
            out.extend((at[0][2], at[0][2]) for _ in range(n_group - 1))
        else:
            raise ImportCaseError(f"{at[0][0]}: {n_group} event(s) at t={T} but {len(at)} V_t points there "
                                  f"(need {'1' if n_group == 1 else f'1 or {n_group}'})")
        i += n_group
    return out


def event_values(rows: list[LogRow], series: list[tuple[str, float, float]] | None,
                 series_name: str = "the V_t series") -> list[tuple[float, float]]:
    if series is None:
        missing = next((r for r in rows if r.v_before is None or r.v_after is None), None)
        if missing is not None:
            raise ImportCaseError(f"{missing.label}: no v_before/v_after, and no V_t series (--values) was given")
        return [(r.v_before, r.v_after) for r in rows]  # type: ignore[misc]
    derived = values_from_series(rows, series)
    for r, (vb, va) in zip(rows, derived):
        for name, given, want in (("v_before", r.v_before, vb), ("v_after", r.v_after, va)):
            if given is not None and abs(given - want) > 5e-5:
                raise ImportCaseError(f"{r.label}: the two logs disagree: {name} is {given} here and {want} "
                                      f"in {series_name}")
    return derived


def rounded(v: float, lo: float, hi: float, label: str) -> float:
    try:
        return round_value(v, lo, hi, label)
    except BuildError as exc:
        raise ImportCaseError(str(exc)) from None


# -- the importer ------------------------------------------------------------------------------------

def no_link_below(base: Path, path: Path) -> None:
    """Raise ImportCaseError when any component of `path` below `base` is a symbolic link: the importer
    writes inside its tree only, never through a link that leads out of it."""
    link = link_below(base, path)
    if link is not None:
        raise ImportCaseError(f"{link} is a symbolic link (to {os.readlink(link) if link.is_symlink() else "outside"!r}): the importer writes only "
                              f"inside {base}, never through a link; replace it with a folder")


def _inside(base: Path, path: Path) -> bool:
    return path == base or base in path.parents


class Importer:
    """Collect checked cases into a staging folder; `commit()` puts them into the tree."""

    #: the importers of this process whose staging folders are not yet removed
    live: set[Importer] = set()

    def __init__(self, tasks_root: str | Path, media_root: str | Path | None = None, replace: bool = False):
        self.root = Path(tasks_root).expanduser().resolve()
        env_media = os.environ.get(paths.MEDIA_ROOT_ENV) if media_root is None else None
        self.media_root = paths.media_root(self.root, media_root)
        if env_media and not _inside(self.root, self.media_root):
            # $VA_MEDIA_ROOT is exported for Harbor's mount mode and names another tree: writing the
            # videos there while the cases go to --tasks-root would overwrite that tree's videos
            raise ImportCaseError(f"${paths.MEDIA_ROOT_ENV}={env_media} is outside --tasks-root {self.root}: the "
                                  f"videos would be written there; pass --media-root {env_media} to mean it, or unset "
                                  f"${paths.MEDIA_ROOT_ENV}")
        #: the videos go outside the tasks tree (an explicit --media-root): named in every report
        self.media_elsewhere = not _inside(self.root, self.media_root)
        for base in (self.root, self.media_root):
            if base.exists() and not base.is_dir():
                raise ImportCaseError(f"{base} exists and is not a folder")
        self.committing = self.committed = False
        self.replace = replace
        self.created: list[Path] = []
        self.stage = self.media_stage = None
        with uninterrupted():   # what is made here is registered before a signal can cut in
            Importer.live.add(self)
            self.created = [d for d in dict.fromkeys((self.root, self.media_root)) if not d.exists()]
            for d in self.created:
                d.mkdir(parents=True)
            self.stage = Path(tempfile.mkdtemp(prefix=".import-", dir=self.root))
            self.media_stage = (self.stage if _same_dir(self.media_root, self.root)
                                else Path(tempfile.mkdtemp(prefix=".import-", dir=self.media_root)))
        self.tree, self.staged = TasksTree(self.root, self.media_root), TasksTree(self.stage, self.media_stage)
        self.games: dict[str, _GameChanges] = {}
        self.taken: dict[str, set[str]] = {}
        self.reports: list[dict[str, Any]] = []
        self.left_out: list[str] = []       # records of the files no case was made of, one line each

    # context manager: discard on error
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.discard()

    def discard(self) -> None:
        """Remove the staging folders (and a tree this import created and left empty); no signal cuts it
        short, and it may run twice."""
        with uninterrupted():
            for d in {self.stage, self.media_stage} - {None}:
                shutil.rmtree(d, ignore_errors=True)
            for d in self.created:
                try:
                    d.rmdir()
                except OSError:
                    pass
            Importer.live.discard(self)

    @classmethod
    def discard_all(cls) -> None:
        """Discard every importer of this process not yet discarded (import-cases' last word on any exit)."""
        for imp in list(cls.live):
            imp.discard()

    def _game(self, game: str) -> _GameChanges:
        if game not in self.games:
            if not GAME_RE.match(game):
                raise ImportCaseError(f"game name {game!r} must match {GAME_RE.pattern}")
            for base, sub in ((self.root, self.tree.gt_dir(game)), (self.media_root, self.tree.media_dir(game))):
                no_link_below(base, sub)
            gd, files = game_definition(game, self.root)
            if gd.name != game:
                raise ImportCaseError(f"{self.root / game}/game.toml names the game {gd.name!r}, not {game!r}")
            self.games[game] = _GameChanges(gd, value_range(game), files)
            try:
                existing = load_cases(game, self.root) if (self.root / game / "game.toml").is_file() else []
                manifest_cases(game, self.root)  # a manifest that is not one is refused before any work
                manifest = self.tree.read_manifest(game)
            except TasksTreeError as exc:
                raise ImportCaseError(str(exc)) from None
            made = (manifest or {}).get(GAME_VERSION_KEY, 1) if manifest and manifest.get("cases") else gd.version
            if made != gd.version:
                raise ImportCaseError(f"{self.tree.manifest_path(game)}: its cases were made under {game} version "
                                      f"{str(made)[:20]}, the definition is version {gd.version}: one tree holds one "
                                      f"version of a game (rebuild its cases, or import into another tree)")
            self.taken[game] = {c["case_id"] for c in existing}
        return self.games[game]

    def _case_id(self, game: str, case_id: str | None) -> str:
        taken = self.taken[game]
        staged = {c["case_id"] for c in self.games[game].cases}
        if case_id is None:
            while True:
                cid = "".join(secrets.choice(ID_ALPHABET) for _ in range(8))
                if cid not in taken and cid not in staged and not self._files_exist(game, cid):
                    return cid
        if not CASE_ID_RE.match(case_id):
            raise ImportCaseError(f"case id {case_id!r} must be 8 characters of [A-Za-z0-9]")
        if case_id in staged:
            raise ImportCaseError(f"case id {game}/{case_id} appears twice in this import")
        if (case_id in taken or self._files_exist(game, case_id)) and not self.replace:
            raise ImportCaseError(f"case {game}/{case_id} already exists in {self.root} (pass --replace to overwrite it)")
        return case_id

    def _files_exist(self, game: str, cid: str) -> bool:
        return self.tree.gt(game, cid).exists() or self.tree.media(game, cid).exists()

    def add_case(self, game: str, video: Path, rows: list[LogRow], series: list[tuple[str, float, float]] | None,
                 prov: Provenance, case_id: str | None = None, fps: int | None = None,
                 inputs: dict[str, Path] | None = None, series_name: str = "the V_t series") -> dict[str, Any]:
        """Check one case and stage its ground truth and video; returns its report."""
        prov.check()
        g = self._game(game)
        gd = g.definition
        check_rows(gd, rows)
        lo, hi = g.value_range
        for label, _, v in series or []:
            rounded(v, lo, hi, label)
        pairs = [(rounded(vb, lo, hi, f"{r.label}: v_before"), rounded(va, lo, hi, f"{r.label}: v_after"))
                 for r, (vb, va) in zip(rows, event_values(rows, series, series_name))]
        for r, (vb, va) in zip(rows, pairs):
            for name, given, want in (("delta", r.delta, gd.delta_of(vb, va)), ("state", r.state, gd.state_of(va))):
                if given is not None and given != want:
                    raise ImportCaseError(f"{r.label}: {name} {given!r} disagrees with V_t {vb} -> {va} "
                                          f"(band {gd.band}, neutral {gd.value_neutral}): it is {want!r}")
        cid = self._case_id(game, case_id)

        staged_media = self.staged.media(game, cid)
        staged_media.parent.mkdir(parents=True, exist_ok=True)
        vinfo = M.prepare(Path(video), staged_media, gd.render_size, fps)
        fps_out, n_frames = vinfo["fps"], vinfo["n_frames"]
        duration = frame_time(n_frames, fps_out)
        for r in rows:
            if _after_last_frame(r.t, fps_out, n_frames):
                raise ImportCaseError(f"{r.label}: t {r.t} is after the end of the video ({duration} s, "
                                      f"{n_frames} frames at {fps_out} fps): the video is shorter than its log")
        for label, t, _ in series or []:
            if _after_last_frame(t, fps_out, n_frames):
                raise ImportCaseError(f"{label}: t {t} is after the end of the video ({duration} s): "
                                      f"the video is shorter than its V_t series")

        snap = lambda t: frame_time(round(t * fps_out), fps_out)  # noqa: E731
        events = [{"t": snap(r.t), "type": r.type, "actor": r.actor, "where": r.where,
                   "delta": gd.delta_of(vb, va), "state": gd.state_of(va), "v_before": vb, "v_after": va}
                  for r, (vb, va) in zip(rows, pairs)]
        if series is not None:
            v_series = [[snap(t), rounded(v, lo, hi, label)] for label, t, v in series]
        else:
            v_series = [[0.0, pairs[0][0]]] + [[e["t"], e["v_after"]] for e in events]
        max_shift = max(abs(e["t"] - r.t) for e, r in zip(events, rows))
        video_sha = sha256_file(video)
        record = {
            "source": {"collection": IMPORTED_COLLECTION, "id": f"video-sha256:{video_sha}",
                       "description": prov.source, "licence": prov.licence},
            "value_model": prov.value_model,
        }
        gt = {
            "format": GT_FORMAT,
            "game": game,
            GAME_VERSION_KEY: gd.version,
            "case_id": cid,
            "spec": gd.judge_spec(),
            "duration_s": duration,
            "events": events,
            "v_series": v_series,
            "v_definition": " ".join(gd.value_definition.split()),
            "evaluator": {"value_model": prov.value_model},
            "video": {"fps": fps_out, "n_frames": n_frames, "width": gd.render_size[0], "height": gd.render_size[1]},
            "record": record,
        }
        staged_gt = self.staged.gt(game, cid)
        staged_gt.parent.mkdir(parents=True, exist_ok=True)
        staged_gt.write_bytes(tree_json(gt))
        in_files = {"video": Path(video), **(inputs or {})}
        entry = {
            "case_id": cid,
            "source": record["source"],
            "evaluator": gt["evaluator"],
            "licence": prov.licence,
            "gt_sha256": sha256_file(staged_gt),
            "media_sha256": sha256_file(staged_media),
            "media_bytes": staged_media.stat().st_size,
            "imported": {
                "at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "inputs": {k: {"name": p.name, "sha256": sha256_file(p)} for k, p in in_files.items()},
                "video": vinfo,
                "max_time_snap_s": round(max_shift, 6),
                "toolkit": toolkit_provenance(),
            },
        }
        g.cases.append({"case_id": cid, "duration_s": duration, "n_events": len(events),
                        "source": {"collection": IMPORTED_COLLECTION}})
        g.manifest_entries.append(entry)
        report = {"game": game, "case_id": cid, "n_events": len(events), "duration_s": duration,
                  "video": vinfo["method"], "fps": fps_out, "max_time_snap_s": round(max_shift, 6)}
        self.reports.append(report)
        return report

    def record_plugin(self, game: str, fmt: str):
        """The plugin that makes cases of `fmt` files of the game (its game.toml's `[import] record_formats`),
        after checking the tree's definition of the game is the toolkit's (RecordRefused: it reads none)."""

        g = self._game(game)
        if fmt not in dict(g.definition.record_formats):
            raise RecordRefused(f"game {game!r} reads no --{fmt} files")
        if g.definition.raw != parse_game_toml(expected_files(game)["game.toml"].decode("utf-8")).raw:
            raise ImportCaseError(f"{self.root / game}/game.toml differs from the toolkit's: a case made from a "
                                  f"{fmt} file needs the definition its plugin builds for")
        return load_plugin(game)

    def add_record_case(self, game: str, fmt: str, files: list[Path], prov: Provenance,
                        case_id: str | None = None, pick: int | None = None) -> list[dict[str, Any]]:
        """Stage the cases the game's plugin makes of match files of format `fmt`: the `pick`-th match they hold
        (1-based), or every one the game's rules take (importing/records.py `screen`); returns the reports
        (RecordRefused: the files make no case)."""
        prov.check()
        plugin = self.record_plugin(game, fmt)
        screened = chosen_or_refused(plugin, read_records(plugin, fmt, files), pick)
        if case_id is not None and len(screened.chosen) > 1:
            raise RecordRefused(f"--case-id names one case, and the files hold {len(screened.chosen)} matches that "
                                "qualify: choose one with --pick N")
        self.left_out += screened.left_out
        return [self.add_record(game, fmt, record, files, prov, case_id, key=key) for record, key in screened.chosen]

    def add_record(self, game: str, fmt: str, record: dict[str, Any], files: list[Path], prov: Provenance,
                   case_id: str | None = None, key: str | None = None) -> dict[str, Any]:
        """Stage one case of a record the game's plugin read from `files` (its events, V_t and render, as
        `build-cases` makes them): refused when the match is in the V_t model's fitting set; flagged in its
        manifest entry (`public_match`) when it is a built-in case's match (importing/contamination.py)."""

        plugin = self.record_plugin(game, fmt)
        key = plugin.match_key(record) if key is None else key
        why = fitting_refusal(plugin, record, key)
        if why:
            raise RecordRefused(why)
        public = public_match(plugin, record, key)
        record["source"] = dict(record["source"]) | {"description": prov.source, "licence": prov.licence}
        cid = self._case_id(game, case_id)
        try:
            summary = build_case(game, record, cid, self.stage, self.media_stage)
        except ValueError as exc:   # e.g. a match the shipped V_t model was fitted on
            raise RecordRefused(str(exc)) from None
        except BuildError as exc:
            raise ImportCaseError(str(exc)) from None
        g = self.games[game]
        gt_path = self.staged.gt(game, cid)
        entry = {"case_id": cid, **summary["manifest"], "licence": prov.licence,
                 **({PUBLIC_MATCH: public} if public else {}),
                 "imported": {"at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                              "inputs": {f"{fmt}_{k}": {"name": Path(f).name, "sha256": sha256_file(Path(f))}
                                         for k, f in enumerate(files, 1)},
                              "video": "rendered by the game's plugin from the record (build-cases --media-only "
                                       "re-renders it bit-exact)",
                              "toolkit": toolkit_provenance()}}
        g.cases.append({k: summary[k] for k in ("case_id", "duration_s", "n_events")} | {"source": {"collection": IMPORTED_COLLECTION}})
        g.manifest_entries.append(entry)
        gt = json.loads(gt_path.read_text(encoding="utf-8"))
        report = {"game": game, "case_id": cid, "n_events": summary["n_events"], "duration_s": summary["duration_s"],
                  "video": "rendered", "fps": gt["video"]["fps"], "max_time_snap_s": 0, "record": record_label(record),
                  PUBLIC_MATCH: public}
        self.reports.append(report)
        return report

    # -- commit --------------------------------------------------------------------------------------
    def commit(self) -> list[Path]:
        """Stage cases.json and manifest.json of every touched game, then rename everything into place."""
        moves: list[tuple[Path, Path]] = []
        tail: list[tuple[Path, Path]] = []
        for game, g in self.games.items():
            gdir = self.root / game
            for name, data in g.new_game_files.items():
                staged = self.stage / game / name
                staged.parent.mkdir(parents=True, exist_ok=True)
                staged.write_bytes(data)
                moves.append((staged, gdir / name))
            for c in g.cases:
                moves.append((self.staged.media(game, c["case_id"]), self.tree.media(game, c["case_id"])))
                moves.append((self.staged.gt(game, c["case_id"]), self.tree.gt(game, c["case_id"])))
            cases_doc = _read_doc(self.tree.cases_path(game), {"game": game, "cases": []})
            cases_doc["cases"] = _merged(cases_doc.get("cases", []), g.cases)
            manifest = _read_doc(self.tree.manifest_path(game), None) or {
                "format": MANIFEST_FORMAT, "game": game, GAME_VERSION_KEY: g.definition.version, "n_cases": 0,
                "provenance": {"origin": "imported with `video-arena import-cases`: each case's source, "
                                         "licence, V_t model and inputs are in its entry"},
                "cases": []}
            manifest[GAME_VERSION_KEY] = g.definition.version
            manifest["cases"] = _merged(manifest.get("cases", []), g.manifest_entries)
            manifest["n_cases"] = len(manifest["cases"])
            for staged, final, doc in ((self.staged.manifest_path(game), self.tree.manifest_path(game), manifest),
                                       (self.staged.cases_path(game), self.tree.cases_path(game), cases_doc)):
                staged.write_bytes(tree_json(doc))
                tail.append((staged, final))
        for _, final in moves + tail:  # checked before the first rename: all or nothing
            no_link_below(self.root if _inside(self.root, final) else self.media_root, final)
        done = []
        try:
            with uninterrupted():   # a signal waits until every file is in place (never a half-updated tree)
                self.committing = True
                for staged, final in moves + tail:
                    final.parent.mkdir(parents=True, exist_ok=True)
                    _move(staged, final)
                    if final.suffix == ".mp4":
                        os.chmod(final, 0o644)
                    done.append(final)
                self.committed = True
                self.discard()
        except Interrupted as exc:
            exc.after_commit = self.committed
            raise
        return done


def _merged(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`old` with entries of the same case id replaced in place by `new`'s, the rest of `new` appended."""
    by_id = {e["case_id"]: e for e in new}
    out = [by_id.pop(e.get("case_id"), e) for e in old]
    return out + [e for e in new if e["case_id"] in by_id]


def _move(staged: Path, final: Path) -> None:
    try:
        os.replace(staged, final)
    except OSError as exc:
        if exc.errno != errno.EXDEV:  # e.g. a media folder that is a symlink to another filesystem
            raise
        tmp = final.with_name(f".{final.name}.import{os.getpid()}")
        shutil.copyfile(staged, tmp)
        os.replace(tmp, final)
        staged.unlink()


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or os.path.samefile(a, b)
    except OSError:
        return False


def _read_doc(path: Path, default):
    """A cases.json or manifest.json of the tree (read with a bound): a JSON object whose `cases` is a
    list of objects, else ImportCaseError; `default` when there is none."""
    if not (path.exists() or path.is_symlink()):
        return default
    try:
        doc = read_tree_json(path)
    except ValueError as exc:
        raise ImportCaseError(f"{path}: not valid JSON ({exc}): fix or remove it before importing") from None
    cases = doc.get("cases", []) if isinstance(doc, dict) else None
    if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
        raise ImportCaseError(f"{path}: not a {path.name} (a JSON object whose 'cases' is a list of objects): "
                              "fix or remove it before importing")
    return doc


def _after_last_frame(t: float, fps: int, n_frames: int) -> bool:
    """A time past the video's last frame (a time too large to count frames, 1e308, is past it too)."""
    frame = t * fps
    return not math.isfinite(frame) or frame >= n_frames or round(frame) >= n_frames
