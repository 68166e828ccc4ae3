"""`video-arena import-cases --game dota2 --opendota MATCH.json` on the two whole OpenDota parses of
tests/fixtures/opendota/ (odota/core's test matches, each as its parser output and its API result): each
becomes a case with the plugin's events, V_t and render, that generates and validates as a Harbor task
of both protocols, scores 1.0 with the oracle, and re-renders bit-exact with `build-cases --media-only`."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

import record_imports as RI

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "opendota"
MATCHES = {1781962623: (16, 2220), 7490235544: (24, 2847)}   # events, the Ancient's game second


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("opendota")
    tree = tmp / "tree"
    for mid in MATCHES:
        files = []
        for part in ("parsed", "api"):
            f = tmp / f"{mid}_{part}.json"
            f.write_bytes(gzip.decompress((FIXTURES / f"{mid}_{part}.json.gz").read_bytes()))
            files.append(str(f))
        assert RI.import_record(tree, "dota2", "opendota", files, "MIT (odota/core test fixtures)") == 0, mid
    return tree


def _gts(tree: Path) -> dict[int, dict]:
    return {gt["record"]["source"]["match_id"]: gt for gt in RI.ground_truths(tree, "dota2")}


def test_each_parse_is_a_case_that_names_its_match_and_files(imported):
    gts = _gts(imported)
    assert sorted(gts) == sorted(MATCHES)
    for mid, gt in gts.items():
        src = gt["record"]["source"]
        assert src["collection"] == "opendota" and [f["name"] for f in src["record_files"]] == [
            f"{mid}_parsed.json", f"{mid}_api.json"]
        n, ancient = MATCHES[mid]
        assert len(gt["events"]) == n and gt["events"][-1]["type"] == "ancient" and gt["events"][-1]["actor"] == "radiant"
        assert gt["events"][-1]["t"] == ancient - gt["record"]["time_base"]["video_start_game_s"]
        assert gt["evaluator"]["model_sha256"] and gt["v_series"][-1][1] == 1.0
    # 7490235544's parse dates four wards 817 s before the horn: the video starts 90 s before it
    assert gts[7490235544]["record"]["time_base"]["video_start_game_s"] == -90


def test_each_imported_case_scores_one_with_the_oracle(imported, J):
    RI.assert_oracle_scores_one(J, imported, "dota2")


@pytest.mark.parametrize("protocol", ["A", "B"])
def test_the_imported_cases_generate_and_validate_as_harbor_tasks(imported, tmp_path, protocol):
    RI.assert_generates_and_validates(imported, "dota2", tmp_path / f"harbor-{protocol}", protocol)


def test_the_imported_videos_re_render_bit_exact(imported, tmp_path):
    RI.assert_rerenders_bit_exact(imported, "dota2", tmp_path)
