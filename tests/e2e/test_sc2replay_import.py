"""`video-arena import-cases --game sc2 --sc2replay Deathaura.SC2Replay` (tests/fixtures/records/sc2: a real
replay from outside the project, neither a built-in case nor in the V_t model's fitting set): the case holds the
plugin's events and V_t from the shipped model, scores 1.0 with the oracle, generates and validates as a Harbor
task of both protocols, and re-renders bit-exact with `build-cases --media-only`."""
from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.record_imports import ImportedCaseChecks, gts, import_record

pytestmark = pytest.mark.slow

REPLAY = Path(__file__).resolve().parents[1] / "fixtures" / "records" / "sc2" / "Deathaura.SC2Replay"


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    tree = tmp_path_factory.mktemp("sc2replay") / "tree"
    import_record(tree, "sc2", "sc2replay", [REPLAY], "MIT (zephyrus-sc2-parser's test replay)")
    return tree


def test_the_replay_is_one_case_naming_its_file_and_match(imported):
    (gt,) = gts(imported, "sc2")
    src = gt["record"]["source"]
    assert src["collection"] == "imported" and src["format"] == "sc2replay" and src["match_key"].startswith("sc2-events-")
    assert src["record_files"][0]["name"] == REPLAY.name and src["licence"].startswith("MIT")
    assert [e["type"] for e in gt["events"]].count("expand") == 4 and gt["events"][-1]["type"] == "win"
    assert gt["events"][-1]["actor"] == "red" and gt["v_series"][-1][1] == 1.0 and gt["evaluator"]["model_sha256"]


class TestTheImportedCase(ImportedCaseChecks):
    GAME = "sc2"
