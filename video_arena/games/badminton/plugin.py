"""The badminton plugin: real BWF singles matches from the ShuttleSet stroke records.

Records: ShuttleSet and ShuttleSet22 (CoachAI-Projects, MIT), one match per case, every rally annotated stroke
by stroke from the broadcast (records.py reads them; data/ holds the files the cases use).  Selection: the
rule in records.select over data/pool.csv (every distinct match of both collections, with the facts the rule
uses; `python -m video_arena.games.badminton.records pool DIR` rewrites it from an upstream copy).

Events: one `winner`, `error` or `fault` row per rally from its end label (records.LABELS), a `game` row one
frame after each game's last rally.  V_t: value.py (exact Markov chain; each player's serve-win rate from a prior
fitted on the other matches, prior.py, updated by the rallies played so far).
Video: continuous play drawn from the record (scene.py: the timeline and the pause rule; render.py: the
picture), FPS frames a second, no text of any kind.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Iterator

from PIL import Image

from video_arena.games.base import BUILTIN_CASES, SELECTION_SEED, GamePlugin, Step
from video_arena.games.badminton import prior as PR
from video_arena.games.badminton import records as R
from video_arena.games.badminton import render as RD
from video_arena.games.badminton import scene as SC
from video_arena.games.badminton import shuttleset
from video_arena.games.badminton import value as V
from video_arena.media.pacing import Schedule

ACTOR = {"a": "player_a", "b": "player_b"}


def with_value_model(record: dict[str, Any], matches: list[PR.MatchServes] | None = None,
                     in_table: bool = True) -> dict[str, Any]:
    """The record with the priors its V_t starts from (prior.value_model: from the other matches only)."""
    record["value_model"] = PR.value_model(record, matches, in_table)
    return record


def case_keys() -> frozenset[str]:
    """The match keys of the built-in cases (the selection over data/pool.csv)."""
    return frozenset(R.match_key(e.folder) for e in R.select(R.read_pool(), BUILTIN_CASES, SELECTION_SEED))


def fitting_set_keys() -> frozenset[str]:
    """The match keys of the matches V_t's prior is fitted on that are not built-in cases: the rest of
    data/rallies.csv (every distinct match of both collections)."""
    return frozenset(m.key for m in R.read_rallies()) - case_keys()


class FittingDataError(ValueError):
    """A match V_t's prior was fitted on offered as a case (a model is not scored on its training data)."""


def fitting_refusal(record: dict[str, Any], table: list[R.MatchRallies]) -> str:
    """Why a record is the prior's fitting data ("" when it is not): its name (the match key) is one of the
    fitting set's, or its rallies are those of a match of the table under another name."""
    key = PLUGIN.match_key(record)
    if key in fitting_set_keys():
        return (f"the match {record['source']['folder']!r} is in the V_t prior's fitting data (data/rallies.csv): "
                "a model is not scored on its training data")
    tokens = R.match_rallies(record).tokens()
    same = next((m for m in table if m.tokens() == tokens and m.key != key), None)
    if same is not None:
        return (f"its rallies are those of {same.collection}/{same.folder} in the V_t prior's data "
                "(data/rallies.csv), under another name")
    return ""


def rally_values(record: dict[str, Any]) -> list[float]:
    """V before the first rally and after each rally: the record's priors updated by the rallies so far."""
    vm = record["value_model"]
    ws = R.rally_winners(record)
    servers, _ = R.record_serve_outcomes(record)
    prior = {s: (vm[f"prior_{s}"]["alpha"], vm[f"prior_{s}"]["beta"]) for s in ("a", "b")}
    rates = V.posterior_rates(prior["a"], prior["b"], servers, ws)
    return V.values(servers, ws, [r["game"] for r in record["rallies"]], rates)


class BadmintonPlugin(GamePlugin):
    name = "badminton"
    fps = SC.FPS
    lead_in_s = SC.LEAD_S
    tail_s = SC.TAIL_S
    value_range = (0.0, 1.0)
    continuous = True

    # -- records --
    def select_records(self, n: int, seed: int) -> list[dict[str, Any]]:
        chosen = R.select(R.read_pool(), n, seed)
        matches = PR.table()
        return [with_value_model(R.read_match(e.collection, e.folder), matches) for e in chosen]

    def replay(self, record: dict[str, Any]) -> list[Step]:
        return [Step(kind, ACTOR[side], where) for kind, side, where in SC.plan(record).steps]

    # -- V_t --
    def evaluate(self, record: dict[str, Any], progress=None) -> list[float]:
        """V before the first rally, after each rally, and (unchanged) at each game row."""
        why = fitting_refusal(record, R.read_rallies())
        if why:
            raise FittingDataError(why)
        per_rally = rally_values(record)
        games = [r["game"] for r in record["rallies"]]
        out = [per_rally[0]]
        for i in range(len(games)):
            out.append(per_rally[i + 1])
            if i + 1 == len(games) or games[i + 1] != games[i]:
                out.append(per_rally[i + 1])
        if progress:
            progress(len(out), len(out))
        return out

    def final_value(self, record: dict[str, Any]) -> float | None:
        a, b = record["rallies"][-1]["score"]
        return 1.0 if a > b else 0.0

    # -- what the picture shows (the pixel reader's `read` returns the same dicts) --
    def visible_features(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        """After each event (rally ends and game rows, in order): its video second, the games and points so far,
        who serves next (the rally's winner), and per player the rallies served (the rules: the previous rally's
        winner serves; the first rally, the player the first set-up shows) and how many of them that player won."""
        p = SC.plan(record)
        games, points = {"a": 0, "b": 0}, {"a": 0, "b": 0}
        served, won = {"a": 0, "b": 0}, {"a": 0, "b": 0}
        out, frames = [], iter(p.event_frames)
        rallies = record["rallies"]
        servers, winners = R.record_serve_outcomes(record)
        for i, (server, w) in enumerate(zip(servers, winners)):
            served[server] += 1
            won[server] += w == server
            points[w] += 1
            ended = i + 1 == len(rallies) or rallies[i + 1]["game"] != rallies[i]["game"]
            if ended:
                games[w] += 1
                points = {"a": 0, "b": 0}
            for _ in range(2 if ended else 1):
                out.append({"t": next(frames) / p.fps, "games_a": games["a"], "games_b": games["b"],
                            "points_a": points["a"], "points_b": points["b"], "serving": w,
                            "served_a": served["a"], "won_a": won["a"], "served_b": served["b"], "won_b": won["b"]})
        return out

    def visible_values(self, features: list[dict[str, Any]], record_meta: dict[str, Any]) -> list[float]:
        """V before the first rally and after each event from the features alone: V_t's chain and update, both
        players' serve-win rates starting from V_t's prior for a player nobody knows (the video names nobody:
        prior.watcher_prior, fitted on the matches that are not cases); before the first rally the server is the
        one the first row counts as having served."""
        pr = PR.watcher_prior()
        alpha, beta = pr["alpha"], pr["beta"]

        def value(f: dict[str, Any]) -> float:
            rates = [(alpha + f[f"won_{s}"]) / (alpha + beta + f[f"served_{s}"]) for s in ("a", "b")]
            ga, gb, pa, pb = f["games_a"], f["games_b"], f["points_a"], f["points_b"]
            if V.game_over(pa, pb):      # a reader that missed a game's end: the leader has won it
                ga, gb, pa, pb = ga + (pa > pb), gb + (pb > pa), 0, 0
            top = V.GAMES_TO_WIN
            return V.match_win_probability(*rates)(min(ga, top), min(gb, top), pa, pb, f["serving"])

        if not features:
            return [0.5]
        first = "a" if features[0]["served_a"] else "b"
        start = {"games_a": 0, "games_b": 0, "points_a": 0, "points_b": 0, "serving": first,
                 "served_a": 0, "won_a": 0, "served_b": 0, "won_b": 0}
        return [value(f) for f in [start] + list(features)]

    def evaluator(self) -> dict[str, Any]:
        return V.describe()

    # -- video --
    def pace(self, record: dict[str, Any], rng: random.Random) -> Schedule:
        p = SC.plan(record)
        return Schedule(fps=p.fps, event_frames=p.event_frames, n_frames=p.n_frames)

    def think_times(self, record: dict[str, Any], rng: random.Random) -> list[float]:
        frames = SC.plan(record).event_frames
        return [(f - g) / self.fps for f, g in zip(frames, (0,) + frames[:-1])]

    def scene(self, record: dict[str, Any], frame: int) -> SC.Scene:
        return SC.frame_scene(SC.plan(record), frame)

    def frame_image(self, record: dict[str, Any], frame: int) -> Image.Image:
        return RD.draw_scene(self.scene(record, frame))

    def render(self, record: dict[str, Any]) -> Iterator[Image.Image]:
        """The picture at frame 0 and at each event's frame."""
        p = SC.plan(record)
        yield RD.draw_scene(SC.frame_scene(p, 0))
        for f in p.event_frames:
            yield RD.draw_scene(SC.frame_scene(p, f))

    def video(self, record: dict[str, Any], sched: Schedule) -> tuple[Iterator[Any], list[int]]:
        """One yuv420p frame per video frame, redrawn and converted only where the sprites were and are."""
        # deferred: media/encode.py imports PyAV (about 0.15 s of CPU); only rendering a video needs it
        from video_arena.media.encode import IncrementalYuv420p

        p = SC.plan(record)

        def images():
            canvas, yuv = RD.Canvas(), IncrementalYuv420p()
            out = RD.background_pixels().copy()
            for k in range(sched.n_frames):
                boxes = canvas.draw(SC.frame_scene(p, k))
                canvas.pixels_u8(boxes, out)
                yield yuv.frame(out, boxes)

        return images(), list(range(sched.n_frames))

    # -- provenance --
    def provenance(self) -> dict[str, Any]:
        return {
            "source": f"ShuttleSet and ShuttleSet22 stroke-by-stroke records of BWF singles matches ({R.REPOSITORY} "
                      f"at {R.COMMIT}; data/PROVENANCE.md)",
            "licence": R.LICENCE,
            "selection": "records.select over data/pool.csv: eligible matches (score +1 every rally, legal game ends, "
                         f"no stroke gap over {R.MAX_STROKE_GAP_S} s, end labels consistent with the score, at most "
                         f"{R.MAX_MISSING_LABELS} unlabelled rallies), men's and women's singles x two and three games "
                         "in turn, the least-held year first",
            "engine": "none (recorded matches); V_t by an exact Markov chain over score states, the serve-win rates "
                      "from priors fitted on the other matches updated by the rallies so far",
            "evaluator": self.evaluator(),
            "render": f"drawn by the toolkit from the record: fixed camera behind one end, {SC.FPS} fps, pauses between "
                      f"rallies shortened to {SC.REST_S + SC.SETUP_S:g} s ({SC.GAME_REST_S + SC.GAME_SETUP_S:g} s when "
                      "the players change ends)",
        }

    def case_summary(self, record: dict[str, Any]) -> dict[str, Any]:
        return {"collection": record["source"]["collection"], "id": record["source"]["id"]}

    # -- a user's match in ShuttleSet's layout (game.toml [import] record_formats) --
    def record_from_files(self, fmt: str, paths: list[Path]) -> dict[str, Any]:
        """The record of one match given as its ShuttleSet files (shuttleset.py), refused by the game's rules
        (refusal) or as the prior's fitting data; with the priors its V_t starts from: a built-in case's own
        (fitted on the other matches), else fitted on every match of data/rallies.csv."""
        if fmt != shuttleset.FORMAT:
            raise ValueError(f"badminton reads no {fmt!r} files, only ShuttleSet's (--{shuttleset.FORMAT})")
        record = shuttleset.record_from_files(paths)
        name = record["source"]["folder"]
        why = self.refusal(record)
        if why:
            raise ValueError(f"{name}: {why}")
        table = R.read_rallies()
        why = fitting_refusal(record, table)
        if why:
            raise FittingDataError(f"{name}: {why}")
        return with_value_model(record, PR.table(table), in_table=self.match_key(record) in case_keys())

    record_suffixes = {shuttleset.FORMAT: (".csv",)}

    def record_file_groups(self, fmt: str, files: list[Path]) -> list[list[Path]]:
        """A folder of matches in ShuttleSet's layout: each folder holding a set1.csv is one match, its set files
        with the match.csv and homography.csv beside that folder (ShuttleSet's own layout)."""
        by_folder: dict[Path, list[Path]] = {}
        for f in files:
            by_folder.setdefault(f.parent, []).append(f)
        groups = []
        for folder, names in sorted(by_folder.items()):
            sets = sorted(f for f in names if shuttleset.SET_FILE.fullmatch(f.name))
            if any(f.name == "set1.csv" for f in sets):
                groups.append(sets + [f for f in by_folder.get(folder.parent, [])
                                      if f.name in ("match.csv", "homography.csv")])
        return groups

    def refusal(self, record: dict[str, Any]) -> str:
        return R.problems_line(R.match_problems(record))

    def match_key(self, record: dict[str, Any]) -> str:
        return R.match_key(record["source"]["folder"].rsplit("/", 1)[-1])

    def fitting_keys(self) -> frozenset[str]:
        return fitting_set_keys()


PLUGIN = BadmintonPlugin()

