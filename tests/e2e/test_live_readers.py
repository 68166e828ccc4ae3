"""The pixel readers of the games with continuous play (video_arena/games/<game>/reader.py) on built-in cases: from
the decoded video alone the reader finds every event of the ground truth at its time (type, actor, where), and after
each the visible state it returns is the plugin's `visible_features` of the record (so the visible V_t computed from
what it read is the one computed from the record).  DOTA 2 and badminton on their shortest case; Google Research
Football (every case 5 minutes) on one whose shots the reader reads exactly: its shots are not exact on every case
(docs/CASES.md), its goals and set pieces are."""
from __future__ import annotations

import pytest

from reader_helpers import read_case, shortest_case
from video_arena.games.base import load_plugin

pytestmark = pytest.mark.slow
CASES = {"dota2": shortest_case("dota2"), "badminton": shortest_case("badminton"), "gfootball": "2D7DBL7u"}


@pytest.mark.parametrize("game", sorted(CASES))
def test_the_reader_finds_every_event_and_the_state_after_it(game):
    case = CASES[game]
    if case is None:
        pytest.skip(f"tasks/{game} has no built cases")
    gt, rows, features = read_case(game, case)
    assert [(r["t"], r["type"], r["actor"], r["where"]) for r in rows] == \
        [(e["t"], e["type"], e["actor"], e["where"]) for e in gt["events"]]
    assert features == load_plugin(game).visible_features(gt["record"])


@pytest.mark.parametrize("game", ["dota2", "gfootball"])
def test_v_t_from_what_the_reader_read_is_the_ground_truths(game):
    """DOTA 2's and Google Research Football's V_t take only what the picture shows: from the reader's features it
    is the ground truth's V_t."""
    case = CASES[game]
    if case is None:
        pytest.skip(f"tasks/{game} has no built cases")
    gt, _, features = read_case(game, case)
    meta = {"fps": gt["video"]["fps"], "n_frames": gt["video"]["n_frames"], "duration_s": gt["duration_s"]}
    assert [round(v, 4) for v in load_plugin(game).visible_values(features, meta)] == [v for _, v in gt["v_series"]]
