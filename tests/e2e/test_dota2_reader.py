"""DOTA 2's pixel reader (video_arena/games/dota2/reader.py) on the shortest built-in case: from the decoded video
alone it finds every event of the ground truth at its second (type, actor, where), and after each the visible
state it returns is the plugin's `visible_features` of the record, so V_t from what it read is the ground truth's."""
from __future__ import annotations

import pytest

from video_arena.games.dota2 import plugin as P
from reader_helpers import read_case, shortest_case

pytestmark = pytest.mark.slow
CASE = shortest_case("dota2")


@pytest.mark.skipif(CASE is None, reason="tasks/dota2 has no built cases")
def test_the_reader_finds_every_event_and_the_state_after_it(tmp_path):
    gt, rows, features = read_case("dota2", CASE, tmp_path)
    assert [(r["t"], r["type"], r["actor"], r["where"]) for r in rows] == \
        [(e["t"], e["type"], e["actor"], e["where"]) for e in gt["events"]]
    assert features == P.PLUGIN.visible_features(gt["record"])
    meta = {"fps": gt["video"]["fps"], "n_frames": gt["video"]["n_frames"], "duration_s": gt["duration_s"]}
    assert [round(v, 4) for v in P.PLUGIN.visible_values(features, meta)] == [v for _, v in gt["v_series"]]
