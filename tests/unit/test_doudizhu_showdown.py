"""Doudizhu deals from RLCard Showdown replays (`import-cases --game doudizhu --rlcard-showdown FILE`): the
record's events against the file's own fields and RLCard's own card typing, the match key of a built-in
deal, the selection rules shared with the built-in cases, and every bad replay refused with one line."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from rlcard.games.doudizhu.utils import CARD_TYPE

from video_arena.games.doudizhu import plugin as DP
from video_arena.games.doudizhu import showdown
from video_arena.games.doudizhu.plugin import PLUGIN, SIDES

from fixtures import record_imports as RI

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "records" / "doudizhu"
TASKS = Path(__file__).resolve().parents[2] / "tasks" / "doudizhu"
FMT = showdown.FORMAT


def _record(name: str) -> dict:
    return PLUGIN.record_from_files(FMT, [FIXTURES / name])


def _replay_doc(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


# -- events against the file's own fields ---------------------------------------------------------------------
@pytest.mark.parametrize("name", ["rlcard-rule-v1-seed13.json", "rlcard-rule-v1-seed45.json"])
def test_events_are_the_files_moves_typed_by_rlcards_own_card_types(name):
    doc = _replay_doc(name)
    lord = next(p["index"] for p in doc["playerInfo"] if p["role"] == "landlord")
    left = [len(h.split()) for h in doc["initHands"]]
    rank_order = "3456789TJQKA2BR"
    expected = []
    for m in doc["moveHistory"]:
        cards = [] if m["move"] in ("pass", "") else m["move"].split()
        left[m["playerIdx"]] -= len(cards)
        ranks = "".join(sorted(({"BJ": "B", "RJ": "R"}.get(c) or c[1] for c in cards), key=rank_order.index))
        kind = CARD_TYPE[0][ranks][0][0] if ranks else ""
        etype = ("pass" if not cards else "win" if left[m["playerIdx"]] == 0 else
                 kind if kind in ("bomb", "rocket") else "play")
        expected.append((etype, SIDES[(m["playerIdx"] - lord) % 3], ranks))
    got = [(s.type, s.actor, s.where) for s in PLUGIN.replay(_record(name))]
    assert got == expected
    assert got[-1][0] == "win" and left.count(0) == 1


def test_the_record_is_the_deal_in_table_order_with_its_source():
    rec = _record("rlcard-rule-v1-seed13.json")
    assert rec["source"]["collection"] == "imported" and rec["source"]["format"] == FMT
    assert rec["source"]["id"] == f"doudizhu-{PLUGIN.match_key(rec)[:16]}"
    assert rec["source"]["record_files"][0]["name"] == "rlcard-rule-v1-seed13.json"
    assert [len(h) for h in rec["hands"]] == [20, 17, 17] and rec["bottom"] == [] and rec["winner"] == "landlord"
    assert "deal_seed" not in rec and "playout_seed" not in rec     # V_t's playouts are seeded as every deal's
    assert PLUGIN.refusal(rec) == ""


def test_a_landlord_not_at_index_0_is_seat_0_and_the_landlord_cards_key_is_read(tmp_path):
    doc = _replay_doc("rlcard-rule-v1-seed13.json")
    rot = 2           # the same deal with the players' indexes rotated: the landlord is index 2
    doc["playerInfo"] = [dict(p, index=(p["index"] + rot) % 3) for p in doc["playerInfo"]]
    doc["initHands"] = [doc["initHands"][(i - rot) % 3] for i in range(3)]
    for m in doc["moveHistory"]:
        m["playerIdx"] = (m["playerIdx"] + rot) % 3
    doc["landlordCards"] = " ".join(doc["initHands"][2].split()[:3])
    f = tmp_path / "rotated.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    rec, plain = PLUGIN.record_from_files(FMT, [f]), _record("rlcard-rule-v1-seed13.json")
    assert rec["plays"] == plain["plays"] and rec["hands"] == plain["hands"]
    assert PLUGIN.match_key(rec) == PLUGIN.match_key(plain)
    assert sorted(rec["bottom"]) == sorted(doc["landlordCards"].split())


# -- match key --------------------------------------------------------------------------------------------------
def test_a_builtin_deal_read_from_its_replay_has_that_cases_key():
    gt = json.loads((TASKS / "gt" / "5b4dZxHj.json").read_text(encoding="utf-8"))
    rec = _record("builtin-5b4dZxHj.json")
    assert PLUGIN.match_key(rec) == PLUGIN.match_key(gt["record"])
    builtin = {PLUGIN.match_key(json.loads(p.read_text(encoding="utf-8"))["record"]) for p in (TASKS / "gt").glob("*.json")}
    assert PLUGIN.match_key(_record("rlcard-rule-v1-seed13.json")) not in builtin
    assert PLUGIN.fitting_keys() == frozenset()        # V_t is playouts, no fitted model


# -- the selection's rules ---------------------------------------------------------------------------------------
def test_refusal_applies_the_builtin_selections_rules():
    short = PLUGIN.refusal(_record("rlcard-rule-v1-seed23.json"))
    lopsided = PLUGIN.refusal(_record("rlcard-rule-v1-seed45.json"))
    assert "20 turns, fewer than the 24" in short and "\n" not in short
    assert "chance at the deal is 0.00, outside [0.2, 0.8]" in lopsided and "\n" not in lopsided


def test_refusal_names_an_illegal_play_of_a_tampered_record():
    rec = _record("rlcard-rule-v1-seed13.json")
    rec["plays"][1] = [rec["plays"][1][0], "3"]        # a single 3 does not beat the lead
    why = PLUGIN.refusal(rec)
    assert "play 1" in why and "not legal" in why and "\n" not in why


def test_the_selection_and_refusal_share_one_rule(monkeypatch):
    seen = []
    monkeypatch.setattr(DP, "rule_refusal", lambda rec: seen.append(rec["deal_seed"]) or "")
    out = PLUGIN.select_records(2, 7)
    assert len(out) == 2 and seen[:2] == [r["deal_seed"] for r in out]


# -- bad replays: one line, exit 2, nothing written --------------------------------------------------------------
def _bad(tmp_path, change) -> Path:
    doc = _replay_doc("rlcard-rule-v1-seed13.json")
    out = change(doc)
    f = tmp_path / "bad.json"
    f.write_bytes(out if isinstance(out, bytes) else json.dumps(doc).encode())
    return f


def _swap_first_cards(doc):
    a, b = doc["initHands"][0].split(), doc["initHands"][1].split()
    doc["initHands"][0] = " ".join(a[:-1] + [b[0]])      # the landlord holds a peasant's card twice over


def _a_single_on_the_pair_led(doc):
    """Player 1 answers the landlord's lead (a pair) with a single card it never plays later."""
    played = {c for m in doc["moveHistory"] if m["playerIdx"] == 1 for c in m["move"].split()}
    spare = next(c for c in doc["initHands"][1].split() if c not in played)
    assert len(doc["moveHistory"][0]["move"].split()) == 2
    doc["moveHistory"][1]["move"] = spare


BAD = {
    "illegal play": (_a_single_on_the_pair_led, "not legal"),
    "card not in hand": (lambda d: d["moveHistory"][0].update(move="RJ"), "not in its hand"),
    "wrong card count": (lambda d: d["initHands"].__setitem__(1, " ".join(d["initHands"][1].split()[:-1])),
                         "the landlord 20, the peasants 17 each"),
    "not one deck": (_swap_first_cards, "dealt twice: the hands are not one deck"),
    "unfinished": (lambda d: d.__setitem__("moveHistory", d["moveHistory"][:-1]), "end before the deal does"),
    "no landlord": (lambda d: d["playerInfo"][0].update(role="peasant"), "one landlord and two peasants"),
    "too many moves": (lambda d: d.__setitem__("moveHistory", d["moveHistory"] * 4), "more than a deal can have"),
    "not a card": (lambda d: d["initHands"].__setitem__(0, d["initHands"][0].replace("BJ", "XJ")), "is not a card"),
    "not json": (lambda d: b"{\"playerInfo\": [", "not JSON"),
    "not an object": (lambda d: b"[1, 2]", "not an object"),
    "too large": (lambda d: b" " * (showdown.MAX_BYTES + 1), "more than the"),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_bad_replay_is_one_line_exit_2_and_nothing_written(kind, tmp_path, capsys):
    change, words = BAD[kind]
    RI.assert_refused(capsys, tmp_path / "tree", "doudizhu", FMT, _bad(tmp_path, change), words)


def test_a_replay_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    import os

    fifo = tmp_path / "replay.json"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="replay.json: cannot be read"):
        PLUGIN.record_from_files(FMT, [fifo])
