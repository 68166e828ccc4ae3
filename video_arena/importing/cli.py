"""`video-arena import-cases`: matches from outside (footage + event log + V_t) as cases of a tasks tree.

    video-arena import-cases --game G --video V --events LOG [--values VT] --tasks-root DIR
                             [--case-id ID] --source S --licence L --value-model M [--replace] [--fps N]
    video-arena import-cases --from-tree SRC --tasks-root DIR --source S --licence L --value-model M
                             [--games g,..] [--replace] [--fps N]
    video-arena import-cases --game G --FORMAT FILE [FILE ..] --tasks-root DIR --licence L [--source S]
                             [--pick N] [--case-id ID] [--replace]
        a match file a game's plugin reads (its game.toml's [import] record_formats, e.g. --opendota for
        DOTA 2): the plugin makes the events, V_t and video; files holding many matches (a PGN) make a case
        of every match the game's rules take, or of the N-th match only with --pick N (1-based); files
        that make no case, or a match the game's V_t model was fitted on, are refused with one line (exit
        2); a match that is a built-in case's is imported flagged as public (its manifest entry's
        "public_match", and a warning line)

The log is CSV or JSON (`t,type,actor,where` plus `v_before,v_after` per event, or a separate V_t
series given with --values). delta/state are derived from V_t with the game's band (and checked when
the log gives them). The video is remuxed or re-encoded to the game's render size at a constant frame
rate (never upscaled, audio and metadata dropped). Every bad input is a one-line error naming the
row, and nothing is written: everything is staged next to the tree and renamed into place at the end.
The built-in tasks/ is written only when --tasks-root names it. docs/IMPORTING.md has the formats.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from video_arena.games.base import record_formats
from video_arena.core.case_origins import PUBLIC_MATCH, public_warning
from video_arena.importing.importer import Importer, Provenance, RecordRefused
from video_arena.importing.logs import ImportCaseError, read_event_log, read_value_series
from video_arena.importing.signals import Interrupted, signals_unwind
from video_arena.cli_args import comma_list
from video_arena.importing.tree import import_tree


def main(argv: list[str] | None = None) -> int:
    """SIGINT and SIGTERM unwind any import from here on (importing/signals.py): every staging folder is
    removed whatever path was taken, and the command prints one line."""
    with signals_unwind():
        try:
            return _main(argv)
        except Interrupted as exc:
            print(f"import-cases: {exc.verb}" + (" after the import had completed" if exc.after_commit
                                                  else "; nothing was written"), file=sys.stderr)
            return exc.status
        finally:
            Importer.discard_all()


def _main(argv: list[str] | None) -> int:
    ap = argparse.ArgumentParser(prog="video-arena import-cases", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks-root", required=True, help="tasks tree to write (created if missing)")
    ap.add_argument("--media-root", default=None, help="where <game>/media/ goes (default: $VA_MEDIA_ROOT or the tasks root)")
    ap.add_argument("--game", help="the game of a single case")
    ap.add_argument("--video", type=Path, help="the match video")
    ap.add_argument("--events", type=Path, help="the event log (CSV or JSON)")
    ap.add_argument("--values", type=Path, default=None, help="a V_t series (CSV or JSON of t, v)")
    ap.add_argument("--case-id", default=None, help="8 characters of [A-Za-z0-9] (default: random)")
    ap.add_argument("--from-tree", type=Path, default=None, help="import every case of a tree in the seed's layout")
    ap.add_argument("--games", default=None, help="with --from-tree: only these games (comma-separated)")
    ap.add_argument("--source", help="where the match comes from (event, demo/replay, VOD)")
    ap.add_argument("--licence", required=True, help="the licence under which the footage and log may be used")
    ap.add_argument("--value-model", help="the model that computed V_t (name, version, fit data)")
    formats = record_formats()
    for fmt, games in sorted(formats.items()):
        ap.add_argument(f"--{fmt}", nargs="+", type=Path, metavar="FILE", dest=f"format_{fmt}",
                        help="; ".join(f"{g}: {text}" for g, text in games))
    ap.add_argument("--pick", type=int, default=None, metavar="N",
                    help="with --FORMAT: only the N-th match the files hold (1-based; default: every one that qualifies)")
    ap.add_argument("--fps", type=int, default=None, help="output frame rate (default: the source's, rounded, max 60)")
    ap.add_argument("--replace", action="store_true", help="overwrite cases whose id already exists")
    a = ap.parse_args(argv)
    chosen = [(fmt, getattr(a, f"format_{fmt}")) for fmt in sorted(formats) if getattr(a, f"format_{fmt}")]
    if chosen:
        return _record_main(ap, a, chosen)
    for name in ("source", "value_model"):
        if getattr(a, name) is None:
            ap.error(f"--{name.replace('_', '-')} is required")
    single = [a.game, a.video, a.events]
    if a.from_tree is not None:
        if any(x is not None for x in single + [a.values, a.case_id]):
            ap.error("--from-tree takes no --game/--video/--events/--values/--case-id")
    elif any(x is None for x in single):
        ap.error("a single case needs --game, --video and --events (or use --from-tree)")
    elif a.games:
        ap.error("--games goes with --from-tree")
    if a.pick is not None:
        ap.error("--pick goes with a match file (--FORMAT FILE ...)")
    return _import(a, Provenance(a.source, a.licence, a.value_model))


def _import(a, prov: Provenance) -> int:
    try:
        with Importer(a.tasks_root, a.media_root, replace=a.replace) as imp:
            if a.from_tree is not None:

                games = comma_list(a.games) if a.games else None
                notes = import_tree(a.from_tree, imp, prov, games=games, fps=a.fps)
            else:
                rows = read_event_log(a.events)
                series = read_value_series(a.values) if a.values is not None else None
                inputs = {"events": a.events} | ({"values": a.values} if a.values is not None else {})
                imp.add_case(a.game, a.video, rows, series, prov, case_id=a.case_id, fps=a.fps,
                             inputs=inputs, series_name=a.values.name if a.values else "")
                notes = {}
            try:
                imp.commit()
            except OSError as exc:
                print(f"import-cases: error while renaming into place: {exc}; the tree may be partly "
                      f"updated (re-run with --replace)", file=sys.stderr)
                return 1
    except (ImportCaseError, OSError) as exc:
        print(f"import-cases: error: {exc}; nothing was written", file=sys.stderr)
        return 1
    for name, lines in notes.items():
        for line in lines:
            print(f"{name}: {line}")
    for r in imp.reports:
        print(f"{r['game']}/{r['case_id']}: {r['n_events']} events, {r['duration_s']} s, video {r['video']} "
              f"at {r['fps']} fps" + (f", times snapped by up to {r['max_time_snap_s']} s" if r['max_time_snap_s'] else ""))
    print(f"imported {len(imp.reports)} case(s) into {imp.root}"
          + (f" (videos under {imp.media_root})" if imp.media_elsewhere else ""))
    return 0


def _record_main(ap, a, chosen: list[tuple[str, list[Path]]]) -> int:
    """One case from a match file its game's plugin reads (--FORMAT FILE ...)."""
    if len(chosen) > 1 or a.game is None:
        ap.error("a match file goes with --game and one --FORMAT")
    if any(x is not None for x in (a.video, a.events, a.values, a.from_tree, a.games, a.fps, a.value_model)):
        ap.error(f"--{chosen[0][0]} makes the events, V_t and video itself: no --video, --events, --values, "
                 "--from-tree, --games, --fps or --value-model")
    fmt, files = chosen[0]
    source = a.source or f"{fmt} match file {' + '.join(f.name for f in files)}"
    try:
        with Importer(a.tasks_root, a.media_root, replace=a.replace) as imp:
            imp.add_record_case(a.game, fmt, files, Provenance(source, a.licence, "the game's shipped V_t model"),
                                case_id=a.case_id, pick=a.pick)
            imp.commit()
    except RecordRefused as exc:
        print(f"import-cases: refused: {exc}; nothing was written", file=sys.stderr)
        return 2
    except (ImportCaseError, OSError) as exc:
        print(f"import-cases: error: {exc}; nothing was written", file=sys.stderr)
        return 1
    print_record_reports(imp, "import-cases")
    print(f"imported {len(imp.reports)} case(s) into {imp.root}")
    return 0


def print_record_reports(imp: Importer, command: str) -> None:
    """What `import-cases --FORMAT` and `build-cases --records` print of the cases made of records: a line per
    case, a line per record left out, and a warning per case that is a built-in case's match."""
    for r in imp.reports:
        print(f"{r['game']}/{r['case_id']}: {r['n_events']} events, {r['duration_s']} s, video rendered at {r['fps']} fps"
              + (f" ({r['record']})" if len(imp.reports) > 1 else ""))
    for line in imp.left_out:
        print(f"left out: {line}")
    for r in imp.reports:
        if r.get(PUBLIC_MATCH):
            print(f"{command}: warning: {public_warning(r['game'], r['case_id'], r[PUBLIC_MATCH])}")


if __name__ == "__main__":
    sys.exit(main())
