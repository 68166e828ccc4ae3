"""The StarCraft II plugin: one-against-one ladder and tournament replays from sc2reader's test collection.

Records: the replays in data/replays/ (copied unchanged from github.com/ggtracker/sc2reader, MIT; data/README.md
gives the repository, commit and paths), read once with sc2reader (replay.py) into a compact record that the
ground truth keeps: unit tracks, building footprints with their start and end, the player stats.  Events
(match.events), V_t (model.py: a logistic win-probability model on the player stats, cross-fitted so that
no case's V_t comes from a model that saw its replay) and the video are all computed from that record, so
`build-cases --media-only` needs neither sc2reader nor the replays.

Time base: real seconds from the start of the match (match.py); the video runs in real time at FPS frames
per second and frame k shows the match at k / FPS real seconds.  Render: the whole playable area from above
at 1536x1536, no interface: a plain ground with the mineral fields and geysers of the start, buildings as
footprints (town halls large, with a ring), workers and army units as red or blue discs, and a short-lived
yellow cross where a unit or building died.
"""
from __future__ import annotations

import json
import math
import random
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import numpy as np
from PIL import Image, ImageDraw

from video_arena import paths
from video_arena.digests import sha256_text
from video_arena.games.base import BUILTIN_CASES, SELECTION_SEED, GamePlugin, Step
from video_arena.games.sc2 import match as M
from video_arena.games.sc2 import model as V
from video_arena.games.sc2 import sc2replay
from video_arena.media.pacing import Schedule
from video_arena.games.sc2 import replay as R

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
REPLAYS = DATA / "replays"
COLLECTION = "sc2reader-test-replays"
REPOSITORY = "github.com/ggtracker/sc2reader"
COMMIT = "a7778d0436ba37540bfd11f1892a502f5b9c1456"
LICENCE = "MIT (sc2reader's test replays, data/replays/LICENSE.txt)"
ENGINE = "sc2reader 1.9.0 (replay parser; tracker events)"
#: Shortest and longest match a case may be (real seconds; the committed replays last 125 to 1,705 s).
MIN_CASE_S = 180.0
MAX_CASE_S = 3600.0
#: Version of the record layout (replay.py): a cached record of another version is read again.
RECORD_VERSION = 3

W = H = 1536
FPS = 1
DEATH_MARK_S = 3.0
SURROUND = (30, 32, 36)
GROUND = (128, 118, 100)
MINERAL = (120, 200, 235)
GEYSER = (60, 170, 90)
SIDE_RGB = {0: (230, 50, 40), 1: (45, 110, 240)}
BUILDING_RGB = {0: (150, 30, 25), 1: (25, 60, 150)}
BUILDING_NEW_RGB = {0: (205, 140, 130), 1: (135, 160, 215)}
RING_RGB = (245, 245, 245)
MARK_RGB = (255, 225, 0)
EDGE = (20, 20, 20)


SC2Error = M.SC2Error


# -- records ---------------------------------------------------------------------------------------

def replay_files() -> list[Path]:
    return sorted(REPLAYS.glob("*.SC2Replay"))


def upstream_path(path: Path) -> str:
    return "test_replays/" + path.name.replace("__", "/")


def source_of(path: Path) -> dict[str, Any]:
    sha = R.sha256(path)
    return {"collection": COLLECTION, "id": f"sc2-{sha[:12]}", "repository": REPOSITORY, "commit": COMMIT,
            "path": upstream_path(path), "sha256": sha, "licence": "MIT"}


def _cache_dir() -> Path:
    return paths.REPO_ROOT / ".cache" / "sc2" / "records"


def read_replay(path: Path) -> dict[str, Any]:
    """{"record": ...} or {"excluded": why}, cached in .cache/sc2/records by the file's SHA-256."""

    sha = R.sha256(path)
    cache = _cache_dir() / f"{sha}-v{RECORD_VERSION}.json"
    if cache.is_file():
        return json.loads(cache.read_text(encoding="utf-8"))
    try:
        out = {"record": R.to_record(path, source_of(path))}
    except R.ReplayError as exc:
        out = {"excluded": str(exc)}
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    tmp.write_text(json.dumps(out), encoding="utf-8")
    tmp.replace(cache)
    return out


def all_replays(progress=None) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """({file name: record} of the usable replays, {file name: why excluded})."""
    ok, bad = {}, {}
    files = replay_files()
    if not files:
        raise SC2Error(f"no replays in {REPLAYS}")
    for k, f in enumerate(files):
        got = read_replay(f)
        if "record" in got:
            ok[f.name] = got["record"]
        else:
            bad[f.name] = got["excluded"]
        if progress:
            progress(k + 1, len(files))
    return ok, bad


def duration_s(record: dict[str, Any]) -> float:
    return M.real_s(int(record["match"]["end_loop"]))


def case_refusal(record: dict[str, Any]) -> str:
    """Why a usable replay's record cannot be a case ("" when it can): the length window, MIN_CASE_S to
    MAX_CASE_S real seconds.  The built-in selection and an import (plugin.refusal) apply this one rule; the
    replay's own rules (replay.usable: one against one, both players' tracker stats, a winner, Faster speed)
    are applied by the one reader both use (replay.to_record)."""
    s = duration_s(record)
    if s < MIN_CASE_S:
        return f"the match lasts {s:.0f} real seconds, shorter than the {MIN_CASE_S:.0f} a case needs"
    if s > MAX_CASE_S:
        return f"the match lasts {s:.0f} real seconds, longer than the {MAX_CASE_S:.0f} a case may"
    return ""


def selection(n: int, seed: int, records: dict[str, dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(case replays in selection order, the fitting set).  The rule: every usable replay (two players on
    two teams, tracker events, a recorded winner, Faster speed) that case_refusal accepts (MIN_CASE_S to
    MAX_CASE_S real seconds), ordered by SHA-256 of the seed and the file's SHA-256; the first n are the
    cases, every other usable replay is the fitting set."""
    eligible = [name for name, rec in records.items() if not case_refusal(rec)]
    if len(eligible) < n:
        raise SC2Error(f"only {len(eligible)} replays are eligible for cases; {n} asked")
    key = lambda name: sha256_text(f"video-arena/sc2/select/{seed}/{records[name]['source']['sha256']}")  # noqa: E731
    cases = sorted(eligible, key=key)[:n]
    return cases, sorted(set(records) - set(cases))


def fitting_set_keys(mdl: dict[str, Any], n: int = BUILTIN_CASES, seed: int = SELECTION_SEED) -> frozenset[str]:
    """Match keys of the replays the model was fitted on that are not built-in cases (the selection, run on
    the model's list of its replays: file digest and length)."""
    index = {sha: {"source": {"sha256": sha}, "match": {"end_loop": r["end_loop"]}} for sha, r in mdl["replays"].items()}
    _, fitting = selection(n, seed, index)
    return frozenset(mdl["replays"][sha]["match_key"] for sha in fitting)


class FittingDataError(ValueError):
    """A match the shipped V_t model was fitted on offered as a case (a model is not scored on its training data)."""


def fitting_refusal(record: dict[str, Any], mdl: dict[str, Any]) -> str:
    """Why a record is the V_t model's fitting data ("" when it is not)."""
    key = M.match_key(record)
    if key in fitting_set_keys(mdl):
        return f"the match is in the V_t model's fitting set ({key}): a model is not scored on its own training data"
    return ""


@lru_cache(maxsize=8)
def _decoded(key: str) -> M.Match:
    return M.decode(json.loads(key))


def _key(record: dict[str, Any]) -> str:
    return M.record_content(record)


def decoded(record: dict[str, Any]) -> M.Match:
    return _decoded(_key(record))


@lru_cache(maxsize=8)
def _events(key: str) -> list[M.Event]:
    return M.events(_decoded(key))


def events(record: dict[str, Any]) -> list[M.Event]:
    return _events(_key(record))


# -- drawing ------------------------------------------------------------------------------------------

class View:
    """Map cells to pixels: the playable area at one scale, centred, map y up."""

    def __init__(self, area: tuple[int, int, int, int]) -> None:
        x0, y0, x1, y1 = area
        self.area = area
        self.scale = min(W / (x1 - x0), H / (y1 - y0))
        self.ox = (W - (x1 - x0) * self.scale) / 2
        self.oy = (H - (y1 - y0) * self.scale) / 2

    def px(self, x: float, y: float) -> tuple[float, float]:
        x0, _, _, y1 = self.area
        return self.ox + (x - x0) * self.scale, self.oy + (y1 - y) * self.scale


@lru_cache(maxsize=4)
def _ground(key: str) -> np.ndarray:
    m = _decoded(key)
    v = View(m.area)
    img = Image.new("RGB", (W, H), SURROUND)
    d = ImageDraw.Draw(img)
    x0, y0, x1, y1 = m.area
    (ax0, ay0), (ax1, ay1) = v.px(x0, y1), v.px(x1, y0)
    d.rectangle([round(ax0), round(ay0), round(ax1) - 1, round(ay1) - 1], fill=GROUND)
    for x, y, g in m.resources:
        cx, cy = v.px(x, y)
        if g:
            r = 1.5 * v.scale
            d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=GEYSER)
        else:
            d.rectangle([cx - v.scale, cy - 0.5 * v.scale, cx + v.scale, cy + 0.5 * v.scale], fill=MINERAL)
    out = np.asarray(img).copy()
    out.flags.writeable = False
    return out


def _building_state(b: M.Building, loop: float) -> tuple[int, int, int]:
    """(0 absent / 1 under construction / 2 complete, x, y)."""
    if not b.alive(loop):
        return (0, b.x, b.y)
    return (2 if 0 <= b.done <= loop else 1, *b.pos(loop))


def draw_buildings(img: Image.Image, m: M.Match, v: View, loop: float) -> None:
    d = ImageDraw.Draw(img)
    for b in m.buildings:
        st, x, y = _building_state(b, loop)
        if not st:
            continue
        cx, cy = v.px(x, y)
        h = b.size * v.scale / 2
        box = [round(cx - h), round(cy - h), round(cx + h) - 1, round(cy + h) - 1]
        fill = (BUILDING_RGB if st == 2 else BUILDING_NEW_RGB)[b.side]
        d.rectangle(box, fill=fill, outline=EDGE, width=2)
        if b.town:
            r = h * 0.55
            d.ellipse([round(cx - r), round(cy - r), round(cx + r), round(cy + r)], outline=RING_RGB, width=max(3, round(h / 6)))


def building_box(b: M.Building, v: View, x: int, y: int) -> tuple[int, int, int, int]:
    cx, cy = v.px(x, y)
    h = b.size * v.scale / 2
    return (math.floor(cx - h) - 2, math.floor(cy - h) - 2, math.ceil(cx + h) + 2, math.ceil(cy + h) + 2)


@lru_cache(maxsize=None)
def _disc(radius: int) -> np.ndarray:
    yy, xx = np.mgrid[-radius:radius + 1, -radius:radius + 1]
    return (xx * xx + yy * yy) <= radius * radius + radius


@lru_cache(maxsize=None)
def _cross(arm: int) -> np.ndarray:
    n = 2 * arm + 1
    out = np.zeros((n, n), bool)
    for k in range(n):
        for w in (-1, 0, 1):
            for j in (k + w, n - 1 - k + w):
                if 0 <= j < n:
                    out[k, j] = True
    return out


def unit_radius(u: M.Unit) -> int:
    return 4 if u.worker else min(11, 5 + round(1.5 * math.sqrt(max(u.supply, 0.5))))


def sprites(m: M.Match, v: View, loop: float) -> dict[Any, tuple[int, int, np.ndarray, tuple[int, int, int]]]:
    """Sprites at `loop` (unit discs, then death crosses on top): key -> (x, y, mask, colour), in draw order."""
    out: dict[Any, tuple[int, int, np.ndarray, tuple[int, int, int]]] = {}
    mark = DEATH_MARK_S * M.LOOPS_PER_REAL_S
    for k, u in enumerate(m.units):
        if u.born > loop or (u.died is not None and loop >= u.died):
            continue
        x, y = v.px(*u.pos(loop))
        out[("u", k)] = (round(x), round(y), _disc(unit_radius(u)), SIDE_RGB[u.side])
    for k, u in enumerate(m.units):
        if u.died is not None and u.died <= loop < u.died + mark:
            x, y = v.px(u.track[-1][1], u.track[-1][2])
            out[("d", k)] = (round(x), round(y), _cross(6), MARK_RGB)
    for k, b in enumerate(m.buildings):
        if b.end >= 0 and b.end <= loop < b.end + mark:
            x, y = v.px(*b.last_pos)
            out[("b", k)] = (round(x), round(y), _cross(max(6, round(b.size * v.scale / 2))), MARK_RGB)
    return out


def _paste(pixels: np.ndarray, x: int, y: int, mask: np.ndarray, rgb) -> tuple[int, int, int, int]:
    r = mask.shape[0] // 2
    x0, y0 = x - r, y - r
    cx0, cy0 = max(x0, 0), max(y0, 0)
    cx1, cy1 = min(x0 + mask.shape[1], W), min(y0 + mask.shape[0], H)
    if cx1 <= cx0 or cy1 <= cy0:
        return (cx0, cy0, cx0, cy0)
    sub = mask[cy0 - y0:cy1 - y0, cx0 - x0:cx1 - x0]
    pixels[cy0:cy1, cx0:cx1][sub] = rgb
    return (cx0, cy0, cx1, cy1)


def base_layer(m: M.Match, key: str, loop: float) -> np.ndarray:
    img = Image.fromarray(_ground(key).copy())
    draw_buildings(img, m, View(m.area), loop)
    return np.asarray(img).copy()


def draw_state(record: dict[str, Any], loop: float) -> Image.Image:
    """The picture of the match at `loop`: ground, buildings, units, death marks."""
    key = _key(record)
    m = _decoded(key)
    pixels = base_layer(m, key, loop)
    for x, y, mask, rgb in sprites(m, View(m.area), loop).values():
        _paste(pixels, x, y, mask, rgb)
    return Image.fromarray(pixels)


class Canvas:
    """`draw_state`'s picture, frame after frame, redrawn where something changed: the buildings layer is
    redrawn when a building starts, completes or dies (the changed footprint's box reported), the sprites
    are put back on it every frame, and the boxes of sprites that appeared, moved or vanished are
    reported (for `IncrementalYuv420p`)."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.key = _key(record)
        self.m = _decoded(self.key)
        self.v = View(self.m.area)
        self.pixels: np.ndarray | None = None
        self.base: np.ndarray | None = None
        self._bstate: list[int] = []
        self._sprites: dict[Any, tuple] = {}
        self._boxes: dict[Any, tuple[int, int, int, int]] = {}

    def draw(self, loop: float) -> list[tuple[int, int, int, int]]:
        changed: list[tuple[int, int, int, int]] = []
        bstate = [_building_state(b, loop) for b in self.m.buildings]
        if self.base is None:
            self.base = base_layer(self.m, self.key, loop)
            self.pixels = self.base.copy()
        elif bstate != self._bstate:
            # the new layer differs from the old one only inside the footprints that changed
            self.base = base_layer(self.m, self.key, loop)
            for b, s0, s1 in zip(self.m.buildings, self._bstate, bstate):
                if s0 != s1:
                    for x, y in {s0[1:], s1[1:]}:
                        x0, y0, x1, y1 = building_box(b, self.v, x, y)
                        x0, y0 = max(x0, 0), max(y0, 0)
                        self.pixels[y0:y1, x0:x1] = self.base[y0:y1, x0:x1]
                        changed.append((x0, y0, x1, y1))
        self._bstate = bstate
        for x0, y0, x1, y1 in self._boxes.values():
            self.pixels[y0:y1, x0:x1] = self.base[y0:y1, x0:x1]
        new = sprites(self.m, self.v, loop)
        boxes = {k: _paste(self.pixels, x, y, mask, rgb) for k, (x, y, mask, rgb) in new.items()}
        for k in self._sprites.keys() | new.keys():
            a, b = self._sprites.get(k), new.get(k)
            if a is not None and b is not None and a[:2] == b[:2] and a[2] is b[2] and a[3] == b[3]:
                continue   # the same sprite in the same place: its pixels are the same
            changed += [box for box in (self._boxes.get(k), boxes.get(k)) if box is not None]
        self._sprites, self._boxes = new, boxes
        return changed


# -- the plugin ---------------------------------------------------------------------------------------

class SC2Plugin(GamePlugin):
    name = "sc2"
    fps = FPS
    lead_in_s = 0.0
    tail_s = 4.0
    value_range = (0.0, 1.0)
    continuous = True

    # -- records --
    def select_records(self, n: int, seed: int) -> list[dict[str, Any]]:
        records, _ = all_replays()
        cases, _ = selection(n, seed, records)
        return [records[name] for name in cases]

    def replay(self, record: dict[str, Any]) -> list[Step]:
        return [Step(e.type, e.actor, e.where) for e in events(record)]

    def event_frames(self, record: dict[str, Any]) -> list[int]:
        """The video frame of each event: the first frame at or after the event's moment (so it shows the
        event done); a frame already taken moves to the next."""
        out, prev = [], -1
        for e in events(record):
            f = max(math.ceil(M.real_s(e.loop) * self.fps - 1e-9), prev + 1)
            out.append(f)
            prev = f
        return out

    # -- V_t --
    def evaluate(self, record: dict[str, Any], progress=None) -> list[float]:
        mdl = V.load_model()
        why = fitting_refusal(record, mdl)
        if why:
            raise FittingDataError(why)
        coef = mdl["coef"][V.fold_of_key(mdl, M.match_key(record))]
        m = decoded(record)
        evs = events(record)
        out = [V.predict(coef, m, 0)]
        for k, e in enumerate(evs):
            if e.type == "win":
                out.append(1.0 if e.actor == "red" else 0.0)
            else:
                out.append(V.predict(coef, m, e.loop))
            if progress:
                progress(k + 1, len(evs))
        return out

    def final_value(self, record: dict[str, Any]) -> float | None:
        return 1.0 if record["match"]["winner"] == "red" else 0.0

    def evaluator(self) -> dict[str, Any]:
        mdl = V.load_model()
        return {"engine": ENGINE, "method": mdl["method"], "features": mdl["features"],
                "folds": mdl["k"], "model_sha256": V.model_digest(mdl),
                "value": "red's probability of winning from the `features` of the last player-stats snapshot at or "
                         "before the event and the game phase (logistic model, cross-fitted: the fold that holds "
                         "this replay was left out of the fit); after the `win` row, the result (1 red, 0 blue)"}

    # -- what the picture shows (the pixel reader's `read` returns the same dicts) --
    def visible_features(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        """After each event: its video second, the town halls each side has standing (rings), the supply of
        each side's army units on the map (non-worker discs, whose radius grows with supply) at the event's
        moment, and the winner at the `win` row ("" before)."""
        m = decoded(record)
        out = []
        for e, f in zip(events(record), self.event_frames(record)):
            out.append({"t": f / self.fps, **V.visible_state(m, e.loop), "winner": e.actor if e.type == "win" else ""})
        return out

    def visible_values(self, features: list[dict[str, Any]], record_meta: dict[str, Any]) -> list[float]:
        """V before the first event (one town hall each, no army) and after each, from the features alone: a
        logistic model of the same form as V_t's on the visible army supplies and town halls, fitted on the
        fitting set's replays (no built-in case), data/visible_model.json."""
        coef = V.load_visible_model()["coef"]
        start = {"t": 0.0, "bases_red": 1, "bases_blue": 1, "army_red": 0.0, "army_blue": 0.0, "winner": ""}
        return [V.visible_value(coef, f) for f in [start] + list(features)]

    # -- video --
    def pace(self, record: dict[str, Any], rng: random.Random) -> Schedule:
        frames = self.event_frames(record)
        return Schedule(fps=self.fps, event_frames=tuple(frames), n_frames=frames[-1] + 1 + round(self.tail_s * self.fps))

    def loop_at_frame(self, record: dict[str, Any], frame: int) -> float:
        return min(frame / self.fps * M.LOOPS_PER_REAL_S, float(decoded(record).end_loop))

    def frame_image(self, record: dict[str, Any], frame: int) -> Image.Image:
        return draw_state(record, self.loop_at_frame(record, frame))

    def video(self, record: dict[str, Any], sched: Schedule) -> tuple[Iterator[Any], list[int]]:
        # deferred: media/encode.py imports PyAV (about 0.15 s of CPU); only rendering a video needs it
        from video_arena.media.encode import IncrementalYuv420p

        def images():
            canvas, yuv = Canvas(record), IncrementalYuv420p()
            for k in range(sched.n_frames):
                changed = canvas.draw(self.loop_at_frame(record, k))
                yield yuv.frame(canvas.pixels, changed)

        return images(), list(range(sched.n_frames))

    def render(self, record: dict[str, Any]) -> Iterator[Image.Image]:
        yield self.frame_image(record, 0)
        for f in self.event_frames(record):
            yield self.frame_image(record, f)

    def think_times(self, record: dict[str, Any], rng: random.Random) -> list[float]:
        loops = [e.loop for e in events(record)]
        return [max(1e-3, M.real_s(b - a)) for a, b in zip([0] + loops, loops)]

    # -- provenance --
    def provenance(self) -> dict[str, Any]:
        return {
            "source": f"one-against-one StarCraft II replays (releases 2.0.8 to 5.0) from {REPOSITORY} at commit "
                      f"{COMMIT}, folder test_replays/ (committed in video_arena/games/sc2/data/replays/)",
            "licence": LICENCE,
            "selection": f"usable replays of at least {MIN_CASE_S:.0f} real seconds, ordered by SHA-256 of the seed "
                         "and the replay's SHA-256 (plugin.selection); the rest are the V_t fitting set",
            "engine": ENGINE,
            "engine_licence": "MIT",
            "evaluator": self.evaluator(),
            "render": f"top-down view of the playable area drawn by the toolkit from the tracker events, {FPS} frame "
                      "per real second",
            "time_base": "real seconds from the start of the match (game loops / 22.4)",
        }

    def case_summary(self, record: dict[str, Any]) -> dict[str, Any]:
        return {"collection": record["source"]["collection"], "id": record["source"]["id"]}

    # -- a user's replay (game.toml [import] record_formats) --
    def record_from_files(self, fmt: str, paths: list[Path]) -> dict[str, Any]:
        if fmt != sc2replay.FORMAT:
            raise ValueError(f"StarCraft II reads no {fmt!r} files, only .SC2Replay replays (--{sc2replay.FORMAT})")
        record = sc2replay.record_from_files(paths)
        why = self.refusal(record)
        if why:
            raise ValueError(f"{paths[0]}: {why}")
        why = fitting_refusal(record, V.load_model())
        if why:
            raise FittingDataError(f"{paths[0]}: {why}")
        return record

    def refusal(self, record: dict[str, Any]) -> str:
        return case_refusal(record)

    def match_key(self, record: dict[str, Any]) -> str:
        return M.match_key(record)

    def fitting_keys(self) -> frozenset[str]:
        return fitting_set_keys(V.load_model())


PLUGIN = SC2Plugin()
