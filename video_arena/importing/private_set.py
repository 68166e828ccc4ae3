"""`build-cases --records DIR --games G`: a private set of cases from a folder of a user's own match records.

    video-arena build-cases --records DIR --games G --tasks-root T [--count N] [--seed S]
                            [--licence L] [--source S] [--media-root DIR] [--replace]

(`video-arena build-cases` without --records builds the built-in cases: video_arena/cases/build.py.)

The records are found (importing/records.py `record_groups`: the game's format's files, regular files
reached through no link, bounded), read and screened by the game's own rules (`screen`: a record the rules
refuse, a match of the V_t model's fitting set or a second copy of a match is left out, one line each),
then N of them are picked with the seed (`seeded_pick`: a pure function of the seed and the matches), and
each is staged as a case by the same code `import-cases --FORMAT` uses (`Importer.add_record`), with a case
id derived from the seed and the match (stable across runs).  Nothing is written unless every picked case
builds; the tree is then usable by make-harbor, validate, oracle-check, run-a, run-b and score through
--tasks-root.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from video_arena.cases import build as B
from video_arena.cases.build import DEFAULT_SEED, case_id_for
from video_arena.cli_args import comma_list
from video_arena.games.base import game_names, load_definition
from video_arena.importing.importer import Importer, Provenance
from video_arena.importing.logs import ImportCaseError
from video_arena.importing.records import RecordRefused, read_records, record_groups, screen, seeded_pick
from video_arena.importing.signals import Interrupted, signals_unwind
from video_arena.importing.cli import print_record_reports

DEFAULT_LICENCE = "not stated (a user's own records)"
VALUE_MODEL = "the game's shipped V_t model"


def record_format(game: str) -> str:
    """The one record format the game reads (its game.toml's `[import] record_formats`)."""
    if game not in game_names():
        raise RecordRefused(f"unknown game {game!r}: games are {', '.join(game_names())}")
    formats = [fmt for fmt, _ in load_definition(game).record_formats]
    if not formats:
        raise RecordRefused(f"game {game!r} reads no match records (its game.toml has no [import] record_formats)")
    if len(formats) > 1:
        raise RecordRefused(f"game {game!r} reads {', '.join(formats)}: --records takes a game of one format")
    return formats[0]


def add_game_from_records(imp: Importer, game: str, folder: Path, count: int | None, seed: int,
                          licence: str, source: str | None) -> dict[str, Any]:
    """Stage the private set of one game (not committed); returns what was found, left out and picked."""
    fmt = record_format(game)
    plugin = imp.record_plugin(game, fmt)
    groups = record_groups(plugin, fmt, folder)
    if not groups:
        raise RecordRefused(f"--records {folder}: no {fmt} file ({', '.join('*' + s for s in plugin.record_file_suffixes(fmt))}) "
                            "below it")
    taken: dict[str, str] = {}
    keyed, left_out = [], []
    for files in groups:
        try:
            records = read_records(plugin, fmt, files)
        except RecordRefused as exc:
            left_out.append(str(exc))
            continue
        screened = screen(plugin, records, None, taken)
        left_out += screened.left_out
        keyed += [(key, (record, files)) for record, key in screened.chosen]
    if count is not None and count > len(keyed):
        raise RecordRefused(f"--count {count}: {len(keyed)} of the records below {folder} qualify as {game} cases"
                            + (f" ({len(left_out)} left out: {left_out[0]}{' ...' if len(left_out) > 1 else ''})"
                               if left_out else ""))
    if not keyed:
        raise RecordRefused(f"--records {folder}: no {game} record qualifies"
                            + (f" ({len(left_out)} left out: {left_out[0]}{' ...' if len(left_out) > 1 else ''})"
                               if left_out else ""))
    picked = seeded_pick(game, seed, keyed, count)
    ids: set[str] = set()
    for key, (record, files) in picked:
        cid = case_id_for(game, seed, f"records/{key}", ids)
        ids.add(cid)
        prov = Provenance(source or f"{fmt} match file {' + '.join(Path(f).name for f in files)}", licence, VALUE_MODEL)
        imp.add_record(game, fmt, record, files, prov, case_id=cid, key=key)
    imp.left_out += left_out
    return {"game": game, "format": fmt, "files": sum(len(g) for g in groups), "qualify": len(keyed),
            "picked": len(picked), "left_out": len(left_out)}


def main(argv: list[str] | None = None) -> int:
    """`video-arena build-cases`: with --records, a private set (this module); else the built-in cases
    (video_arena/cases/build.py)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not any(x == "--records" or x.startswith("--records=") for x in argv):
        return B.main(argv)
    ap = argparse.ArgumentParser(prog="video-arena build-cases", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=Path, required=True, metavar="DIR",
                    help="a folder of match records in the game's format (its game.toml's [import] record_formats)")
    ap.add_argument("--games", required=True, help="the game (comma-separated games: each reads its own files)")
    ap.add_argument("--tasks-root", required=True, help="the private set's tasks tree (created if missing)")
    ap.add_argument("--media-root", default=None, help="where <game>/media/ goes (default: $VA_MEDIA_ROOT or the tasks root)")
    ap.add_argument("--count", type=int, default=None, metavar="N",
                    help="N cases, a seeded pick of the records that qualify (default: all of them)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"the pick's seed (default {DEFAULT_SEED})")
    ap.add_argument("--licence", default=DEFAULT_LICENCE, help="the records' licence (default: not stated)")
    ap.add_argument("--source", default=None, help="where the records come from (default: the file names)")
    ap.add_argument("--replace", action="store_true", help="overwrite cases whose id already exists")
    a = ap.parse_args(argv)
    if a.count is not None and a.count < 1:
        ap.error("--count must be >= 1")
    with signals_unwind():
        try:
            return build_from_records(a.records, comma_list(a.games), Path(a.tasks_root), a.media_root, a.count,
                                      a.seed, a.licence, a.source, a.replace)
        except Interrupted as exc:
            print(f"build-cases: {exc.verb}" + (" after the cases were written" if exc.after_commit
                                                 else "; nothing was written"), file=sys.stderr)
            return exc.status
        finally:
            Importer.discard_all()


def build_from_records(folder: Path, games: list[str], tasks_root: Path, media_root: str | None, count: int | None,
                       seed: int, licence: str, source: str | None, replace: bool = False) -> int:
    try:
        with Importer(tasks_root, media_root, replace=replace) as imp:
            found = [add_game_from_records(imp, game, folder, count, seed, licence, source) for game in games]
            try:
                imp.commit()
            except OSError as exc:
                print(f"build-cases: error while renaming into place: {exc}; the tree may be partly updated "
                      "(re-run with --replace)", file=sys.stderr)
                return 1
    except RecordRefused as exc:
        print(f"build-cases: refused: {exc}; nothing was written", file=sys.stderr)
        return 2
    except ImportCaseError as exc:
        print(f"build-cases: error: {exc}; nothing was written", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"build-cases: error: {exc}; nothing was written", file=sys.stderr)
        return 1
    print_record_reports(imp, "build-cases")
    for f in found:
        print(f"{f['game']}: {f['picked']} case(s) of the {f['qualify']} {f['format']} record(s) that qualify "
              f"({f['files']} file(s) read, {f['left_out']} record(s) left out; seed {seed})")
    print(f"built {len(imp.reports)} case(s) into {imp.root}")
    return 0
