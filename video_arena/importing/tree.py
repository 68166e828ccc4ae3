"""Import a whole tasks tree in the seed's layout, reporting per file what differs from our format.

    <src>/<game>/instruction.md, answer_seed.json, game.toml (optional), cases.json (optional)
    <src>/<game>/gt/<case_id>.json     rows in the answer schema (+ optional v_before/v_after, v_series),
                                       as a list or under "events"; or a ground truth in our format
    <src>/<game>/media/<case_id>.mp4

Every case goes through the same checks as a single import (`Importer.add_case`), with the tree's
own case ids. The target tree keeps the toolkit's game.toml / instruction.md / answer_seed.json: a
source file that differs is reported, never copied (the judge and the instruction must agree).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from video_arena.core.tasks import CASES_FILE, GT_FORMAT, MANIFEST_FILE, TasksTree, gt_rel, media_rel
from video_arena.importing.importer import Importer, Provenance, game_definition
from video_arena.importing.logs import ImportCaseError, read_event_log, read_input, read_value_series
from video_arena.games.cli import expected_files
from video_arena.safe_io import JSONLimitError, link_below, loads_bounded


def source_path(src: Path, path: Path) -> Path:
    """`path` of the source tree `src`, refused when any component of it below `src` is a symbolic link (a
    `gt/` or `media/` linked into another tree, a video linked to a file of the host)."""
    link = link_below(src, path)
    if link is not None:
        raise ImportCaseError(f"{link} is a symbolic link (to {os.readlink(link) if link.is_symlink() else "outside"!r}): --from-tree reads only "
                              f"folders and files reached through no link below {src}")
    return path


def _json(path: Path, rel: str) -> Any:
    try:
        return loads_bounded(read_input(path))
    except JSONLimitError as exc:
        raise ImportCaseError(f"{rel}: {exc}") from None


def _file_notes(src_game: Path, ours: dict[str, bytes]) -> dict[str, list[str]]:
    notes: dict[str, list[str]] = {}
    for name in ("game.toml", "instruction.md", "answer_seed.json"):
        path = source_path(src_game.parent, src_game / name)
        if not path.is_file():
            notes[name] = ["missing (the toolkit's own is used)"]
        elif name in ours and read_input(path) != ours[name]:
            notes[name] = ["differs from the toolkit's; the toolkit's is kept (the instruction, the judge's "
                           "vocabulary and the answer seed must agree)"]
        else:
            notes[name] = ["same as ours"]
    if (src_game / "answer_seed.json").is_file():
        try:
            seed = loads_bounded(read_input(src_game / "answer_seed.json"))
            if seed != {"events": []}:
                notes["answer_seed.json"].append(f"is {str(seed)[:200]}, not {{\"events\": []}}")
        except JSONLimitError as exc:
            notes["answer_seed.json"].append(f"is {exc}")
    if (src_game / MANIFEST_FILE).is_file():
        notes[MANIFEST_FILE] = ["not read: provenance comes from --source, --licence and --value-model"]
    return notes


def _gt_notes(path: Path, doc: Any, spec: dict[str, Any]) -> list[str]:
    notes = []
    if isinstance(doc, list):
        return ["a bare list of rows (seed layout): converted to our ground-truth format"]
    if doc.get("format") != GT_FORMAT:
        notes.append(f"format {doc.get('format')!r}, not {GT_FORMAT!r}: converted")
    if "spec" in doc and doc["spec"] != spec:
        notes.append("its 'spec' differs from the game's: replaced by ours")
    rows = doc.get("events") if isinstance(doc.get("events"), list) else []
    if rows and not all(isinstance(r, dict) and "v_before" in r and "v_after" in r for r in rows):
        notes.append("rows without v_before/v_after" + ("; taken from its v_series" if "v_series" in doc else ""))
    extra = sorted(set(doc) - {"format", "game", "case_id", "spec", "duration_s", "events", "v_series",
                               "v_definition", "evaluator", "video", "record"})
    if extra:
        notes.append(f"keys {extra} are not kept")
    if doc.get("record"):
        notes.append("its 'record' is not kept (provenance comes from the command line)")
    return notes


def import_tree(src: Path, importer: Importer, prov: Provenance, games: list[str] | None = None,
                fps: int | None = None) -> dict[str, list[str]]:
    """Add every case of `src` to `importer` (not committed); returns notes per source file."""
    src = Path(src).expanduser().resolve()
    if not src.is_dir():
        raise ImportCaseError(f"--from-tree {src}: not a directory")
    tree = TasksTree(src)
    game_dirs = sorted(p for p in src.iterdir() if p.is_dir() and tree.gt_dir(p.name).is_dir())
    if games:
        missing = [g for g in games if not tree.gt_dir(g).is_dir()]
        if missing:
            raise ImportCaseError(f"--from-tree {src}: no {', '.join(g + '/gt/' for g in missing)}")
        game_dirs = [p for p in game_dirs if p.name in games]
    if not game_dirs:
        raise ImportCaseError(f"--from-tree {src}: no <game>/gt/ folder")
    notes: dict[str, list[str]] = {}
    for gdir in game_dirs:
        game = gdir.name
        for folder in (tree.gt_dir(game), tree.media_dir(game)):
            source_path(src, folder)
        gd, _ = game_definition(game, importer.root)

        try:
            ours = expected_files(game)
        except LookupError:
            ours = {}
        for name, n in _file_notes(gdir, ours).items():
            notes[f"{game}/{name}"] = n
        gts = tree.gt_files(game)
        if not gts:
            raise ImportCaseError(f"{gdir}/gt: no ground-truth files")
        listed = None
        if source_path(src, tree.cases_path(game)).is_file():
            try:
                listed = [c["case_id"] for c in _json(tree.cases_path(game), f"{gdir}/{CASES_FILE}")["cases"]]
            except (KeyError, TypeError) as exc:
                raise ImportCaseError(f"{gdir}/{CASES_FILE}: malformed ({exc!r})") from None
            if not all(isinstance(c, str) for c in listed):
                raise ImportCaseError(f"{gdir}/{CASES_FILE}: malformed (a case_id that is not a string)")
            unlisted = sorted({p.stem for p in gts} - set(listed))
            absent = sorted(set(listed) - {p.stem for p in gts})
            if absent:
                raise ImportCaseError(f"{gdir}/{CASES_FILE} lists {absent} but gt/ has no such file")
            if unlisted:
                notes[f"{game}/{CASES_FILE}"] = [f"does not list {unlisted}: they are imported too"]
        for gt_path in gts:
            rel = gt_rel(game, gt_path.stem)
            doc = _json(source_path(src, gt_path), rel)
            if not isinstance(doc, (list, dict)):
                raise ImportCaseError(f"{rel}: expected a list of rows or an object with 'events'")
            media = source_path(src, tree.media(game, gt_path.stem))
            if not media.is_file():
                raise ImportCaseError(f"{rel}: no video {media_rel(game, gt_path.stem)}")
            rows = read_event_log(gt_path)
            series = read_value_series(gt_path) if isinstance(doc, dict) and "v_series" in doc else None
            rep = importer.add_case(game, media, rows, series, prov, case_id=gt_path.stem, fps=fps,
                                    inputs={"gt": gt_path}, series_name=f"{gt_path.name}'s v_series")
            n = _gt_notes(gt_path, doc, gd.judge_spec())
            if isinstance(doc, dict) and isinstance(doc.get("duration_s"), (int, float)) \
                    and abs(doc["duration_s"] - rep["duration_s"]) > 1e-3:
                n.append(f"duration_s {doc['duration_s']} differs from the video's {rep['duration_s']}: the video's is kept")
            if rep["max_time_snap_s"] > 0:
                n.append(f"event times moved by up to {rep['max_time_snap_s']} s onto the {rep['fps']} fps frame grid")
            n.append(f"video {rep['video']}")
            notes[rel] = n
    return notes
