"""`video-arena import-cases --game doudizhu --rlcard-showdown REPLAY.json` on the deal of
tests/fixtures/records/doudizhu/ that is no built-in case (RLCard 1.2.0's own environment and rule agent, in
RLCard Showdown's replay format): it becomes a case with the plugin's events, V_t by playouts and render, that
scores 1.0 with the oracle, generates and validates as a Harbor task of both protocols, and re-renders
bit-exact with `build-cases --media-only`."""
from __future__ import annotations

from pathlib import Path

import pytest

from fixtures import record_imports as RI

pytestmark = pytest.mark.slow

REPLAY = Path(__file__).resolve().parents[1] / "fixtures" / "records" / "doudizhu" / "rlcard-rule-v1-seed13.json"


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    tree = tmp_path_factory.mktemp("doudizhu-import") / "tree"
    RI.import_record(tree, "doudizhu", "rlcard-showdown", [REPLAY], "MIT (played by RLCard 1.2.0)")
    return tree


def test_the_replay_is_a_case_with_its_turns_and_playout_values(imported):
    (gt,) = RI.gts(imported, "doudizhu")
    assert gt["record"]["source"]["collection"] == "imported" and gt["record"]["source"]["format"] == "rlcard-showdown"
    assert len(gt["events"]) == 49 and gt["events"][-1]["type"] == "win" and gt["events"][-1]["actor"] == "landlord"
    assert gt["evaluator"]["method"] == "playouts" and gt["v_series"][-1][1] == 1.0


class TestTheImportedCase(RI.ImportedCaseChecks):
    GAME = "doudizhu"
