"""`video-arena import-cases --game dota2 --opendota MATCH.json` on the two whole OpenDota parses of
tests/fixtures/opendota/ (odota/core's test matches, each as its parser output and its API result): each
becomes a case with the plugin's events, V_t and render, that generates and validates as a Harbor task
of both protocols, scores 1.0 with the oracle, and re-renders bit-exact with `build-cases --media-only`."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from video_arena.cases import build as B
from video_arena.harbor import generate, validate
from video_arena.importing import cli as import_cli

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
        rc = import_cli.main(["--tasks-root", str(tree), "--game", "dota2", "--opendota", *files,
                              "--licence", "MIT (odota/core test fixtures)"])
        assert rc == 0, mid
    return tree


def _gts(tree: Path) -> dict[int, dict]:
    out = {}
    for p in sorted((tree / "dota2" / "gt").glob("*.json")):
        gt = json.loads(p.read_text(encoding="utf-8"))
        out[gt["record"]["source"]["match_id"]] = gt
    return out


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
    for gt in _gts(imported).values():
        rec = J.judge(gt, J.oracle_answer(gt))
        assert J.reward_of(rec) == {"reward": 1.0, "t1_f1": 1.0, "t2_macro_acc": 1.0, "t3_macro_acc": 1.0}


@pytest.mark.parametrize("protocol", ["A", "B"])
def test_the_imported_cases_generate_and_validate_as_harbor_tasks(imported, tmp_path, protocol):
    out = tmp_path / f"harbor-{protocol}"
    assert generate.main(["--out", str(out), "--protocol", protocol, "--net", "docker", "--tasks-root", str(imported),
                          "--games", "dota2", "--no-progress"]) == 0
    assert validate.main([str(out), "--tasks-root", str(imported), "--no-progress"]) == 0
    assert len(list(out.glob("dota2-*"))) == 2


def test_the_imported_videos_re_render_bit_exact(imported, tmp_path):
    done, failed = B.render_media_all(["dota2"], imported, tmp_path, jobs=1, log=lambda s: None)
    assert not failed and len(done["dota2"]) == 2
    assert all(s["media_matches_manifest"] for s in done["dota2"])
