"""A user's match in ShuttleSet's layout as a badminton case's record
(`video-arena import-cases --game badminton --shuttleset FILE ...`).

ShuttleSet keeps a collection as `set/match.csv` (one row per match), `set/homography.csv` (one row per match:
the camera-to-court homography and the court's corners in the picture) and one folder per match, named by
the match's `video` (its name in both CSVs), holding `set1.csv`, `set2.csv` (and `set3.csv`): one row per
stroke.  A user gives the files of one match, in any order:

    --shuttleset set/match.csv set/homography.csv set/<video>/set1.csv set/<video>/set2.csv [set/<video>/set3.csv]

The set files name the match (the folder they are in); its rows of match.csv and homography.csv are the
ones whose `video` is that name (or the only row, when the file holds one).  Everything is read bounded (each
file a regular file reached through no link, at most MAX_CSV_BYTES and MAX_ROWS rows), every number the
record uses must be finite and in range, and the match is read by the same function as the committed
matches (records.match_record); the court positions it gives must lie within OFF_COURT_M of the court.
"""
from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any

from video_arena.digests import sha256_bytes
from video_arena.games.badminton import records as R
from video_arena.safe_io import read_capped

FORMAT = "shuttleset"
COLLECTION = "imported"
#: Caps on one file (a set of a real match is about 50 kB and 300 to 700 rows; the whole match.csv of
#: ShuttleSet 10 kB).
MAX_CSV_BYTES = 4 * 1024 * 1024
MAX_ROWS = 5000
MAX_TEXT = 200                    # characters of a name, tournament or round
#: Camera pixels and court metres a record may hold (the committed matches stay within 3 m of the court).
MAX_PIXEL = 100_000.0
OFF_COURT_M = 10.0
MAX_FRAME = 100_000_000           # frame_num (more than 900 hours at 30 fps)

SET_FILE = re.compile(r"set([1-9])\.csv")
SET_COLUMNS = ("rally", "time", "frame_num", "roundscore_A", "roundscore_B", "player", "type", "lose_reason",
               "getpoint_player", "player_location_x", "player_location_y", "opponent_location_x",
               "opponent_location_y", "landing_x", "landing_y")
MATCH_COLUMNS = ("video", "tournament", "round", "year", "winner", "loser")
CORNERS = ("upleft_x", "upright_x", "downleft_x", "downright_x", "upleft_y", "upright_y", "downleft_y", "downright_y")
HOMOGRAPHY_COLUMNS = ("video", "homography_matrix") + CORNERS
TIME = re.compile(r"[0-9]{1,3}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]{1,6})?")


class ShuttleSetError(R.RecordError):
    pass


def read_csv_file(path: Path, columns: tuple[str, ...]) -> tuple[list[dict[str, str]], str]:
    """(the rows of a CSV file with these columns, its SHA-256), read bounded; ShuttleSetError or FileRefused
    (a ValueError) naming the file."""
    data = read_capped(path, MAX_CSV_BYTES, "a ShuttleSet file")
    try:
        reader = csv.DictReader(io.StringIO(data.decode("utf-8-sig"), newline=""))
        rows = []
        for row in reader:
            if len(rows) == MAX_ROWS:
                raise ShuttleSetError(f"{path}: more than {MAX_ROWS} rows")
            rows.append({k: (v or "") for k, v in row.items() if isinstance(k, str)})
        header = reader.fieldnames or []
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ShuttleSetError(f"{path}: not a CSV file in UTF-8 ({str(exc)[:100]})") from None
    missing = [c for c in columns if c not in header]
    if missing:
        raise ShuttleSetError(f"{path}: not a ShuttleSet {path.name} (no column {', '.join(missing)})")
    return rows, sha256_bytes(data)


def _number(text: str, lo: float, hi: float, whole: bool = False) -> float:
    v = float(text)       # ValueError for anything that is not a number
    if not (math.isfinite(v) and lo <= v <= hi and (not whole or v == int(v))):
        raise ValueError(text)
    return v


def check_set_rows(path: Path, rows: list[dict[str, str]]) -> None:
    """Every number of a set file the record uses is finite and in range (positions may be empty)."""
    if not rows:
        raise ShuttleSetError(f"{path}: no stroke")
    for k, r in enumerate(rows, start=2):
        field = ""
        try:
            for field, lo, hi in (("rally", 1, 10_000), ("frame_num", 0, MAX_FRAME), ("roundscore_A", 0, 30),
                                  ("roundscore_B", 0, 30)):
                _number(r[field], lo, hi, whole=True)
            for field in ("player_location_x", "player_location_y", "opponent_location_x", "opponent_location_y",
                          "landing_x", "landing_y"):
                if r[field]:
                    _number(r[field], -MAX_PIXEL, MAX_PIXEL)
            field = "time"
            if not TIME.fullmatch(r["time"]):
                raise ValueError(r["time"])
            field = "player"
            if r["player"] not in ("A", "B"):
                raise ValueError(r["player"])
        except ValueError:
            raise ShuttleSetError(f"{path} line {k}: {field} {r[field][:40]!r} is not a number in range "
                                  f"(or a time h:m:s, or the player A or B)") from None


def check_match_row(path: Path, row: dict[str, str]) -> None:
    try:
        _number(row["year"], 1900, 2100, whole=True)
    except ValueError:
        raise ShuttleSetError(f"{path}: year {row['year'][:20]!r} is not a year") from None
    for field in ("tournament", "round", "winner", "loser"):
        if len(row[field]) > MAX_TEXT or (field in ("winner", "loser") and not row[field].strip()):
            raise ShuttleSetError(f"{path}: {field} is empty or longer than {MAX_TEXT} characters")
    if row["winner"] == row["loser"]:
        raise ShuttleSetError(f"{path}: the winner and the loser are the same player")


def check_homography_row(path: Path, row: dict[str, str]) -> None:
    try:
        h = json.loads(row["homography_matrix"]) if len(row["homography_matrix"]) <= 1000 else None
        ok = isinstance(h, list) and len(h) == 3 and all(
            isinstance(r, list) and len(r) == 3 and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                        and math.isfinite(v) for v in r) for r in h)
        for c in CORNERS:
            _number(row[c], -MAX_PIXEL, MAX_PIXEL)
    except (ValueError, RecursionError):
        ok = False
    if not ok:
        raise ShuttleSetError(f"{path}: homography_matrix is not 3 x 3 finite numbers, or a corner is not a number")


def _row_of(path: Path, rows: list[dict[str, str]], video: str) -> dict[str, str]:
    """The row whose `video` is the match's name, or the only row."""
    mine = [r for r in rows if r["video"] == video]
    if len(mine) == 1:
        return mine[0]
    if not mine and len(rows) == 1:
        return rows[0]
    raise ShuttleSetError(f"{path}: {len(mine)} rows whose video is {video!r} (the set files' folder), need one")


def _classify(paths: list[Path]) -> tuple[dict[int, Path], Path, Path]:
    sets: dict[int, Path] = {}
    named: dict[str, Path] = {}
    for p in paths:
        m = SET_FILE.fullmatch(p.name)
        if m:
            if int(m.group(1)) in sets:
                raise ShuttleSetError(f"{p}: two files {p.name}")
            sets[int(m.group(1))] = p
        elif p.name in ("match.csv", "homography.csv"):
            if p.name in named:
                raise ShuttleSetError(f"{p}: two files {p.name}")
            named[p.name] = p
        else:
            raise ShuttleSetError(f"{p}: not a file of ShuttleSet's layout (set1.csv, set2.csv, set3.csv, "
                                  "match.csv, homography.csv)")
    if sorted(sets) != list(range(1, len(sets) + 1)) or not 1 <= len(sets) <= 3:
        raise ShuttleSetError(f"--{FORMAT}: the set files must be set1.csv, set2.csv (and set3.csv), got "
                              f"{', '.join(sorted(p.name for p in sets.values())) or 'none'}")
    for name in ("match.csv", "homography.csv"):
        if name not in named:
            raise ShuttleSetError(f"--{FORMAT}: no {name} (the match's row of it is needed: its players, "
                                  "tournament and year, or its camera homography)")
    if len({p.absolute().parent for p in sets.values()}) != 1:
        raise ShuttleSetError(f"--{FORMAT}: the set files are in different folders (one match's set files are "
                              "in the folder named by its video)")
    return sets, named["match.csv"], named["homography.csv"]


def off_court(record: dict[str, Any]) -> str:
    """"" when every position of the record lies within OFF_COURT_M of the court, else where one does not."""
    for i, r in enumerate(record["rallies"]):
        for k, s in enumerate(r["strokes"]):
            for p in s[3:6]:
                if p is not None and not (math.isfinite(p[0]) and math.isfinite(p[1])
                                          and -OFF_COURT_M <= p[0] <= R.COURT_W + OFF_COURT_M
                                          and -OFF_COURT_M <= p[1] <= R.COURT_L + OFF_COURT_M):
                    return (f"rally {i} stroke {k}: a position more than {OFF_COURT_M:g} m off the court (the "
                            "homography row does not fit the strokes)")
    return ""


def record_from_files(paths: list[Path]) -> dict[str, Any]:
    """The record (records.match_record) of one match given as its ShuttleSet files; ShuttleSetError (one line
    naming the file) when they cannot make one."""
    sets, match_csv, homography_csv = _classify([Path(p) for p in paths])
    video = sets[1].absolute().parent.name
    if not R.match_key(video):
        raise ShuttleSetError(f"{sets[1]}: the set files' folder is the match's name (match.csv's video), "
                              "and this one has none")
    games, files = [], []
    for n in sorted(sets):
        rows, sha = read_csv_file(sets[n], SET_COLUMNS)
        check_set_rows(sets[n], rows)
        games.append(rows)
        files.append({"name": f"{video}/{sets[n].name}", "sha256": sha})
    match_rows, sha = read_csv_file(match_csv, MATCH_COLUMNS)
    meta = _row_of(match_csv, match_rows, video)
    check_match_row(match_csv, meta)
    files.append({"name": match_csv.name, "sha256": sha})
    homography_rows, sha = read_csv_file(homography_csv, HOMOGRAPHY_COLUMNS)
    hrow = _row_of(homography_csv, homography_rows, video)
    check_homography_row(homography_csv, hrow)
    files.append({"name": homography_csv.name, "sha256": sha})
    source = {"collection": COLLECTION, "id": "", "format": FORMAT, "folder": video, "record_files": files}
    try:
        record = R.match_record(meta, hrow, games, source)
    except (R.RecordError, ValueError, ZeroDivisionError, OverflowError) as exc:
        raise ShuttleSetError(f"{video}: {str(exc)[:200]}") from None
    why = off_court(record)
    if why:
        raise ShuttleSetError(f"{video}: {why}")
    source |= {"id": f"shuttleset-{R.match_key(video)[:40]}", "match_key": R.match_key(video)}
    return record
