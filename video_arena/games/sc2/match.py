"""A StarCraft II record (replay.py) decoded: the playable area and grid, the events, the state at any time,
and the player stats V_t is computed from.  Pure Python and numpy: no sc2reader.

Time base: real seconds from the start of the match.  The tracker counts game loops, 16 per game second;
the replays are at Faster speed, 1.4 game seconds per real second, so one real second is 22.4 loops in
every release (release 3.0 and later show real seconds on the in-game clock, earlier ones game seconds:
a clock reading of 14:00 in a 2.x replay is 10:00 of real time here).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from video_arena.digests import sha256_text


class SC2Error(RuntimeError):
    """A replay, record or model of the StarCraft II cases that cannot be used (one clear message)."""


LOOPS_PER_GAME_S = 16
FASTER = 1.4
LOOPS_PER_REAL_S = LOOPS_PER_GAME_S * FASTER      # 22.4
SIDES = ("red", "blue")
COLS = "abcdefgh"
#: The playable area: the bounding box of every position the replay records (resources at the start, every
#: birth, construction, snapshot and death of either player), widened by AREA_MARGIN cells on each side and
#: clipped to the map's size (the map file, whose playable bounds the game uses, is not in the replay).
AREA_MARGIN = 6
#: The fight rule (game.toml): units worth at least FIGHT_SUPPLY supply die, at most FIGHT_GAP_S apart.
FIGHT_SUPPLY = 8.0
FIGHT_GAP_S = 10.0
#: Between two recorded positions a unit stays at the first and then walks to the second at this speed
#: (cells per real second), arriving when the second was recorded.
MOVE_SPEED = 4.0


def real_s(loop: float) -> float:
    return loop / LOOPS_PER_REAL_S


#: The parts of a record that come from the replay's tracker events and header (not its provenance).
CONTENT = ("match", "units", "buildings", "stats", "resources")


def record_content(record: dict[str, Any]) -> str:
    """The record's match as one canonical JSON text (everything but its source)."""
    return json.dumps({k: record[k] for k in CONTENT}, sort_keys=True)


def match_key(record: dict[str, Any]) -> str:
    """The match's identity: a digest of what its tracker events and header say (record_content).  A replay
    holds no id of the game it records, and its file differs between copies (each player saves one), but
    every copy of one game records the same events; the key does not depend on the file or its name."""
    return "sc2-events-" + sha256_text(record_content(record))


@dataclass
class Unit:
    side: int
    worker: bool
    supply: float
    value: int
    fate: str                      # k killed by the other player, d died otherwise, - alive at the end
    track: list[tuple[int, int, int]]

    @property
    def born(self) -> int:
        return self.track[0][0]

    @property
    def died(self) -> int | None:
        return self.track[-1][0] if self.fate != "-" else None

    def pos(self, loop: float) -> tuple[float, float]:
        tr = self.track
        if loop <= tr[0][0]:
            return float(tr[0][1]), float(tr[0][2])
        for (t0, x0, y0), (t1, x1, y1) in zip(tr, tr[1:]):
            if loop <= t1:
                d = math.hypot(x1 - x0, y1 - y0)
                start = max(t0, t1 - d / MOVE_SPEED * LOOPS_PER_REAL_S)
                if loop <= start or t1 <= start:
                    return float(x0), float(y0)
                f = (loop - start) / (t1 - start)
                return x0 + (x1 - x0) * f, y0 + (y1 - y0) * f
        return float(tr[-1][1]), float(tr[-1][2])


@dataclass
class Building:
    side: int
    size: int
    town: bool
    init: int
    done: int
    end: int
    fate: str
    x: int
    y: int
    moves: tuple[tuple[int, int, int], ...] = ()   # (from loop, x, y) after a flight (replay._moves)

    def alive(self, loop: float) -> bool:
        return self.init <= loop and (self.end < 0 or loop < self.end)

    def pos(self, loop: float) -> tuple[int, int]:
        """Where the footprint stands at `loop` (the construction place until a flight moves it)."""
        x, y = self.x, self.y
        for f, mx, my in self.moves:
            if f <= loop:
                x, y = mx, my
        return x, y

    @property
    def last_pos(self) -> tuple[int, int]:
        return (self.moves[-1][1], self.moves[-1][2]) if self.moves else (self.x, self.y)


@dataclass
class Event:
    loop: int
    type: str
    actor: str
    where: str
    detail: dict[str, Any]


@dataclass
class Match:
    units: list[Unit]
    buildings: list[Building]
    stats: list[tuple[int, ...]]     # (loop, side, food2, workers, army, collection, killed, lost, bank, upgrades)
    resources: list[tuple[int, int, int]]
    area: tuple[int, int, int, int]  # x0, y0, x1, y1 (map cells)
    end_loop: int
    winner: int


def decode(record: dict[str, Any]) -> Match:
    units = []
    for row in record["units"]:
        head, pts = row.split("|")
        side, kind, sup2, value, fate = head.split()
        track = [tuple(int(v) for v in p.split()) for p in pts.split(",")]
        units.append(Unit(int(side), kind == "w", int(sup2) / 2, int(value), fate, track))
    buildings = []
    for row in record["buildings"]:
        side, size, town, init, done, end, fate, x, y, moves = row.split()
        mv = () if moves == "-" else tuple(tuple(int(v) for v in mvt.split(":")) for mvt in moves.split(";"))
        buildings.append(Building(int(side), int(size), town == "1", int(init), int(done), int(end), fate, int(x), int(y), mv))
    stats = [tuple(int(v) for v in row.split()) for row in record["stats"]]
    resources = [tuple(int(v) for v in row.split()) for row in record["resources"]]
    m = record["match"]
    xs = [r[0] for r in resources] + [b.x for b in buildings] + [p[1] for u in units for p in u.track] + \
        [mv[1] for b in buildings for mv in b.moves]
    ys = [r[1] for r in resources] + [b.y for b in buildings] + [p[2] for u in units for p in u.track] + \
        [mv[2] for b in buildings for mv in b.moves]
    w, h = m["map_size"]
    area = (max(0, min(xs) - AREA_MARGIN), max(0, min(ys) - AREA_MARGIN),
            min(w, max(xs) + AREA_MARGIN), min(h, max(ys) + AREA_MARGIN))
    return Match(units, buildings, stats, resources, area, int(m["end_loop"]), SIDES.index(m["winner"]))


def cell(m: Match, x: float, y: float) -> str:
    """Grid cell of a map position: columns a-h left to right, rows 1-8 bottom to top (map y grows upwards)."""
    x0, y0, x1, y1 = m.area
    c = min(7, max(0, int((x - x0) / (x1 - x0) * 8)))
    r = min(7, max(0, int((y - y0) / (y1 - y0) * 8)))
    return f"{COLS[c]}{r + 1}"


def fights(m: Match) -> list[Event]:
    """The mechanical fight rule: the deaths of units killed by the other player, in time order, chained
    while consecutive deaths are at most FIGHT_GAP_S apart; a chain whose dead units total at least
    FIGHT_SUPPLY supply is a fight.  actor: the side that lost less supply (equal: less value; still equal:
    the side that did not lose the last unit); t: the last death; where: the cell with most deaths (equal:
    the one whose last death is latest)."""
    deaths = sorted((u.died, k) for k, u in enumerate(m.units) if u.fate == "k" and u.died is not None)
    gap = FIGHT_GAP_S * LOOPS_PER_REAL_S
    chains, cur = [], []
    for loop, k in deaths:
        if cur and loop - cur[-1][0] > gap:
            chains.append(cur)
            cur = []
        cur.append((loop, k))
    if cur:
        chains.append(cur)
    out = []
    for ch in chains:
        lost = [0.0, 0.0]
        value = [0, 0]
        for _, k in ch:
            lost[m.units[k].side] += m.units[k].supply
            value[m.units[k].side] += m.units[k].value
        if sum(lost) < FIGHT_SUPPLY:
            continue
        if lost[0] != lost[1]:
            actor = 0 if lost[0] < lost[1] else 1
        elif value[0] != value[1]:
            actor = 0 if value[0] < value[1] else 1
        else:
            actor = 1 - m.units[ch[-1][1]].side
        cells: dict[str, list[int]] = {}
        for loop, k in ch:
            u = m.units[k]
            c = cell(m, u.track[-1][1], u.track[-1][2])
            cells.setdefault(c, []).append(loop)
        where = max(cells, key=lambda c: (len(cells[c]), max(cells[c])))
        out.append(Event(ch[-1][0], "fight", SIDES[actor], where,
                         {"first": ch[0][0], "units": [k for _, k in ch], "lost_supply": lost}))
    return out


def events(m: Match) -> list[Event]:
    """expand (where: the construction place), base_kill (where: the place it stood when destroyed, after any
    flight), fight, win in time order (a base_kill and a fight at the same loop: base_kill first,
    as game.toml's precedence lists it)."""
    out = []
    for k, b in enumerate(m.buildings):
        if b.town and b.init > 0:
            out.append(Event(b.init, "expand", SIDES[b.side], cell(m, b.x, b.y), {"building": k}))
        if b.town and b.end >= 0 and b.fate == "k":
            out.append(Event(b.end, "base_kill", SIDES[1 - b.side], cell(m, *b.last_pos), {"building": k}))
    out += fights(m)
    order = {"expand": 0, "base_kill": 1, "fight": 2}
    out.sort(key=lambda e: (e.loop, order[e.type]))
    last = max([m.end_loop] + [e.loop for e in out])
    out.append(Event(last, "win", SIDES[m.winner], "", {}))
    return out


# -- the state V_t is computed from ------------------------------------------------------------------

def snapshot(m: Match, loop: int, side: int) -> tuple[int, ...] | None:
    """The last stats snapshot of `side` at or before `loop` (None before the first)."""
    best = None
    for s in m.stats:
        if s[1] == side and s[0] <= loop:
            best = s
    return best


def bases(m: Match, loop: int, side: int) -> int:
    return sum(1 for b in m.buildings if b.town and b.side == side and b.alive(loop) and 0 <= b.done <= loop)


FEATURES = ("workers/10", "army/1000", "log army ratio", "bases", "collection/1000", "killed-lost/1000",
            "upgrades", "supply/10", "bank/1000")


def features(m: Match, loop: int) -> list[float] | None:
    """Red minus blue (antisymmetric, so swapping the sides negates them) at `loop`; None before the first
    stats snapshot."""
    a, b = snapshot(m, loop, 0), snapshot(m, loop, 1)
    if a is None or b is None:
        return None
    return [
        (a[3] - b[3]) / 10, (a[4] - b[4]) / 1000, math.log((a[4] + 200) / (b[4] + 200)),
        float(bases(m, loop, 0) - bases(m, loop, 1)), (a[5] - b[5]) / 1000,
        ((a[6] - a[7]) - (b[6] - b[7])) / 1000, float(a[9] - b[9]), (a[2] - b[2]) / 20, (a[8] - b[8]) / 1000,
    ]


def army_ratio(m: Match, loop: int) -> float:
    """The plain rule the model is compared with: red's share of the two armies' value."""
    a, b = snapshot(m, loop, 0), snapshot(m, loop, 1)
    if a is None or b is None or a[4] + b[4] == 0:
        return 0.5
    return a[4] / (a[4] + b[4])
