"""`video-arena import-cases --game badminton --shuttleset ...` on a built-in case's own ShuttleSet files (every
match of ShuttleSet and ShuttleSet22 is a built-in case or in V_t's prior's fitting data, and the fitting data is
refused: tests/unit/test_badminton_import.py): the case holds the built-in case's events and V_t, scores 1.0 with
the oracle, generates and validates as a Harbor task of both protocols, and re-renders bit-exact with
`build-cases --media-only`."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures.record_imports import (assert_harbor_tasks_validate, assert_oracle_scores_one,
                                     assert_videos_re_render_bit_exact, gts, import_record)
from video_arena import paths
from video_arena.games.badminton import records as R

pytestmark = pytest.mark.slow


def _shortest_case() -> dict:
    cases = [json.loads(p.read_text(encoding="utf-8")) for p in (paths.default_tasks_root() / "badminton" / "gt").glob("*.json")]
    if not cases:
        pytest.skip("tasks/badminton has no built cases")
    return min(cases, key=lambda g: g["duration_s"])


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> tuple[Path, dict]:
    case = _shortest_case()
    src = case["record"]["source"]
    root, folder = R.collection_dir(src["collection"]), src["folder"].rsplit("/", 1)[-1]
    files = [root / "match.csv", root / "homography.csv"] + [root / folder / f"set{n}.csv"
                                                               for n in range(1, case["record"]["match"]["games"] + 1)]
    tree = tmp_path_factory.mktemp("shuttleset") / "tree"
    import_record(tree, "badminton", "shuttleset", files, "MIT (ShuttleSet, CoachAI-Projects)")
    return tree, case


def test_the_files_are_the_built_in_cases_match_with_its_events_and_values(imported):
    tree, case = imported
    (gt,) = gts(tree, "badminton")
    assert gt["record"]["source"]["collection"] == "imported" and gt["record"]["source"]["format"] == "shuttleset"
    assert gt["events"] == case["events"] and gt["v_series"] == case["v_series"] and gt["duration_s"] == case["duration_s"]
    assert {k: v for k, v in gt["record"].items() if k != "source"} == {k: v for k, v in case["record"].items() if k != "source"}


def test_the_imported_case_scores_one_with_the_oracle(imported, J):
    assert_oracle_scores_one(imported[0], "badminton", J)


@pytest.mark.parametrize("protocol", ["A", "B"])
def test_the_imported_case_generates_and_validates_as_a_harbor_task(imported, tmp_path, protocol):
    assert_harbor_tasks_validate(imported[0], "badminton", tmp_path / f"harbor-{protocol}", protocol)


def test_the_imported_video_re_renders_bit_exact(imported, tmp_path):
    assert_videos_re_render_bit_exact(imported[0], "badminton", tmp_path)
