"""A user's match records as cases: which records of some files become cases, and a folder of records as a
private set (`import-cases --FORMAT FILE ... [--pick N]`, `build-cases --records DIR`).

Game-agnostic: the game's plugin reads its format (`records_from_files`), says which records its rules take
(`refusal`), what a match's identity is (`match_key`) and what its V_t model was fitted on
(`fitting_keys`); the importer (importing/importer.py `Importer.add_record`) stages each chosen record as
a case, the same code for both commands.

- `screen`: of the records some files hold, the N-th (`pick`, 1-based) or every one the game's rules take,
  leaving out (with one line each) the refused, the fitting-set matches and a match already taken;
- `record_groups`: the record files of a folder, found by the format's file-name endings
  (`GamePlugin.record_suffixes`), each a regular file reached through no link, bounded;
- `seeded_pick`: N of the candidates, a pure function of the seed and the matches (not of file names or
  order).
"""
from __future__ import annotations

import os
import random
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from video_arena.importing.contamination import fitting_refusal, record_label
from video_arena.importing.logs import ImportCaseError

#: Bounds of a records folder (`build-cases --records`): entries looked at, record files read, depth.
MAX_FOLDER_ENTRIES = 100_000
MAX_RECORD_FILES = 2_000
MAX_DEPTH = 8


class RecordRefused(ImportCaseError):
    """Match files that cannot make a case (what is missing, in one line)."""


@dataclass
class Screened:
    """The records chosen as cases, each with its match key, and one line per record left out."""

    chosen: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


def read_records(plugin: Any, fmt: str, files: list[Path]) -> list[dict[str, Any]]:
    """Every match the files hold (the plugin's reading); RecordRefused (one line) when they hold none."""
    try:
        records = plugin.records_from_files(fmt, [Path(f) for f in files])
    except ValueError as exc:
        raise RecordRefused(" ".join(str(exc).split()) or type(exc).__name__) from None
    if not records:
        raise RecordRefused(f"{' + '.join(Path(f).name for f in files)}: no match in it")
    return records


def screen(plugin: Any, records: list[dict[str, Any]], pick: int | None = None,
           taken: dict[str, str] | None = None) -> Screened:
    """With `pick`: the pick-th record (1-based), RecordRefused when there is none or when the game's rules
    or the fitting set refuse it.  Without: every record the rules take that is not of the fitting set and
    whose match is not already taken (`taken`: match key -> what took it, updated), the others left out with
    one line each.  The match key of each chosen record comes with it."""
    out = Screened()
    taken = {} if taken is None else taken
    if pick is not None:
        if not 1 <= pick <= len(records):
            raise RecordRefused(f"--pick {pick}: the files hold {len(records)} match(es) (pick 1 to {len(records)})")
        record = records[pick - 1]
        why = plugin.refusal(record)
        key = "" if why else plugin.match_key(record)
        why = why or fitting_refusal(plugin, record, key)
        if why:
            raise RecordRefused(why)
        out.chosen.append((record, key))
        return out
    for record in records:
        why = plugin.refusal(record)
        key = "" if why else plugin.match_key(record)
        why = why or fitting_refusal(plugin, record, key)
        if not why and key in taken:
            why = f"{record_label(record)}: the same match as {taken[key]}"
        if why:
            out.left_out.append(why)
            continue
        taken[key] = record_label(record)
        out.chosen.append((record, key))
    return out


def chosen_or_refused(plugin: Any, records: list[dict[str, Any]], pick: int | None) -> Screened:
    """`screen`, refusing (with the first record's reason) files of which no record qualifies."""
    out = screen(plugin, records, pick)
    if not out.chosen:
        more = f" (and none of the other {len(records) - 1} matches qualifies)" if len(records) > 1 else ""
        raise RecordRefused(f"{out.left_out[0]}{more}")
    return out


# -- a folder of records ---------------------------------------------------------------------------------

def record_groups(plugin: Any, fmt: str, folder: Path) -> list[list[Path]]:
    """The record files of format `fmt` below `folder`, grouped into matches (`plugin.record_file_groups`),
    in path order.  Every entry below the folder is looked at without following a link: a symbolic link, or
    a record file's name on what is not a regular file, is refused in one line; so is a folder too large or
    too deep (MAX_FOLDER_ENTRIES, MAX_RECORD_FILES, MAX_DEPTH).  Hidden entries (a leading '.') are skipped."""
    root = Path(folder)
    try:
        st = os.lstat(root)
    except OSError as exc:
        raise ImportCaseError(f"--records {root}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise ImportCaseError(f"--records {root}: not a folder (a symbolic link is not followed)")
    suffixes = tuple(s.lower() for s in plugin.record_file_suffixes(fmt))
    files: list[Path] = []
    seen = 0
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        here, depth = stack.pop()
        try:
            with os.scandir(here) as it:
                listing = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            raise ImportCaseError(f"--records: {here}: {exc.strerror or exc}") from None
        for entry in listing:
            seen += 1
            if seen > MAX_FOLDER_ENTRIES:
                raise ImportCaseError(f"--records {root}: more than {MAX_FOLDER_ENTRIES} entries below it")
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            wanted = entry.name.lower().endswith(suffixes)
            if entry.is_symlink():
                raise ImportCaseError(f"{path} is a symbolic link: --records reads only files and folders reached "
                                      "through no link")
            if entry.is_dir(follow_symlinks=False):
                if depth + 1 > MAX_DEPTH:
                    raise ImportCaseError(f"--records {root}: folders nested deeper than {MAX_DEPTH}")
                stack.append((path, depth + 1))
            elif wanted:
                if not entry.is_file(follow_symlinks=False):
                    raise ImportCaseError(f"{path}: not a regular file")
                files.append(path)
                if len(files) > MAX_RECORD_FILES:
                    raise ImportCaseError(f"--records {root}: more than {MAX_RECORD_FILES} {fmt} files")
    return plugin.record_file_groups(fmt, sorted(files))


def seeded_pick(game: str, seed: int, keyed: list[tuple[str, Any]], n: int | None) -> list[tuple[str, Any]]:
    """`n` of the (match key, item) pairs (all when n is None), a pure function of the seed and the keys:
    the pairs in key order, a seeded sample of n, returned in key order."""
    ordered = sorted(keyed, key=lambda kv: kv[0])
    if n is None or n >= len(ordered):
        return ordered
    picked = set(random.Random(f"video-arena/records/{game}/{seed}").sample(range(len(ordered)), n))
    return [kv for i, kv in enumerate(ordered) if i in picked]
