"""A Google Research Football episode dump as a case's record (`video-arena import-cases --game gfootball
--gfootball-dump EPISODE.dump`).

What a dump is (gfootball 2.10, gfootball/env/observation_processor.py `ActiveDump.add_step`, written when the
environment is created with `write_full_episode_dumps=True`): the pickles of the episode's steps one after
another in one file, each step a dict

    {"observation": {"ball": ndarray(3), "left_team": ndarray(11, 2), "right_team": ndarray(11, 2),
                     "left_team_active": ndarray(11, bool), "right_team_active": ..., "game_mode": int,
                     "score": [int, int], "ball_owned_team": int, "ball_owned_player": int,
                     "steps_left": int, ... (directions, roles, cards, sticky actions)},
     "debug": {"action": [...], "frame_cnt": int, "time": float, "reward": int, ...,
               "config": {... "level", "players", "game_engine_random_seed" ...}   (the first step only)},
     "reward": int, "cumulative_reward": int}

gfootball's own readers (`script_helpers.ScriptHelpers.load_dump`, dump_to_txt.py, replay.py) load it with
the plain unpickler, which runs whatever code a pickle names.  This module never does: `StepUnpickler`
resolves only the globals a real dump holds (numpy's array, dtype and scalar reconstruction, and the
environment's action objects as inert stand-ins) and refuses any other with one line; a numpy dtype must be
a plain number, boolean or byte-string type (never `object`).  The file's size and its number of steps are
capped before and while it is read.

The dump's first step is the state after the first environment step (the kick-off position, state 0 of a
built-in record, is not in a dump), its `debug.frame_cnt` the engine's step count 0; the last is the state in
which the environment ends the episode (`steps_left` 0, frame_cnt = the game's duration), one step after the
built-in records' last.  A full 3,000-step match is 3,001 dumped steps.  The record keeps `match.first_step` = 1
(the environment step of its state 0) and the state from there on.
"""
from __future__ import annotations

import io
import math
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from video_arena.digests import sha256_bytes
from video_arena.games.gfootball import match_state as MS
from video_arena.safe_io import read_bounded

FORMAT = "gfootball-dump"
#: Largest dump read: a full 3,000-step 11-v-11 episode is 7.5 MB (every step's observation, pickled).
MAX_BYTES = 16 * 1024 * 1024
#: Most steps read: a full match is 3,001 (3,000 steps of play); a dump with more is refused.
MAX_STEPS = 3_500
#: Recorded numbers are refused outside these (env units; the ball's height in metres).
MAX_ABS_X, MAX_ABS_Y, MAX_Z = 1.5, 1.0, 100.0
MAX_GOALS = 99

#: gfootball's own 11-v-11 scenarios whose teams' AI difficulties the dump's level name gives (left, right):
#: the scenario files set `right_team_difficulty` (and `left_team_difficulty` for the competition); the
#: engine's ScenarioConfig defaults are 1.0 and 0.6 (third_party/gfootball_engine/src/main.hpp).  The
#: kaggle scenario swaps the teams' ends at half time and is not here.
SCENARIO_DIFFICULTIES: dict[str, tuple[float, float]] = {
    "11_vs_11_stochastic": (1.0, 0.6),
    "11_vs_11_easy_stochastic": (1.0, 0.05),
    "11_vs_11_hard_stochastic": (1.0, 0.95),
    "11_vs_11_competition": (1.0, 1.0),
}
#: Config keys a dump may carry the difficulties in (the toolkit's simulate.py --dump writes them: its own
#: scenario sets them in code, which the dump's config does not show).
DIFFICULTY_KEYS = ("left_team_difficulty", "right_team_difficulty")


class DumpError(ValueError):
    pass


class Refused(pickle.UnpicklingError):
    """A pickle that names something no dump holds (a global off the allow-list, a non-number numpy type)."""


# -- the restricted unpickler ------------------------------------------------------------------------------

_NUMBER_KINDS = "biufc?S"


def _dtype(*args: Any) -> np.dtype:
    """numpy.dtype as a pickle calls it (`dtype('f8', False, True)`), for plain numbers, booleans and bytes only."""
    if not args or not isinstance(args[0], str) or len(args[0]) > 8:
        raise Refused("a numpy dtype named by something other than a short type code")
    dt = np.dtype(args[0])
    if dt.kind not in _NUMBER_KINDS or dt.hasobject:
        raise Refused(f"numpy dtype {args[0]!r} is not a plain number type")
    return np.dtype(*args[:3])


class _NdarrayName:
    """What the name `numpy.ndarray` resolves to: only `_reconstruct`'s first argument, never a callable (a
    pickle calling ndarray itself could ask for any shape)."""


def _reconstruct(cls: Any, shape: Any, dtype_code: Any) -> np.ndarray:
    """numpy's `_reconstruct(ndarray, (0,), b'b')`: an empty array that the pickle's state then fills (its shape
    and data must then agree: ndarray.__setstate__ checks the bytes against the shape)."""
    if cls is not _NdarrayName:
        raise Refused("numpy reconstruction of something other than an ndarray")
    return np.ndarray.__new__(np.ndarray, (0,), np.dtype("b"))


def _scalar(dtype: Any, data: Any = None) -> Any:
    """numpy's `scalar(dtype, bytes)`: a numpy scalar of a plain number type."""
    if not isinstance(dtype, np.dtype) or dtype.kind not in _NUMBER_KINDS or not isinstance(data, bytes):
        raise Refused("a numpy scalar of something other than a number")
    if len(data) != dtype.itemsize:
        raise Refused("a numpy scalar whose bytes do not fit its type")
    return np.frombuffer(data, dtype=dtype)[0]


class _Inert:
    """What an environment object in a dump (a player's action) becomes: nothing of it is kept or run."""

    def __new__(cls, *args: Any, **kwargs: Any):
        return object.__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        pass

    def __reduce__(self):   # pragma: no cover - never pickled again
        raise TypeError("an inert stand-in")


#: The exact globals a dump may name, and what each resolves to.
ALLOWED: dict[tuple[str, str], Any] = {
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy.core.multiarray", "scalar"): _scalar,
    ("numpy._core.multiarray", "scalar"): _scalar,
    ("numpy", "ndarray"): _NdarrayName,
    ("numpy", "dtype"): _dtype,
    # the players' actions (debug.action) and their engine enum: only when an agent controls players
    ("gfootball.env.football_action_set", "CoreAction"): _Inert,
    ("gfootball_engine", "e_BackendAction"): _Inert,
    ("_gameplayfootball", "e_BackendAction"): _Inert,
}


class StepUnpickler(pickle._Unpickler):
    """Unpickles one step of a dump, resolving only the globals in ALLOWED (anything else: Refused).

    It is the standard library's pure-Python unpickler (about 0.3 ms a step), not the C one: the C unpickler
    keeps its memo in an array it grows to the largest index a PUT names, so a ten-byte pickle naming index
    2**28 would make it allocate and clear gigabytes; here the memo is a dict of the entries the file holds."""

    def find_class(self, module: str, name: str) -> Any:
        try:
            return ALLOWED[(module, name)]
        except KeyError:
            raise Refused(f"the pickle names {module}.{name}, which no gfootball dump holds") from None

    def persistent_load(self, pid: Any) -> Any:
        raise Refused("the pickle refers to a persistent object")


def load_steps(path: Path) -> tuple[list[Any], str]:
    """(every step of a dump, the file's SHA-256), read with the size and step caps (DumpError: one line)."""
    name = Path(path).name
    try:
        data, size = read_bounded(Path(path), MAX_BYTES)
    except OSError as exc:
        raise DumpError(f"{name}: cannot be read ({exc.strerror or exc})") from None
    if size > MAX_BYTES:
        raise DumpError(f"{name}: {size} bytes, more than the {MAX_BYTES} a dump may have")
    buf = io.BytesIO(data)
    steps: list[Any] = []
    while buf.tell() < len(data):
        if len(steps) == MAX_STEPS:
            raise DumpError(f"{name}: more than {MAX_STEPS} steps (a full match is 3001)")
        try:
            steps.append(StepUnpickler(buf).load())
        except Refused as exc:
            raise DumpError(f"{name}: step {len(steps) + 1}: refused: {exc}") from None
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError,
                MemoryError, RecursionError, UnicodeDecodeError) as exc:
            raise DumpError(f"{name}: step {len(steps) + 1} is not a pickle a dump holds "
                            f"({type(exc).__name__}: {str(exc)[:60]})") from None
    if not steps:
        raise DumpError(f"{name}: empty: no step")
    return steps, sha256_bytes(data)


# -- the steps as the toolkit's state ----------------------------------------------------------------------

def _array(name: str, i: int, obs: dict, key: str, shape: tuple[int, ...]) -> np.ndarray:
    v = obs.get(key)
    if not isinstance(v, np.ndarray) or v.dtype.kind not in "biuf?":
        raise DumpError(f"{name}: step {i}: observation {key!r} is not a numeric array")
    if v.shape != shape:
        what = "an 11-a-side match" if key.endswith("team") or key.endswith("active") else f"shape {shape}"
        raise DumpError(f"{name}: step {i}: observation {key!r} has shape {v.shape}: not {what}")
    v = v.astype(np.float64)
    if not np.all(np.isfinite(v)):
        raise DumpError(f"{name}: step {i}: observation {key!r} holds a number out of range")
    return v


def _int(name: str, i: int, value: Any, key: str, lo: int, hi: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not lo <= int(value) <= hi:
        raise DumpError(f"{name}: step {i}: {key} is {str(value)[:40]}, not a whole number in [{lo}, {hi}]")
    return int(value)


def observed(name: str, steps: list[Any]) -> tuple[dict, list[tuple]]:
    """(the first step's config, per step (ball, left, right, mode, score, owner, active, steps_left, engine
    step))."""
    rows = []
    config: dict = {}
    for i, step in enumerate(steps, 1):
        if not isinstance(step, dict) or not isinstance(step.get("observation"), dict):
            raise DumpError(f"{name}: step {i} is not a gfootball dump step (no observation)")
        debug = step.get("debug")
        if i == 1:
            config = debug.get("config") if isinstance(debug, dict) else None
            if not isinstance(config, dict):
                raise DumpError(f"{name}: the first step has no debug.config: not an episode dump's first step")
        frame = debug.get("frame_cnt") if isinstance(debug, dict) else None
        obs = step["observation"]
        ball = _array(name, i, obs, "ball", (3,))
        if abs(ball[0]) > MAX_ABS_X or abs(ball[1]) > MAX_ABS_Y or not -1.0 <= ball[2] <= MAX_Z:
            raise DumpError(f"{name}: step {i}: the ball at {ball.tolist()} is out of range")
        left = _array(name, i, obs, "left_team", (MS.N_PLAYERS, 2))
        right = _array(name, i, obs, "right_team", (MS.N_PLAYERS, 2))
        for team in (left, right):
            if np.any(np.abs(team[:, 0]) > MAX_ABS_X) or np.any(np.abs(team[:, 1]) > MAX_ABS_Y):
                raise DumpError(f"{name}: step {i}: a player's position is out of range")
        active = np.concatenate([_array(name, i, obs, "left_team_active", (MS.N_PLAYERS,)),
                                 _array(name, i, obs, "right_team_active", (MS.N_PLAYERS,))])
        score = obs.get("score")
        if not isinstance(score, (list, tuple, np.ndarray)) or len(score) != 2:
            raise DumpError(f"{name}: step {i}: observation 'score' is not two numbers")
        rows.append((
            (float(ball[0]), float(ball[1]), float(ball[2])),
            [(float(x), float(y)) for x, y in left], [(float(x), float(y)) for x, y in right],
            _int(name, i, obs.get("game_mode"), "observation 'game_mode'", MS.NORMAL, MS.PENALTY),
            tuple(_int(name, i, s, "observation 'score'", 0, MAX_GOALS) for s in score),
            (_int(name, i, obs.get("ball_owned_team"), "observation 'ball_owned_team'", -1, 1),
             _int(name, i, obs.get("ball_owned_player"), "observation 'ball_owned_player'", -1, MS.N_PLAYERS - 1)),
            tuple(int(bool(a)) for a in active),
            _int(name, i, obs.get("steps_left"), "observation 'steps_left'", 0, 10 * MAX_STEPS),
            _int(name, i, frame, "debug.frame_cnt", 0, 10 * MAX_STEPS),
        ))
    return config, rows


def _agents(config: dict) -> list[str]:
    """The player definitions of the config that control any player ('agent:left_players=1', ...)."""
    out = []
    for p in config.get("players") or []:
        if not isinstance(p, str):
            return [repr(p)]
        params = p.split(":", 1)[1] if ":" in p else ""
        counts = [kv.split("=", 1)[1] for kv in params.split(",") if kv.split("=", 1)[0] in ("left_players", "right_players") and "=" in kv]
        if ":" not in p or any(c.strip() != "0" for c in counts) or not counts:
            out.append(p)
    return out


def difficulties(name: str, config: dict) -> tuple[float, float]:
    """(left, right) AI difficulty of the dump's match: the config's own keys, else its scenario's."""
    if all(k in config for k in DIFFICULTY_KEYS):
        vals = [config[k] for k in DIFFICULTY_KEYS]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= 1
                   for v in vals):
            raise DumpError(f"{name}: the config's team difficulties {vals} are not numbers in [0, 1]")
        return float(vals[0]), float(vals[1])
    level = config.get("level")
    if level not in SCENARIO_DIFFICULTIES:
        raise DumpError(f"{name}: scenario {level!r}: the V_t model needs both teams' AI difficulty, which only "
                        f"gfootball's {', '.join(SCENARIO_DIFFICULTIES)} (or the config's {DIFFICULTY_KEYS[0]} and "
                        f"{DIFFICULTY_KEYS[1]}) give")
    return SCENARIO_DIFFICULTIES[level]


def record_from_dump(path: Path, fmt: str = FORMAT) -> dict[str, Any]:
    """The case record of one episode dump (the plugin's record layout, `match.first_step` = 1)."""
    name = Path(path).name
    steps, sha = load_steps(path)
    config, rows = observed(name, steps)
    agents = _agents(config)
    if agents:
        raise DumpError(f"{name}: players controlled by {', '.join(map(str, agents))[:120]}: the V_t model knows "
                        "only the built-in AI's strength (a dump of a match between the built-in AI teams: "
                        "number_of_left_players_agent_controls=0 and number_of_right_players_agent_controls=0)")
    left_d, right_d = difficulties(name, config)
    frames = [r[8] for r in rows]            # the engine's step count at each dumped state (debug.frame_cnt)
    if frames[0] != 0:
        raise DumpError(f"{name}: the dump starts at the engine's step {frames[0] + 1}, not at the episode's first: "
                        "not a full-episode dump (write_full_episode_dumps)")
    for k, (r, f) in enumerate(zip(rows, frames), 1):
        if f != k - 1 or (k > 1 and r[7] != rows[k - 2][7] - 1):
            raise DumpError(f"{name}: step {k}: the engine step or the steps left do not count by one: the dump is "
                            "not one episode")
    if rows[-1][7] != 0:
        raise DumpError(f"{name}: the episode ends with {rows[-1][7]} steps left: an unfinished match")
    duration = frames[-1]       # the game's duration: the dump holds its states 1..duration + 1
    ball, left, right, mode, score, owner, active, _, _ = (list(c) for c in zip(*rows))
    try:
        state = MS.encode_state(ball, left, right, mode, score, owner, active)
    except ValueError as exc:
        raise DumpError(f"{name}: {exc}") from None
    seed = config.get("game_engine_random_seed")
    return {
        "source": {"collection": "imported", "format": fmt, "id": "",
                   "record_files": [{"name": name, "sha256": sha}]},
        "match": {"scenario": f"gfootball {config.get('level')!s} (episode dump)",
                  "game_engine_random_seed": seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
                  "left_difficulty": left_d, "right_difficulty": right_d, "steps": duration,
                  "steps_per_s": MS.STEPS_PER_S, "first_step": 1},
        "state": state,
    }
