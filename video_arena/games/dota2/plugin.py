"""The DOTA 2 plugin: professional matches of The International 2018 from the OpenDota API's records.

Records (records.py): 797 professional matches of 2018 as OpenDota published them, cut from
github.com/ThoughtfulPractice/dat_2018 into data/ (the repository states no licence; the rows are facts of
public professional matches (what fell when, who won) as OpenDota published them).  The one record
format is OpenDota's match JSON (match.py: the subset the cases use); the committed CSV rows are turned
into that object, and any OpenDota match a user fetched becomes a case the same way (`video-arena
import-cases --game dota2 --opendota MATCH.json`, opendota.py).

Selection (`selection`): 20 of the 47 main-stage matches with ward positions, the three length terciles in
turn, inside a tercile the match whose teams the selection holds least of so far, ties by a seeded hash.
V_t (model.py): a logistic model on what the map shows (buildings standing, Roshan kills), fitted on the 777
committed matches that are not cases.  Events (match.py)
come from the record alone: a tower, a barracks, a Roshan kill, the Ancient.  Time base: game-clock
seconds; the video starts at the horn or at the first ward placed before it (match.PREGAME_S at most),
one frame per game second.  Render: render.py.
"""
from __future__ import annotations

import json
import math
import random
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from PIL import Image

from video_arena.digests import sha256_text
from video_arena.games.base import GamePlugin, Step
from video_arena.games.dota2 import match as M
from video_arena.games.dota2 import records as R
from video_arena.games.dota2 import render as D
from video_arena.media.pacing import Schedule
from video_arena.games.dota2 import model as V
from video_arena.games.dota2.opendota import record_from_files

FPS = 1
TAIL_S = 4
#: Length strata of the selection (terciles of the eligible matches' durations).
STRATA = 3
ENGINE = "none: the record is OpenDota's match data; the video is drawn by the toolkit (render.py)"


# -- records -----------------------------------------------------------------------------------------

def eligible(matches: dict[int, dict[str, Any]]) -> list[int]:
    """The matches a case may be: every committed match with ward positions (47, all with a complete record)."""
    return sorted(k for k, v in matches.items() if v["wards"])


def selection(n: int, seed: int, matches: dict[int, dict[str, Any]]) -> tuple[list[int], list[int]]:
    """(case match ids in selection order, the V_t fitting set: every other committed match).

    The rule: the eligible matches in three terciles of duration (shortest first); the cases are taken from
    the terciles in turn (short, medium, long, short, ...); inside a tercile, the match whose two teams the
    cases taken so far hold fewest of (the larger of the two counts, then their sum), ties by SHA-256 of
    the seed and the match id."""
    elig = eligible(matches)
    if len(elig) < n:
        raise M.MatchError(f"only {len(elig)} matches are eligible for cases; {n} asked")
    by_length = sorted(elig, key=lambda k: (matches[k]["match"]["duration"], k))
    stratum = {k: STRATA * i // len(by_length) for i, k in enumerate(by_length)}
    teams = {k: (matches[k]["info"]["radiant_team_id"], matches[k]["info"]["dire_team_id"]) for k in elig}
    key = {k: sha256_text(f"video-arena/dota2/select/{seed}/{k}") for k in elig}
    cases: list[int] = []
    count: Counter = Counter()
    for turn in range(n):
        left = [k for k in elig if k not in cases]
        pool = [k for k in left if stratum[k] == turn % STRATA] or left
        best = min(pool, key=lambda k: (max(count[t] for t in teams[k]), sum(count[t] for t in teams[k]), key[k]))
        cases.append(best)
        count.update(teams[best])
    return cases, sorted(set(matches) - set(cases))


@lru_cache(maxsize=8)
def _decoded(key: str) -> M.Match:
    return M.Match(json.loads(key))


def decoded(record: dict[str, Any]) -> M.Match:
    m = _decoded(json.dumps(record["opendota"], sort_keys=True))
    if record.get("time_base", {}).get("video_start_game_s") != m.video_start:
        raise M.MatchError("the record's time_base does not match its wards (rebuild the case)")
    return m


def event_frames(record: dict[str, Any]) -> list[int]:
    """Each event's video frame: its game second from the video's start (FPS 1), or the next free frame
    when an earlier event of the same second took that one."""
    m = decoded(record)
    out, prev = [], -1
    for e in m.events:
        f = max(math.ceil((e.t - m.video_start) * FPS - 1e-9), prev + 1)
        out.append(f)
        prev = f
    return out


def timeline(record: dict[str, Any]) -> D.Timeline:
    return D.timeline(decoded(record), event_frames(record), FPS)


def n_frames(record: dict[str, Any]) -> int:
    return event_frames(record)[-1] + 1 + TAIL_S * FPS


# -- the plugin --------------------------------------------------------------------------------------

class Dota2Plugin(GamePlugin):
    name = "dota2"
    fps = FPS
    lead_in_s = 0.0
    tail_s = float(TAIL_S)
    value_range = (0.0, 1.0)
    continuous = True

    # -- records --
    def select_records(self, n: int, seed: int) -> list[dict[str, Any]]:
        matches = R.all_matches()
        cases, _ = selection(n, seed, matches)
        return [M.record_of(matches[k]["match"], R.source_of(k, matches[k]["info"])) for k in cases]

    def replay(self, record: dict[str, Any]) -> list[Step]:
        return [Step(e.type, e.actor, e.where) for e in decoded(record).events]

    # -- V_t --
    def evaluate(self, record: dict[str, Any], progress=None) -> list[float]:
        mdl = V.load_model()
        mid = record["opendota"]["match_id"]
        if mid in R.all_matches() and mid not in mdl["not_fitted_on"]:   # a case's V_t never comes from a model that saw it
            raise M.MatchError(f"match {mid} is in the V_t model's fitting set: refit it without this match "
                               f"(python -m video_arena.games.dota2.report fit)")
        m = decoded(record)
        out = [V.value(mdl["coef"], m, m.video_start, 0)]
        for k, e in enumerate(m.events):
            out.append(V.value(mdl["coef"], m, e.t, k + 1))
            if progress:
                progress(k + 1, len(m.events))
        return out

    def final_value(self, record: dict[str, Any]) -> float | None:
        return 1.0 if decoded(record).winner == "radiant" else 0.0

    # -- what the picture shows (the pixel reader's `read` returns the same dicts) --
    def visible_features(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        """After each event: its video second, the towers and barracks each side has standing, the Roshan kills
        each side has made, and the winner once the Ancient fell ("" before)."""

        m = decoded(record)
        out = []
        for k, (e, f) in enumerate(zip(m.events, event_frames(record))):
            out.append({"t": f / FPS, **V.state(m, k + 1), "winner": e.actor if e.type == "ancient" else ""})
        return out

    def visible_values(self, features: list[dict[str, Any]], record_meta: dict[str, Any]) -> list[float]:
        """V before the first event (every building standing, no kill) and after each, from the features alone: V_t's
        own model, whose inputs are all on the picture (model.py)."""

        coef = V.load_model()["coef"]
        start = {**V.start_state(), "t": 0.0, "winner": ""}
        return [V.visible_value(coef, f) for f in [start] + list(features)]

    def evaluator(self) -> dict[str, Any]:
        mdl = V.load_model()
        return {"engine": "logistic win-probability model (model.py)", "method": mdl["method"],
                "features": mdl["features"], "model_sha256": V.model_digest(mdl),
                "fitted_on": mdl["fitted_on"],
                "value": "radiant's probability of winning after each event from the `features` of the map after it "
                         "(towers and barracks standing, Roshan kills); after the `ancient` row, the result (1 radiant, 0 dire)"}

    # -- video --
    def pace(self, record: dict[str, Any], rng: random.Random) -> Schedule:
        return Schedule(fps=FPS, event_frames=tuple(event_frames(record)), n_frames=n_frames(record))

    def frame_image(self, record: dict[str, Any], frame: int) -> Image.Image:
        return Image.fromarray(D.draw(D.sprites(timeline(record), frame)))

    def video(self, record: dict[str, Any], sched: Schedule) -> tuple[Iterator[Any], list[int]]:
        # deferred: media/encode.py imports PyAV (about 0.15 s of CPU); only rendering a video needs it
        from video_arena.media.encode import IncrementalYuv420p

        tl = timeline(record)
        starts = D.change_frames(tl, sched.n_frames)

        def images():
            yuv, old = IncrementalYuv420p(), None
            for f in starts:
                new = D.sprites(tl, f)
                if old is None:
                    yield yuv.frame(D.draw(new), [])
                else:
                    yield yuv.frame(D.draw(new), D.changed_boxes(old, new))
                old = new

        index, k = [], 0
        for f in range(sched.n_frames):
            while k + 1 < len(starts) and starts[k + 1] <= f:
                k += 1
            index.append(k)
        return images(), index

    def render(self, record: dict[str, Any]) -> Iterator[Image.Image]:
        yield self.frame_image(record, 0)
        for f in event_frames(record):
            yield self.frame_image(record, f)

    def think_times(self, record: dict[str, Any], rng: random.Random) -> list[float]:
        frames = event_frames(record)
        return [max(1e-3, (b - a) / FPS) for a, b in zip([0] + frames, frames)]

    # -- a user's OpenDota match (game.toml [import] record_formats) --
    record_suffixes = {"opendota": (".json",)}

    def record_from_files(self, fmt: str, paths: list[Path]) -> dict[str, Any]:
        if fmt != "opendota":
            raise ValueError(f"DOTA 2 reads no {fmt!r} files, only OpenDota match JSON")
        return record_from_files(paths)

    def match_key(self, record: dict[str, Any]) -> str:
        """The match's own id (OpenDota's match_id), whatever file or parts it came in."""
        return f"dota2-match-{int(record['opendota']['match_id'])}"

    def fitting_keys(self) -> frozenset[str]:
        """Every committed match the V_t model was fitted on: all of data/ but the built-in cases (the model's
        `not_fitted_on`)."""

        held_out = set(V.load_model()["not_fitted_on"])
        return frozenset(self.match_key({"opendota": {"match_id": mid}}) for mid in R.all_matches() if mid not in held_out)

    # -- provenance --
    def provenance(self) -> dict[str, Any]:
        return {
            "source": f"professional DOTA 2 matches of 2018 as the OpenDota API returned them, from {R.REPOSITORY} "
                      f"(data/ at commit {R.DATA_COMMIT}, output/wards.csv at commit {R.WARDS_COMMIT}), cut into "
                      "video_arena/games/dota2/data/ (data/README.md)",
            "licence": R.LICENCE,
            "selection": "20 of the 47 main-stage matches of The International 2018 with ward positions: the three "
                         "length terciles in turn, inside one the match whose teams the cases hold fewest of, ties "
                         "by SHA-256 of the seed and the match id (plugin.selection); every other committed match "
                         "is the V_t fitting set",
            "engine": ENGINE,
            "engine_licence": "n/a",
            "evaluator": self.evaluator(),
            "render": f"top-down schematic of the map drawn by the toolkit from the record, {D.SIZE}x{D.SIZE}, "
                      f"{FPS} frame per game second",
            "time_base": "game-clock seconds (0 at the horn); the video starts at the horn or at the first ward "
                         f"placed before it, at most {M.PREGAME_S} s before (each gt: record.time_base)",
        }

    def case_summary(self, record: dict[str, Any]) -> dict[str, Any]:
        return {"collection": record["source"]["collection"], "id": record["source"]["id"]}


PLUGIN = Dota2Plugin()
