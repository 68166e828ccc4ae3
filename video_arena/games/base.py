"""The game plugin interface.  A game is one folder `video_arena/games/<game>/`:

    game.toml   the definition (copied to tasks/<game>/game.toml; parsed by core.tasks.parse_game_toml)
    plugin.py   (games with built-in cases) `PLUGIN = <GamePlugin subclass instance>`

A plugin is a record reader, a V_t evaluator and a renderer.  The shared build pipeline
(video_arena.cases.build) does everything else: case ids, pacing, ground truth, encoding, manifest.

Pipeline for one case (i = 0..n_steps):
    record = plugin.select_records(n, seed)[k]     JSON-serializable; includes "source" provenance
                                                   with a stable "id" (the case id is derived from it)
    steps  = plugin.replay(record)                 [Step(type, actor, where)] one per move/play
    values = plugin.evaluate(record)               n_steps + 1 floats: V before the first step, after each
    frames = plugin.render(record)                 n_steps + 1 PIL images: the position after i steps
    gaps   = plugin.think_times(record, rng)       n_steps floats > 0: seconds before step i appears
                                                   (step 0 appears lead_in_s + gaps[0] after the start)

The ground truth keeps `record` and the values, so the media can be re-rendered (`build-cases
--media-only`) from the committed ground truth with nothing but `render` (no engine, no data file);
`evaluate` runs only when the committed ground truth lacks values for the same record and evaluator.
See docs/CASES.md.
"""
from __future__ import annotations

import importlib
import itertools
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from video_arena.core.tasks import GameDefinition, parse_game_toml
from video_arena.media.pacing import positions_at_frames, schedule

GAMES_DIR = Path(__file__).resolve().parent

#: The ground truth's keys a viewer is told besides the picture: `record_meta` of `visible_values`.
VISIBLE_META = ("duration_s", "video", "evaluator", "spec")

#: How many built-in cases a game selects, and the seed of that selection (build-cases' defaults; a
#: plugin that fits anything on held-out matches must keep the cases of this seed out of its fitting set).
BUILTIN_CASES = 20
SELECTION_SEED = 20250


@dataclass(frozen=True)
class Step:
    """One event as the record says it happened: the judge's key fields."""

    type: str
    actor: str
    where: str


class GamePlugin:
    """Base class; a game's plugin.py subclasses it and sets PLUGIN."""

    name: str = ""
    #: Frames per second of the rendered video (event times are multiples of 1/fps).
    fps: int = 5
    #: Seconds the initial position is shown before the first event, and the last one after.
    lead_in_s: float = 4.0
    tail_s: float = 6.0

    @property
    def definition(self) -> GameDefinition:
        return load_definition(self.name)

    # -- record reader -------------------------------------------------------------------------
    def select_records(self, n: int, seed: int) -> list[dict[str, Any]]:
        raise NotImplementedError

    def replay(self, record: dict[str, Any]) -> list[Step]:
        raise NotImplementedError

    # -- V_t evaluator (expensive; the build pipeline caches its output in the ground truth) ----
    def evaluate(self, record: dict[str, Any], progress=None) -> list[float]:
        """n_steps + 1 values in `value_range`; call `progress(done, total)` (if given) as positions finish."""
        raise NotImplementedError

    def final_value(self, record: dict[str, Any]) -> float | None:
        """V implied by the recorded result of a decisive game (for the consistency test), else None."""
        return None

    def evaluator(self) -> dict[str, Any]:
        """Identity of the V_t evaluator (engine, version, budget, model): stored in the ground truth;
        values computed by a different evaluator are recomputed on the next build."""
        return {}

    #: The range every V_t lies in (the tests check it).
    value_range: tuple[float, float] = (0.0, 1.0)

    # -- renderer --------------------------------------------------------------------------------
    def render(self, record: dict[str, Any]) -> Iterator[Any]:
        raise NotImplementedError

    def render_position(self, record: dict[str, Any], index: int) -> Any:
        """The image of the position after `index` steps (override when it can be drawn directly)."""
        try:
            return next(itertools.islice(self.render(record), index, None))
        except StopIteration:
            raise IndexError(f"position {index} is past the end of the record") from None

    # -- what the video shows (the game's pixel reader, reader.py, reads it back) ---------------------
    def visible_features(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        """Per event of the record (in order, n_steps dicts): what the video shows after that event, as a
        watcher who saw the video up to there knows it (the keys the game's reader returns), computed from
        the record exactly as the renderer draws it."""
        raise NotImplementedError

    def visible_values(self, features: list[dict[str, Any]], record_meta: dict[str, Any]) -> list[float]:
        """len(features) + 1 values: V_t from visible features only (before the first event and after each
        of them), in `value_range`; value t uses features[:t] only, never the match's future.
        `record_meta` is what a viewer is told besides the picture (`VISIBLE_META` of the ground truth: its
        duration, video format, evaluator and vocabulary; never the record, the events or V_t)."""
        raise NotImplementedError

    # -- pacing ----------------------------------------------------------------------------------
    def think_times(self, record: dict[str, Any], rng: random.Random) -> list[float]:
        raise NotImplementedError

    # -- the video (override both for continuous play, e.g. a match recorded at the engine's rate) ---
    #: True when the video shows continuous play (frame k is the record's state at frame k), so the
    #: frame at an event and 1 s before show the play, not one still position per event.
    continuous: bool = False

    def pace(self, record: dict[str, Any], rng: random.Random):
        """The event frames on the video's 1/fps grid (a pacing.Schedule): think times by default."""
        return schedule(list(self.think_times(record, rng)), self.fps, self.lead_in_s, self.tail_s)

    def video(self, record: dict[str, Any], sched) -> tuple[Iterator[Any], list[int]]:
        """(images, index of the image each video frame shows): the positions and, per frame, the
        position after every event at or before it, by default."""
        return self.render(record), positions_at_frames(sched.event_frames, sched.n_frames)

    # -- a user's own match files as cases (`video-arena import-cases --FORMAT FILE ...`) -------------
    def record_from_files(self, fmt: str, paths: list[Path]) -> dict[str, Any]:
        """The record (as `select_records` gives) of one match given as these files of format `fmt` (one of
        game.toml's `[import] record_formats`); raises ValueError with one line naming what is missing
        when they cannot make a case."""
        raise NotImplementedError

    def records_from_files(self, fmt: str, paths: list[Path]) -> list[dict[str, Any]]:
        """Every match these files hold, in file order (a PGN file holds many games; a ShuttleSet match is
        several files that make one): records as `record_from_files` gives, ValueError with one line when the
        files are not of the format or hold none.  Default: the one match `record_from_files` makes."""
        return [self.record_from_files(fmt, paths)]

    #: The file-name endings of each record format (`build-cases --records DIR` finds a format's files by
    #: them, in any case); a format not named here: "." and the format's name, or its last hyphenated word
    #: (".pgn", ".sgf", ".sc2replay"; ".dump" for "gfootball-dump").
    record_suffixes: dict[str, tuple[str, ...]] = {}

    def record_file_suffixes(self, fmt: str) -> tuple[str, ...]:
        if fmt in self.record_suffixes:
            return tuple(self.record_suffixes[fmt])
        return tuple(dict.fromkeys((f".{fmt}", f".{fmt.rsplit('-', 1)[-1]}")))

    def record_file_groups(self, fmt: str, files: list[Path]) -> list[list[Path]]:
        """The matches among a folder's record files of format `fmt` (in path order), each as the files
        `records_from_files` takes together.  Default: every file alone (a format of one match, or of many
        matches, per file)."""
        return [[f] for f in files]

    def refusal(self, record: dict[str, Any]) -> str:
        """"" when the record can be a case by the game's own rules (the rules the built-in selection applies:
        decided where the game needs a winner, a length window, a board size or rule set the game plays), else
        one line saying why not (`import-cases` refuses it, `build-cases --records` leaves it out)."""
        return ""

    def match_key(self, record: dict[str, Any]) -> str:
        """The identity of the match a record holds, whatever file or format it was read from: the same match
        gives the same key (e.g. the moves of a board game, a replay's or a match's own id).  A record whose
        key is a built-in case's is flagged as that public match; one in `fitting_keys` is refused."""
        raise NotImplementedError

    def fitting_keys(self) -> frozenset[str]:
        """`match_key` of every match the shipped V_t model was fitted on (a model is never scored on its own
        training data: such a record is refused).  Empty for a game whose V_t is an engine's."""
        return frozenset()

    # -- provenance ------------------------------------------------------------------------------
    def provenance(self) -> dict[str, Any]:
        """Source, licence, engine and version, node/visit budgets: goes into the cases manifest."""
        raise NotImplementedError

    def case_summary(self, record: dict[str, Any]) -> dict[str, Any]:
        """What tasks/<game>/cases.json may say about the record's source: nothing that reveals an
        event, the result or who played (default: the source's collection and id)."""
        src = record.get("source", {})
        return {k: src[k] for k in ("collection", "id") if k in src}


def game_names() -> list[str]:
    return sorted(p.name for p in GAMES_DIR.iterdir() if (p / "game.toml").is_file())


def definition_path(game: str) -> Path:
    path = GAMES_DIR / game / "game.toml"
    if not path.is_file():
        raise LookupError(f"no game plugin {game!r}; plugins: {', '.join(game_names())}")
    return path


#: What a game's own folder holds that makes its cases' values and keys: code, models, definitions.
GAME_FILE_SUFFIXES = (".py", ".json", ".toml")


def game_files(game: str) -> list[Path]:
    """The game's own code and data (video_arena/games/<game>/, its subfolders too), in name order: what a digest
    of "the game's code" covers (a visible ceiling's cell, the built-in match keys' cache)."""
    folder = definition_path(game).parent
    return sorted(f for f in folder.rglob("*") if f.is_file() and f.suffix in GAME_FILE_SUFFIXES
                  and "__pycache__" not in f.parts)


def load_definition(game: str) -> GameDefinition:
    path = definition_path(game)
    return parse_game_toml(path.read_text(encoding="utf-8"), source=str(path))


def load_plugin(game: str) -> GamePlugin | None:
    """The game's plugin, or None for a game defined without built-in cases."""
    definition_path(game)
    if not (GAMES_DIR / game / "plugin.py").is_file():
        return None
    module = importlib.import_module(f"video_arena.games.{game}.plugin")
    plugin = getattr(module, "PLUGIN")
    if plugin.name != game:
        raise ValueError(f"video_arena/games/{game}/plugin.py: PLUGIN.name is {plugin.name!r}")
    return plugin


def record_formats() -> dict[str, list[tuple[str, str]]]:
    """{format: [(game, what such a file is)]}: the match files games turn into cases (`[import]
    record_formats` of their game.toml; `video-arena import-cases --FORMAT FILE ...`)."""
    out: dict[str, list[tuple[str, str]]] = {}
    for game in game_names():
        for fmt, text in load_definition(game).record_formats:
            out.setdefault(fmt, []).append((game, text))
    return out
