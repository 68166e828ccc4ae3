"""The committed DOTA 2 records: rows of professional matches of 2018 as the OpenDota API returned them,
turned into OpenDota match objects (match.subset) for the cases and the V_t model.

    python -m video_arena.games.dota2.records import DIR   # write data/*.csv.gz from an upstream copy

`data/` holds four gzip'd CSV files cut from github.com/ThoughtfulPractice/dat_2018 (data/README.md: the
commits, the upstream files and their SHA-256, which rows and columns were kept).  The repository states
no licence; the rows are facts of public professional matches (what fell when, who won) as OpenDota
published them.

    matches.csv.gz     match_id, league, duration, radiant_win, radiant/dire team id and name (797 matches)
    objectives.csv.gz  match_id, time, type, key, team: every building_kill and CHAT_MESSAGE_ROSHAN_KILL
    gold_xp.csv.gz     match_id, minute, radiant_gold_adv, radiant_xp_adv (upstream `minute` counts from 1:
                       its row m is OpenDota's list index m - 1, the lead at game minute m - 1)
    wards.csv.gz       match_id, player_slot, time, type, x, y, ehandle: every ward placed or removed in the
                       47 main-stage matches of The International 2018
"""
from __future__ import annotations

import csv
import gzip
import io
import sys
from collections import defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Any

from video_arena.digests import sha256_bytes, sha256_text
from video_arena.games.dota2.match import MatchError, subset

DATA = Path(__file__).resolve().parent / "data"
REPOSITORY = "github.com/ThoughtfulPractice/dat_2018"
DATA_COMMIT = "361b8aaaebfdcae6b751f2a5d6604baf9d5dcc87"
WARDS_COMMIT = "db573899727b0c51dc55652d1c4c72f80947fc07"
#: Exactly as the records' provenance states it (docs/CASES.md, every manifest, data/README.md).
LICENCE = ("The repository states no licence; the rows are facts of public professional matches (what fell "
           "when, who won) as OpenDota published them.")
COLLECTION = "dat_2018"
FILES = {
    "matches": ("matches.csv.gz", ["match_id", "league", "duration", "radiant_win", "radiant_team_id",
                                   "radiant_team_name", "dire_team_id", "dire_team_name"]),
    "objectives": ("objectives.csv.gz", ["match_id", "time", "type", "key", "team"]),
    "gold_xp": ("gold_xp.csv.gz", ["match_id", "minute", "radiant_gold_adv", "radiant_xp_adv"]),
    "wards": ("wards.csv.gz", ["match_id", "player_slot", "time", "type", "x", "y", "ehandle"]),
}
#: The upstream files (path in the repository, at its commit) each data file is cut from.
UPSTREAM = {
    "matches": [("data/basic_match.csv", DATA_COMMIT), ("data/match_ids.csv", DATA_COMMIT)],
    "objectives": [("data/objectives.csv", DATA_COMMIT)],
    "gold_xp": [("data/radiant_gold_and_xp_adv.csv", DATA_COMMIT)],
    "wards": [("output/wards.csv", WARDS_COMMIT)],
}
KEPT_OBJECTIVES = ("building_kill", "CHAT_MESSAGE_ROSHAN_KILL")
WARD_TYPES = ("obs_log", "obs_left_log", "sen_log", "sen_left_log")


def data_path(name: str) -> Path:
    return DATA / FILES[name][0]


def read_rows(name: str) -> list[dict[str, str]]:
    path = data_path(name)
    if not path.is_file():
        raise MatchError(f"{path} is missing (python -m video_arena.games.dota2.records import DIR writes it)")
    with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    if rows and list(rows[0]) != FILES[name][1]:
        raise MatchError(f"{path}: columns {list(rows[0])}, expected {FILES[name][1]}")
    return rows


def _number(text: str) -> int:
    return int(float(text))


@lru_cache(maxsize=1)
def all_matches() -> dict[int, dict[str, Any]]:
    """{match_id: {"info": the matches.csv row, "match": the OpenDota subset}} of every committed match."""
    by: dict[str, dict[str, list[dict[str, str]]]] = defaultdict(lambda: defaultdict(list))
    for name in ("objectives", "gold_xp", "wards"):
        for r in read_rows(name):
            by[r["match_id"]][name].append(r)
    out = {}
    for info in read_rows("matches"):
        mid = info["match_id"]
        rows = by.get(mid, {})
        gold = sorted(rows.get("gold_xp", []), key=lambda r: int(r["minute"]))
        if [int(r["minute"]) for r in gold] != list(range(1, len(gold) + 1)):
            raise MatchError(f"match {mid}: the gold and experience rows are not minutes 1, 2, ...")
        players: dict[int, dict[str, list]] = {}
        for r in rows.get("wards", []):
            p = players.setdefault(int(r["player_slot"]), {k: [] for k in WARD_TYPES})
            p[r["type"]].append({"time": int(r["time"]), "x": int(r["x"]), "y": int(r["y"]), "ehandle": int(r["ehandle"])})
        obj = {
            "match_id": int(mid),
            "duration": int(info["duration"]),
            "radiant_win": {"True": True, "False": False}[info["radiant_win"]],
            "objectives": [{"time": int(r["time"]), "type": r["type"], "key": r["key"]} if r["type"] == "building_kill"
                           else {"time": int(r["time"]), "type": r["type"], "team": _number(r["team"])}
                           for r in rows.get("objectives", [])],
            "radiant_gold_adv": [int(r["radiant_gold_adv"]) for r in gold],
            "radiant_xp_adv": [int(r["radiant_xp_adv"]) for r in gold],
            "players": [{"player_slot": s, **players[s]} for s in sorted(players)],
        }
        try:
            out[int(mid)] = {"info": info, "match": subset(obj), "wards": bool(players)}
        except MatchError as exc:
            raise MatchError(f"match {mid} of {data_path('matches').name}: {exc}") from None
    return out


def source_of(match_id: int, info: dict[str, str]) -> dict[str, Any]:
    """The ground truth's `record.source`: the match id, the record files, where they come from, the licence."""
    files = [f"video_arena/games/dota2/data/{FILES[n][0]}" for n in ("matches", "objectives", "gold_xp", "wards")]
    return {"collection": COLLECTION, "id": "dota2-" + sha256_text(str(match_id))[:12],
            "match_id": match_id, "league": info["league"], "record_files": files,
            "upstream": {"repository": REPOSITORY, "files": [f"{p} at {c}" for n in FILES for p, c in UPSTREAM[n]]},
            "licence": LICENCE}


# -- writing data/ from an upstream copy -------------------------------------------------------------------

def _write(name: str, rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(FILES[name][1])
    w.writerows(rows)
    data = gzip.compress(buf.getvalue().encode("utf-8"), compresslevel=9, mtime=0)
    DATA.mkdir(parents=True, exist_ok=True)
    data_path(name).write_bytes(data)
    return sha256_bytes(data)


def import_upstream(folder: Path) -> dict[str, str]:
    """Cut data/*.csv.gz from an upstream copy laid out as the records folder (data/, ti8_main_stage/)."""
    def rows(rel: str) -> list[dict[str, str]]:
        with open(folder / rel, encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f))

    league = {r["match_id"]: r["league"] for r in rows("data/match_ids.csv")}
    out = {}
    out["matches"] = _write("matches", [[r["match_id"], league.get(r["match_id"], ""), r["duration"], r["radiant_win"],
                                         r["radiant_team_id"], r["radiant_team_name"], r["dire_team_id"], r["dire_team_name"]]
                                        for r in rows("data/basic_match.csv")])
    out["objectives"] = _write("objectives", [[r["match_id"], r["time"], r["type"], r["key"], r["team"]]
                                              for r in rows("data/objectives.csv") if r["type"] in KEPT_OBJECTIVES])
    out["gold_xp"] = _write("gold_xp", [[r["match_id"], r["minute"], r["radiant_gold_adv"], r["radiant_xp_adv"]]
                                        for r in rows("data/radiant_gold_and_xp_adv.csv")])
    out["wards"] = _write("wards", [[r[k] for k in FILES["wards"][1]] for r in rows("ti8_main_stage/wards.csv")])
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] != "import":
        print("usage: python -m video_arena.games.dota2.records import DIR", file=sys.stderr)
        return 2
    for name, sha in import_upstream(Path(argv[1])).items():
        print(f"wrote {data_path(name).relative_to(DATA.parent)}: sha256 {sha}")
    all_matches.cache_clear()
    print(f"{len(all_matches())} matches read back")
    return 0


if __name__ == "__main__":
    sys.exit(main())
