"""The badminton pixel reader: every rally's end (winner, error, fault) and every game from the decoded video alone.

Standalone (Python 3.11 stdlib + numpy + ffmpeg, the sandbox's toolset): it imports only the shared helper module
`pixel_reader` and knows the render's look as a viewer of it would: a fixed camera behind the near baseline (its
place, aim and focal length: COURT metres to pixels, `project`), player_a in red and player_b in blue, the white
shuttle with its shadow on the floor, and the rules of the game (rally scoring to 21, two clear, capped at 30, best
of three; the rally's winner serves the next rally).

What it reads (the Y plane of every frame, and the colour planes of a few): the background (the per-pixel median
of frames spread over the video), and in every frame the white shuttle's centre.  Between rallies the shuttle
lies still: first where it landed (on the floor, or caught in the net 1.1 m up with its shadow below), then in the
next server's hand at the set-up (on the server's shirt).  So every run of frames in which the shuttle does not
move is a landing or a set-up: a landing's first frame is a rally's end (`t`), and the set-up after it shows who
won the rally (the next server).  A landing on the floor is in one half: the player at the other end hit it; it is
a `winner` (`where` from its depth in the half) when the hitter won the rally, else an `error` `out`; a shuttle
caught in the net is an `error` `net` of the player who lost the rally.  Where the landing is far inside or outside
the lines, the lines decide instead of the next server (a set-up whose server is not the rally's winner is an
annotation slip of the record).  The score follows from the rally winners; a game ends by the rules (a `game` row
one frame after its last landing).  `delta` is naive (up when player_a wins the rally); `state` compares games,
then points.
"""
from __future__ import annotations

import math
import subprocess
from pathlib import Path

import numpy as np

import pixel_reader as P

READS = "the shuttle's rest between rallies (where it landed, whose hand it is in at the set-up) and the score"

SIDES = ("player_a", "player_b")
COURT_W, COURT_L, NET_Y = 6.10, 13.40, 6.70
SINGLES = 0.46                                  # the singles sidelines are this far inside the outline
W, H, FOCAL = 1280, 720, 900.0
CAM = np.array([COURT_W / 2, COURT_L + 8.0, 7.0])
TARGET = np.array([COURT_W / 2, 7.4, 0.0])
NET_STOP_Z = 1.1                                # a shuttle caught in the net stops this high
GAME_POINTS, CAP = 21, 30
#: A shuttle is this bright (Y), and a background pixel this dark is no court line (the shuttle over a line is
#: told by being brighter than the line by LINE_GAIN).
SHUTTLE_Y, DARK_BG, LINE_GAIN = 215, 180, 12
#: The shuttle "does not move" between two frames when its centre moves less than this (pixels).
STILL_PX = 0.8
#: Red (player_a) and blue (player_b) shirts in the colour planes.
SHIRT = 165
SHUTTLE_R_M = 0.09
#: A shuttle at rest this close to 1.1 m up in the net's plane, and drawn as large as it is there (nearer the camera
#: than a shuttle on the floor behind the net at the same place of the picture), is caught in the net.
NET_TOLERANCE_M = 0.03
#: The shuttle lies where it landed for 1 s (2 frames) after a rally, for 2 s (GAME_REST_FRAMES) when the players
#: change ends: after a game, and when the leader reaches 11 in the third game.
GAME_REST_FRAMES = 4
SWITCH_POINTS = 11
#: How far inside (or outside) the singles lines a landing decides by itself (metres).
SURE_M = 0.3
BACKGROUND_FRAMES = 31


def _basis():
    fwd = TARGET - CAM
    fwd = fwd / np.linalg.norm(fwd)
    right = np.cross(fwd, [0.0, 0.0, 1.0])
    right = right / np.linalg.norm(right)
    return fwd, right, np.cross(right, fwd)


FWD, RIGHT, UP = _basis()


def project(x: float, y: float, z: float = 0.0) -> tuple[float, float, float]:
    """Court metres (x across, y from the far baseline to the near one, z up) -> pixel (x, y), pixels per metre."""
    d = np.array([x, y, z]) - CAM
    s = FOCAL / float(d @ FWD)
    return W / 2 - s * float(d @ RIGHT), H / 2 - s * float(d @ UP), s


def shuttle_area(scale: float) -> float:
    """The bright area (pixels) of the shuttle drawn where the court is `scale` pixels a metre: a disc of 9 cm (at
    least 2 px) inside a dark rim."""
    r = max(8, round(SHUTTLE_R_M * scale * 4)) / 4
    return math.pi * max(r - 1.0, 0.6 * r) ** 2


def _ray(px: float, py: float) -> np.ndarray:
    return FWD + (W / 2 - px) / FOCAL * RIGHT + (H / 2 - py) / FOCAL * UP


def on_floor(px: float, py: float) -> tuple[float, float]:
    """The floor point (x, y) a pixel shows."""
    r = _ray(px, py)
    p = CAM + (0.0 - CAM[2]) / r[2] * r
    return float(p[0]), float(p[1])


def on_net(px: float, py: float) -> tuple[float, float]:
    """The point (x, z) of the net's plane a pixel shows."""
    r = _ray(px, py)
    p = CAM + (NET_Y - CAM[1]) / r[1] * r
    return float(p[0]), float(p[2])


def n_frames(video: Path) -> int:
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
                          "stream=nb_read_packets", "-of", "csv=p=0", str(video)], capture_output=True, text=True,
                         check=True).stdout
    return int(out.strip().split(",")[0])


def background(video: Path, w: int, h: int, total: int) -> np.ndarray:
    step = max(1, total // BACKGROUND_FRAMES)
    ys = [yuv[0].copy() for _, yuv in P.frames(video, w, h, "yuv420p", vf=f"select=not(mod(n\\,{step}))")]
    return np.median(np.stack(ys), axis=0).astype(np.int16)


def shuttle(y: np.ndarray, bg: np.ndarray, dark: np.ndarray) -> tuple[float, float, int] | None:
    """The shuttle's centre in a Y plane and its bright area: the bright pixels that are not a court line (or are
    brighter than it)."""
    ys, xs = np.nonzero((y > SHUTTLE_Y) & dark)
    if len(xs) < 3:
        return None
    mx, my = np.median(xs), np.median(ys)
    keep = (np.abs(xs - mx) < 20) & (np.abs(ys - my) < 20)
    xs, ys = xs[keep], ys[keep]
    if len(xs) < 3:
        return None
    x0, x1 = max(0, int(xs.min()) - 3), min(y.shape[1], int(xs.max()) + 4)
    y0, y1 = max(0, int(ys.min()) - 3), min(y.shape[0], int(ys.max()) + 4)
    sub, b = y[y0:y1, x0:x1].astype(np.int16), bg[y0:y1, x0:x1]
    yy, xx = np.nonzero((sub > SHUTTLE_Y) & ((b < DARK_BG) | (sub - b > LINE_GAIN)))
    if len(xx) < 3:
        return None
    return float(xx.mean() + x0), float(yy.mean() + y0), int(len(xx))


def shirts(u: np.ndarray, v: np.ndarray) -> dict[str, tuple[float, float] | None]:
    """Each player's shirt centre (full-size pixels), None when not seen."""
    out = {}
    for side, m in (("a", v > SHIRT), ("b", u > SHIRT)):
        ys, xs = np.nonzero(m)
        out[side] = (2 * float(xs.mean()), 2 * float(ys.mean())) if len(xs) else None
    return out


def nearest_shirt(shirts: dict, x: float, y: float) -> str:
    """"a" or "b": the player whose shirt is nearest the shuttle at (x, y) (at a set-up, the server's)."""
    seen = {k: math.hypot(v[0] - x, v[1] - y) for k, v in shirts.items() if v is not None}
    return min(seen, key=seen.get) if seen else ""


def game_over(a: int, b: int) -> bool:
    return (max(a, b) >= GAME_POINTS and abs(a - b) >= 2) or max(a, b) == CAP


class Rest:
    """A run of frames in which the shuttle does not move: a landing or a set-up."""

    def __init__(self, first: int, x: float, y: float, area: int, planes):
        self.first, self.last, self.x, self.y = first, first, x, y
        self.shirts = shirts(planes[1], planes[2])
        self.floor = on_floor(x, y)
        nx, nz = on_net(x, y)
        if abs(nz - NET_STOP_Z) < NET_TOLERANCE_M:
            at_net = shuttle_area(project(nx, NET_Y, 0.0)[2])
            on_the_floor = shuttle_area(project(*self.floor, 0.0)[2])
            self.net = abs(math.log(max(area, 1) / at_net)) < abs(math.log(max(area, 1) / on_the_floor))
        else:
            self.net = False


def rests(video: Path, log) -> tuple[list[Rest], float, int]:
    """Every run of frames in which the shuttle does not move, the frame rate and the last frame's index."""
    w, h, fps = P.probe(video)
    if (w, h) != (W, H):
        log(f"the picture is {w}x{h}, not the render's {W}x{H}: the court geometry will not fit")
    bg = background(video, w, h, n_frames(video))
    dark = bg < DARK_BG
    out: list[Rest] = []
    prev = None                  # (centre, planes) of the previous frame
    cur: Rest | None = None
    for k, planes in P.frames(video, w, h, "yuv420p"):
        c = shuttle(planes[0], bg, dark)
        still = c is not None and prev is not None and prev[0] is not None and \
            abs(c[0] - prev[0][0]) < STILL_PX and abs(c[1] - prev[0][1]) < STILL_PX
        if still and cur is not None and cur.last == k - 1 and abs(c[0] - cur.x) < STILL_PX and abs(c[1] - cur.y) < STILL_PX:
            cur.last = k
        elif still:
            cur = Rest(k - 1, prev[0][0], prev[0][1], prev[0][2], prev[1])
            cur.last = k
            out.append(cur)
        prev = (c, tuple(p.copy() for p in planes) if c is not None else None)
    return out, fps, k


def near_side(shirts: dict) -> str | None:
    """"a" or "b": the player at the near end (the shirt lower in the picture)."""
    a, b = shirts.get("a"), shirts.get("b")
    if a is None or b is None:
        return None
    return "a" if a[1] > b[1] else "b"


def inside(x: float, y: float) -> float:
    """How far inside the singles court (negative: outside) a floor point is, in metres."""
    return min(x - SINGLES, COURT_W - SINGLES - x, y, COURT_L - y)


class Score:
    def __init__(self):
        self.games = {"a": 0, "b": 0}
        self.points = {"a": 0, "b": 0}
        self.served = {"a": 0, "b": 0}
        self.won = {"a": 0, "b": 0}

    def state(self, t: float, serving: str) -> dict:
        return {"t": round(t, 3), "games_a": self.games["a"], "games_b": self.games["b"],
                "points_a": self.points["a"], "points_b": self.points["b"], "serving": serving,
                "served_a": self.served["a"], "won_a": self.won["a"], "served_b": self.served["b"],
                "won_b": self.won["b"]}

    def label(self) -> str:
        ga, gb = self.games["a"], self.games["b"]
        if ga != gb:
            return SIDES[0] if ga > gb else SIDES[1]
        pa, pb = self.points["a"], self.points["b"]
        return SIDES[0] if pa >= pb + 3 else SIDES[1] if pb >= pa + 3 else "even"


def roles(runs: list[Rest]) -> list[str]:
    """"setup" or "landing" per run.  Runs that follow each other frame after frame make a chain: a landing is
    followed by the next set-up at once (and a serve that lands at once by its landing), so the roles alternate in
    a chain, which starts with a landing (the shuttle flew before it), or with the set-up at the video's start."""
    out = []
    for i, r in enumerate(runs):
        if i and runs[i - 1].last + 1 == r.first:
            out.append("setup" if out[-1] == "landing" else "landing")
        else:
            out.append("setup" if r.first == 0 else "landing")
    return out


def read(video: Path, writer, log) -> list[dict]:
    runs, fps, last_frame = rests(video, log)
    role = roles(runs)
    score = Score()
    out: list[dict] = []
    server, switched = "", False        # the rally's server: the first set-up's, then the last rally's winner
    for i, land in enumerate(runs):
        if role[i] == "setup":
            server = server or nearest_shirt(land.shirts, land.x, land.y)
            continue
        after = runs[i + 1] if i + 1 < len(runs) and role[i + 1] == "setup" and runs[i + 1].first == land.last + 1 else None
        if after is None and land.last < last_frame:
            continue                    # a pause in mid-flight, not a landing: a set-up follows every landing
        nxt = nearest_shirt(after.shirts, after.x, after.y) if after is not None else ""
        near = near_side(land.shirts) or "a"
        far = "b" if near == "a" else "a"
        fx, fy = land.floor
        if land.net:
            kind, where = "error", "net"
            # the loser: the player who does not serve next; after the match's last rally, the one whose
            # opponent's point ends the match
            winner = nxt or ("a" if _finishes(score, "a") else "b")
        else:
            hitter = near if fy < NET_Y else far
            margin = inside(fx, fy)
            if abs(margin) > SURE_M:
                in_court = margin > 0
            elif nxt:
                in_court = nxt == hitter
            else:
                in_court = _finishes(score, hitter)
            winner = hitter if in_court else ("b" if hitter == "a" else "a")
            depth = abs(fy - NET_Y)
            kind, where = ("winner", "front" if depth < NET_Y / 3 else "mid" if depth < 2 * NET_Y / 3 else "back") \
                if in_court else ("error", "out")
        actor = winner if kind == "winner" else ("b" if winner == "a" else "a")
        if server:
            score.served[server] += 1
            score.won[server] += winner == server
        score.points[winner] += 1
        # a game ends where the players change ends (a long rest; in the third game the first one at 11 points is
        # the mid-game change) and with the video's last rally; the score says which long rest is which
        long_rest = land.last - land.first + 1 >= GAME_REST_FRAMES
        mid_game_switch = long_rest and sum(score.games.values()) == 2 and not switched and \
            max(score.points.values()) < GAME_POINTS
        switched = switched or mid_game_switch
        ended = (long_rest and not mid_game_switch) or after is None
        if ended:
            score.games[winner] += 1
            score.points = {"a": 0, "b": 0}
        t = land.first / fps
        _write(writer, out, t, kind, actor, where, winner, score)
        if ended:
            _write(writer, out, t + 1 / fps, "game", winner, "", winner, score)
        server = winner
    log(f"{len(out)} events")
    return out


def _finishes(score: Score, side: str) -> bool:
    """Does one more point for `side` end its game?"""
    p = dict(score.points)
    p[side] += 1
    return game_over(p["a"], p["b"]) and p[side] > p["b" if side == "a" else "a"]


def _write(writer, out: list[dict], t: float, kind: str, actor: str, where: str, winner: str, score: Score) -> None:
    writer.add(P.row(t, kind, SIDES["ab".index(actor)], where, delta="up" if winner == "a" else "down",
                     state=score.label()))
    out.append(score.state(t, winner))
