"""The pixel readers of the games with continuous play (video_arena/games/<game>/reader.py), each on its game's
shortest built-in case: from the decoded video alone the reader finds every event of the ground truth at its time
(type, actor, where), and after each the visible state it returns is the plugin's `visible_features` of the record
(so the visible V_t computed from what it read is the one computed from the record)."""
from __future__ import annotations

import pytest

from reader_helpers import read_case, shortest_case
from video_arena.games.base import load_plugin

pytestmark = pytest.mark.slow
GAMES = ["dota2", "badminton"]


@pytest.mark.parametrize("game", GAMES)
def test_the_reader_finds_every_event_and_the_state_after_it(tmp_path, game):
    case = shortest_case(game)
    if case is None:
        pytest.skip(f"tasks/{game} has no built cases")
    gt, rows, features = read_case(game, case, tmp_path)
    assert [(r["t"], r["type"], r["actor"], r["where"]) for r in rows] == \
        [(e["t"], e["type"], e["actor"], e["where"]) for e in gt["events"]]
    assert features == load_plugin(game).visible_features(gt["record"])


def test_dota2_v_t_from_what_the_reader_read_is_the_ground_truths(tmp_path):
    """DOTA 2's V_t takes only what the map shows: from the reader's features it is the ground truth's V_t."""
    case = shortest_case("dota2")
    if case is None:
        pytest.skip("tasks/dota2 has no built cases")
    gt, _, features = read_case("dota2", case, tmp_path)
    meta = {"fps": gt["video"]["fps"], "n_frames": gt["video"]["n_frames"], "duration_s": gt["duration_s"]}
    assert [round(v, 4) for v in load_plugin("dota2").visible_values(features, meta)] == [v for _, v in gt["v_series"]]
