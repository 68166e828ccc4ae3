"""The Google Research Football pixel reader: goals, shots, corners, free kicks and penalties from the decoded video.

Standalone (Python 3.11 stdlib + numpy + ffmpeg, the sandbox's toolset): it imports only the shared helper module
`pixel_reader` and knows the render's look as a viewer of it would: the whole 110 m x 72 m pitch from above at
9.2 pixels a metre, centred in the 1280x720 picture; the left team red (its keeper orange), the right team blue (its
keeper cyan), the white ball drawn higher and larger the higher it flies, with its shadow on the grass below it;
the match is 5 minutes of play shown in real time after 2 s of the kick-off position.

What it reads (the codec's own planes: brightness for the ball and its shadow, colour for the teams): the empty
pitch (the per-pixel median of frames spread over the video), and in every frame the ball's place on the grass
(its shadow's, or its own when it lies on the grass), the team nearest the ball, and whether the players jumped
into a new formation (a set piece: the simulator puts every player in place at once).  Where the ball is put at such
a jump says which set piece it is: the centre spot after a goal, a corner flag, a penalty spot, the goal area (a goal
kick) and the touchline (a throw-in: no events), anywhere else a free kick.  A goal is the last frame before the
kick-off jump, scored into the goal the ball went in (`where`: where it last left a player); a corner's `t` is the
first frame the ball is over the goal line before the corner is set up.  A shot is a ball a player had at his feet
that flies off at 14 m/s or more from within 35 m of the goal his team attacks, on a line that meets the goal line
within 3 m of the posts, and is no goal.  `delta` is naive (the side of the event's team); `state` the score.
"""
from __future__ import annotations

import math
import subprocess
from pathlib import Path

import numpy as np

import pixel_reader as P

READS = "the ball's place on the grass, the team nearest it, the set pieces' jumps into formation and the score"

SIDES = ("left", "right")
W, H = 1280, 720
SCALE = 9.2                                     # pixels a metre
HALF_LEN, HALF_WID = 55.0, 36.0                 # metres
X0, Y0 = (W - 2 * HALF_LEN * SCALE) / 2, (H - 2 * HALF_WID * SCALE) / 2
GOAL_HALF_WIDTH = 3.7
LEAD_S, FPS = 2.0, 5.0
#: The ball is this bright (Y); a background pixel this dark is no line (over a line the ball is brighter by LINE_GAIN).
BALL_Y, DARK_BG, LINE_GAIN = 224, 210, 10
#: Shadow pixels: darker than the grass by SHADOW_DARK, of the grass's colour (a player's rim is coloured).
SHADOW_DARK, NEUTRAL, SHADOW_PIXELS = 12, 10, 12
#: Team colours in the chroma planes: the left team (red, orange keeper) V > LEFT_V, the right (blue, cyan) U > RIGHT_U.
LEFT_V, RIGHT_U = 150, 140
PLAYER_R_PX = 8.5
#: The ball is drawn this many metres of the picture above its shadow per metre of height.
LIFT = 0.5
#: The ball's bright area on the grass (pixels), and how much it grows a metre up (drawn 6 % larger a metre up).
GROUND_AREA, AREA_PER_M = 45.0, 10.0
#: A set piece whose ball is held this high is a throw-in.
THROW_Z = 0.8
#: A corner's ball lies this close to a corner flag (a throw-in's is held beyond the touchline or further along).
CORNER_M = 0.6
#: The kick rings: magenta (both chroma planes high), at least KICK_PIXELS quarter-size pixels, KICK_R_Q across.
KICK_UV, KICK_PIXELS, KICK_R_Q = 170, 8, 6
#: A set piece: at least this share of the players' colour is away from where any player was a frame before.
JUMP_SHARE, JUMP_RADIUS_Q = 0.8, 3
#: Shots (game.toml's rule as a viewer sees it at 5 frames a second).
SHOT_MPS, SHOT_RANGE_M, SHOT_AIM_M = 15.0, 35.0, 3.5
#: The ball is at a player's feet when the nearest player's centre is this close.
AT_FEET_M = 2.0
SET_PIECE_S = 4.0
#: A kick ring whose ball is this close to its centre shows the kick's own step; a ring this close to one of the frame
#: before is that ring still.
OWN_STEP_M, SAME_RING_M = 0.6, 0.8
#: A set piece's ball has been kicked once it is this far from where it was put.
MOVED_M = 0.5
BACKGROUND_FRAMES = 31


def metres(px: float, py: float) -> tuple[float, float]:
    """A pixel -> pitch metres (x from the centre to the right goal, y from the centre down the picture)."""
    return (px - X0) / SCALE - HALF_LEN, (py - Y0) / SCALE - HALF_WID


def cell(x: float, y: float) -> str:
    """The 6x3 grid cell of a pitch point (game.toml): columns 1-6 from the left goal line, rows a (top) b c."""
    col = min(6, max(1, int((x + HALF_LEN) / (2 * HALF_LEN) * 6) + 1))
    row = min(2, max(0, int((y + HALF_WID) / (2 * HALF_WID) * 3)))
    return f"{col}{'abc'[row]}"


def n_frames(video: Path) -> int:
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
                          "stream=nb_read_packets", "-of", "csv=p=0", str(video)], capture_output=True, text=True,
                         check=True).stdout
    return int(out.strip().split(",")[0])


def background(video: Path, total: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    step = max(1, total // BACKGROUND_FRAMES)
    planes = [tuple(p.copy() for p in yuv) for _, yuv in P.frames(video, W, H, "yuv420p", vf=f"select=not(mod(n\\,{step}))")]
    return tuple(np.median(np.stack([p[i] for p in planes]), axis=0).astype(np.int16) for i in range(3))


def dilate(m: np.ndarray, r: int) -> np.ndarray:
    out = m.copy()
    for _ in range(r):
        o = out.copy()
        o[1:] |= out[:-1]
        o[:-1] |= out[1:]
        o[:, 1:] |= out[:, :-1]
        o[:, :-1] |= out[:, 1:]
        out = o
    return out


class Look:
    """What one frame shows: the ball on the grass (metres), the nearest player of each team (metres from the ball),
    and the teams' colour (quarter size) for the next frame's jump test."""

    def __init__(self, y: np.ndarray, u: np.ndarray, v: np.ndarray, bg) -> None:
        by, bu, bv = bg
        self.ball = None
        self.z = 0.0                        # the ball's height (metres), from how far above its shadow it is drawn
        self.area = 0                       # the ball's bright pixels
        self.near = {"left": math.inf, "right": math.inf}
        cand = (y > BALL_Y) & ((by < DARK_BG) | (y.astype(np.int16) - by > LINE_GAIN))
        ys, xs = np.nonzero(cand)
        if len(xs) >= 4:
            mx, my = np.median(xs), np.median(ys)
            keep = (np.abs(xs - mx) < 15) & (np.abs(ys - my) < 15)
            if keep.sum() >= 4:
                bx, byy = float(xs[keep].mean()), float(ys[keep].mean())
                self.area = int(keep.sum())
                gx, gy = self._shadow(y, u, v, bg, bx, byy)
                if gy == byy:       # no shadow shows (the ball hides it): how high it is from how large it is drawn
                    gy += max(0.0, (self.area - GROUND_AREA) / AREA_PER_M) * SCALE * LIFT
                self.ball = metres(gx, gy)
                self.z = (gy - byy) / (SCALE * LIFT)
                self._near(u, v, gx, gy)
        self.teams = ((v > LEFT_V) | (u > RIGHT_U)) & ~((u > KICK_UV) & (v > KICK_UV))
        self.kicks = [(metres(x, y), self._nearest_team(u, v, x, y)) for x, y in self._rings(u, v)]

    @staticmethod
    def _rings(u: np.ndarray, v: np.ndarray) -> list[tuple[float, float]]:
        """The centres (full-size pixels) of the magenta kick rings."""
        ys, xs = np.nonzero((u > KICK_UV) & (v > KICK_UV))
        if len(xs) < KICK_PIXELS:
            return []
        groups: list[list[int]] = []
        centres: list[tuple[float, float]] = []
        for i, (x, y) in enumerate(zip(xs.tolist(), ys.tolist())):
            for g, (cx, cy) in zip(groups, centres):
                if abs(x - cx) <= KICK_R_Q * 2 and abs(y - cy) <= KICK_R_Q * 2:
                    g.append(i)
                    break
            else:
                groups.append([i])
                centres.append((x, y))
        out = []
        for g in groups:
            if len(g) >= KICK_PIXELS:
                out.append((2 * float(xs[g].mean()) + 1, 2 * float(ys[g].mean()) + 1))
        return out

    @staticmethod
    def _nearest_team(u: np.ndarray, v: np.ndarray, gx: float, gy: float) -> str:
        """The team whose colour is nearest a point (the kicker's, at a kick ring)."""
        best, team = math.inf, ""
        r = 14
        cx, cy = int(gx / 2), int(gy / 2)
        y0, y1, x0, x1 = max(0, cy - r), min(u.shape[0], cy + r + 1), max(0, cx - r), min(u.shape[1], cx + r + 1)
        for side, m in (("left", v[y0:y1, x0:x1] > LEFT_V), ("right", u[y0:y1, x0:x1] > RIGHT_U)):
            yy, xx = np.nonzero(m & ~((u[y0:y1, x0:x1] > KICK_UV) & (v[y0:y1, x0:x1] > KICK_UV)))
            if len(xx):
                d = float(np.hypot(2 * (xx + x0) + 1 - gx, 2 * (yy + y0) + 1 - gy).min())
                if d < best:
                    best, team = d, side
        return team

    @staticmethod
    def _shadow(y, u, v, bg, bx: float, byy: float) -> tuple[float, float]:
        """The ball's place on the grass: its shadow's centre below it, or the ball itself when none shows."""
        by, bu, bv = bg
        x0, x1 = max(0, int(bx) - 5), min(W, int(bx) + 6)
        y0, y1 = max(0, int(byy) + 4), min(H, int(byy) + 75)
        if y1 <= y0:
            return bx, byy
        sub = y[y0:y1, x0:x1].astype(np.int16)
        cu, cv = u[y0 // 2:(y1 + 1) // 2, x0 // 2:(x1 + 1) // 2], v[y0 // 2:(y1 + 1) // 2, x0 // 2:(x1 + 1) // 2]
        neutral = (np.abs(cu.astype(np.int16) - bu[y0 // 2:(y1 + 1) // 2, x0 // 2:(x1 + 1) // 2]) < NEUTRAL) & \
                  (np.abs(cv.astype(np.int16) - bv[y0 // 2:(y1 + 1) // 2, x0 // 2:(x1 + 1) // 2]) < NEUTRAL)
        neutral = np.repeat(np.repeat(neutral, 2, axis=0), 2, axis=1)[:sub.shape[0], :sub.shape[1]]
        dark = (sub < by[y0:y1, x0:x1] - SHADOW_DARK) & neutral
        rows = np.nonzero(dark.sum(axis=1) >= 3)[0]
        if len(rows) < 2:
            return bx, byy
        blob = rows[rows <= rows[0] + 8]
        yy, xx = np.nonzero(dark[blob.min():blob.max() + 1])
        if len(xx) < SHADOW_PIXELS:
            return bx, byy
        return float(xx.mean() + x0), float(yy.mean() + blob.min() + y0)

    def _near(self, u, v, gx: float, gy: float) -> None:
        r = 14       # quarter-size pixels: about 3 m
        cx, cy = int(gx / 2), int(gy / 2)
        y0, y1, x0, x1 = max(0, cy - r), min(u.shape[0], cy + r + 1), max(0, cx - r), min(u.shape[1], cx + r + 1)
        ring = (u[y0:y1, x0:x1] > KICK_UV) & (v[y0:y1, x0:x1] > KICK_UV)
        for side, m in (("left", v[y0:y1, x0:x1] > LEFT_V), ("right", u[y0:y1, x0:x1] > RIGHT_U)):
            yy, xx = np.nonzero(m & ~ring)
            if len(xx):
                d = float(np.hypot(2 * (xx + x0) + 1 - gx, 2 * (yy + y0) + 1 - gy).min())
                self.near[side] = (d + PLAYER_R_PX) / SCALE    # the nearest rim pixel, to the centre


def looks(video: Path, log) -> tuple[list[Look | None], list[float], float]:
    """Every frame's Look and the share of the players' colour that jumped since the frame before."""
    w, h, fps = P.probe(video)
    if (w, h) != (W, H):
        log(f"the picture is {w}x{h}, not the render's {W}x{H}: the pitch geometry will not fit")
    bg = background(video, n_frames(video))
    out, jumps = [], []
    prev = None
    for _, (y, u, v) in P.frames(video, w, h, "yuv420p"):
        look = Look(y, u, v, bg)
        if prev is not None and look.teams.any():
            jumps.append(float((look.teams & ~dilate(prev, JUMP_RADIUS_Q)).sum() / look.teams.sum()))
        else:
            jumps.append(0.0)
        prev = look.teams
        look.teams = None
        out.append(look)
    return out, jumps, fps


def attacker_of(x: float) -> str:
    """The team that attacks the goal at this end (left attacks the right goal)."""
    return "left" if x > 0 else "right"


def in_goal(b: tuple[float, float] | None) -> int:
    """+1 / -1 when the ball is over the right / left goal line between the posts, else 0."""
    if b is None or abs(b[1]) > GOAL_HALF_WIDTH + 0.5 or abs(b[0]) < HALF_LEN:
        return 0
    return 1 if b[0] > 0 else -1


class Kick:
    """A kick: the frame its ring first shows, the ball's place on the grass when it was kicked, the teams the kicker
    may be of, and whether that frame shows the kick's own step (the ball still inside the ring)."""

    def __init__(self, frame: int, at: tuple[float, float], teams: set[str], ball: tuple[float, float] | None):
        self.frame, self.at, self.teams = frame, at, teams
        self.own_step = ball is not None and math.dist(ball, at) < OWN_STEP_M
        self.shown = 1                    # frames the ring shows in


def kicks_of(frames: list[Look]) -> list[Kick]:
    """Every kick, in order: a ring that was not there a frame before, and for how many frames it shows.  The kicker's
    team may be any team that had a player at the ball a frame before, or the one nearest the ring."""
    out, open_ = [], []
    for f, look in enumerate(frames):
        still = []
        for at, team in look.kicks:
            same = next((k for k in open_ if math.dist(at, k.at) < SAME_RING_M), None)
            if same is not None:
                same.shown += 1
                still.append(same)
                continue
            prev = frames[f - 1] if f else None
            teams = {side for side, d in prev.near.items() if d <= AT_FEET_M} if prev and prev.ball else set()
            kick = Kick(f, at, teams | ({team} if team else set()), look.ball)
            out.append(kick)
            still.append(kick)
        open_ = still
    return out


def at_feet(look: Look) -> str:
    """The team that has the ball at its feet (a player within AT_FEET_M), "" when nobody is that close."""
    if look.ball is None:
        return ""
    side = min(look.near, key=look.near.get)
    return side if look.near[side] <= AT_FEET_M else ""


def read(video: Path, writer, log) -> list[dict]:
    frames, jumps, fps = looks(video, log)
    kicks = kicks_of(frames)
    found: list[tuple[int, str, str, str]] = []            # (frame, type, actor, where)
    taken: set[int] = set()                                # kicks that are set pieces' or goals', never shots
    for f in range(1, len(frames)):
        if jumps[f] < JUMP_SHARE or frames[f].ball is None:
            continue
        x, y = frames[f].ball
        first = next((k for k, kick in enumerate(kicks) if f <= kick.frame <= f + SET_PIECE_S * fps), None)
        if abs(abs(x) - HALF_LEN) < CORNER_M and abs(abs(y) - HALF_WID) < CORNER_M:    # a corner flag
            t = f - 1
            for j in range(f - 1, max(0, f - 30), -1):
                b = frames[j].ball
                if b is not None and b[0] * x > 0 and abs(b[0]) >= HALF_LEN:
                    t = j
                elif t != f - 1:
                    break
            found.append((t, "corner", attacker_of(x), ""))
        elif frames[f].z > THROW_Z or abs(y) > HALF_WID - 1.5:          # held high at the touchline: a throw-in
            pass
        elif abs(x) < 1.5 and abs(y) < 1.5:                             # the kick-off after a goal
            t, scorer = _goal(frames, f)
            strike = next((k for k in range(len(kicks) - 1, -1, -1) if kicks[k].frame <= t), None)
            where = cell(*(kicks[strike].at if strike is not None else frames[t].ball or (0.0, 0.0)))
            if strike is not None:
                taken.add(strike)
            found.append((t, "goal", scorer, where))
        elif abs(abs(x) - (HALF_LEN - 11.0)) < 1.5 and abs(y) < 1.5:  # the penalty spot: its kick may be a shot
            found.append((f, "penalty", attacker_of(x), ""))
            continue
        elif abs(x) > HALF_LEN - 6.5 and abs(y) < 10.0:               # the goal area: a goal kick
            pass
        else:            # a free kick: taken by the team nearest the ball the frame before it moves (its kick has no ring)
            j = next((j for j in range(f + 1, min(len(frames), f + int(SET_PIECE_S * fps)))
                      if frames[j].ball is not None and math.dist(frames[j].ball, (x, y)) > MOVED_M), f + 1)
            near = frames[j - 1].near
            found.append((f, "free_kick", min(near, key=near.get), cell(x, y)))
        if first is not None:
            taken.add(first)
    found += [shot for k, kick in enumerate(kicks) if k not in taken and (shot := _shot(frames, kick, fps))]
    found.sort()
    out: list[dict] = []
    score = {"left": 0, "right": 0}
    for f, type_, actor, where in found:
        if type_ == "goal":
            score[actor] += 1
        t = f / fps
        state = "left" if score["left"] > score["right"] else "right" if score["right"] > score["left"] else "even"
        writer.add(P.row(t, type_, actor, where, delta="up" if actor == "left" else "down", state=state))
        out.append({"t": round(t, 3), "goals_left": score["left"], "goals_right": score["right"]})
    log(f"{len(out)} events")
    return out


def _goal(frames: list[Look], kick_off: int) -> tuple[int, str]:
    """The goal before a kick-off: the first frame of the last run showing the ball in a goal (else the frame
    before the kick-off), and the team it counts for (the one attacking that goal)."""
    t, side = kick_off - 1, 0
    for j in range(kick_off - 1, max(0, kick_off - 8), -1):
        s = in_goal(frames[j].ball)
        if s and (not side or s == side):
            t, side = j, s
        elif side:
            break
    if not side:
        b = frames[kick_off - 1].ball or (0.0, 0.0)
        side = 1 if b[0] > 0 else -1
    return t, "left" if side > 0 else "right"


def _shot(frames: list[Look], kick: Kick, fps: float) -> tuple[int, str, str, str] | None:
    """A kick that sends the ball at SHOT_MPS or more over its first two steps towards the goal its team attacks, from
    within SHOT_RANGE_M of it, on a line that meets the goal line within SHOT_AIM_M of a post.

    Which steps the frames after the kick show: the ring lasts KICK_MARK_STEPS steps, so it shows in two frames (the
    video shows every other step), or in three when the first is the kick's own odd step (an event's frame shows its
    own step); its first frame shows the kick's own step when the ball is still inside it.  So the ball two steps
    after the kick is the next frame's (own step, two frames), or halfway between the two frames that show one and
    three steps after it."""
    f, c = kick.frame, kick.at
    if f + 2 >= len(frames):
        return None
    b0, b1, b2 = (frames[j].ball for j in (f, f + 1, f + 2))
    if kick.own_step and kick.shown < 3:
        two = b1
    elif kick.own_step:
        two = None if b1 is None or b2 is None else ((b1[0] + b2[0]) / 2, (b1[1] + b2[1]) / 2)
    else:
        two = None if b0 is None or b1 is None else ((b0[0] + b1[0]) / 2, (b0[1] + b1[1]) / 2)
    if two is None or b2 is None:
        return None
    far = b2 if math.dist(c, b2) > math.dist(c, two) else two      # the line: to the ball two frames on
    vx, vy = far[0] - c[0], far[1] - c[1]
    if math.dist(c, two) * fps < SHOT_MPS or vx == 0:
        return None
    team = "left" if vx > 0 else "right"                # the goal it flies at is the other team's
    if team not in kick.teams:
        return None
    goal_x = (1 if team == "left" else -1) * HALF_LEN
    if math.hypot(goal_x - c[0], c[1]) > SHOT_RANGE_M or abs(c[1] + vy * (goal_x - c[0]) / vx) > GOAL_HALF_WIDTH + SHOT_AIM_M:
        return None
    return (f if kick.own_step else f - 1), "shot", team, cell(*c)
