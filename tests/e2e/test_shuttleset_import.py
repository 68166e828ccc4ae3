"""`video-arena import-cases --game badminton --shuttleset ...` on a built-in case's own ShuttleSet files (every
match of ShuttleSet and ShuttleSet22 is a built-in case or in V_t's prior's fitting data, and the fitting data is
refused: tests/unit/test_badminton_import.py): the case holds the built-in case's events and V_t, scores 1.0 with
the oracle, generates and validates as a Harbor task of both protocols, and re-renders bit-exact with
`build-cases --media-only`."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures.record_imports import ImportedCaseChecks, gts, import_record
from video_arena import paths
from video_arena.games.badminton import records as R

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def case() -> dict:
    """The shortest built-in case's ground truth."""
    cases = [json.loads(p.read_text(encoding="utf-8")) for p in (paths.default_tasks_root() / "badminton" / "gt").glob("*.json")]
    if not cases:
        pytest.skip("tasks/badminton has no built cases")
    return min(cases, key=lambda g: g["duration_s"])


@pytest.fixture(scope="module")
def imported(tmp_path_factory, case) -> Path:
    src = case["record"]["source"]
    root, folder = R.collection_dir(src["collection"]), src["folder"].rsplit("/", 1)[-1]
    files = [root / "match.csv", root / "homography.csv"] + [root / folder / f"set{n}.csv"
                                                               for n in range(1, case["record"]["match"]["games"] + 1)]
    tree = tmp_path_factory.mktemp("shuttleset") / "tree"
    import_record(tree, "badminton", "shuttleset", files, "MIT (ShuttleSet, CoachAI-Projects)")
    return tree


def test_the_files_are_the_built_in_cases_match_with_its_events_and_values(imported, case):
    (gt,) = gts(imported, "badminton")
    assert gt["record"]["source"]["collection"] == "imported" and gt["record"]["source"]["format"] == "shuttleset"
    assert gt["events"] == case["events"] and gt["v_series"] == case["v_series"] and gt["duration_s"] == case["duration_s"]
    assert {k: v for k, v in gt["record"].items() if k != "source"} == {k: v for k, v in case["record"].items() if k != "source"}


class TestTheImportedCase(ImportedCaseChecks):
    GAME = "badminton"
