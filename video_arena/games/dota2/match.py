"""A DOTA 2 match as the plugin reads it: the subset of OpenDota's match object the cases use, checked,
and decoded into the buildings, events, wards, Roshan and the per-minute leads.

The one record format is OpenDota's match JSON (`/api/matches/<id>`), of which the plugin keeps:

    match_id, duration, radiant_win
    objectives[]        {time, type, key} for type "building_kill", {time, type, team} for
                        "CHAT_MESSAGE_ROSHAN_KILL" (team 2 radiant, 3 dire); other types are not kept
    radiant_gold_adv[]  radiant's gold lead at minute 0, 1, 2, ... (index = game minute)
    radiant_xp_adv[]    radiant's experience lead, the same way
    players[]           {player_slot, obs_log, obs_left_log, sen_log, sen_left_log}: each ward placed or
                        removed as {time, x, y, ehandle} (x, y on OpenDota's 0-256 map grid)

`subset(obj)` takes any OpenDota match object (a whole API answer, or the CSV rows of records.py turned
into one) to that subset or refuses it with one line (`MatchError`).  Pure Python: no data file.

Time base: game-clock seconds, OpenDota's `time` (0 at the horn, negative before it).  The video starts at
the horn, or at the first ward placed before it but never more than PREGAME_S before the horn (one parse
dates pre-game wards 13 minutes before the horn, longer than any pre-game); a ward placed earlier is on
the map from the first frame.  Video time = game time - video start.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from video_arena.safe_io import shown


class MatchError(ValueError):
    """A match record the DOTA 2 cases cannot use (one clear line)."""


SIDES = ("radiant", "dire")
TEAM_OF_SIDE = {"goodguys": "radiant", "badguys": "dire"}
ROSHAN_TEAM = {2: "radiant", 3: "dire"}
LANES = ("top", "mid", "bot")
#: Longest pre-game the video shows (7.x patches: 90 s from the heroes' spawn to the horn).
PREGAME_S = 90
#: How long a ward stands when the record has no removal for it (observer and sentry wards last 6 minutes
#: in the 7.1x patches; removed wards of the committed records lived at most 374 s).
WARD_LIFETIME_S = 360
#: Roshan's return, the rule the render draws: RESPAWN_S after a kill (8 minutes, the earliest respawn of
#: the 8-11 minute window of the 7.1x patches; the next kill in the committed records came at least 516 s
#: after the one before).
ROSHAN_RESPAWN_S = 480
#: What the gold and experience series must cover: minutes up to the match's end minus this many (and at
#: most this many minutes past it).
LEAD_SLACK_MIN = 3
#: The longest match read: 4 hours (the 797 committed matches last 801-5281 s; the video has a frame per
#: game second, so this bounds the render).
MAX_DURATION_S = 4 * 3600
#: A building or Roshan falls at most this long after `duration` (the committed matches' Ancients fall at
#: `duration` or 1 s after it).
END_SLACK_S = 5
#: A ward is placed or removed at most this long before the horn or after the end (one parse dates wards
#: 817 s before the horn, another logs removals 320 s after the end).
WARD_WINDOW_S = 1800
#: At most this many ward entries (placements and removals) per match (the most of the committed matches: 299).
MAX_WARD_ENTRIES = 2000
#: At most this many building kills and Roshan kills per match (the most of the committed matches: 43).
MAX_OBJECTIVES = 200
#: A lead of more than this much gold or experience is no DOTA 2 match (the committed ones stay within 50,000).
MAX_LEAD = 1_000_000

BUILDING_KEY = re.compile(r"\Anpc_dota_(goodguys|badguys)_(tower([1-4])(?:_(top|mid|bot))?|(melee|range)_rax_(top|mid|bot)"
                          r"|fort|healers)\Z")


@dataclass(frozen=True)
class Building:
    """One building of the map: `id` like `radiant_tower2_mid`, `radiant_tower4_a`, `dire_melee_top`, `dire_fort`."""

    id: str
    side: str
    kind: str            # tower | melee | ranged | fort
    lane: str            # top | mid | bot | base
    tier: int            # towers 1-4; 0 otherwise

    @property
    def where(self) -> str:
        """The answer row's `where` for its fall (game.toml): `mid_t2`, `base_t4`, `top_melee`; "" for the fort."""
        if self.kind == "tower":
            return "base_t4" if self.tier == 4 else f"{self.lane}_t{self.tier}"
        if self.kind in ("melee", "ranged"):
            return f"{self.lane}_{self.kind}"
        return ""


def _buildings() -> tuple[Building, ...]:
    out = []
    for side in SIDES:
        for lane in LANES:
            for tier in (1, 2, 3):
                out.append(Building(f"{side}_tower{tier}_{lane}", side, "tower", lane, tier))
        for lane in LANES:
            for kind in ("melee", "ranged"):
                out.append(Building(f"{side}_{kind}_{lane}", side, kind, lane, 0))
        out += [Building(f"{side}_tower4_a", side, "tower", "base", 4), Building(f"{side}_tower4_b", side, "tower", "base", 4),
                Building(f"{side}_fort", side, "fort", "base", 0)]
    return tuple(out)


#: Every building the cases know, in a fixed order (the render draws them in it).  Shrines are not among
#: them: OpenDota names both of a side's shrines `..._healers`, so neither the place of a fallen shrine nor
#: the picture after its fall can be told from the record.
BUILDINGS = _buildings()
BUILDING = {b.id: b for b in BUILDINGS}


def other(side: str) -> str:
    return SIDES[1 - SIDES.index(side)]


def building_of_key(key: str, t4_fallen: dict[str, int] | None = None) -> Building | None:
    """The building an OpenDota objective key names (None for a shrine); a side's tier-4 kills take its two
    tier-4 towers in the fixed order a, b (`t4_fallen`: how many of each side's fell before; the key does
    not say which one fell)."""
    m = BUILDING_KEY.match(key)
    if m is None:
        raise MatchError(f"objective key {key!r} is no building the DOTA 2 cases know")
    side = TEAM_OF_SIDE[m.group(1)]
    t4_taken = (t4_fallen or {}).get(side, 0)
    if m.group(2) == "healers":
        return None
    if m.group(2) == "fort":
        return BUILDING[f"{side}_fort"]
    if m.group(3):
        tier = int(m.group(3))
        if tier == 4:
            if m.group(4) or t4_taken > 1:
                raise MatchError(f"objective key {key!r}: a side has two tier-4 towers, with no lane")
            return BUILDING[f"{side}_tower4_{'ab'[t4_taken]}"]
        if not m.group(4):
            raise MatchError(f"objective key {key!r} names no lane")
        return BUILDING[f"{side}_tower{tier}_{m.group(4)}"]
    return BUILDING[f"{side}_{'melee' if m.group(5) == 'melee' else 'ranged'}_{m.group(6)}"]


# -- the subset --------------------------------------------------------------------------------------

def _int(v: Any, what: str, lo: int | None = None, hi: int | None = None, why: str = "") -> int:
    """A whole number (an int, or a float without a fraction) within [lo, hi] (`why` says where the bounds
    come from); a 400-digit integer is refused by its size, never converted to a float."""
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise MatchError(f"{what} must be a whole number, got {shown(v)}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        bounds = (f"within [{lo}, {hi}]" if lo is not None and hi is not None
                  else f"at most {hi}" if lo is None else f"at least {lo}")
        raise MatchError(f"{what} is {shown(v)}, must be {bounds}{why}")
    return v


def _number(v: Any, what: str) -> int | float:
    if isinstance(v, int) and not isinstance(v, bool):
        return _int(v, what)
    if not isinstance(v, float) or not math.isfinite(v):
        raise MatchError(f"{what} must be a number, got {shown(v)}")
    return int(v) if v == int(v) else v


def _ward(e: Any, what: str, duration: int) -> dict[str, int | float]:
    if not isinstance(e, dict):
        raise MatchError(f"{what} must be an object")
    w = {"time": _int(e.get("time"), f"{what}.time", -WARD_WINDOW_S, duration + WARD_WINDOW_S,
                     f" (from {WARD_WINDOW_S} s before the horn to as long after the match's end at {duration} s)"),
         "x": _number(e.get("x"), f"{what}.x"),
         "y": _number(e.get("y"), f"{what}.y"), "ehandle": _int(e.get("ehandle"), f"{what}.ehandle")}
    if not (0 <= w["x"] <= 256 and 0 <= w["y"] <= 256):
        raise MatchError(f"{what}: x, y {w['x']}, {w['y']} are off OpenDota's 0-256 map grid")
    return w


def subset(obj: Any) -> dict[str, Any]:
    """The part of an OpenDota match object the cases use, checked (MatchError names what is missing)."""
    if not isinstance(obj, dict):
        raise MatchError("an OpenDota match is a JSON object")
    missing = [k for k in ("match_id", "duration", "objectives", "radiant_gold_adv", "radiant_xp_adv") if obj.get(k) is None]
    if missing:
        raise MatchError(f"the match has no {', '.join(missing)} (a parsed OpenDota match has them: "
                         f"request a parse on opendota.com and fetch /api/matches/<id> again)")
    duration = _int(obj["duration"], "duration")
    if duration <= 0:
        raise MatchError(f"duration {duration} must be > 0")
    if duration > MAX_DURATION_S:
        raise MatchError(f"duration {duration} s is longer than the {MAX_DURATION_S} s a match may last")
    end, ends = duration + END_SLACK_S, f" (the match ends at duration {duration} s)"
    if not isinstance(obj["objectives"], list):
        raise MatchError("objectives must be a list")
    objectives = []
    for k, o in enumerate(obj["objectives"]):
        if not isinstance(o, dict):
            raise MatchError(f"objectives[{k}] must be an object")
        if o.get("type") == "building_kill":
            if not isinstance(o.get("key"), str):
                raise MatchError(f"objectives[{k}]: a building_kill needs its key")
            objectives.append({"time": _int(o.get("time"), f"objectives[{k}].time", hi=end, why=ends),
                               "type": "building_kill", "key": o["key"]})
        elif o.get("type") == "CHAT_MESSAGE_ROSHAN_KILL":
            team = _int(o.get("team"), f"objectives[{k}].team")
            if team not in ROSHAN_TEAM:
                raise MatchError(f"objectives[{k}]: Roshan killed by team {team} (2 radiant, 3 dire)")
            objectives.append({"time": _int(o.get("time"), f"objectives[{k}].time", hi=end, why=ends),
                               "type": "CHAT_MESSAGE_ROSHAN_KILL", "team": team})
        if len(objectives) > MAX_OBJECTIVES:
            raise MatchError(f"objectives: more than {MAX_OBJECTIVES} building and Roshan kills")
    kills = sum(o["type"] == "CHAT_MESSAGE_ROSHAN_KILL" for o in objectives)
    if kills > duration // ROSHAN_RESPAWN_S + 1:
        raise MatchError(f"objectives: Roshan killed {kills} times in {duration} s (he respawns "
                         f"{ROSHAN_RESPAWN_S} s or more after a kill)")
    leads = {}
    for name in ("radiant_gold_adv", "radiant_xp_adv"):
        series = obj[name]
        if not isinstance(series, list) or not series:
            raise MatchError(f"{name} must be a non-empty list (the lead at each minute)")
        if not duration // 60 + 1 - LEAD_SLACK_MIN <= len(series) <= duration // 60 + 1 + LEAD_SLACK_MIN:
            raise MatchError(f"{name} covers {len(series)} minutes of a {duration / 60:.0f}-minute match")
        leads[name] = [_int(v, f"{name}[{i}]", -MAX_LEAD, MAX_LEAD) for i, v in enumerate(series)]
    out: dict[str, Any] = {"match_id": _int(obj["match_id"], "match_id", 0, 2 ** 63 - 1), "duration": duration}
    if obj.get("radiant_win") is not None:
        if not isinstance(obj["radiant_win"], bool):
            raise MatchError(f"radiant_win must be true or false, got {obj['radiant_win']!r}")
        out["radiant_win"] = obj["radiant_win"]
    out["objectives"] = objectives
    out |= leads
    players, n_wards = [], 0
    if not isinstance(obj.get("players") or [], list):
        raise MatchError("players must be a list")
    for k, p in enumerate(obj.get("players") or []):
        if not isinstance(p, dict):
            raise MatchError(f"players[{k}] must be an object")
        slot = _int(p.get("player_slot"), f"players[{k}].player_slot", 0, 255)
        logs = {}
        for name in ("obs_log", "obs_left_log", "sen_log", "sen_left_log"):
            log = p.get(name) or []
            if not isinstance(log, list):
                raise MatchError(f"players[{k}].{name} must be a list")
            n_wards += len(log)
            if n_wards > MAX_WARD_ENTRIES:
                raise MatchError(f"more than {MAX_WARD_ENTRIES} ward entries (placed and removed)")
            logs[name] = [_ward(e, f"players[{k}].{name}[{i}]", duration) for i, e in enumerate(log)]
        players.append({"player_slot": slot, **logs})
    out["players"] = players
    Match(out)   # every rule below holds, or MatchError
    return out


# -- decoded --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Event:
    t: int                  # game-clock seconds
    type: str               # tower | barracks | roshan | ancient
    actor: str
    where: str
    building: str = ""      # the fallen building's id


@dataclass(frozen=True)
class Ward:
    side: str
    kind: str               # observer | sentry
    x: float               # OpenDota map cells
    y: float
    placed: int             # game seconds
    removed: int            # game seconds: its removal row, else placed + WARD_LIFETIME_S


@dataclass
class Match:
    """The subset decoded: events in time order (the record's order within a second), wards, leads."""

    obj: dict[str, Any]
    events: list[Event] = field(init=False)
    wards: list[Ward] = field(init=False)

    def __post_init__(self) -> None:
        o = self.obj
        self.duration = int(o["duration"])
        events, fallen, t4 = [], set(), {s: 0 for s in SIDES}
        for obj in sorted(o["objectives"], key=lambda x: x["time"]):   # stable: the record's order in a second
            t = int(obj["time"])
            if obj["type"] == "CHAT_MESSAGE_ROSHAN_KILL":
                events.append(Event(t, "roshan", ROSHAN_TEAM[int(obj["team"])], ""))
                continue
            b = building_of_key(obj["key"], t4)
            if b is None:
                continue
            if b.id in fallen:
                raise MatchError(f"objectives: {obj['key']} falls twice")
            fallen.add(b.id)
            if b.tier == 4:
                t4[b.side] += 1
            if b.kind == "fort":
                events.append(Event(t, "ancient", other(b.side), "", b.id))
            else:
                events.append(Event(t, "tower" if b.kind == "tower" else "barracks", other(b.side), b.where, b.id))
        forts = [e for e in events if e.type == "ancient"]
        if len(forts) > 1:
            raise MatchError("objectives: both Ancients fall")
        win = o.get("radiant_win")
        if forts:
            if win is not None and (forts[0].actor == "radiant") != win:
                raise MatchError(f"objectives: the {other(forts[0].actor)} Ancient falls but radiant_win is {win}")
            if events[-1] is not forts[0] and events[-1].t > forts[0].t:
                raise MatchError(f"objectives: {events[-1].type} at {events[-1].t} s, after the Ancient fell at {forts[0].t} s")
        elif win is None:
            raise MatchError("the match records neither the Ancient's fall (a building_kill of a fort) nor radiant_win")
        else:   # a parse that does not log the fort: the match ends at `duration` with the recorded winner
            winner = "radiant" if win else "dire"
            if events and events[-1].t > self.duration:
                raise MatchError(f"objectives: {events[-1].type} at {events[-1].t} s, after the match's end ({self.duration} s)")
            events.append(Event(self.duration, "ancient", winner, "", f"{other(winner)}_fort"))
        if events[0].t < 0:
            raise MatchError(f"objectives: {events[0].type} at {events[0].t} s, before the horn")
        self.events = events
        self.winner = events[-1].actor
        self.end = events[-1].t
        self.wards = _wards(o.get("players", []), self.end)
        first = min([w.placed for w in self.wards], default=0)
        self.video_start = max(-PREGAME_S, min(0, first))
        self.gold = [int(v) for v in o["radiant_gold_adv"]]
        self.xp = [int(v) for v in o["radiant_xp_adv"]]

    def lead_at(self, t: float) -> tuple[int, int]:
        """(gold lead, experience lead) of the last minute mark at or before game time t (what was known then)."""
        k = max(0, min(int(math.floor(t / 60)), len(self.gold) - 1, len(self.xp) - 1))
        return self.gold[k], self.xp[k]


def _wards(players: list[dict[str, Any]], end: int) -> list[Ward]:
    out = []
    for p in players:
        side = "radiant" if int(p["player_slot"]) < 128 else "dire"
        for kind, placed, left in (("observer", "obs_log", "obs_left_log"), ("sentry", "sen_log", "sen_left_log")):
            removals: dict[int, list[int]] = {}
            for e in p.get(left, []):
                removals.setdefault(e["ehandle"], []).append(int(e["time"]))
            for e in sorted(p.get(placed, []), key=lambda e: e["time"]):
                # a handle can come back for a later ward: the first removal at or after the placement
                times = sorted(removals.get(e["ehandle"], []))
                later = [t for t in times if t >= e["time"]]
                if later:
                    removals[e["ehandle"]].remove(later[0])
                gone = later[0] if later else int(e["time"]) + WARD_LIFETIME_S
                out.append(Ward(side, kind, e["x"], e["y"], int(e["time"]), min(gone, end)))
    return sorted(out, key=lambda w: (w.placed, w.side, w.kind, w.x, w.y))


def time_base(m: Match) -> dict[str, Any]:
    """What each ground truth says of its clock (record["time_base"])."""
    return {"clock": "game-clock seconds (OpenDota's `time`: 0 at the horn, negative before it)",
            "video_start_game_s": m.video_start,
            "video_t": "game seconds minus video_start_game_s (the horn is at video second "
                       f"{-m.video_start})"}


def record_of(match: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    """A case's record (the ground truth keeps it): the OpenDota subset, where it comes from, its time base."""
    return {"source": source, "opendota": match, "time_base": time_base(Match(match))}
