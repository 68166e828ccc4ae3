"""A Google Research Football match as the toolkit stores it, and the events derived from it.

Standard library only and Python 3.11-compatible: the engine's own venv (scripts/install-gfootball.sh)
imports this file by path to encode the state and find the event steps it runs V_t rollouts at, and
the plugin imports it to replay and render a ground truth's record.  Both work on the same quantized
state, so the events the engine side evaluates are exactly the events `replay` derives.

State i (i = 0..n-1) is the engine's observation after i environment steps (10 per second of match
time): state 0 is the kick-off position.  Coordinates are the engine's (`env_coord`): x in [-1.01, 1.01]
from the left goal line to the right one (1 unit = 54.4 m), y in [-0.43, 0.43] from the top touchline
to the bottom one as seen on screen (1 unit = 83.6 m), z the ball's height in metres.

Encoding (`encode_state` / `decode_state`): x and y in 1/1000 units, z in centimetres, each coordinate a
column of int16 first differences, zlib-compressed and base64-encoded; game mode, score, ball owner and
the active (not sent-off) flags as lists of [step, value...] changes.
"""
from __future__ import annotations

import base64
import math
import zlib
from array import array
from dataclasses import dataclass, field
import sys

X_M, Y_M = 54.4, 83.6          # metres per env unit (X_FIELD_SCALE, -Y_FIELD_SCALE in the engine)
HALF_LEN_M, HALF_WID_M = 55.0, 36.0   # pitchHalfW, pitchHalfH: the engine's pitch is 110 m x 72 m
GOAL_HALF_WIDTH_M, GOAL_DEPTH_M = 3.7, 2.55
GOAL_LINE_X = HALF_LEN_M / X_M  # 1.01103
STEPS_PER_S = 10
N_PLAYERS = 11

# engine game modes (e_GameMode)
NORMAL, KICKOFF, GOAL_KICK, FREE_KICK, CORNER, THROW_IN, PENALTY = range(7)
SIDES = ("left", "right")

XY_Q, Z_Q = 1000, 100
#: The goal line on the recorded (1/1000-unit) grid: the engine stops a ball that goes out at x = 1.0110..,
#: which the record keeps as 1.011, so "over the line" is x >= 1.011 on the record.
GOAL_LINE_Q = math.floor(GOAL_LINE_X * XY_Q) / XY_Q


# -- codec -------------------------------------------------------------------------------------------

def _pack(columns: list[list[int]]) -> str:
    out = array("h")
    for col in columns:
        prev = 0
        for v in col:
            d = v - prev
            if not -32768 <= d <= 32767:
                raise ValueError(f"delta {d} does not fit int16")
            out.append(d)
            prev = v
    if out.itemsize != 2:  # pragma: no cover
        raise RuntimeError("array('h') is not 16-bit here")
    raw = out.tobytes() if _little_endian() else _swapped(out).tobytes()
    return base64.b64encode(zlib.compress(raw, 9)).decode("ascii")


def _unpack(text: str, n_cols: int, n: int) -> list[list[int]]:
    raw = zlib.decompress(base64.b64decode(text.encode("ascii"), validate=True))
    arr = array("h")
    arr.frombytes(raw)
    if not _little_endian():
        arr.byteswap()
    if len(arr) != n_cols * n:
        raise ValueError(f"state has {len(arr)} values, expected {n_cols} x {n}")
    cols = []
    for c in range(n_cols):
        acc, col = 0, []
        for d in arr[c * n:(c + 1) * n]:
            acc += d
            col.append(acc)
        cols.append(col)
    return cols


def _little_endian() -> bool:
    return sys.byteorder == "little"


def _swapped(a: array) -> array:
    b = array(a.typecode, a)
    b.byteswap()
    return b


def quantize_xy(v: float) -> int:
    return int(round(v * XY_Q))


def quantize_z(v: float) -> int:
    return int(round(v * Z_Q))


def _changes(values: list) -> list[list]:
    out, prev = [], object()
    for i, v in enumerate(values):
        if v != prev:
            out.append([i] + (list(v) if isinstance(v, (list, tuple)) else [v]))
            prev = v
    return out


def _expand(changes: list[list], n: int, width: int) -> list:
    if not changes or changes[0][0] != 0:
        raise ValueError("a change list must start at step 0")
    out, k = [], 0
    for i in range(n):
        while k + 1 < len(changes) and changes[k + 1][0] <= i:
            k += 1
        row = changes[k][1:]
        if len(row) != width:
            raise ValueError(f"change {changes[k]} has {len(row)} values, expected {width}")
        out.append(tuple(row) if width > 1 else row[0])
    return out


def encode_state(ball: list[tuple[float, float, float]], left: list[list[tuple[float, float]]],
                 right: list[list[tuple[float, float]]], game_mode: list[int], score: list[tuple[int, int]],
                 owner: list[tuple[int, int]], active: list[tuple[int, ...]]) -> dict:
    """The record's `state` from per-step engine observations (lists of equal length n)."""
    n = len(ball)
    if not all(len(x) == n for x in (left, right, game_mode, score, owner, active)):
        raise ValueError("per-step lists differ in length")
    ball_cols = [[quantize_xy(b[0]) for b in ball], [quantize_xy(b[1]) for b in ball], [quantize_z(b[2]) for b in ball]]
    player_cols = []
    for team in (left, right):
        for p in range(N_PLAYERS):
            player_cols.append([quantize_xy(team[i][p][0]) for i in range(n)])
            player_cols.append([quantize_xy(team[i][p][1]) for i in range(n)])
    return {
        "n": n,
        "units": "x, y: 1/1000 env units (x 54.4 m, y 83.6 m); z: cm; columns of int16 deltas, zlib, base64",
        "ball": _pack(ball_cols),
        "players": _pack(player_cols),
        "game_mode": _changes([int(m) for m in game_mode]),
        "score": _changes([(int(a), int(b)) for a, b in score]),
        "owner": _changes([(int(t), int(p)) for t, p in owner]),
        "active": _changes([tuple(int(x) for x in a) for a in active]),
    }


@dataclass
class Match:
    """Decoded state: per step i, ball (x, y, z metres-as-env), players[i][side][k] = (x, y) env units."""

    n: int
    ball: list[tuple[float, float, float]]
    players: list[tuple[tuple[tuple[float, float], ...], tuple[tuple[float, float], ...]]]
    game_mode: list[int]
    score: list[tuple[int, int]]
    owner: list[tuple[int, int]]       # (team: -1 none, 0 left, 1 right; player index)
    active: list[tuple[int, ...]]       # 22 flags: left 0..10, right 0..10
    _releases: list[tuple[int, int]] | None = field(default=None, init=False, repr=False, compare=False)

    def releases(self) -> list[tuple[int, int]]:
        """(step, team) where the ball leaves a player: owned at step-1 by `team`, not owned (-1) at step."""
        if self._releases is None:
            self._releases = [(i, self.owner[i - 1][0]) for i in range(1, self.n)
                              if self.owner[i - 1][0] in (0, 1) and self.owner[i][0] == -1]
        return self._releases


def decode_state(state: dict) -> Match:
    n = int(state["n"])
    if not 1 <= n <= 100_000:
        raise ValueError(f"state.n = {n}")
    bc = _unpack(state["ball"], 3, n)
    pc = _unpack(state["players"], 4 * N_PLAYERS, n)
    ball = [(bc[0][i] / XY_Q, bc[1][i] / XY_Q, bc[2][i] / Z_Q) for i in range(n)]
    players = []
    for i in range(n):
        sides = []
        for s in range(2):
            base = s * 2 * N_PLAYERS
            sides.append(tuple((pc[base + 2 * k][i] / XY_Q, pc[base + 2 * k + 1][i] / XY_Q) for k in range(N_PLAYERS)))
        players.append((sides[0], sides[1]))
    return Match(n=n, ball=ball, players=players,
                 game_mode=[int(m) for m in _expand(state["game_mode"], n, 1)],
                 score=list(_expand(state["score"], n, 2)),
                 owner=list(_expand(state["owner"], n, 2)),
                 active=list(_expand(state["active"], n, 2 * N_PLAYERS)))


# -- geometry ------------------------------------------------------------------------------------------

def to_metres(x: float, y: float) -> tuple[float, float]:
    return x * X_M, y * Y_M


def cell(x: float, y: float) -> str:
    """The 6x3 grid cell of an env position: columns 1-6 left to right, rows a (top) b c (bottom)."""
    col = min(6, max(1, int((x + GOAL_LINE_X) / (2 * GOAL_LINE_X) * 6) + 1))
    half_w = HALF_WID_M / Y_M
    row = min(2, max(0, int((y + half_w) / (2 * half_w) * 3)))
    return f"{col}{'abc'[row]}"


# -- events ----------------------------------------------------------------------------------------------

#: Shot detection (a strike towards goal that does not score), from the ball's motion after a touch:
SHOT_MIN_SPEED_MPS = 14.0        # horizontal ball speed over the first SHOT_SPEED_STEPS steps after the touch
SHOT_SPEED_STEPS = 2
SHOT_MAX_DIST_M = 35.0           # strike within this distance of the centre of the goal it is aimed at
SHOT_AIM_MARGIN_M = 3.0          # the straight path crosses the goal line within the posts +- this margin
GOAL_LINK_STEPS = 40             # a strike followed by the team's goal within this many steps, untouched, is the goal
MIN_EVENT_GAP_STEPS = 1          # events are at distinct steps (checked)


@dataclass(frozen=True)
class Event:
    step: int        # the state shown at the event's time
    type: str
    actor: str
    where: str
    note: str = ""


def _goal_steps(m: Match) -> list[tuple[int, int]]:
    """(step where the score changed, side credited)."""
    out = []
    for i in range(1, m.n):
        (a0, b0), (a1, b1) = m.score[i - 1], m.score[i]
        if (a1, b1) != (a0, b0):
            if a1 - a0 == 1 and b1 == b0:
                out.append((i, 0))
            elif b1 - b0 == 1 and a1 == a0:
                out.append((i, 1))
            else:
                raise ValueError(f"score jumps from {m.score[i - 1]} to {m.score[i]} at step {i}")
    return out


def over_line(x: float, sign: int) -> bool:
    """Is a recorded ball x on or over the goal line on side `sign` (+1 right, -1 left)?"""
    return x * sign >= GOAL_LINE_Q


def in_goal(m: Match, i: int, sign: int) -> bool:
    """At step i the ball is over the goal line on side `sign` between the posts (+ half a metre)."""
    x, y, _ = m.ball[i]
    return over_line(x, sign) and abs(y * Y_M) < GOAL_HALF_WIDTH_M + 0.5


def _crossing_step(m: Match, end: int, sign: int, lookback: int = 60) -> int | None:
    """The first step, within `lookback` steps before `end`, of the last run in which the ball is over
    the goal line on side `sign` (+1 right, -1 left)."""
    first = None
    for i in range(end, max(0, end - lookback) - 1, -1):
        if over_line(m.ball[i][0], sign):
            first = i
        elif first is not None:
            break
    return first


GOAL_SLACK_STEPS = 3


def goal_crossing_step(m: Match, change: int, sign: int, lookback: int = 60) -> int | None:
    """The first step of the run in which the ball is in the goal on side `sign` that lasts until at
    most GOAL_SLACK_STEPS steps before the score changes at `change`; None when no step shows it (the
    headless engine can reset to the kick-off first).  A run that ends earlier is another ball over the
    line (a corner's, a goal kick's), not this goal's."""
    last = next((j for j in range(change, max(-1, change - GOAL_SLACK_STEPS - 1), -1) if in_goal(m, j, sign)), None)
    if last is None:
        return None
    first = last
    while first - 1 >= max(0, change - lookback) and in_goal(m, first - 1, sign):
        first -= 1
    return first


def _strike_before(m: Match, step: int, releases: list[tuple[int, int]]) -> int | None:
    cands = [r for r, _ in releases if r <= step]
    return cands[-1] if cands else None


def _nearest_team(m: Match, i: int) -> int:
    bx, by = to_metres(*m.ball[i][:2])
    best, team = math.inf, 0
    for side in (0, 1):
        for k, (x, y) in enumerate(m.players[i][side]):
            if not m.active[i][side * N_PLAYERS + k]:
                continue
            xm, ym = to_metres(x, y)
            d = math.hypot(xm - bx, ym - by)
            if d < best:
                best, team = d, side
    return team


def derive_events(m: Match) -> list[Event]:
    """The match's events as game.toml defines them, in time order (see docs/CASES.md, Google Research Football)."""
    releases = m.releases()
    events: list[Event] = []

    # goals: the score changes; t is the step the ball is first seen over the goal line (else the change)
    goal_strikes: set[int] = set()
    for s, side in _goal_steps(m):
        sign = 1 if side == 0 else -1
        # an own goal goes into the credited side's attacked goal all the same
        t = goal_crossing_step(m, s, sign)
        # headless, the engine resets to the kick-off within a step or two of the ball crossing the line,
        # so the crossing is often not seen: then the last step before the score changed
        t = max(0, s - 1) if t is None else t
        strike = _strike_before(m, t, releases)
        where_step = strike if strike is not None else t
        if strike is not None:
            goal_strikes.add(strike)
        bx, by, _ = m.ball[where_step]
        events.append(Event(t, "goal", SIDES[side], cell(bx, by)))

    # set pieces from game-mode changes
    for i in range(1, m.n):
        mode, prev = m.game_mode[i], m.game_mode[i - 1]
        if mode == prev:
            continue
        if mode == CORNER:
            bx = m.ball[i][0]
            # the ball went over a goal line: find where, on the side the corner is taken
            sign = 1 if bx > 0 else -1
            t = _crossing_step(m, i, sign)
            t = i if t is None else t
            if any(e.type == "goal" and abs(e.step - t) <= 5 for e in events):
                continue   # the engine can set Corner after a goal: the ball went in, not out
            actor = 0 if sign > 0 else 1   # left attacks the right goal
            events.append(Event(t, "corner", SIDES[actor], ""))
        elif mode == FREE_KICK:
            # the ball is placed where the free kick is taken when the mode starts; the taker is the
            # player nearest the ball at the last step of the mode (the kick), whichever team it is
            j = i
            while j + 1 < m.n and m.game_mode[j + 1] == FREE_KICK:
                j += 1
            taker = _nearest_team(m, j)
            bx, by, _ = m.ball[i]
            events.append(Event(i, "free_kick", SIDES[taker], cell(bx, by)))
        elif mode == PENALTY:
            bx = m.ball[i][0]            # the ball is on the penalty spot when the mode starts
            actor = 0 if bx > 0 else 1
            events.append(Event(i, "penalty", SIDES[actor], ""))

    # shots: a touch after which the ball flies fast towards the opponents' goal, and no goal follows
    for r, team in releases:
        if r in goal_strikes or r + SHOT_SPEED_STEPS >= m.n:
            continue
        if m.game_mode[r] != NORMAL and m.game_mode[r] != PENALTY:
            continue
        sign = 1 if team == 0 else -1
        x0, y0 = to_metres(*m.ball[r][:2])
        x1, y1 = to_metres(*m.ball[r + SHOT_SPEED_STEPS][:2])
        vx, vy = (x1 - x0) / SHOT_SPEED_STEPS, (y1 - y0) / SHOT_SPEED_STEPS   # metres per step
        speed = math.hypot(vx, vy) * STEPS_PER_S
        if speed < SHOT_MIN_SPEED_MPS or vx * sign <= 0:
            continue
        gx = sign * HALF_LEN_M
        if math.hypot(gx - x0, y0) > SHOT_MAX_DIST_M:
            continue
        y_cross = y0 + vy * (gx - x0) / vx
        if abs(y_cross) > GOAL_HALF_WIDTH_M + SHOT_AIM_MARGIN_M:
            continue
        events.append(Event(r, "shot", SIDES[team], cell(*m.ball[r][:2])))

    events.sort(key=lambda e: (e.step, e.type))
    out: list[Event] = []
    for e in events:
        if out and e.step - out[-1].step < MIN_EVENT_GAP_STEPS:
            raise ValueError(f"two events at step {e.step}: {out[-1]} and {e}")
        out.append(e)
    return out
