"""The badminton timeline and scene: where the players and the shuttle are at any moment of the video.

Timeline (video seconds).  The video opens on the first serve's set-up for LEAD_S.  Inside a rally the
timing is the record's: stroke k is hit (frame_num_k - frame_num_0) / source fps after the serve (a stroke
recorded at or before the previous one's frame is moved MIN_HIT_GAP_S after it).  A serve recorded after the
return (an annotation slip in a few rallies, up to 15 s late) is put FLIGHT_S[its type] before the return,
and the other strokes keep their recorded times from the return (measured from the late serve they would
all be squeezed MIN_HIT_GAP_S apart).  The record does not time
the last shot's landing: its flight lasts FLIGHT_S[shot type] (about the median time to the next hit of that
shot type over the ShuttleSet matches), and the landing frame is that moment rounded to the video's frame grid
(one frame later if the previous event holds it): the rally's event `t`.  The pause rule: after the landing
the shuttle lies where it stopped for REST_S, then the next rally's set-up (players where the record has them
at the serve, the shuttle in the server's hand) is shown for SETUP_S before the serve; after a game's last
rally, and when the leader reaches 11 in the third game (the players change ends), GAME_REST_S and
GAME_SETUP_S instead.  A game's `game` row comes one frame after its last rally's landing.

Positions: the record has both players' positions at every hit (metres); between hits they move in straight
lines, a missing position takes the player's nearest known one in the rally, and a position on the wrong half
for the player's end (an annotation slip) is reflected through the net.  The shuttle flies from the hitter
to the next hitter (the last shot: to its end point) with a height arc per shot type.
"""
from __future__ import annotations

import bisect
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from video_arena.digests import sha256_text
from video_arena.games.badminton import records as R

FPS = 2
LEAD_S = 2.0
REST_S = 1.0
SETUP_S = 1.0
GAME_REST_S = 2.0
GAME_SETUP_S = 2.0
TAIL_S = 3.0
MIN_HIT_GAP_S = 0.12

#: seconds of the last shot's flight, by shot type (about the median time from a shot of that type to the next
#: hit, measured once over both collections)
FLIGHT_S = {
    "short service": 0.7, "long service": 1.9, "push": 0.97, "smash": 0.47, "return net": 0.9, "rush": 0.37,
    "net shot": 0.87, "lob": 1.27, "wrist smash": 0.53, "cross-court net shot": 0.88, "passive drop": 0.8,
    "drive": 0.43, "defensive return drive": 0.7, "clear": 1.17, "defensive return lob": 1.03, "drop": 0.8,
    "back-court drive": 0.53, "unknown": 1.03, "driven flight": 0.7,
}
#: (height at the hit, apex above the straight line) in metres, by shot type
ARC = {
    "short service": (1.0, 0.5), "long service": (1.0, 4.5), "push": (1.0, 0.6), "smash": (2.7, 0.0),
    "return net": (0.6, 0.5), "rush": (1.8, 0.0), "net shot": (0.6, 0.5), "lob": (0.8, 4.5),
    "wrist smash": (2.5, 0.0), "cross-court net shot": (0.6, 0.5), "passive drop": (1.8, 1.2),
    "drive": (1.5, 0.3), "defensive return drive": (1.0, 0.4), "clear": (2.6, 4.0), "defensive return lob": (0.8, 4.5),
    "drop": (2.6, 1.0), "back-court drive": (2.2, 0.4), "unknown": (1.5, 1.5), "driven flight": (1.3, 0.4),
}
HAND_Z = 1.0            # the shuttle in the server's hand before the serve
NET_STOP_Z = 1.1        # height at which a shot caught in the net stops
OUT_MARGIN = 0.25       # an `out` landing that the camera maps inside the court is put this far outside the line
IN_MARGIN = 0.10        # a winner's landing that maps outside the receiving half is put this far inside it
NET_H = 1.55


# -- events from a record ----------------------------------------------------------------------------------

def winners(record: dict[str, Any]) -> list[str]:
    return R.rally_winners(record)


def rally_end(record: dict[str, Any], i: int, winner: str) -> tuple[str, str, str, tuple[float, float, float]]:
    """(type, actor side "a"/"b", where, end point (x, y, z) of the last shot) of rally i."""
    r = record["rallies"][i]
    last = r["strokes"][-1]
    hitter, land = last[1], last[5]
    loser = "b" if winner == "a" else "a"
    ends = R.ends_of(record, i)
    label = r["label"]
    if label == R.MISSING_LABEL:
        if hitter == winner:
            kind, rule = "winner", "depth"
        else:
            kind, rule = "error", "out" if land is not None and not _in_court(land) else "net"
    else:
        kind, rule, _ = R.LABELS[label]
    actor = winner if kind == "winner" else loser
    hit_pos = _player_at(record, i, len(r["strokes"]) - 1, hitter)
    if kind == "fault":
        x, y = land if land is not None else hit_pos
        return kind, actor, "", (x, y, 0.0)
    loser_near = ends[loser] == "near"
    if rule == "depth":
        x, y = _clamp_half(land, loser_near, IN_MARGIN)
        d = abs(y - R.NET_Y)
        where = "front" if d < R.NET_Y / 3 else "mid" if d < 2 * R.NET_Y / 3 else "back"
        return kind, actor, where, (x, y, 0.0)
    if rule == "out":   # lands beyond the lines of the half the shot was hit into
        receiver = "b" if hitter == "a" else "a"
        return kind, actor, "out", (*_push_out(land, ends[receiver] == "near"), 0.0)
    # net: where the line from the hitter to the landing point (or straight ahead) meets the net
    if land is not None and abs(land[1] - hit_pos[1]) > 1e-6 and (land[1] - R.NET_Y) * (hit_pos[1] - R.NET_Y) < 0:
        u = (R.NET_Y - hit_pos[1]) / (land[1] - hit_pos[1])
        x = hit_pos[0] + u * (land[0] - hit_pos[0])
    else:
        x = land[0] if land is not None else hit_pos[0]
    return kind, actor, "net", (min(max(x, 0.2), R.COURT_W - 0.2), R.NET_Y, NET_STOP_Z)


#: the singles court's sidelines (the outline's long sides are the doubles sidelines)
X0, X1 = R.SINGLES_SIDE, R.COURT_W - R.SINGLES_SIDE


def _in_court(p) -> bool:
    return X0 <= p[0] <= X1 and 0 <= p[1] <= R.COURT_L


def _clamp_half(p, near: bool, m: float) -> tuple[float, float]:
    x = min(max(p[0], X0 + m), X1 - m)
    y = min(max(p[1], R.NET_Y + m), R.COURT_L - m) if near else min(max(p[1], m), R.NET_Y - m)
    return x, y


def _push_out(p, near: bool) -> tuple[float, float]:
    """An `out` landing: kept if it is outside the singles lines of the receiving half, else moved OUT_MARGIN
    past the nearest singles sideline or baseline (the camera's mapping puts a shuttle just out a few cm in)."""
    x, y = p
    if near:
        y = max(y, R.NET_Y + IN_MARGIN)
    else:
        y = min(y, R.NET_Y - IN_MARGIN)
    if not _in_court((x, y)):
        return x, y
    base = R.COURT_L if near else 0.0
    options = [(x - X0, (X0 - OUT_MARGIN, y)), (X1 - x, (X1 + OUT_MARGIN, y)),
               (abs(base - y), (x, base + (OUT_MARGIN if near else -OUT_MARGIN)))]
    return min(options, key=lambda o: o[0])[1]


def adjusted_landings(record: dict[str, Any]) -> dict[str, int]:
    """How many rally ends the rules above moved (for the docs): out landings mapped inside, winners mapped
    outside the receiving half."""
    out = {"out_moved": 0, "winner_moved": 0}
    for i, w in enumerate(winners(record)):
        kind, actor, where, (x, y, _) = rally_end(record, i, w)
        land = record["rallies"][i]["strokes"][-1][5]
        if land is None:
            continue
        moved = math.hypot(x - land[0], y - land[1]) > 1e-6
        if moved and where == "out":
            out["out_moved"] += 1
        elif moved and kind == "winner":
            out["winner_moved"] += 1
    return out


def _player_at(record: dict[str, Any], i: int, k: int, side: str) -> tuple[float, float]:
    return positions(record)[i][k][0 if side == "a" else 1]


@lru_cache(maxsize=64)
def _positions_cached(key: str, rec_json: str) -> tuple:
    record = json.loads(rec_json)
    out = []
    for i, r in enumerate(record["rallies"]):
        ends = R.ends_of(record, i)
        known: dict[str, list] = {"a": [], "b": []}
        for s in r["strokes"]:
            hitter = s[1]
            other = "b" if hitter == "a" else "a"
            known[hitter].append(s[3])
            known[other].append(s[4])
        rows = []
        for k in range(len(r["strokes"])):
            pair = []
            for p in ("a", "b"):
                near = ends[p] == "near"
                pos = known[p][k]
                if pos is None:   # nearest known position in the rally
                    cands = [(abs(j - k), q) for j, q in enumerate(known[p]) if q is not None]
                    pos = min(cands, key=lambda c: c[0])[1] if cands else (R.COURT_W / 2, 10.5 if near else 2.9)
                x, y = pos
                if (y > R.NET_Y) != near:   # an annotation slip: reflect through the net
                    y = 2 * R.NET_Y - y
                x = min(max(x, -1.0), R.COURT_W + 1.0)
                y = min(max(y, R.NET_Y + 0.4), R.COURT_L + 1.2) if near else min(max(y, -1.2), R.NET_Y - 0.4)
                pair.append((x, y))
            rows.append(tuple(pair))
        out.append(tuple(rows))
    return tuple(out)


def record_key(record: dict[str, Any]) -> tuple[str, str]:
    text = json.dumps(record, sort_keys=True, ensure_ascii=False)
    return sha256_text(text), text


def positions(record: dict[str, Any]) -> tuple:
    """positions[i][k] = ((xa, ya), (xb, yb)): both players at stroke k of rally i (metres)."""
    return _positions_cached(*record_key(record))


# -- the timeline ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Flight:
    t0: float
    t1: float
    p0: tuple[float, float, float]
    p1: tuple[float, float, float]
    apex: float


@dataclass(frozen=True)
class RallyPlan:
    setup_t: float                   # the set-up starts (players at the serve positions)
    hit_t: tuple[float, ...]         # video time of every stroke
    end_frame: int                   # the rally's event frame (the landing)
    pos: tuple                       # positions at each stroke ((xa, ya), (xb, yb))
    flights: tuple[Flight, ...]
    server: str
    end_point: tuple[float, float, float]


@dataclass(frozen=True)
class Plan:
    fps: int
    rallies: tuple[RallyPlan, ...]
    event_frames: tuple[int, ...]    # every event (rally ends and game rows) in order
    steps: tuple[tuple[str, str, str], ...]   # (type, actor side, where) per event
    n_frames: int


def plan(record: dict[str, Any]) -> Plan:
    return _plan_cached(*record_key(record))


@lru_cache(maxsize=64)
def _plan_cached(key: str, rec_json: str) -> Plan:
    record = json.loads(rec_json)
    fps = FPS
    src_fps = float(record["match"]["source_fps"])
    ws = winners(record)
    pos = positions(record)
    rallies = record["rallies"]
    out, ev_frames, steps = [], [], []
    setup_t = 0.0
    serve_t = LEAD_S
    last_frame = -1
    for i, r in enumerate(rallies):
        strokes = r["strokes"]
        ref, lead = strokes[0][0], 0.0
        if len(strokes) > 1 and strokes[1][0] < strokes[0][0]:
            # the serve recorded after the return (an annotation slip): the serve is put its flight before the
            # return, and every other stroke keeps the record's time from the return
            ref, lead = strokes[1][0], FLIGHT_S.get(strokes[0][2], FLIGHT_S["unknown"])
        hits = []
        for k, s in enumerate(strokes):
            t = serve_t if k == 0 else serve_t + lead + (s[0] - ref) / src_fps
            if hits and t < hits[-1] + MIN_HIT_GAP_S:
                t = hits[-1] + MIN_HIT_GAP_S
            hits.append(t)
        kind, actor, where, end_pt = rally_end(record, i, ws[i])
        land_t = hits[-1] + FLIGHT_S.get(strokes[-1][2], FLIGHT_S["unknown"])
        frame = max(int(math.floor(land_t * fps + 0.5)), last_frame + 1, int(math.floor(hits[-1] * fps)) + 1)
        flights = []
        for k, s in enumerate(strokes):
            hitter = s[1]
            z0, apex = ARC.get(s[2], ARC["unknown"])
            a = pos[i][k][0 if hitter == "a" else 1]
            p0 = (a[0], a[1], z0)
            if k + 1 < len(strokes):
                nxt = strokes[k + 1]
                b = pos[i][k + 1][0 if nxt[1] == "a" else 1]
                p1 = (b[0], b[1], ARC.get(nxt[2], ARC["unknown"])[0])
                t1 = hits[k + 1]
            else:
                p1 = end_pt
                t1 = frame / fps
            flights.append(Flight(hits[k], t1, p0, p1, apex))
        out.append(RallyPlan(setup_t, tuple(hits), frame, pos[i], tuple(flights), strokes[0][1], end_pt))
        ev_frames.append(frame)
        steps.append((kind, actor, where))
        last_frame = frame
        game_end = i + 1 == len(rallies) or rallies[i + 1]["game"] != r["game"]
        if game_end:
            a, b = r["score"]
            last_frame = frame + 1
            ev_frames.append(last_frame)
            steps.append(("game", "a" if a > b else "b", ""))
        switch = game_end or (r["game"] == 3 and max(r["score"]) == 11 and
                              max(rallies[i - 1]["score"] if i and rallies[i - 1]["game"] == 3 else (0, 0)) < 11)
        rest, setup = (GAME_REST_S, GAME_SETUP_S) if switch else (REST_S, SETUP_S)
        setup_t = frame / fps + rest
        serve_t = setup_t + setup
    n_frames = last_frame + 1 + int(round(TAIL_S * fps))
    return Plan(fps, tuple(out), tuple(ev_frames), tuple(steps), n_frames)


@dataclass(frozen=True)
class Scene:
    a: tuple[float, float]
    b: tuple[float, float]
    shuttle: tuple[float, float, float]


def scene_at(p: Plan, t: float) -> Scene:
    """Both players and the shuttle at video time t."""
    starts = [r.setup_t for r in p.rallies]
    i = max(0, bisect.bisect_right(starts, t + 1e-9) - 1)
    r = p.rallies[i]
    first = r.hit_t[0]
    if t < first:   # set-up: players at the serve positions, the shuttle in the server's hand
        (a, b) = r.pos[0]
        srv = a if r.server == "a" else b
        return Scene(a, b, (srv[0], srv[1], HAND_Z))
    end_t = r.end_frame / p.fps
    if t >= end_t - 1e-9:   # rest: the shuttle lies where it stopped
        a, b = r.pos[-1]
        return Scene(a, b, r.end_point)
    k = max(0, bisect.bisect_right(r.hit_t, t) - 1)
    if k + 1 < len(r.hit_t):
        u = (t - r.hit_t[k]) / (r.hit_t[k + 1] - r.hit_t[k])
        (a0, b0), (a1, b1) = r.pos[k], r.pos[k + 1]
        a = (a0[0] + u * (a1[0] - a0[0]), a0[1] + u * (a1[1] - a0[1]))
        b = (b0[0] + u * (b1[0] - b0[0]), b0[1] + u * (b1[1] - b0[1]))
    else:
        a, b = r.pos[-1]
    f = r.flights[k]
    u = min(max((t - f.t0) / (f.t1 - f.t0), 0.0), 1.0)
    x = f.p0[0] + u * (f.p1[0] - f.p0[0])
    y = f.p0[1] + u * (f.p1[1] - f.p0[1])
    z = f.p0[2] + u * (f.p1[2] - f.p0[2]) + 4 * f.apex * u * (1 - u)
    return Scene(a, b, (x, y, max(z, 0.0)))


def frame_scene(p: Plan, frame: int) -> Scene:
    return scene_at(p, frame / p.fps)
