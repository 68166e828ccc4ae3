"""Read a StarCraft II replay (sc2reader, build time only) into the compact record the plugin keeps.

Only the tracker events are used (releases 2.0.4 and later record them): unit births, inits, completions,
type changes and deaths with positions and the killing player, positions of damaged units every 15 game
seconds, every player's stats every 10 game seconds, and upgrades.  Times stay in game loops (16 per game
second; at Faster speed 22.4 per real second: `match.LOOPS_PER_REAL_S`), positions in map cells (ints), so
the record is exact.  Everything the events, V_t and the renderer need is in the record: `--media-only`
needs neither sc2reader nor the replay.

    record["units"]      one string per worker or army unit: "side kind supply2 value fate|loop x y,loop x y,..."
                         (side 0 red / 1 blue; kind w worker / a army; supply2 = 2 x supply; value = minerals +
                         gas; fate k killed by the other player, d died otherwise, - alive at the end; the
                         track's first point is the birth, its last the death when the unit died)
    record["buildings"]  one string per building: "side size town init done end fate x y moves" (size the
                         footprint in cells; town 1 for a town hall; done/end -1 when never completed / never
                         destroyed; moves "-" or "loop:x:y;..." where a Terran building that lifted off
                         stands from that loop on: see `_moves`)
    record["stats"]      one string per stats snapshot: "loop side food workers army collection killed lost bank upgrades"
    record["resources"]  "x y g" of each mineral field (g 0) and vespene geyser (g 1) at the start (the ground)
"""
from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any, BinaryIO

from video_arena.digests import sha256_file
from video_arena.safe_io import out_of_memory

#: Town halls and their morphs (the definition's `expand` and `base_kill`).
TOWN_HALLS_NEW = {"Nexus", "CommandCenter", "Hatchery"}
TOWN_HALLS = TOWN_HALLS_NEW | {"OrbitalCommand", "PlanetaryFortress", "Lair", "Hive", "CommandCenterFlying",
                              "OrbitalCommandFlying"}
#: Units never drawn (not units a player commands in a fight, or transient effects).
NOT_DRAWN_PREFIX = ("Beacon", "Larva", "Egg", "AdeptPhaseShift", "Interceptor", "Locust", "Broodling", "CreepTumor",
                    "ParasiticBomb", "KD8Charge", "Disruptor Phased", "DisruptorPhased", "BanelingCocoon",
                    "RavagerCocoon", "LurkerMPEgg", "BroodLordCocoon", "OverlordCocoon", "TransportOverlordCocoon",
                    "AutoTurret", "PointDefenseDrone", "ChangelingZ", "Changeling", "MULE", "InfestedTerran",
                    "InfestorTerran")
#: Supply of units sc2reader's unit table gives as 0 (its data lags some releases).
SUPPLY_FALLBACK = {"Liberator": 3, "LiberatorAG": 3, "Cyclone": 3, "WidowMine": 2, "WidowMineBurrowed": 2,
                   "Disruptor": 3, "Adept": 2, "Ravager": 3, "LurkerMP": 3, "LurkerMPBurrowed": 3, "Lurker": 3,
                   "HellionTank": 2, "Hellion": 2, "SwarmHostMP": 3, "SwarmHostBurrowedMP": 3, "Oracle": 3,
                   "Tempest": 5, "Mothership": 8, "ThorAP": 6, "VikingFighter": 2, "VikingAssault": 2,
                   "Baneling": 0.5, "BanelingBurrowed": 0.5, "Zergling": 0.5, "ZerglingBurrowed": 0.5,
                   "Viper": 3, "Carrier": 6, "BattlecruiserGround": 6, "Battlecruiser": 6, "Ghost": 2,
                   "Reaper": 1, "Marauder": 2, "Banshee": 3, "Raven": 2, "Medivac": 2, "SiegeTankSieged": 3,
                   "SiegeTank": 3, "Thor": 6, "Colossus": 6, "Immortal": 4, "Archon": 4, "DarkTemplar": 2,
                   "HighTemplar": 2, "Sentry": 2, "Stalker": 2, "Zealot": 2, "Observer": 1, "WarpPrism": 2,
                   "WarpPrismPhasing": 2, "VoidRay": 4, "Phoenix": 2, "Queen": 2, "QueenBurrowed": 2,
                   "Roach": 2, "RoachBurrowed": 2, "Hydralisk": 2, "HydraliskBurrowed": 2, "Mutalisk": 2,
                   "Corruptor": 2, "BroodLord": 4, "Infestor": 2, "InfestorBurrowed": 2, "Ultralisk": 6,
                   "Marine": 1, "SCV": 1, "Probe": 1, "Drone": 1, "DroneBurrowed": 1}
#: Footprint side (cells) by building type; anything else 3.
FOOTPRINT = {"Pylon": 2, "SupplyDepot": 2, "SupplyDepotLowered": 2, "MissileTurret": 2, "PhotonCannon": 2,
             "SpineCrawler": 2, "SpineCrawlerUprooted": 2, "SporeCrawler": 2, "SporeCrawlerUprooted": 2,
             "ShieldBattery": 2, "SensorTower": 1, "DarkShrine": 2, "Spire": 2, "GreaterSpire": 2,
             "TechLab": 2, "BarracksTechLab": 2, "FactoryTechLab": 2, "StarportTechLab": 2, "Reactor": 2,
             "BarracksReactor": 2, "FactoryReactor": 2, "StarportReactor": 2, "NydusCanal": 3,
             "BanelingNest": 3, "EvolutionChamber": 3}
TOWN_HALL_SIZE = 5


def is_town_hall(name: str) -> bool:
    return name in TOWN_HALLS


class ReplayError(ValueError):
    pass


def sha256(path: Path) -> str:
    return sha256_file(path)


def load(replay_file: Path | BinaryIO):
    """The replay read by sc2reader from a path (the committed replays) or an open binary file (a user's
    replay, read in a bounded child: `import_record`)."""
    # deferred: sc2reader (about 0.2 s of CPU), only to read a replay
    import sc2reader

    try:
        source = str(replay_file) if isinstance(replay_file, (str, Path)) else replay_file
        return sc2reader.load_replay(source, load_level=4)
    except Exception as exc:  # noqa: BLE001  sc2reader raises many kinds; the caller records why
        raise ReplayError(f"sc2reader cannot parse it ({type(exc).__name__}: {str(exc)[:120]})") from None


def usable(replay) -> str | None:
    """Why the replay cannot give a case or fitting data, or None (the one rule of the committed replays and a
    user's: two players on two teams, the tracker's player stats of both (V_t's input), a recorded winner,
    Faster speed)."""
    if len(replay.players) != 2:
        return f"{len(replay.players)} players (not one against one)"
    if len({p.team_id for p in replay.players}) != 2:
        return "both players are on the same team"
    stats = {e.pid for e in replay.tracker_events if type(e).__name__ == "PlayerStatsEvent"}
    if not stats:
        return "no tracker events (release 2.0.4 or later records them; V_t needs their player stats)"
    if not {p.pid for p in replay.players} <= stats:
        return "a player without tracker player stats (V_t needs both players' army value)"
    if replay.winner is None or len(replay.winner.players) != 1:
        return "no recorded winner"
    if (replay.speed or "Faster") != "Faster":
        return f"game speed {replay.speed} (not Faster)"
    return None


def _supply(unit) -> float:
    s = float(getattr(unit, "supply", 0) or 0)
    return s if s > 0 else float(SUPPLY_FALLBACK.get(unit.name, 0))


def _drawn(unit) -> bool:
    return bool(unit.name) and not unit.is_building and not unit.name.startswith(NOT_DRAWN_PREFIX) and (
        unit.is_worker or unit.is_army or _supply(unit) > 0 or unit.name in ("Overlord", "Overseer", "OverlordTransport"))


def _moves(b: dict[str, Any]) -> list[tuple[int, int, int]]:
    """Where a building that lifted off (Terran) stands after each flight, from the moment it lands (or lifts
    off, when it never lands): the first position the replay records for it at or after the landing (a damage
    snapshot or its death) before the next lift-off; with none, the last position recorded during the flight
    (for a building that dies in the air, its death).  A damage snapshot taken while it flies is not where it
    lands.  A flight with no recorded position in or after it moves nothing (the tracker gives no landing
    position)."""
    out, here = [], (b["x"], b["y"])
    flights = b["flights"]
    known = sorted(b["known"])
    for k, (lift, land) in enumerate(flights):
        nxt = flights[k + 1][0] if k + 1 < len(flights) else None
        seen = [(x, y) for f, x, y in known if f >= lift and (nxt is None or f < nxt)]
        after = [(x, y) for f, x, y in known if land is not None and f >= land and (nxt is None or f < nxt)]
        pos = after[0] if after else (seen[-1] if seen else None)
        if pos is None or pos == here:
            continue
        out.append((land if land is not None else lift, pos[0], pos[1]))
        here = pos
    return out


def to_record(replay_file: Path | BinaryIO, source: dict[str, Any]) -> dict[str, Any]:
    replay = load(replay_file)
    why = usable(replay)
    if why:
        raise ReplayError(why)
    players = sorted(replay.players, key=lambda p: p.pid)
    side_of = {p.pid: k for k, p in enumerate(players)}
    winner = side_of[replay.winner.players[0].pid]
    tracks: dict[Any, list[tuple[int, int, int]]] = {}
    units: dict[Any, Any] = {}
    buildings: dict[Any, dict[str, Any]] = {}
    resources: list[str] = []
    stats: list[str] = []
    upgrades = [0, 0]
    fates: dict[Any, str] = {}
    end = replay.frames
    for e in replay.tracker_events:
        name = type(e).__name__
        if name in ("UnitBornEvent", "UnitInitEvent"):
            u = e.unit
            uname = u.name or ""
            pid = e.control_pid
            if pid not in side_of:
                if e.frame == 0 and ("MineralField" in uname or "Geyser" in uname or "Vespene" in uname):
                    resources.append(f"{e.x} {e.y} {0 if 'Mineral' in uname else 1}")
                continue
            if not uname:
                continue
            if u.is_building and not uname.startswith("CreepTumor"):
                buildings[u] = {"known": [], "flights": [],"side": side_of[pid], "init": e.frame, "done": e.frame if name == "UnitBornEvent" else -1,
                                "end": -1, "fate": "-", "x": e.x, "y": e.y, "name": uname}
            elif _drawn(u):
                units[u] = side_of[pid]
                tracks[u] = [(e.frame, e.x, e.y)]
        elif name == "UnitDoneEvent":
            b = buildings.get(e.unit)
            if b is not None:
                b["done"] = e.frame
        elif name == "UnitPositionsEvent":
            for u, (x, y) in e.units.items():
                if u in tracks and tracks[u][-1][0] < e.frame:
                    tracks[u].append((e.frame, x, y))
                elif u in buildings:
                    buildings[u]["known"].append((e.frame, x, y))
        elif name == "UnitTypeChangeEvent":
            b = buildings.get(e.unit)
            if b is not None:
                flying = "Flying" in (e.unit_type_name or "")
                if flying and (not b["flights"] or b["flights"][-1][1] is not None):
                    b["flights"].append([e.frame, None])
                elif not flying and b["flights"] and b["flights"][-1][1] is None:
                    b["flights"][-1][1] = e.frame
        elif name == "UnitDiedEvent":
            u = e.unit
            killer = e.killer_pid
            if u in tracks or u in buildings:
                owner = units.get(u, buildings.get(u, {}).get("side") if u in buildings else None)
                killed = killer is not None and killer in side_of and side_of[killer] != owner
                fate = "k" if killed else "d"
            if u in tracks:
                if e.x is not None:
                    if tracks[u][-1][0] == e.frame:
                        tracks[u][-1] = (e.frame, e.x, e.y)
                    else:
                        tracks[u].append((e.frame, e.x, e.y))
                fates[u] = fate
            elif u in buildings:
                buildings[u]["end"] = e.frame
                buildings[u]["fate"] = fate
                if e.x is not None:
                    buildings[u]["known"].append((e.frame, e.x, e.y))
        elif name == "UpgradeCompleteEvent":
            if e.frame > 0 and e.pid in side_of and not any(s in e.upgrade_type_name for s in ("Spray", "Reward", "Skin")):
                upgrades[side_of[e.pid]] += 1
        elif name == "PlayerStatsEvent":
            if e.pid not in side_of:
                continue
            army = (e.minerals_used_current_army + e.vespene_used_current_army)
            collection = e.minerals_collection_rate + e.vespene_collection_rate
            killed = e.minerals_killed_army + e.vespene_killed_army + e.minerals_killed_economy + e.vespene_killed_economy
            lost = e.minerals_lost_army + e.vespene_lost_army + e.minerals_lost_economy + e.vespene_lost_economy
            bank = e.minerals_current + e.vespene_current
            stats.append(f"{e.frame} {side_of[e.pid]} {int(round(e.food_used * 2))} {e.workers_active_count} {army} "
                         f"{collection} {killed} {lost} {bank} {upgrades[side_of[e.pid]]}")
    unit_rows = []
    for u, side in units.items():
        tr = tracks[u]
        kind = "w" if u.is_worker else "a"
        value = int((u.minerals or 0) + (u.vespene or 0))
        pts = ",".join(f"{f} {x} {y}" for f, x, y in tr)
        unit_rows.append((tr[0][0], f"{side} {kind} {int(round(_supply(u) * 2))} {value} {fates.get(u, '-')}|{pts}"))
    unit_rows.sort(key=lambda r: r[0])
    bld_rows = []
    for u, b in buildings.items():
        name = b["name"]
        town = 1 if is_town_hall(name) or any(is_town_hall(t.name or "") for t in u.type_history.values()) else 0
        size = TOWN_HALL_SIZE if town else FOOTPRINT.get(name, 3)
        moves = ";".join(f"{a}:{x}:{y}" for a, x, y in _moves(b)) or "-"
        bld_rows.append((b["init"], f"{b['side']} {size} {town} {b['init']} {b['done']} {b['end']} {b['fate']} {b['x']} {b['y']} {moves}"))
    bld_rows.sort(key=lambda r: r[0])
    gd = replay.raw_data["replay.initData"]["game_description"]
    map_w, map_h = int(gd["map_size_x"]), int(gd["map_size_y"])
    return {
        "source": source,
        "match": {"release": replay.release_string, "speed": replay.speed, "end_loop": int(end),
                  "map_size": [map_w, map_h], "winner": ["red", "blue"][winner],
                  "races": [p.play_race for p in players]},
        "units": [r for _, r in unit_rows],
        "buildings": [r for _, r in bld_rows],
        "stats": stats,
        "resources": resources,
    }


# -- a user's replay (`import-cases --sc2replay`): read in a bounded child, its record checked --------------

#: Longest match a record may hold (real seconds; the plugin's case rule refuses any over its MAX_CASE_S).
MAX_RECORD_S = 4 * 3600
#: Caps on what one record may hold (the committed replays hold at most 1,172 units, 168 buildings, 478 stats
#: snapshots, 26 points in a unit's track, maps of 240 cells, coordinates below 204).
MAX_UNITS, MAX_BUILDINGS, MAX_STATS, MAX_RESOURCES = 20_000, 5_000, 5_000, 2_000
MAX_TRACK_POINTS = 400_000          # all units' track points together
MAX_MOVES = 100                     # flights of one building
MAX_CELL = 1024                     # map size and coordinates, in cells
MAX_AMOUNT = 10_000_000             # supply, value, stats numbers
_INT = r"(0|[1-9][0-9]{0,9})"
_LOOP = r"(-1|0|[1-9][0-9]{0,9})"
_UNIT = re.compile(rf"([01]) ([wa]) {_INT} {_INT} ([kd-])\|({_INT} {_INT} {_INT}(,{_INT} {_INT} {_INT})*)")
_BUILDING = re.compile(rf"([01]) {_INT} ([01]) {_INT} {_LOOP} {_LOOP} ([kd-]) {_INT} {_INT} (-|{_INT}:{_INT}:{_INT}(;{_INT}:{_INT}:{_INT})*)")
_STATS = re.compile(rf"{_INT} [01]( {_INT}){{8}}")
_RESOURCE = re.compile(rf"{_INT} {_INT} [01]")
_WORDS = re.compile(r"[A-Za-z0-9 .()_-]{0,40}")


def record_problem(record: Any) -> str:
    """"" when `record` has the layout `to_record` writes with every number in range (loops within the match,
    coordinates within the map's bound, counts within the caps above), else one line saying what is not."""
    try:
        m = record["match"]
        end = m["end_loop"]
        if not (isinstance(end, int) and 0 < end <= MAX_RECORD_S * 22.4):
            return f"the match's length ({end!r} game loops) is not between 1 and {MAX_RECORD_S * 22.4:.0f}"
        w, h = m["map_size"]
        if not all(isinstance(v, int) and 16 <= v <= MAX_CELL for v in (w, h)):
            return f"map size {m['map_size']!r} is not two whole numbers of 16 to {MAX_CELL} cells"
        if m["winner"] not in ("red", "blue") or m["speed"] != "Faster":
            return "no winner or not at Faster speed"
        if not (isinstance(m["release"], str) and _WORDS.fullmatch(m["release"]) and len(m["races"]) == 2
                and all(isinstance(r, str) and _WORDS.fullmatch(r) for r in m["races"])):
            return "the release or the races are not short names"
        lists = {"units": MAX_UNITS, "buildings": MAX_BUILDINGS, "stats": MAX_STATS, "resources": MAX_RESOURCES}
        for name, cap in lists.items():
            if not isinstance(record[name], list) or len(record[name]) > cap:
                return f"more than {cap} {name}"
            if not all(isinstance(row, str) for row in record[name]):
                return f"{name}: a row that is not text"
    except (KeyError, TypeError, ValueError):
        return "not a StarCraft II record (its match, units, buildings, stats or resources are missing)"
    points = 0
    for k, row in enumerate(record["units"]):
        if not _UNIT.fullmatch(row):
            return f"unit {k}: not of the record's layout"
        head, track = row.split("|")
        pts = [tuple(int(v) for v in p.split()) for p in track.split(",")]
        points += len(pts)
        if points > MAX_TRACK_POINTS:
            return f"more than {MAX_TRACK_POINTS} unit positions"
        if any(int(v) > MAX_AMOUNT for v in head.split()[2:4]):
            return f"unit {k}: supply or value over {MAX_AMOUNT}"
        if any(not (loop <= end and x <= MAX_CELL and y <= MAX_CELL) for loop, x, y in pts) or \
                [p[0] for p in pts] != sorted(p[0] for p in pts):
            return f"unit {k}: a position outside the map or the match, or out of time order"
    for k, row in enumerate(record["buildings"]):
        if not _BUILDING.fullmatch(row):
            return f"building {k}: not of the record's layout"
        side, size, town, init, done, died, fate, x, y, moves = row.split()
        mv = [] if moves == "-" else [tuple(int(v) for v in t.split(":")) for t in moves.split(";")]
        if not (1 <= int(size) <= 10 and int(init) <= end and int(done) <= end and int(died) <= end
                and int(x) <= MAX_CELL and int(y) <= MAX_CELL and len(mv) <= MAX_MOVES
                and all(a <= end and mx <= MAX_CELL and my <= MAX_CELL for a, mx, my in mv)):
            return f"building {k}: a size, time or place out of range"
    for k, row in enumerate(record["stats"]):
        v = [int(x) for x in row.split()] if _STATS.fullmatch(row) else None
        if v is None or v[0] > end or max(v[2:]) > MAX_AMOUNT:
            return f"stats row {k}: not of the record's layout or out of range"
    for k, row in enumerate(record["resources"]):
        if not _RESOURCE.fullmatch(row) or max(int(v) for v in row.split()[:2]) > MAX_CELL:
            return f"resource {k}: not of the record's layout or outside the map"
    return ""


def import_record(data: bytes) -> bytes:
    """The child's side of a user's replay (run by safe_io.run_limited, which bounds its time and memory):
    the replay's bytes -> JSON {"record": ...} or {"refused": one line}; sc2reader's every exception is
    caught into that line."""
    try:
        record = to_record(io.BytesIO(data), {})
        why = record_problem(record)
        out = {"refused": why} if why else {"record": record}
    except ReplayError as exc:
        out = {"refused": str(exc)}
    except Exception as exc:  # noqa: BLE001  a crafted file can make sc2reader raise anything
        if out_of_memory(exc):   # the parent's memory cap: run_limited says so in its own words
            raise MemoryError(str(exc)) from None
        out = {"refused": f"sc2reader cannot read it ({type(exc).__name__}: {str(exc)[:120]})"}
    return json.dumps(out).encode("utf-8")
