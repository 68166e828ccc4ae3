"""The Google Research Football plugin: full matches between the simulator's built-in AI teams.

Records: each case is one 3,000-step match (5 minutes at the engine's 10 steps per second) played by
Google Research Football 2.10.2 (patched: video_arena/games/gfootball/patches/) with both teams driven
by the built-in AI, from a seeded engine (`game_engine_random_seed`) and a seeded pair of team
difficulties.  The engine runs in its own Python 3.11 venv (scripts/install-gfootball.sh) through
`simulate.py`; the record keeps the per-step state (ball, 22 players, game mode, score, ball owner:
match_state.py), so the ground truth alone re-renders the video and replays the events.

Events (`replay`) are derived from that state by match_state.derive_events.  V_t: see `evaluate` and
game.toml ([value] definition).  Render: a top-down view of the pitch drawn by the toolkit, one video
frame per engine step (fps 10), no text of any kind.
"""
from __future__ import annotations

import bisect
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from PIL import Image, ImageDraw

from video_arena import paths
from video_arena.core.tasks import TasksTree
from video_arena.digests import sha256_hasher, sha256_text
from video_arena.media.pacing import Schedule
from video_arena.games.base import GamePlugin, Step
from video_arena.games.gfootball import match_state as MS
from video_arena.games.gfootball.goal_model import (  # noqa: F401  (GOAL_MODEL and the model's error: plugin names)
    GOAL_MODEL, GFootballError, equal_rate, expected_result, load_goal_model)
from video_arena.games.gfootball import dump

HERE = Path(__file__).resolve().parent
COLLECTION = "gfootball-builtin-ai"
ENGINE = "Google Research Football 2.10.2 (PyPI sdist, Apache-2.0), patched (video_arena/games/gfootball/patches)"
LICENCE = "Apache-2.0 (Google Research Football engine); the matches are simulated by the toolkit"
STEPS = 3000
DIFFICULTIES = (0.05, 0.2, 0.4, 0.6, 0.8, 0.95)
#: Matches left out of the selection, with the reason (source id -> why).
EXCLUDED: dict[str, str] = {}
GFOOTBALL_DIR_ENV = "VIDEO_ARENA_GFOOTBALL_DIR"
INSTALL_SCRIPT = paths.REPO_ROOT / "scripts" / "install-gfootball.sh"
SIMULATE = HERE / "simulate.py"
FITTING_KEYS = HERE / "data" / "fitting_keys.json"

#: The built-in cases' V_t uses no rollouts (see `evaluate`); the engine run records the match only.
#: `calibrate measure` runs the full definition's rollouts at a few events to measure the difference.
ROLLOUTS = 0
HORIZON = 0
ROLLOUT_SEED = 0


# -- the engine -------------------------------------------------------------------------------------

def engine_dir() -> Path:
    return Path(os.environ.get(GFOOTBALL_DIR_ENV) or paths.REPO_ROOT / ".cache" / "gfootball")


def engine_python() -> Path:
    py = engine_dir() / "venv" / "bin" / "python"
    stamp = engine_dir() / "installed.stamp"
    if not (py.is_file() and stamp.is_file()):
        proc = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True,
                              env=dict(os.environ, **{GFOOTBALL_DIR_ENV: str(engine_dir())}))
        if proc.returncode != 0:
            raise GFootballError(f"scripts/install-gfootball.sh failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return py


def run_dir() -> Path:
    return engine_dir() / "runs"


def budget() -> dict[str, int]:
    return {"rollouts": ROLLOUTS, "horizon": HORIZON, "rollout_seed": ROLLOUT_SEED}


def run_path(spec: dict[str, Any], budget_: dict[str, int]) -> Path:
    key = json.dumps([spec, budget_], sort_keys=True)
    return run_dir() / f"{spec_id(spec)}-{sha256_text(key)[:10]}.json"


def simulate(spec: dict[str, Any], budget_: dict[str, int] | None = None, at_steps: list[int] | None = None,
             out: Path | None = None) -> dict[str, Any]:
    """Run simulate.py in the engine venv (cached in .cache/gfootball/runs/ unless `out` is given)."""
    budget_ = budget() if budget_ is None else budget_
    path = out or run_path(spec, budget_)
    if out is None and at_steps is None and path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".run.", suffix=".json", dir=path.parent)
    os.close(fd)
    cmd = [str(engine_python()), str(SIMULATE), "--seed", str(spec["seed"]),
           "--left-difficulty", repr(spec["left_difficulty"]), "--right-difficulty", repr(spec["right_difficulty"]),
           "--steps", str(spec["steps"]), "--rollouts", str(budget_["rollouts"]), "--horizon", str(budget_["horizon"]),
           "--rollout-seed", str(budget_["rollout_seed"]), "--out", tmp]
    if at_steps is not None:
        cmd += ["--at-steps", ",".join(str(s) for s in at_steps)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, SDL_VIDEODRIVER="dummy"))
    if proc.returncode != 0:
        Path(tmp).unlink(missing_ok=True)
        raise GFootballError(f"simulate.py failed for {spec_id(spec)}: {proc.stderr.strip()[-1500:]}")
    os.replace(tmp, path)
    return json.loads(path.read_text(encoding="utf-8"))


# -- records ----------------------------------------------------------------------------------------

def match_specs(n: int, seed: int) -> list[dict[str, Any]]:
    """The first n match specifications of the seeded sequence (a prefix is the same for any n)."""
    rng = random.Random(f"video-arena/gfootball/select/{seed}")
    out = []
    while len(out) < n:
        spec = {"seed": rng.randrange(1, 2_000_000_000), "left_difficulty": rng.choice(DIFFICULTIES),
                "right_difficulty": rng.choice(DIFFICULTIES), "steps": STEPS}
        if spec_id(spec) not in EXCLUDED:
            out.append(spec)
    return out


def spec_id(spec: dict[str, Any]) -> str:
    # the seed alone: the id goes into cases.json, and the difficulties would hint at the result
    return f"match-{spec['seed']}"


def record_of_run(spec: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    if run["match"] != {k: spec[k] for k in ("seed", "left_difficulty", "right_difficulty", "steps")}:
        raise GFootballError(f"{spec_id(spec)}: the engine run is for another match: {run['match']}")
    return {
        "source": {"collection": COLLECTION, "id": spec_id(spec), "engine": ENGINE, "licence": LICENCE},
        "match": {"scenario": "gfootball 11_vs_11_stochastic line-up, both teams the built-in AI",
                  "game_engine_random_seed": spec["seed"], "left_difficulty": spec["left_difficulty"],
                  "right_difficulty": spec["right_difficulty"], "steps": spec["steps"], "steps_per_s": MS.STEPS_PER_S},
        "state": run["state"],
    }


def spec_of_record(record: dict[str, Any]) -> dict[str, Any]:
    m = record["match"]
    return {"seed": m["game_engine_random_seed"], "left_difficulty": m["left_difficulty"],
            "right_difficulty": m["right_difficulty"], "steps": m["steps"]}


def first_step(record: dict[str, Any]) -> int:
    """The engine step of the record's state 0: 0 (the kick-off) for a simulated match, 1 for an episode dump
    (a dump starts after the first environment step)."""
    return int(record["match"].get("first_step", 0))


def stream_key(m: MS.Match, first: int) -> str:
    """SHA-256 of the recorded state stream (ball, players, game mode, score, ball owner, active flags, on the
    record's quantized grid) of environment steps 1 to STEPS: the same match gives the same key whether it was
    simulated here (state 0 the kick-off, the last the state after step STEPS) or read from its episode dump
    (state 0 after step 1, the last after step STEPS + 1, when the environment ends the episode)."""
    h = sha256_hasher()
    for i in range(1 - first, min(m.n, STEPS + 1 - first)):
        row = (m.ball[i], m.players[i], m.game_mode[i], m.score[i], m.owner[i], m.active[i])
        h.update(repr(row).encode("ascii"))
        h.update(b"\n")
    return h.hexdigest()


@lru_cache(maxsize=4)
def _stream_key(state_json: str, first: int) -> str:
    return stream_key(_decoded(state_json), first)


def rule_refusal(record: dict[str, Any]) -> str:
    """The rules a match must meet to be a case (the one copy: the built-in selection checks every simulated
    match with it, and `refusal` every imported one): a full match of STEPS steps, both teams' AI difficulty in
    [0, 1] (the goal-rate model's inputs), a state that decodes and whose score changes by single goals."""
    match = record.get("match", {})
    if match.get("steps") != STEPS:
        return (f"the match lasts {match.get('steps')} steps; a case is a full {STEPS}-step match (the goal-rate "
                "model's time base)")
    for side in ("left", "right"):
        d = match.get(f"{side}_difficulty")
        if not isinstance(d, (int, float)) or isinstance(d, bool) or not 0.0 <= d <= 1.0:
            return f"the {side} team's AI difficulty {d!r} is not a number in [0, 1]"
    try:
        m = decoded(record)
        MS.derive_events(m)
    except (ValueError, KeyError, TypeError) as exc:
        return f"the recorded state cannot be replayed: {exc}"
    if m.n != STEPS + 1:
        return f"the state holds {m.n} steps, not the match's {STEPS + 1}"
    return ""


def _committed_records() -> dict[str, dict[str, Any]]:
    """Records in the checkout's committed ground truth, by source id: a simulated match is, like V_t,
    computed once and committed; a rebuild reuses it instead of running the engine again."""
    out = {}
    for path in TasksTree(paths.default_tasks_root()).gt_files("gfootball"):
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))["record"]
            out[rec["source"]["id"]] = rec
        except (ValueError, KeyError, TypeError):
            continue
    return out


def load_or_simulate(spec: dict[str, Any], committed: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    committed = _committed_records() if committed is None else committed
    rec = committed.get(spec_id(spec))
    if rec is not None and spec_of_record(rec) == spec:
        return rec
    return record_of_run(spec, simulate(spec))


@lru_cache(maxsize=4)
def _decoded(state_json: str) -> MS.Match:
    return MS.decode_state(json.loads(state_json))


def _state_key(record: dict[str, Any]) -> str:
    return json.dumps(record["state"], sort_keys=True)


def decoded(record: dict[str, Any]) -> MS.Match:
    return _decoded(_state_key(record))


@lru_cache(maxsize=4)
def _event_frame_steps(state_json: str) -> dict[int, int]:
    """Event frame -> the event's step (the frames in between show the regular every-other step)."""
    steps = [e.step for e in MS.derive_events(_decoded(state_json))]
    return dict(zip(PLUGIN._frames_of_steps(steps), steps))


@lru_cache(maxsize=1)
def _fitting_keys() -> frozenset[str]:
    if not FITTING_KEYS.is_file():
        raise GFootballError(f"{FITTING_KEYS} is missing: run `python -m video_arena.games.gfootball.calibrate keys`")
    doc = json.loads(FITTING_KEYS.read_text(encoding="utf-8"))
    return frozenset(doc["keys"].values())


def final_score(record: dict[str, Any]) -> tuple[int, int]:
    return decoded(record).score[-1]


# -- V_t ----------------------------------------------------------------------------------------------

# -- rendering ----------------------------------------------------------------------------------------

W, H = 1280, 720
SCALE = 9.2                                   # px per metre
PITCH_W, PITCH_H = 2 * MS.HALF_LEN_M * SCALE, 2 * MS.HALF_WID_M * SCALE
X0, Y0 = (W - PITCH_W) / 2, (H - PITCH_H) / 2
SS = 4                                        # supersampling of the static layer and the sprites
GRASS = ((58, 128, 58), (52, 118, 52))
SURROUND = (44, 96, 44)
LINE = (235, 235, 235)
TEAM_RGB = {0: ((214, 48, 40), (120, 20, 16)), 1: ((40, 96, 220), (16, 40, 110))}   # fill, outline
KEEPER_RGB = {0: ((250, 170, 40), (120, 20, 16)), 1: ((70, 210, 220), (16, 40, 110))}
PLAYER_R = 8.5
BALL_R = 5.5
#: Where a player kicks the ball away (the ball leaves him: owned, then not), a magenta ring round the ball's place
#: on the grass at that step, shown for KICK_MARK_STEPS steps: the kick falls between two frames at 5 fps, and
#: the ring shows where and that it happened.
KICK_RGB = (235, 40, 235)
KICK_R, KICK_RING, KICK_MARK_STEPS = 12.0, 2.5, 4
#: Engine steps per video frame: 10 steps/s shown at 5 fps (H.264 at 1280x720 is the media's main cost).
STEPS_PER_FRAME = 2


def px(x_env: float, y_env: float) -> tuple[float, float]:
    xm, ym = MS.to_metres(x_env, y_env)
    return X0 + (xm + MS.HALF_LEN_M) * SCALE, Y0 + (ym + MS.HALF_WID_M) * SCALE


@lru_cache(maxsize=1)
def pitch_image() -> Image.Image:
    """The empty pitch: mown stripes, the lines, the goals (drawn at SS x and reduced)."""
    s = SS
    img = Image.new("RGB", (W * s, H * s), SURROUND)
    d = ImageDraw.Draw(img)
    m = lambda xm, ym: (X0 * s + (xm + MS.HALF_LEN_M) * SCALE * s, Y0 * s + (ym + MS.HALF_WID_M) * SCALE * s)  # noqa: E731
    stripes = 16
    for k in range(stripes):
        x0 = -MS.HALF_LEN_M + k * 2 * MS.HALF_LEN_M / stripes
        x1 = x0 + 2 * MS.HALF_LEN_M / stripes
        d.rectangle([m(x0, -MS.HALF_WID_M), m(x1, MS.HALF_WID_M)], fill=GRASS[k % 2])
    lw = int(0.12 * SCALE * s) + 2
    L, Hh = MS.HALF_LEN_M, MS.HALF_WID_M
    d.rectangle([m(-L, -Hh), m(L, Hh)], outline=LINE, width=lw)
    d.line([m(0, -Hh), m(0, Hh)], fill=LINE, width=lw)
    cx, cy = m(0, 0)
    r = 9.15 * SCALE * s
    d.ellipse([cx - r, cy - r, cx + r, cy + r], outline=LINE, width=lw)
    d.ellipse([cx - 3 * s, cy - 3 * s, cx + 3 * s, cy + 3 * s], fill=LINE)
    for sign in (-1, 1):
        gl = sign * L
        d.rectangle(sorted_box(m(gl, -20.15), m(gl - sign * 16.5, 20.15)), outline=LINE, width=lw)
        d.rectangle(sorted_box(m(gl, -9.16), m(gl - sign * 5.5, 9.16)), outline=LINE, width=lw)
        sx, sy = m(gl - sign * 11.0, 0)
        d.ellipse([sx - 3 * s, sy - 3 * s, sx + 3 * s, sy + 3 * s], fill=LINE)
        # penalty arc: the part of the 9.15 m circle round the spot outside the area
        bx0, by0 = m(gl - sign * 11.0 - 9.15, -9.15)
        bx1, by1 = m(gl - sign * 11.0 + 9.15, 9.15)
        a = math.degrees(math.acos(5.5 / 9.15))
        start, end = (180 - a, 180 + a) if sign > 0 else (-a, a)
        d.arc([bx0, by0, bx1, by1], start, end, fill=LINE, width=lw)
        # the goal: a net box behind the line
        g0, g1 = m(gl, -MS.GOAL_HALF_WIDTH_M), m(gl + sign * MS.GOAL_DEPTH_M, MS.GOAL_HALF_WIDTH_M)
        box = sorted_box(g0, g1)
        d.rectangle(box, fill=(205, 205, 205), outline=(250, 250, 250), width=lw)
        step = 0.6 * SCALE * s
        xx = box[0] + step
        while xx < box[2]:
            d.line([(xx, box[1]), (xx, box[3])], fill=(160, 160, 160), width=s)
            xx += step
        yy = box[1] + step
        while yy < box[3]:
            d.line([(box[0], yy), (box[2], yy)], fill=(160, 160, 160), width=s)
            yy += step
    return img.resize((W, H), Image.Resampling.LANCZOS)


def sorted_box(p, q):
    return [min(p[0], q[0]), min(p[1], q[1]), max(p[0], q[0]), max(p[1], q[1])]


@lru_cache(maxsize=None)
def disc(radius: float, fill: tuple[int, int, int], outline: tuple[int, int, int], ring: float) -> tuple[Image.Image, Image.Image]:
    """(RGB sprite, alpha mask) of a filled disc with an outline ring, supersampled and reduced."""
    s = SS
    size = int(math.ceil(2 * radius + 4))
    big = Image.new("RGB", (size * s, size * s), outline)
    mask = Image.new("L", (size * s, size * s), 0)
    c = size * s / 2
    r = radius * s
    ImageDraw.Draw(mask).ellipse([c - r, c - r, c + r, c + r], fill=255)
    ri = (radius - ring) * s
    ImageDraw.Draw(big).ellipse([c - ri, c - ri, c + ri, c + ri], fill=fill)
    return big.resize((size, size), Image.Resampling.LANCZOS), mask.resize((size, size), Image.Resampling.LANCZOS)


@lru_cache(maxsize=None)
def ring_mask(radius: float, width: float) -> Image.Image:
    """The alpha mask of a ring (outer radius, width), supersampled and reduced."""
    s = SS
    size = int(math.ceil(2 * radius + 4))
    mask = Image.new("L", (size * s, size * s), 0)
    c, r, ri = size * s / 2, radius * s, (radius - width) * s
    d = ImageDraw.Draw(mask)
    d.ellipse([c - r, c - r, c + r, c + r], fill=255)
    d.ellipse([c - ri, c - ri, c + ri, c + ri], fill=0)
    return mask.resize((size, size), Image.Resampling.LANCZOS)


@lru_cache(maxsize=None)
def shadow(radius: float) -> Image.Image:
    s = SS
    size = int(math.ceil(2 * radius + 4))
    mask = Image.new("L", (size * s, size * s), 0)
    c, r = size * s / 2, radius * s
    ImageDraw.Draw(mask).ellipse([c - r, c - r * 0.7, c + r, c + r * 0.7], fill=110)
    return mask.resize((size, size), Image.Resampling.LANCZOS)


Box = tuple[int, int, int, int]


@lru_cache(maxsize=1)
def pitch_pixels() -> np.ndarray:
    """`pitch_image` as a read-only (H, W, 3) uint8 array."""
    out = np.asarray(pitch_image()).copy()
    out.flags.writeable = False
    return out


@lru_cache(maxsize=None)
def _blend_terms(fill: tuple[int, int, int] | None, radius: float, outline: tuple[int, int, int] | None = None,
                 ring: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(255 - mask, source * mask + 128) of a sprite as uint32 arrays: `disc`'s sprite, or with outline None
    `shadow`'s mask over the colour `fill`."""
    if outline is None:
        mask = np.asarray(shadow(radius), np.uint32)[:, :, None]
        src = np.array(fill, np.uint32)

    else:
        sprite, m = disc(radius, fill, outline, ring)
        mask, src = np.asarray(m, np.uint32)[:, :, None], np.asarray(sprite, np.uint32)
    return 255 - mask, src * mask + 128


def _paste(pixels: np.ndarray, terms: tuple[np.ndarray, np.ndarray], x: float, y: float) -> Box:
    """Blend a sprite (`_blend_terms`) centred on (x, y) into `pixels` exactly as PIL's
    `Image.paste(sprite, box, mask)` does (out = (t + (t >> 8)) >> 8, t = dst * (255 - mask) + src * mask + 128;
    tests/unit/test_gfootball.py checks every value against PIL); the box it covers, clipped to the picture."""
    inv, src_m = terms
    h, w = inv.shape[:2]
    x0, y0 = int(round(x - w / 2)), int(round(y - h / 2))
    cx0, cy0 = max(x0, 0), max(y0, 0)
    cx1, cy1 = min(x0 + w, pixels.shape[1]), min(y0 + h, pixels.shape[0])
    if cx1 <= cx0 or cy1 <= cy0:
        return (cx0, cy0, cx0, cy0)
    sy, sx = slice(cy0 - y0, cy1 - y0), slice(cx0 - x0, cx1 - x0)
    region = pixels[cy0:cy1, cx0:cx1]
    t = region * inv[sy, sx] + src_m[sy, sx]
    region[...] = (t + (t >> 8)) >> 8
    return (cx0, cy0, cx1, cy1)


@lru_cache(maxsize=None)
def _ring_terms(fill: tuple[int, int, int], radius: float, width: float) -> tuple[np.ndarray, np.ndarray]:
    """`_blend_terms` of `ring_mask` over the colour `fill`."""
    mask = np.asarray(ring_mask(radius, width), np.uint32)[:, :, None]
    return 255 - mask, np.array(fill, np.uint32) * mask + 128


def kicks_shown(m: MS.Match, i: int) -> list[int]:
    """The steps of the kicks whose ring state i shows: the ball left a player at most KICK_MARK_STEPS - 1 steps
    before."""
    steps = [r for r, _ in m.releases()]
    lo = bisect.bisect_left(steps, i - KICK_MARK_STEPS + 1)
    return steps[lo:bisect.bisect_right(steps, i)]


def draw_sprites(pixels: np.ndarray, m: MS.Match, i: int) -> dict[Any, Box]:
    """Draw state i's sprites on the pitch `pixels` ((H, W, 3) uint8): the ball's shadow on the ground, both
    teams (keepers in their own colour), a ring where the ball left a player in the last KICK_MARK_STEPS steps,
    the ball (drawn higher and larger as it rises). Returns the box each sprite covers, keyed by sprite
    ("shadow", (side, player), ("kick", step), "ball")."""
    boxes: dict[Any, Box] = {}
    bx, by, bz = m.ball[i]
    gx, gy = px(bx, by)
    z = max(0.0, bz)
    boxes["shadow"] = _paste(pixels, _blend_terms((10, 30, 10), BALL_R * 1.1), gx, gy)
    for side in (0, 1):
        for k, (x, y) in enumerate(m.players[i][side]):
            if not m.active[i][side * MS.N_PLAYERS + k]:
                continue
            fill, outline = (KEEPER_RGB if k == 0 else TEAM_RGB)[side]
            boxes[(side, k)] = _paste(pixels, _blend_terms(fill, PLAYER_R, outline, 2.0), *px(x, y))
    for r in kicks_shown(m, i):
        kx, ky, _ = m.ball[r]
        boxes[("kick", r)] = _paste(pixels, _ring_terms(KICK_RGB, KICK_R, KICK_RING), *px(kx, ky))
    r = BALL_R * (1.0 + min(z, 12.0) * 0.06)
    boxes["ball"] = _paste(pixels, _blend_terms((250, 250, 250), round(r * 4) / 4, (20, 20, 20), 1.4), gx, gy - z * SCALE * 0.5)
    return boxes


def draw_state(m: MS.Match, i: int) -> Image.Image:
    """The top-down picture of state i: the pitch and `draw_sprites`."""
    pixels = pitch_pixels().copy()
    draw_sprites(pixels, m, i)
    return Image.fromarray(pixels)


class MatchCanvas:
    """One picture redrawn state after state: `draw` puts the pitch back under the previous state's sprites
    and draws the new ones, so `pixels` equals `draw_state(m, i)` without copying the whole pitch a frame."""

    def __init__(self) -> None:
        self.pixels = pitch_pixels().copy()
        self._boxes: dict[Any, Box] = {}

    def draw(self, m: MS.Match, i: int) -> list[Box]:
        """Draw state i; the boxes where the picture may differ from the previous one (per sprite, the box
        round its old and new place)."""
        pitch = pitch_pixels()
        for x0, y0, x1, y1 in self._boxes.values():
            self.pixels[y0:y1, x0:x1] = pitch[y0:y1, x0:x1]
        boxes = draw_sprites(self.pixels, m, i)
        old, self._boxes = self._boxes, boxes
        changed = []
        for key in old.keys() | boxes.keys():
            a, b = old.get(key), boxes.get(key)
            changed.append(a if b is None else b if a is None else
                           (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])))
        return changed


# -- the plugin -----------------------------------------------------------------------------------------

class GFootballPlugin(GamePlugin):
    name = "gfootball"
    fps = MS.STEPS_PER_S // STEPS_PER_FRAME   # the match plays in real time, every other engine step shown
    lead_in_s = 2.0
    tail_s = 3.0
    value_range = (0.0, 1.0)
    continuous = True

    # -- records --
    def select_records(self, n: int, seed: int) -> list[dict[str, Any]]:
        """The committed or cached records, and the engine (one match per core at a time) for the rest."""

        committed = _committed_records()
        with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
            records = list(pool.map(lambda spec: load_or_simulate(spec, committed), match_specs(n, seed)))
        for rec in records:
            why = rule_refusal(rec)
            if why:
                raise GFootballError(f"{rec['source']['id']}: {why} (add it to EXCLUDED with the reason)")
        return records

    def replay(self, record: dict[str, Any]) -> list[Step]:
        return [Step(e.type, e.actor, e.where) for e in MS.derive_events(decoded(record))]

    def event_steps(self, record: dict[str, Any]) -> list[int]:
        return [e.step for e in MS.derive_events(decoded(record))]

    # -- V_t --
    def evaluate(self, record: dict[str, Any], progress=None) -> list[float]:
        """V at kick-off and at each event: left's expected result given the score difference and the time left at
        the event's video second (the match's steps less the steps its frame has shown), the goals still to come
        independent Poisson at the goal-rate model's rate at equal strength for both teams (data/goal_model.json).
        No engine rollouts: 32 rollouts to the end of the match per event cost hours of engine time per case on
        the 2 cores we build on; no difficulties: the picture does not show them."""
        if self.match_key(record) in self.fitting_keys():   # never a model scored on its own training data
            files = record["source"].get("record_files") or [{"name": record["source"]["id"]}]
            raise ValueError(f"{files[0]['name']}: this match is one the goal-rate model was fitted on "
                             "(data/fitting_keys.json)")
        steps = spec_of_record(record)["steps"]
        out = [self._value(self._kick_off(), steps)]
        features = self.visible_features(record)
        for k, f in enumerate(features):
            out.append(self._value(f, steps))
            if progress:
                progress(k + 1, len(features))
        return out

    def _kick_off(self) -> dict[str, Any]:
        return {"t": self._lead() / self.fps, "goals_left": 0, "goals_right": 0}

    def _value(self, f: dict[str, Any], steps: int) -> float:
        """V from a visible state: the steps left are the match's less those the video has shown by `t`."""
        shown = max(0, round((f["t"] * self.fps - self._lead()) * STEPS_PER_FRAME))
        return expected_result(f["goals_left"] - f["goals_right"], steps - shown, *[equal_rate(load_goal_model())] * 2)

    # -- what the picture shows (the pixel reader's `read` returns the same dicts) --
    def visible_features(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        """After each event: its video second and the goals each team has scored (a goal's row counts it)."""
        m = decoded(record)
        events = MS.derive_events(m)
        out = []
        for e, frame in zip(events, self._frames_of_steps([e.step for e in events])):
            gl, gr = m.score[e.step]
            if e.type == "goal":   # t is the line crossing: the score changes a step or two later
                gl, gr = next((m.score[j] for j in range(e.step, min(m.n, e.step + 60)) if m.score[j] != m.score[e.step]),
                              (gl, gr))
            out.append({"t": frame / self.fps, "goals_left": gl, "goals_right": gr})
        return out

    def visible_values(self, features: list[dict[str, Any]], record_meta: dict[str, Any]) -> list[float]:
        """V before the first event and after each from the features alone: V_t's own rule (the score and the
        time left; the match is STEPS engine steps after the lead-in)."""
        return [self._value(f, STEPS) for f in [self._kick_off()] + list(features)]

    def final_value(self, record: dict[str, Any]) -> float | None:
        a, b = final_score(record)
        return 1.0 if a > b else 0.0 if a < b else None

    def evaluator(self) -> dict[str, Any]:
        model = load_goal_model()
        return {
            "engine": ENGINE,
            "method": "goal-rate model at equal strength (no rollouts)",
            "value": "P(left wins) + P(draw)/2 given the score difference and the steps left at the event's video "
                     "second, the goals still to come independent Poisson at the per-step rate exp(a) for both teams "
                     "(the model's rate at equal strength; the AI difficulties, which the picture does not show, "
                     "are not among the inputs)",
            "goal_model": {k: model[k] for k in ("form", "a", "b", "fitted_on")},
        }

    # -- a user's episode dumps (game.toml [import] record_formats) --
    def record_from_files(self, fmt: str, paths: list[Path]) -> dict[str, Any]:
        if fmt != dump.FORMAT:
            raise ValueError(f"Google Research Football reads no {fmt!r} files, only {dump.FORMAT}s")
        if len(paths) != 1:
            raise ValueError(f"a {fmt} is one file ({len(paths)} given)")
        record = dump.record_from_dump(Path(paths[0]), fmt)
        try:
            MS.derive_events(decoded(record))      # the events' own checks (a score that jumps), naming the file
        except ValueError as exc:
            raise ValueError(f"{Path(paths[0]).name}: {exc}") from None
        record["source"]["id"] = f"gfootball-{self.match_key(record)[:16]}"
        return record

    def refusal(self, record: dict[str, Any]) -> str:
        return rule_refusal(record)

    def match_key(self, record: dict[str, Any]) -> str:
        return _stream_key(_state_key(record), first_step(record))

    def fitting_keys(self) -> frozenset[str]:
        """`match_key` of the matches the goal-rate model was fitted on (data/fitting_keys.json, written by
        `python -m video_arena.games.gfootball.calibrate keys` from the same simulated matches as `fit`)."""
        return _fitting_keys()

    # -- video --
    def _lead(self) -> int:
        return round(self.lead_in_s * self.fps)

    def _frames_of_steps(self, steps: list[int]) -> list[int]:
        """The video frame of each event: the last frame whose regular state is at or before the event's
        step (frame k shows state STEPS_PER_FRAME * (k - lead)); a frame already taken moves to the next.
        That frame then shows the event's own step (`_event_frame_steps`): the engine can reset to the kick-off
        one step after a goal, so the next regular state may no longer show the event at all."""
        out, prev = [], -1
        for s in steps:
            f = max(self._lead() + s // STEPS_PER_FRAME, prev + 1)
            out.append(f)
            prev = f
        return out

    def pace(self, record: dict[str, Any], rng: random.Random) -> Schedule:
        n = decoded(record).n
        last_frame = self._lead() + -(-(n - 1) // STEPS_PER_FRAME)
        return Schedule(fps=self.fps, event_frames=tuple(self._frames_of_steps(self.event_steps(record))),
                        n_frames=last_frame + 1 + round(self.tail_s * self.fps))

    def state_at_frame(self, record: dict[str, Any], frame: int) -> int:
        """The engine step frame `frame` shows: the event's step at an event frame, else the regular
        STEPS_PER_FRAME * (frame - lead), clamped to the match.  Never decreases with the frame."""
        key = _state_key(record)
        return self._state_at_frame(_decoded(key), _event_frame_steps(key), frame)

    def _state_at_frame(self, m: MS.Match, shown: dict[int, int], frame: int) -> int:
        at_event = shown.get(frame)
        if at_event is not None:
            return at_event
        return min(max(frame - self._lead(), 0) * STEPS_PER_FRAME, m.n - 1)

    def frame_image(self, record: dict[str, Any], frame: int) -> Image.Image:
        return draw_state(decoded(record), self.state_at_frame(record, frame))

    def video(self, record: dict[str, Any], sched: Schedule) -> tuple[Iterator[Any], list[int]]:
        """One yuv420p frame per video frame, drawn lazily in order: `draw_state`'s picture, redrawn and
        converted only where the sprites were and are (`MatchCanvas`, `IncrementalYuv420p`; the same bytes)."""
        # deferred: media/encode.py imports PyAV (about 0.15 s of CPU); only rendering a video needs it
        from video_arena.media.encode import IncrementalYuv420p

        key = _state_key(record)
        m, shown = _decoded(key), _event_frame_steps(key)
        states = [self._state_at_frame(m, shown, k) for k in range(sched.n_frames)]

        def images():
            canvas, yuv = MatchCanvas(), IncrementalYuv420p()
            for k in range(sched.n_frames):
                yield yuv.frame(canvas.pixels, canvas.draw(m, states[k]))

        return images(), list(range(sched.n_frames))

    def render(self, record: dict[str, Any]) -> Iterator[Image.Image]:
        """The picture at each event's frame (position i = the frame of event i-1; position 0 = kick-off)."""
        m = decoded(record)
        yield draw_state(m, 0)
        for f in self._frames_of_steps(self.event_steps(record)):
            yield draw_state(m, self.state_at_frame(record, f))

    def think_times(self, record: dict[str, Any], rng: random.Random) -> list[float]:
        """Seconds between events (match time; `pace` places them on the engine's step grid)."""
        steps = self.event_steps(record)
        return [(s - p) / MS.STEPS_PER_S for s, p in zip(steps, [0] + steps[:-1])]

    # -- provenance --
    def provenance(self) -> dict[str, Any]:
        return {
            "source": f"{STEPS}-step matches (5 minutes at 10 steps/s) simulated by {ENGINE}, both teams the "
                      "built-in AI, 11_vs_11_stochastic line-up",
            "licence": LICENCE,
            "selection": f"seeded sequence of (game_engine_random_seed, left difficulty, right difficulty), "
                         f"difficulties drawn from {list(DIFFICULTIES)}; not in EXCLUDED ({len(EXCLUDED)})",
            "engine": ENGINE,
            "engine_licence": "Apache-2.0",
            "install": "scripts/install-gfootball.sh (pip download gfootball==2.10.2 sdist; patches; cmake + make "
                       "against Debian python3.11 and Boost.Python; own Python 3.11 venv)",
            "evaluator": self.evaluator(),
            "render": "top-down view drawn by the toolkit from the recorded per-step state (not the engine's 3D view)",
        }

    def case_summary(self, record: dict[str, Any]) -> dict[str, Any]:
        return {"collection": COLLECTION, "id": record["source"]["id"]}


PLUGIN = GFootballPlugin()
