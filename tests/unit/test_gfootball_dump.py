"""Google Research Football episode dumps (`import-cases --game gfootball --gfootball-dump FILE`): the restricted
unpickler (only the globals a real dump names; anything else refused before it runs), the caps, the mapping of
a dump's observations onto the plugin's record, and every bad dump refused with one line.

The dumps here are written by the test in gfootball's dump layout from a built-in case's recorded state (so
each one's match key is that case's); tests/unit/test_gfootball_real_dump.py reads the real one the engine
wrote (tests/fixtures/records/gfootball/)."""
from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from video_arena.games.gfootball import dump as D
from video_arena.games.gfootball.plugin import PLUGIN, decoded

from fixtures import record_imports as RI

TASKS = Path(__file__).resolve().parents[2] / "tasks" / "gfootball"
FMT = D.FORMAT


@pytest.fixture(scope="module")
def builtin() -> dict:
    """A built-in case's ground truth."""
    return json.loads(sorted((TASKS / "gt").glob("*.json"))[0].read_text(encoding="utf-8"))


def dump_steps(record: dict, config: dict | None = None) -> list[dict]:
    """The steps gfootball's environment dumps for the match of a built-in record, in its layout: the states
    after environment steps 1..3001 (frame_cnt 0..3000; the record ends after step 3000, so the last state is
    repeated), observation arrays as the environment builds them, the config in the first step."""
    m = decoded(record)
    match = record["match"]
    config = config if config is not None else {
        "level": "va_builtin_ai_match", "players": ["agent:left_players=0,right_players=0"],
        "game_engine_random_seed": match["game_engine_random_seed"],
        "left_team_difficulty": match["left_difficulty"], "right_team_difficulty": match["right_difficulty"]}
    out = []
    for k in range(m.n):
        i = min(k + 1, m.n - 1)
        left, right = m.players[i]
        obs = {"ball": np.array(m.ball[i]), "ball_direction": np.zeros(3),
               "left_team": np.array(left).reshape(-1, 2), "right_team": np.array(right).reshape(-1, 2),
               "left_team_active": np.array([bool(a) for a in m.active[i][:11]]),
               "right_team_active": np.array([bool(a) for a in m.active[i][11:]]),
               "left_team_roles": np.arange(11), "left_agent_sticky_actions": [],
               "game_mode": m.game_mode[i], "score": list(m.score[i]), "ball_owned_team": m.owner[i][0],
               "ball_owned_player": m.owner[i][1], "steps_left": m.n - 1 - k}
        debug = {"action": [], "frame_cnt": k, "time": 1.5, "reward": 0}
        if k == 0:
            debug["config"] = config
        out.append({"debug": debug, "observation": obs, "reward": 0, "cumulative_reward": 0})
    return out


def write_dump(path: Path, steps: list) -> Path:
    with open(path, "wb") as f:
        for s in steps:
            pickle.dump(s, f)
    return path


@pytest.fixture(scope="module")
def builtin_steps(builtin) -> list[dict]:
    """The built-in case's match as dumped steps (each test changes copies, never these)."""
    return dump_steps(builtin["record"])


@pytest.fixture(scope="module")
def good_dump(builtin_steps, tmp_path_factory) -> Path:
    return write_dump(tmp_path_factory.mktemp("gf") / "episode_done.dump", builtin_steps)


# -- the dump as a record ------------------------------------------------------------------------------------------
def test_a_dump_is_the_built_in_match_it_holds(builtin, good_dump):
    rec = PLUGIN.record_from_files(FMT, [good_dump])
    assert PLUGIN.match_key(rec) == PLUGIN.match_key(builtin["record"])
    assert rec["source"]["collection"] == "imported" and rec["source"]["format"] == FMT
    assert rec["source"]["id"] == f"gfootball-{PLUGIN.match_key(rec)[:16]}"
    assert rec["match"]["first_step"] == 1 and rec["match"]["steps"] == 3000 and decoded(rec).n == 3001
    assert (rec["match"]["left_difficulty"], rec["match"]["right_difficulty"]) == (
        builtin["record"]["match"]["left_difficulty"], builtin["record"]["match"]["right_difficulty"])
    assert PLUGIN.refusal(rec) == ""
    # the same events (the dump starts one engine step later: every step index is one less)
    assert [(e.type, e.actor, e.where) for e in PLUGIN.replay(rec)] == [
        (e.type, e.actor, e.where) for e in PLUGIN.replay(builtin["record"])]
    assert [s - 1 for s in PLUGIN.event_steps(builtin["record"])] == PLUGIN.event_steps(rec)


def test_v_t_counts_the_steps_left_from_the_dumps_first_step(builtin, good_dump, monkeypatch):
    """V_t is read at each event's video second; the dump starts one engine step later, so an event's frame
    may come one frame earlier and V may differ by what one frame (STEPS_PER_FRAME steps) of time is worth:
    at most a few 1e-4 here, never a goal's worth."""
    monkeypatch.setattr(type(PLUGIN), "fitting_keys", lambda self: frozenset())
    rec = PLUGIN.record_from_files(FMT, [good_dump])
    got, want = PLUGIN.evaluate(rec), PLUGIN.evaluate(builtin["record"])
    assert len(got) == len(want) and got[0] == want[0]
    assert got[1:] == pytest.approx(want[1:], abs=1e-3)


def test_a_match_of_the_fitting_set_is_refused(good_dump, monkeypatch):
    rec = PLUGIN.record_from_files(FMT, [good_dump])
    monkeypatch.setattr(type(PLUGIN), "fitting_keys", lambda self: frozenset({PLUGIN.match_key(rec)}))
    with pytest.raises(ValueError, match="the goal-rate model was fitted on"):
        PLUGIN.evaluate(rec)


def test_the_difficulties_come_from_gfootballs_own_scenario_when_the_config_lacks_them(builtin, tmp_path):
    steps = dump_steps(builtin["record"], {"level": "11_vs_11_hard_stochastic",
                                           "players": ["agent:left_players=0,right_players=0"]})
    rec = PLUGIN.record_from_files(FMT, [write_dump(tmp_path / "hard.dump", steps)])
    assert (rec["match"]["left_difficulty"], rec["match"]["right_difficulty"]) == (1.0, 0.95)


# -- the restricted unpickler --------------------------------------------------------------------------------------
class _Runs:
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def test_a_pickle_naming_any_other_global_is_refused_before_it_runs(tmp_path):
    marker = tmp_path / "ran"
    f = write_dump(tmp_path / "evil.dump", [{"observation": {}, "debug": {"x": _Runs(str(marker))}}])
    with pytest.raises(ValueError) as exc:
        PLUGIN.record_from_files(FMT, [f])
    assert str(exc.value) == "evil.dump: step 1: refused: the pickle names posix.mkdir, which no gfootball dump holds"
    assert not marker.exists()


@pytest.mark.parametrize("value, words", [
    (np.array([1, "a"], dtype=object), "is not a plain number type"),
    (np.array([("a", 1)], dtype=[("n", "U1"), ("v", "i4")]), "numpy dtype"),
])
def test_numpy_values_other_than_plain_numbers_are_refused(value, words, tmp_path):
    f = write_dump(tmp_path / "np.dump", [{"observation": {"ball": value}, "debug": {}}])
    with pytest.raises(ValueError) as exc:
        D.load_steps(f)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_the_allow_list_is_exactly_numpys_reconstruction_and_the_environments_action_objects():
    assert set(D.ALLOWED) == {
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
        ("numpy", "ndarray"), ("numpy", "dtype"), ("gfootball.env.football_action_set", "CoreAction"),
        ("gfootball_engine", "e_BackendAction"), ("_gameplayfootball", "e_BackendAction")}


# -- caps and bad dumps: one line, exit 2, nothing written -----------------------------------------------------------
BAD = {
    "unfinished": (lambda s: s[:-1], "steps left: an unfinished match"),
    "not from the first step": (lambda s: [dict(s[100], debug=dict(s[0]["debug"], frame_cnt=100))] + s[101:],
                                "starts at the engine's step 101, not at the episode's first"),
    "a step missing": (lambda s: s[:50] + s[51:], "step 51: the engine step or the steps left do not count"),
    "agent players": (lambda s: [dict(s[0], debug={**s[0]["debug"], "config": {
        **s[0]["debug"]["config"], "players": ["agent:left_players=1,right_players=0"]}})] + s[1:],
        "players controlled by agent:left_players=1"),
    "unknown scenario": (lambda s: [dict(s[0], debug={**s[0]["debug"], "config": {"level": "academy_3_vs_1_with_keeper",
                                                                                   "players": []}})] + s[1:],
                         "scenario 'academy_3_vs_1_with_keeper'"),
    "not 11 a side": (lambda s: [dict(s[0], observation={**s[0]["observation"],
                                                         "left_team": s[0]["observation"]["left_team"][:3]})] + s[1:],
                      "not an 11-a-side match"),
    "nan": (lambda s: s[:5] + [dict(s[5], observation={**s[5]["observation"], "ball": np.array([np.nan, 0, 0])})]
            + s[6:], "step 6: observation 'ball' holds a number out of range"),
    "far off the pitch": (lambda s: s[:5] + [dict(s[5], observation={**s[5]["observation"],
                                                                     "ball": np.array([40.0, 0, 0])})] + s[6:],
                          "is out of range"),
    "no config": (lambda s: [dict(s[0], debug={})] + s[1:], "no debug.config"),
    "a game mode out of range": (lambda s: s[:9] + [dict(s[9], observation={**s[9]["observation"], "game_mode": 9})]
                                 + s[10:], "step 10: observation 'game_mode' is 9, not a whole number in [0, 6]"),
    "a score that jumps": (lambda s: s[:-5] + [dict(x, observation={**x["observation"], "score": [7, 0]}) for x in s[-5:]],
                           "score jumps from"),
    "too many steps": (lambda s: s + s[:D.MAX_STEPS + 1 - len(s)], f"more than {D.MAX_STEPS} steps"),
    "not a dict": (lambda s: [[1, 2, 3]], "step 1 is not a gfootball dump step"),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_bad_dump_is_one_line_exit_2_and_nothing_written(kind, builtin_steps, tmp_path, capsys):
    change, words = BAD[kind]
    f = write_dump(tmp_path / "bad.dump", change(builtin_steps))
    RI.assert_refused(capsys, tmp_path / "tree", "gfootball", FMT, f, words)


def test_a_file_over_the_size_cap_is_refused_without_reading_it(tmp_path):
    f = tmp_path / "huge.dump"
    with open(f, "wb") as fh:
        fh.truncate(D.MAX_BYTES + 1)      # sparse: refused on its size
    with pytest.raises(ValueError, match=f"more than the {D.MAX_BYTES}"):
        D.load_steps(f)


def test_a_truncated_pickle_and_a_fifo_are_one_line(tmp_path):
    f = tmp_path / "cut.dump"
    f.write_bytes(pickle.dumps({"observation": {}})[:-3])
    with pytest.raises(ValueError, match="cut.dump: step 1 is not a pickle a dump holds"):
        D.load_steps(f)
    fifo = tmp_path / "fifo.dump"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="fifo.dump: cannot be read"):
        D.load_steps(fifo)


def test_refusal_holds_the_length_rule_of_the_built_in_selection(builtin):
    rec = json.loads(json.dumps(builtin["record"]))
    assert PLUGIN.refusal(rec) == ""
    rec["match"]["steps"] = 1500
    assert "a case is a full 3000-step match" in PLUGIN.refusal(rec)


def test_ndarray_itself_cannot_be_called_by_a_pickle(tmp_path):
    """A pickle may name numpy.ndarray only as what numpy's reconstruction rebuilds: calling it (with a shape of
    its choosing) is refused."""
    import pickletools

    evil = b"\x80\x04cnumpy\nndarray\n(J\x00\xca\x9a;\x85tR." # ndarray((1_000_000_000,))
    pickletools.dis(evil, out=open(os.devnull, "w"))
    f = tmp_path / "alloc.dump"
    f.write_bytes(evil)
    with pytest.raises(ValueError, match="alloc.dump: step 1"):
        D.load_steps(f)


def test_the_built_in_selection_checks_every_match_with_the_same_rule(monkeypatch):
    from video_arena.games.base import SELECTION_SEED
    from video_arena.games.gfootball import plugin as P

    seen = []
    monkeypatch.setattr(P, "rule_refusal", lambda rec: seen.append(rec["source"]["id"]) or "")
    (rec,) = PLUGIN.select_records(1, SELECTION_SEED)          # a committed match: no engine run
    assert seen == [rec["source"]["id"]]
    monkeypatch.setattr(P, "rule_refusal", lambda rec: "a reason")
    with pytest.raises(P.GFootballError, match="a reason"):
        PLUGIN.select_records(1, SELECTION_SEED)


def test_a_memo_index_far_out_costs_no_memory(tmp_path):
    """A ten-byte pickle that stores its object under memo index 2**28 (the C unpickler would grow its memo array
    to that size: 4 GB allocated and cleared) is read in a child process whose peak memory stays small."""
    import subprocess
    import sys

    f = tmp_path / "memo.dump"
    f.write_bytes(b"\x80\x02]r\x00\x00\x00\x10.")          # PROTO 2, EMPTY_LIST, LONG_BINPUT 2**28, STOP
    # the child's own peak (VmHWM: its address space's, new at exec); ru_maxrss would carry the forking
    # pytest worker's peak across exec on Linux
    code = ("import re, sys\nfrom pathlib import Path\nfrom video_arena.games.gfootball import dump as D\n"
            "try:\n    D.load_steps(Path(sys.argv[1]))\nexcept ValueError as e:\n    print(e)\n"
            "print(re.search(r'VmHWM:\\s+(\\d+) kB', Path('/proc/self/status').read_text()).group(1))")
    out = subprocess.run([sys.executable, "-c", code, str(f)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.split()[-1]) < 400_000, out.stdout          # kB: well under the 4 GB of a 2**28 memo


def test_the_fitting_keys_are_the_goal_models_matches_and_no_case():
    from video_arena.games.gfootball import plugin as P

    doc = json.loads(P.FITTING_KEYS.read_text(encoding="utf-8"))
    model = json.loads(P.GOAL_MODEL.read_text(encoding="utf-8"))
    assert sorted(doc["keys"]) == sorted(m[0] for m in model["matches"])
    keys = PLUGIN.fitting_keys()
    assert len(keys) == len(model["matches"]) == 20
    cases = {PLUGIN.match_key(json.loads(p.read_text(encoding="utf-8"))["record"]) for p in (TASKS / "gt").glob("*.json")}
    assert len(cases) == 20 and not keys & cases
