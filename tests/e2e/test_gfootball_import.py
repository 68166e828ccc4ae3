"""`video-arena import-cases --game gfootball --gfootball-dump EPISODE.dump` on the real dump of
tests/fixtures/records/gfootball/ that is no built-in case (gfootball's own 11_vs_11_stochastic scenario, seed 77,
dumped by the environment): it becomes a case with the plugin's events, V_t from the shipped goal-rate model and
render, that scores 1.0 with the oracle, generates and validates as a Harbor task of both protocols, and
re-renders bit-exact with `build-cases --media-only`."""
from __future__ import annotations

import lzma
from pathlib import Path

import pytest

from fixtures import record_imports as RI

pytestmark = pytest.mark.slow

DUMP = Path(__file__).resolve().parents[1] / "fixtures" / "records" / "gfootball" / "11_vs_11_stochastic-seed77.dump.xz"


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("gfootball-import")
    dump = tmp / "episode_done_seed77.dump"
    dump.write_bytes(lzma.decompress(DUMP.read_bytes()))
    RI.import_record(tmp / "tree", "gfootball", "gfootball-dump", [dump], "Apache-2.0 (gfootball 2.10.2 run)")
    return tmp / "tree"


def test_the_dump_is_a_case_with_the_goal_rate_models_values(imported):
    (gt,) = RI.gts(imported, "gfootball")
    src, match = gt["record"]["source"], gt["record"]["match"]
    assert src["collection"] == "imported" and src["format"] == "gfootball-dump"
    assert match["first_step"] == 1 and (match["left_difficulty"], match["right_difficulty"]) == (1.0, 0.6)
    assert gt["evaluator"]["method"] == "goal-rate model at equal strength (no rollouts)"
    (goal,) = [e for e in gt["events"] if e["type"] == "goal"]        # the match ended 1-0
    assert goal["actor"] == "left" and goal["delta"] == "up" and goal["v_after"] > goal["v_before"]


class TestTheImportedCase(RI.ImportedCaseChecks):
    GAME = "gfootball"
