"""The real episode dump Google Research Football 2.10.2 wrote (tests/fixtures/records/gfootball/, README.md there):
the restricted unpickler reads every step of it, every global it names is on the allow-list, and the plugin's
record and events agree with gfootball's own reading of the file (its `load_dump` is a loop of plain
`pickle.load`, used here on the committed fixture only) and the file's own fields: the score, the game modes,
the positions."""
from __future__ import annotations

import json
import lzma
import pickle
from pathlib import Path

import pytest

from video_arena.games.gfootball import dump as D
from video_arena.games.gfootball import match_state as MS
from video_arena.games.gfootball.plugin import PLUGIN, decoded

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "records" / "gfootball"
TASKS = Path(__file__).resolve().parents[2] / "tasks" / "gfootball"
DUMP = FIXTURES / "11_vs_11_stochastic-seed77.dump.xz"


@pytest.fixture(scope="module")
def dump_file(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gfdump") / "11_vs_11_stochastic-seed77.dump"
    out.write_bytes(lzma.decompress(DUMP.read_bytes()))
    return out


@pytest.fixture(scope="module")
def gfootball_reading(dump_file) -> list[dict]:
    """gfootball's own reading (script_helpers.ScriptHelpers.load_dump): pickle.load until the file ends."""
    steps = []
    with open(dump_file, "rb") as f:
        while True:
            try:
                steps.append(pickle.load(f))
            except EOFError:
                return steps


@pytest.fixture(scope="module")
def record(dump_file) -> dict:
    return PLUGIN.record_from_files(D.FORMAT, [dump_file])


def test_every_global_the_real_dump_names_is_on_the_allow_list(dump_file):
    names = set()

    class Recording(pickle.Unpickler):          # the plain unpickler, on the committed fixture only
        def find_class(self, module, name):
            names.add((module, name))
            return super().find_class(module, name)

    with open(dump_file, "rb") as f:
        while f.peek(1):
            Recording(f).load()
    assert ("numpy", "ndarray") in names and names <= set(D.ALLOWED), names - set(D.ALLOWED)


def test_the_restricted_reading_is_gfootballs_own(dump_file, gfootball_reading):
    steps, _ = D.load_steps(dump_file)
    assert len(steps) == len(gfootball_reading) == 3001
    for mine, theirs in zip(steps[::250], gfootball_reading[::250]):
        for key in ("ball", "left_team", "right_team", "left_team_active", "score", "game_mode", "steps_left"):
            assert (mine["observation"][key] == theirs["observation"][key]).all() if hasattr(
                theirs["observation"][key], "all") else mine["observation"][key] == theirs["observation"][key]


def test_the_record_holds_the_files_positions_score_and_modes(record, gfootball_reading):
    m = decoded(record)
    assert m.n == len(gfootball_reading) and record["match"]["first_step"] == 1
    for i, step in enumerate(gfootball_reading):
        o = step["observation"]
        assert m.score[i] == tuple(o["score"]) and m.game_mode[i] == o["game_mode"]
        assert m.owner[i] == (o["ball_owned_team"], o["ball_owned_player"])
        assert m.ball[i][0] == pytest.approx(o["ball"][0], abs=0.0006)
        assert m.players[i][1][4][1] == pytest.approx(o["right_team"][4][1], abs=0.0006)
    config = gfootball_reading[0]["debug"]["config"]
    assert record["match"]["game_engine_random_seed"] == config["game_engine_random_seed"]
    assert config["level"] == "11_vs_11_stochastic" and "left_team_difficulty" not in config
    assert (record["match"]["left_difficulty"], record["match"]["right_difficulty"]) == (1.0, 0.6)


def test_goals_and_set_pieces_are_the_files_score_and_game_mode_changes(record, gfootball_reading):
    obs = [s["observation"] for s in gfootball_reading]
    events = [(e.step, e.type, e.actor) for e in MS.derive_events(decoded(record))]
    # goals: one per point of the file's final score, credited to the side whose score rose, at or before the change
    changes = [(i, 0 if obs[i]["score"][0] > obs[i - 1]["score"][0] else 1)
               for i in range(1, len(obs)) if list(obs[i]["score"]) != list(obs[i - 1]["score"])]
    goals = [(s, a) for s, t, a in events if t == "goal"]
    assert len(goals) == len(changes) == sum(obs[-1]["score"])
    for (s, actor), (i, side) in zip(goals, changes):
        assert actor == MS.SIDES[side] and i - 60 <= s <= i
    # free kicks and penalties: at the step the file's game mode turns to them
    for mode, etype in ((MS.FREE_KICK, "free_kick"), (MS.PENALTY, "penalty")):
        starts = [i for i in range(1, len(obs)) if obs[i]["game_mode"] == mode != obs[i - 1]["game_mode"]]
        assert [s for s, t, _ in events if t == etype] == starts
    corners = [i for i in range(1, len(obs)) if obs[i]["game_mode"] == MS.CORNER != obs[i - 1]["game_mode"]]
    assert len([e for e in events if e[1] == "corner"]) <= len(corners)
    assert PLUGIN.refusal(record) == ""


def test_the_engines_dump_of_a_built_in_match_has_that_cases_key(tmp_path):
    """builtin-1GRhhveQ.dump.xz: the environment's own dump of the built-in case 1GRhhveQ's match (simulate.py
    --dump), read from the file, is that case's match, with its events."""
    gt = json.loads((TASKS / "gt" / "1GRhhveQ.json").read_text(encoding="utf-8"))
    f = tmp_path / "builtin-1GRhhveQ.dump"
    f.write_bytes(lzma.decompress((FIXTURES / "builtin-1GRhhveQ.dump.xz").read_bytes()))
    rec = PLUGIN.record_from_files(D.FORMAT, [f])
    assert PLUGIN.match_key(rec) == PLUGIN.match_key(gt["record"])
    assert [(e.type, e.actor, e.where) for e in PLUGIN.replay(rec)] == [
        (e.type, e.actor, e.where) for e in PLUGIN.replay(gt["record"])]
    others = [json.loads(p.read_text(encoding="utf-8"))["record"] for p in sorted((TASKS / "gt").glob("*.json"))[1:3]]
    assert all(PLUGIN.match_key(o) != PLUGIN.match_key(rec) for o in others)
