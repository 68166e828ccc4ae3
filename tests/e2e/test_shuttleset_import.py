"""`video-arena import-cases --game badminton --shuttleset ...` on a real match that no shipped model has seen
(ShuttleSet22's CHEN Yufei v PUSARLA V. Sindhu, held out of V_t's prior: `records.HELD_OUT`;
tests/fixtures/records/badminton): its events agree with a reading of the set files by the csv module alone, and
the case scores 1.0 with the oracle, generates and validates as a Harbor task of both protocols, and re-renders
bit-exact with `build-cases --media-only`.  A built-in case's own files make that case again
(tests/unit/test_badminton_import.py); a match of the prior's fitting data is refused there too."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from fixtures.record_imports import ImportedCaseChecks, gts, import_record

pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "records" / "badminton" / "set"
VIDEO = "CHEN_Yu_Fei_PUSARLA_V._Sindhu_Thailand_Open_2022_SemiFinals"

#: ShuttleSet's end labels (lose_reason, the loser's view) as its README translates them: who the point is
#: credited to in the event (the winner's shot, or the loser's error or fault)
KIND = {"對手落地致勝": "winner", "落點判斷失誤": "winner", "對手落地判斷失誤": "winner",
        "出界": "error", "掛網": "error", "未過網": "error", "犯規": "fault"}


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    files = [FIXTURE / "match.csv", FIXTURE / "homography.csv", FIXTURE / VIDEO / "set1.csv", FIXTURE / VIDEO / "set2.csv"]
    tree = tmp_path_factory.mktemp("shuttleset") / "tree"
    import_record(tree, "badminton", "shuttleset", files, "MIT (ShuttleSet22, CoachAI-Projects)")
    return tree


def _independent_reading() -> list[tuple[str, str]]:
    """(type, the record's player A or B it is credited to) per rally, then ("game", winner) per set file: the last
    row of each rally gives the score after it; the player whose score went up won it."""
    out = []
    for game in (1, 2):
        with open(FIXTURE / VIDEO / f"set{game}.csv", encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
        last: dict[str, dict[str, str]] = {}
        for r in rows:
            last[r["rally"]] = r
        prev = (0, 0)
        for r in last.values():
            score = (int(r["roundscore_A"]), int(r["roundscore_B"]))
            won = "A" if score[0] > prev[0] else "B"
            kind = KIND[r["lose_reason"]]
            out.append((kind, won if kind == "winner" else ("B" if won == "A" else "A")))
            prev = score
        out.append(("game", "A" if prev[0] > prev[1] else "B"))
    return out


def test_the_events_are_the_files_rallies_and_games(imported):
    (gt,) = gts(imported, "badminton")
    assert gt["record"]["source"]["collection"] == "imported" and gt["record"]["source"]["format"] == "shuttleset"
    want = _independent_reading()
    got = [(e["type"], e["actor"]) for e in gt["events"]]
    assert len(got) == len(want) == 77 and [k for k, _ in got] == [k for k, _ in want]
    names = {a: p for (_, a), (_, p) in zip(want, got)}      # the record's A and B are player_a / player_b
    assert len(names) == 2 and len(set(names.values())) == 2
    assert got == [(k, names[a]) for k, a in want]
    assert [t for t, _ in gt["v_series"]] == sorted(t for t, _ in gt["v_series"])


class TestTheImportedCase(ImportedCaseChecks):
    GAME = "badminton"
