"""The judge: one hand-made case per rule, a brute-force check of the matching, properties, fuzz."""
from __future__ import annotations

import itertools
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judge_helpers import SPEC, answer_of, gt_of, row

REPO = Path(__file__).resolve().parents[2]
JUDGE_FILE = REPO / "judge" / "judge.py"


# ---------------------------------------------------------------- T1 matching, hand-made

def test_perfect_answer_scores_one(J):
    gt = gt_of([row(10), row(20, "capture", "black", "d5", "up", "black")])
    rec = J.judge(gt, answer_of(gt["events"]))
    assert rec["format_error"] is None
    assert (rec["t1_f1"], rec["t2_macro_acc"], rec["t3_macro_acc"], rec["reward"]) == (1.0, 1.0, 1.0, 1.0)


def test_tolerance_is_inclusive_at_three_seconds_and_exclusive_beyond(J):
    gt = gt_of([row(10.3)])
    assert J.judge(gt, answer_of([row(13.3)]))["n_matched"] == 1  # float 3.0000000000000018 still matches
    assert J.judge(gt, answer_of([row(7.3)]))["n_matched"] == 1
    assert J.judge(gt, answer_of([row(13.31)]))["n_matched"] == 0


@pytest.mark.parametrize("field,value", [("type", "capture"), ("actor", "black"), ("where", "e5")])
def test_key_fields_must_be_equal(J, field, value):
    gt = gt_of([row(10)])
    pred = row(10)
    pred[field] = value
    assert J.judge(gt, answer_of([pred]))["n_matched"] == 0


def test_text_compared_trimmed_and_lower_cased(J):
    gt = gt_of([row(10, where="e4")])
    pred = {"t": 10, "type": " MOVE", "actor": "White ", "where": "E4", "delta": "Flat", "state": " EVEN "}
    rec = J.judge(gt, {"events": [pred]})
    assert rec["format_error"] is None and rec["reward"] == 1.0


def test_one_to_one_each_row_matches_once(J):
    gt = gt_of([row(10)])
    rec = J.judge(gt, answer_of([row(10), row(10.5)]))
    assert rec["n_matched"] == 1 and rec["t1_precision"] == 0.5 and rec["t1_recall"] == 1.0
    assert rec["t1_f1"] == pytest.approx(2 / 3)


def test_maximum_matching_beats_greedy_nearest(J):
    # Greedy nearest would pair pred 12 with gt 12.5 and leave gt 9.5 unmatched (|12-9.5| = 2.5 ok,
    # but pred 15 can only reach gt 12.5). Maximum matching: 12->9.5, 15->12.5.
    gt = gt_of([row(9.5), row(12.5)])
    rec = J.judge(gt, answer_of([row(12), row(15)]))
    assert rec["n_matched"] == 2


def test_ties_in_count_broken_by_smallest_total_dt(J):
    # Two preds, two GTs, all within 3 s: both pairings give 2 matches; the crossing one costs more.
    gt = gt_of([row(10, delta="up", state="white"), row(11, delta="down", state="black")])
    pred = [row(10.2, delta="up", state="white"), row(11.1, delta="down", state="black")]
    rec = J.judge(gt, answer_of(pred))
    assert sorted(map(tuple, rec["matches"])) == [(0, 0), (1, 1)]
    assert rec["t2_macro_acc"] == 1.0 and rec["reward"] == 1.0


def test_t2_t3_macro_over_matched_gt_classes(J):
    gt = gt_of([row(10, delta="up", state="white"), row(20, delta="up", state="white"),
                row(30, delta="flat", state="even"), row(40, delta="down", state="black")])
    pred = [row(10, delta="up", state="white"), row(20, delta="flat", state="white"),
            row(30, delta="flat", state="black")]  # gt 40 unmatched: its class is not counted
    rec = J.judge(gt, answer_of(pred))
    # delta: up 1/2, flat 1/1 -> (0.5 + 1) / 2
    assert rec["t2_macro_acc"] == pytest.approx(0.75)
    assert rec["t2_per_class"] == {"flat": [1, 1], "up": [1, 2]}
    # state: white 2/2, even 0/1 -> 0.5
    assert rec["t3_macro_acc"] == pytest.approx(0.5)


def test_unmatched_rows_do_not_touch_t2_t3(J):
    gt = gt_of([row(10, delta="up")])
    base = J.judge(gt, answer_of([row(10, delta="up")]))
    more = J.judge(gt, answer_of([row(10, delta="up"), row(50, delta="down", state="black")]))
    assert base["t2_macro_acc"] == more["t2_macro_acc"] == 1.0


def test_t2_t3_none_without_matches_and_zero_in_reward(J):
    gt = gt_of([row(10)])
    rec = J.judge(gt, answer_of([row(100)]))
    assert rec["t2_macro_acc"] is None and rec["t3_macro_acc"] is None
    assert J.reward_of(rec) == {"reward": 0.0, "t1_f1": 0.0, "t2_macro_acc": 0.0, "t3_macro_acc": 0.0}


def test_strict_reward_needs_delta_and_state(J):
    gt = gt_of([row(10, delta="up", state="white"), row(20, delta="down", state="black")])
    pred = [row(10, delta="up", state="white"), row(20, delta="down", state="white")]
    rec = J.judge(gt, answer_of(pred))
    assert rec["t1_f1"] == 1.0 and rec["n_matched_strict"] == 1 and rec["reward"] == 0.5


def test_strict_matching_is_its_own_matching(J):
    # T1 pairs pred 10.5 with gt 10 (wrong delta), but the strict matching may pair it elsewhere.
    gt = gt_of([row(10, delta="flat"), row(12, delta="up")])
    pred = [row(11, delta="up")]
    rec = J.judge(gt, answer_of(pred))
    assert rec["n_matched"] == 1 and rec["n_matched_strict"] == 1


def test_empty_answer_against_events_is_zero_not_error(J):
    rec = J.judge(gt_of([row(10)]), {"events": []})
    assert rec["format_error"] is None and rec["t1_f1"] == 0.0 and rec["n_pred"] == 0


def test_empty_gt_and_empty_answer_is_one(J):
    rec = J.judge(gt_of([]), {"events": []})
    assert rec["t1_f1"] == 1.0 and rec["reward"] == 1.0 and rec["t2_macro_acc"] is None


def test_non_default_tolerance_is_marked_diagnostic(J):
    rec = J.judge(gt_of([row(10)]), answer_of([row(14)]), tolerance=5)
    assert rec["diagnostic"] is True and rec["n_matched"] == 1
    assert J.judge(gt_of([row(10)]), answer_of([row(14)]))["diagnostic"] is False


def test_extra_keys_in_rows_and_root_are_ignored(J):
    gt = gt_of([row(10)])
    ans = {"events": [dict(row(10), note="looks like a pawn push")], "comment": "done"}
    assert J.judge(gt, ans)["reward"] == 1.0


def test_oracle_answer_is_gt_projection(J):
    gt = gt_of([row(10, delta="up", state="white", v_before=0.4, v_after=0.7)])
    ans = J.oracle_answer(gt)
    assert set(ans["events"][0]) == {"t", "type", "actor", "where", "delta", "state"}
    assert J.judge(gt, ans)["reward"] == 1.0


# ---------------------------------------------------------------- bad answers: 0.0 with a reason

BAD_ANSWERS = {
    "not json": b"the events are: e4, e5",
    "empty file": b"",
    "whitespace": b"   \n",
    "json array": b"[]",
    "json scalar": b"0.5",
    "wrong root key": b'{"rows": []}',
    "events not list": b'{"events": {"t": 1}}',
    "row not object": b'{"events": [1]}',
    "row missing field": json.dumps({"events": [{k: v for k, v in row(1).items() if k != "where"}]}).encode(),
    "t string": json.dumps({"events": [dict(row(1), t="1.0")]}).encode(),
    "t bool": json.dumps({"events": [dict(row(1), t=True)]}).encode(),
    "t negative": json.dumps({"events": [dict(row(1), t=-1)]}).encode(),
    "t NaN": b'{"events": [{"t": NaN, "type": "move", "actor": "white", "where": "e4", "delta": "flat", "state": "even"}]}',
    "t Infinity": b'{"events": [{"t": Infinity, "type": "move", "actor": "white", "where": "e4", "delta": "flat", "state": "even"}]}',
    "t 1e999": b'{"events": [{"t": 1e999, "type": "move", "actor": "white", "where": "e4", "delta": "flat", "state": "even"}]}',
    "type not in vocabulary": json.dumps({"events": [row(1, type_="blunder")]}).encode(),
    "actor not a side": json.dumps({"events": [row(1, actor="red")]}).encode(),
    "delta unknown": json.dumps({"events": [row(1, delta="sideways")]}).encode(),
    "state unknown": json.dumps({"events": [row(1, state="draw")]}).encode(),
    "where number": json.dumps({"events": [dict(row(1), where=44)]}).encode(),
    "type null": json.dumps({"events": [dict(row(1), type_=None)]}).encode().replace(b'"type_": null', b'"type": null'),
    "long text": json.dumps({"events": [row(1, where="x" * 1000)]}).encode(),
    "deep nesting": b'{"events": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "too many rows": json.dumps({"events": [row(i % 500) for i in range(10_001)]}).encode(),
    "not utf8": b'{"events": [], "x": "\xff\xfe"}',
}


@pytest.mark.parametrize("name", sorted(BAD_ANSWERS))
def test_bad_answers_score_zero_with_reason(J, name):
    gt = gt_of([row(1), row(10)])
    rec = J.judge(gt, BAD_ANSWERS[name])
    assert rec["format_error"], name
    assert rec["reward"] == rec["t1_f1"] == 0.0 and rec["t2_macro_acc"] is None
    assert all(math.isfinite(v) for v in J.reward_of(rec).values())


def test_million_rows_rejected_quickly(J):
    data = b'{"events": [' + b",".join([b'{"t":1,"type":"move","actor":"white","where":"e4","delta":"flat","state":"even"}'] * 1_000_000) + b"]}"
    if len(data) <= J.MAX_ANSWER_BYTES:
        pytest.fail("a million rows should exceed the byte cap too")
    rec = J.judge(gt_of([row(1)]), data)
    assert "bytes" in rec["format_error"]


def test_hundred_megabyte_file_rejected_without_reading(J, tmp_path):
    big = tmp_path / "answer.json"
    with open(big, "wb") as fh:
        fh.truncate(100 * 1024 * 1024)
    gt_path = tmp_path / "gt.json"
    gt_path.write_text(json.dumps(gt_of([row(1)])))
    rec = J.judge_files(gt_path, big)
    assert rec["format_error"].startswith("answer is 104857600 bytes")


def test_missing_answer_file_scores_zero(J, tmp_path):
    gt_path = tmp_path / "gt.json"
    gt_path.write_text(json.dumps(gt_of([row(1)])))
    rec = J.judge_files(gt_path, tmp_path / "nope.json")
    assert rec["format_error"].startswith("no answer file") and rec["reward"] == 0.0
    rec = J.judge_files(gt_path, tmp_path)  # a directory
    assert "not a regular file" in rec["format_error"]


def test_malformed_ground_truth_raises(J):
    gt = gt_of([row(1)])
    del gt["spec"]
    with pytest.raises(J.GroundTruthError):
        J.judge(gt, {"events": []})
    gt = gt_of([row(1)])
    gt["events"][0]["v_after"] = float("nan")
    with pytest.raises(J.GroundTruthError):
        J.judge(gt, {"events": []})


# ---------------------------------------------------------------- matching is optimal: brute force

def _brute(pred, gt, key_fields, tol):
    best = (0, 0.0)
    cand = [(i, j) for i in range(len(pred)) for j in range(len(gt))
            if all(pred[i][f] == gt[j][f] for f in key_fields) and abs(pred[i]["t"] - gt[j]["t"]) <= tol + 1e-9]
    for r in range(len(cand), 0, -1):
        for combo in itertools.combinations(cand, r):
            if len({i for i, _ in combo}) == r and len({j for _, j in combo}) == r:
                cost = sum(abs(pred[i]["t"] - gt[j]["t"]) for i, j in combo)
                if (r, -cost) > (best[0], -best[1]):
                    best = (r, cost)
        if best[0] == r:
            break
    return best


def test_matching_equals_brute_force_on_random_small_cases(J):
    rng = random.Random(7)
    for _ in range(400):
        def rows(n):
            return [{"t": round(rng.uniform(0, 12), 1), "type": rng.choice(["move", "check"]),
                     "actor": "white", "where": rng.choice(["e4", "d4"]), "delta": "flat", "state": "even"}
                    for _ in range(n)]
        pred, gt = rows(rng.randint(0, 5)), rows(rng.randint(0, 5))
        pairs = J.match_rows(pred, gt, J.T1_KEY, 3.0)
        got = (len(pairs), sum(abs(pred[i]["t"] - gt[j]["t"]) for i, j in pairs))
        want = _brute(pred, gt, J.T1_KEY, 3.0)
        assert got[0] == want[0] and got[1] == pytest.approx(want[1]), (pred, gt)
        assert len({i for i, _ in pairs}) == len(pairs) == len({j for _, j in pairs})


# ---------------------------------------------------------------- properties (hypothesis)

TYPES, SIDES, WHERES = SPEC["event_types"], SPEC["sides"], ["e4", "d5", ""]


@st.composite
def gt_rows(draw, max_rows=25, min_gap=6.0):
    """GT rows as a real match has them: rows with the same key are more than `min_gap` s apart."""
    n = draw(st.integers(0, max_rows))
    rows, last = [], {}
    for _ in range(n):
        key = (draw(st.sampled_from(TYPES)), draw(st.sampled_from(SIDES)), draw(st.sampled_from(WHERES)))
        t = draw(st.floats(0, 2000, allow_nan=False)).__round__(1)
        if any(abs(t - u) <= min_gap for u in last.get(key, [])):
            continue
        last.setdefault(key, []).append(t)
        rows.append(row(t, *key, draw(st.sampled_from(["up", "down", "flat"])),
                        draw(st.sampled_from(["white", "black", "even"]))))
    return rows


@st.composite
def pred_rows(draw, max_rows=25):
    n = draw(st.integers(0, max_rows))
    return [row(draw(st.floats(0, 2000, allow_nan=False)).__round__(1), draw(st.sampled_from(TYPES)),
                draw(st.sampled_from(SIDES)), draw(st.sampled_from(WHERES)),
                draw(st.sampled_from(["up", "down", "flat"])), draw(st.sampled_from(["white", "black", "even"])))
            for _ in range(n)]


FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
METRICS = ("t1_f1", "t2_macro_acc", "t3_macro_acc", "reward")


@FAST
@given(gt_rows())
def test_property_projection_scores_one_on_every_metric(J, rows):
    gt = gt_of(rows)
    rec = J.judge(gt, J.oracle_answer(gt))
    assert rec["t1_f1"] == rec["reward"] == 1.0
    if rows:
        assert rec["t2_macro_acc"] == rec["t3_macro_acc"] == 1.0


@FAST
@given(gt_rows(min_gap=12.0), st.one_of(st.floats(3.01, 8.99), st.floats(2100, 5000)), st.booleans())
def test_property_shift_beyond_tolerance_gives_t1_zero(J, rows, shift, later):
    # Same-key rows are > 12 s apart, so a row shifted by 3..9 s (or past the match) cannot land
    # within 3 s of another true row with its key.
    gt = gt_of(rows)
    moved = [dict(r, t=r["t"] + shift if later else max(0.0, r["t"] - shift) if shift < 9 else r["t"] + shift)
             for r in rows if later or shift >= 9 or r["t"] - shift >= 0]
    rec = J.judge(gt, answer_of(moved))
    assert rec["n_matched"] == 0 and rec["n_matched_strict"] == 0
    assert rec["t1_f1"] == 0.0 or not rows


@FAST
@given(gt_rows(), pred_rows(), st.randoms(use_true_random=False))
def test_property_row_order_never_matters(J, g, p, rnd):
    gt = gt_of(g)
    shuffled_p, shuffled_g = p[:], g[:]
    rnd.shuffle(shuffled_p)
    rnd.shuffle(shuffled_g)
    a, b = J.judge(gt, answer_of(p)), J.judge(gt_of(shuffled_g), answer_of(shuffled_p))
    assert all(a[m] == b[m] for m in METRICS + ("n_matched", "n_matched_strict"))


@FAST
@given(gt_rows(), pred_rows(), st.data())
def test_property_duplicating_predicted_rows_never_raises_a_score(J, g, p, data):
    if not p:
        return
    gt = gt_of(g)
    dup_idx = data.draw(st.lists(st.integers(0, len(p) - 1), min_size=1, max_size=len(p)))
    before = J.judge(gt, answer_of(p))
    after = J.judge(gt, answer_of(p + [p[i] for i in dup_idx]))
    for m in METRICS:
        if before[m] is not None and after[m] is not None:
            assert after[m] <= before[m] + 1e-12, m


@FAST
@given(gt_rows(), pred_rows(), pred_rows())
def test_property_t2_t3_ignore_unmatched_rows(J, g, p, extra):
    gt = gt_of(g)
    base = J.judge(gt, answer_of(p))
    # Extra rows far outside the match (t > 5000) can never match anything.
    far = [dict(r, t=r["t"] + 5000) for r in extra]
    more = J.judge(gt, answer_of(p + far))
    assert base["matches"] == more["matches"]
    assert (base["t2_macro_acc"], base["t3_macro_acc"]) == (more["t2_macro_acc"], more["t3_macro_acc"])


@FAST
@given(gt_rows(), pred_rows())
def test_property_scores_in_range_and_strict_below_t1(J, g, p):
    rec = J.judge(gt_of(g), answer_of(p))
    for m in METRICS:
        assert rec[m] is None or 0.0 <= rec[m] <= 1.0
    assert rec["n_matched_strict"] <= rec["n_matched"]
    assert rec["reward"] <= rec["t1_f1"] + 1e-12


# ---------------------------------------------------------------- the fast judge is the 1.0.0 judge

import judge_reference as REF  # noqa: E402


@st.composite
def crowded_rows(draw, max_rows=30):
    """Rows of few keys in a short span: long chains of rows under 3 s apart, equal times, ties."""
    n = draw(st.integers(0, max_rows))
    span = draw(st.sampled_from([5.0, 20.0, 200.0]))
    return [row(draw(st.floats(0, span, allow_nan=False)).__round__(draw(st.sampled_from([0, 1, 2]))),
                draw(st.sampled_from(TYPES[:2])), draw(st.sampled_from(SIDES)), draw(st.sampled_from(["e4", ""])),
                draw(st.sampled_from(["up", "down", "flat"])), draw(st.sampled_from(["white", "black", "even"])))
            for _ in range(n)]


def _ref_record(gt_rows_, pred_rows_, tol):
    """T1 and strict pairs of the frozen reference."""
    return REF.match_rows(pred_rows_, gt_rows_, J_T1, tol), REF.match_rows(pred_rows_, gt_rows_, J_STRICT, tol)


J_T1, J_STRICT = ("type", "actor", "where"), ("type", "actor", "where", "delta", "state")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(crowded_rows(), gt_rows()), st.one_of(crowded_rows(), pred_rows()),
       st.sampled_from([3.0, 0.0, 1.0, 0.25, 10.0]))
def test_property_matching_is_the_reference_matching(J, g, p, tol):
    """Same pairs as judge 1.0.0, for T1 and the strict key, ties included, at any tolerance."""
    t1, strict = _ref_record(g, p, tol)
    gt = gt_of(g)
    rec = J.judge(gt, answer_of(p), tolerance=tol)
    assert [tuple(m) for m in rec["matches"]] == t1
    assert rec["n_matched_strict"] == len(strict)
    pred_t, _ = J._parse_answer(answer_of(p), gt["spec"])
    assert J._match_both(pred_t, J._gt_rows(gt), tol) == (t1, strict)
    norm_p, _ = J.check_rows(p, gt["spec"])
    norm_g, _ = J.check_rows(g, gt["spec"])
    assert J.match_rows(norm_p, norm_g, J.T1_KEY, tol) == t1
    assert J.match_rows(norm_p, norm_g, J.STRICT_KEY, tol) == strict


odd_text = st.one_of(st.sampled_from(["move", " Move ", "MOVE", "capture\n", "white", " BLACK", "e4", "E4 ", "",
                                      "up", "Flat", "even", "x" * 200, "y" * 201, " " + "z" * 200, "\u00c9", "ﬁ",
                                      0, True, None, ["move"]]),
                     st.text(max_size=6))
odd_t = st.one_of(st.sampled_from([math.inf, -math.inf, math.nan, -0.0, 0, 10 ** 400, 2 ** 53, 2 ** 53 + 1, -1, True,
                                    False, "3", None, [1]]),
                  st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 2 ** 60))
ODD = {"t": odd_t, "type": odd_text, "actor": odd_text, "where": odd_text, "delta": odd_text, "state": odd_text}


@st.composite
def odd_row(draw):
    """A good row with zero to two fields replaced or dropped, or something that is not a row."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.one_of(st.lists(st.integers(), max_size=2), st.text(max_size=3), st.none()))
    r = row(draw(st.floats(0, 99)), draw(st.sampled_from(TYPES)), draw(st.sampled_from(SIDES)),
            draw(st.sampled_from(["e4", " D5"])), draw(st.sampled_from(["up", "flat"])), draw(st.sampled_from(["even", "white"])))
    for f in draw(st.lists(st.sampled_from(sorted(ODD)), max_size=2)):
        if draw(st.booleans()):
            r[f] = draw(ODD[f])
        else:
            r.pop(f, None)
    return r


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(odd_row(), max_size=12))
def test_property_row_checks_are_the_reference_checks(J, rows):
    """The fast path takes exactly the rows the 1.0.0 checks took, normalised the same, and stops at
    the same first bad row."""
    got, err = J.check_rows(rows, SPEC)
    want, want_err = REF.check_rows(rows, SPEC)
    assert (err is None) == (want_err is None), (err, want_err)
    if err is None:
        assert got == want
        assert all(type(r["t"]) is float for r in got)
    else:
        assert err.startswith(want_err + ":") or err.startswith(want_err + " "), (err, want_err)


# ---------------------------------------------------------------- fuzz: the judge never raises

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30)

row_like = st.fixed_dictionaries({}, optional={f: json_values for f in ("t", "type", "actor", "where", "delta", "state")})


@settings(max_examples=1500, deadline=None)
@given(st.one_of(
    json_values,
    st.fixed_dictionaries({"events": st.lists(st.one_of(row_like, json_values), max_size=8)}),
    st.binary(max_size=200),
    st.text(max_size=200),
))
def test_fuzz_judge_never_raises_on_any_answer(J, answer):
    gt = gt_of([row(1), row(10, "capture", "black", "d5", "up", "black")])
    payload = answer if isinstance(answer, (bytes, str)) else answer
    rec = J.judge(gt, payload)
    assert set(J.reward_of(rec)) == set(METRICS)
    assert all(math.isfinite(v) for v in J.reward_of(rec).values())
    if rec["format_error"] is None:
        assert isinstance(payload, dict) or json.loads(payload if isinstance(payload, str) else payload.decode("utf-8-sig"))


# ---------------------------------------------------------------- the CLI, as Harbor's test.sh runs it

def _py311():
    """A Python 3.11 (the Harbor image's version): python3.11 on PATH, else one that pyenv manages."""
    import glob
    import shutil
    cands = [shutil.which("python3.11")]
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
    except OSError:
        root = ""
    if root:
        cands += sorted(glob.glob(os.path.join(root, "versions", "3.11*", "bin", "python3.11")))
    for cand in filter(None, cands):
        out = subprocess.run([cand, "--version"], capture_output=True, text=True)
        if out.returncode == 0 and "3.11" in out.stdout + out.stderr:
            return cand
    return None


def test_cli_runs_outside_the_package_on_python_311(tmp_path):
    py = _py311()
    if py is None:
        pytest.skip("no Python 3.11 on this machine")
    gt = gt_of([row(10)])
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "answer.json").write_text(json.dumps(answer_of(gt["events"])))
    import shutil
    shutil.copy(JUDGE_FILE, tmp_path / "judge.py")
    out = subprocess.run([py, "-I", "judge.py", "gt.json", "answer.json", "--reward-json", "v/reward.json"],
                         cwd=tmp_path, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["reward"] == 1.0
    assert json.loads((tmp_path / "v" / "reward.json").read_text()) == {
        "reward": 1.0, "t1_f1": 1.0, "t2_macro_acc": 1.0, "t3_macro_acc": 1.0}
    assert json.loads((tmp_path / "v" / "judge.json").read_text())["n_matched"] == 1
    assert subprocess.run([py, "-I", "judge.py", "--help"], cwd=tmp_path, capture_output=True).returncode == 0


def test_cli_bad_answer_still_writes_finite_zero_reward(tmp_path):
    (tmp_path / "gt.json").write_text(json.dumps(gt_of([row(10)])))
    (tmp_path / "answer.json").write_text("{not json")
    out = subprocess.run([sys.executable, str(JUDGE_FILE), "gt.json", "answer.json", "--reward-json", "reward.json"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0
    assert json.loads((tmp_path / "reward.json").read_text()) == {
        "reward": 0.0, "t1_f1": 0.0, "t2_macro_acc": 0.0, "t3_macro_acc": 0.0}


def test_cli_broken_ground_truth_writes_no_reward_and_exits_2(tmp_path):
    (tmp_path / "gt.json").write_text("{}")
    (tmp_path / "answer.json").write_text('{"events": []}')
    out = subprocess.run([sys.executable, str(JUDGE_FILE), "gt.json", "answer.json", "--reward-json", "reward.json"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 2 and "format" in out.stderr
    assert not (tmp_path / "reward.json").exists()  # a harness bug is missing, never 0.0


# ---------------------------------------------------------------- edges: huge numbers, tolerance, files

@pytest.mark.parametrize("field", ["t", "v_before", "v_after"])
def test_ground_truth_number_too_large_for_a_float_is_a_ground_truth_error(J, tmp_path, field):
    text = json.dumps(gt_of([row(10)])).replace(f'"{field}": {10 if field == "t" else 0.5}', f'"{field}": {10 ** 400}')
    assert str(10 ** 400) in text
    (tmp_path / "gt.json").write_text(text)
    with pytest.raises(J.GroundTruthError, match="finite"):
        J.load_gt(tmp_path / "gt.json")


def test_answer_number_too_large_for_a_float_is_a_format_error(J):
    rec = J.judge(gt_of([row(10)]), ('{"events": [{"t": %d, "type": "move", "actor": "white", "where": "e4", '
                                     '"delta": "flat", "state": "even"}]}' % 10 ** 400).encode())
    assert "'t' must be a finite number" in rec["format_error"] and rec["reward"] == 0.0
    assert len(rec["format_error"]) < 200  # the 401-digit number is not pasted whole


@pytest.mark.parametrize("tol", [float("nan"), float("inf"), -1.0, 10 ** 400, "3", True, None])
def test_bad_tolerance_is_refused_everywhere(J, tmp_path, tol):
    gt = gt_of([row(10)])
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    with pytest.raises(ValueError, match="tolerance"):
        J.judge(gt, answer_of(gt["events"]), tolerance=tol)
    with pytest.raises(ValueError, match="tolerance"):  # even when the answer file is missing
        J.judge_files(tmp_path / "gt.json", tmp_path / "missing.json", tolerance=tol)


@pytest.mark.parametrize("tol", ["nan", "inf", "-inf", "-0.5", "three"])
def test_cli_refuses_a_bad_tolerance_in_one_line(tmp_path, tol):
    gt = gt_of([row(10)])
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "answer.json").write_text(json.dumps(answer_of(gt["events"])))
    out = subprocess.run([sys.executable, str(JUDGE_FILE), "gt.json", "answer.json", f"--tolerance={tol}",
                          "--reward-json", "reward.json"], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "--tolerance must be a finite number" in out.stderr
    assert not (tmp_path / "reward.json").exists()


def test_cli_reward_json_naming_a_folder_is_a_clear_error(tmp_path):
    gt = gt_of([row(10)])
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "answer.json").write_text(json.dumps(answer_of(gt["events"])))
    (tmp_path / "out").mkdir()
    for target in ("out", "newdir/"):
        out = subprocess.run([sys.executable, str(JUDGE_FILE), "gt.json", "answer.json", "--reward-json", target],
                             cwd=tmp_path, capture_output=True, text=True)
        assert out.returncode == 2 and "Traceback" not in out.stderr
        assert out.stderr.count("\n") == 1 and "is a folder" in out.stderr and "reward.json" in out.stderr
    assert list((tmp_path / "out").iterdir()) == [] and not (tmp_path / "newdir").exists()
    # a file where its folder should be: unwritable even for root
    out = subprocess.run([sys.executable, str(JUDGE_FILE), "gt.json", "answer.json", "--reward-json",
                          "answer.json/sub/reward.json"], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.count("\n") == 1 and "cannot write --reward-json" in out.stderr


def test_symlinked_answer_is_followed_only_when_asked(J, tmp_path):
    gt = gt_of([row(10)])
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "real.json").write_text(json.dumps(answer_of(gt["events"])))
    (tmp_path / "answer.json").symlink_to(tmp_path / "real.json")
    assert J.judge_files(tmp_path / "gt.json", tmp_path / "answer.json")["reward"] == 1.0
    rec = J.judge_files(tmp_path / "gt.json", tmp_path / "answer.json", follow_symlinks=False)
    assert rec["reward"] == 0.0 and "symlink" in rec["format_error"]
    data, reason, kind = J.read_answer_file(str(tmp_path / "answer.json"), follow_symlinks=False)
    assert (data, kind) == (None, "not_regular")


def test_answer_read_is_bounded_even_if_the_file_grows_after_the_size_check(J, tmp_path, monkeypatch):
    big = tmp_path / "answer.json"
    big.write_bytes(b" " * (J.MAX_ANSWER_BYTES + 5 * 1024 * 1024))
    real_fstat, real_read = J.os.fstat, J.os.read
    read_total = []

    class Small:  # fstat as it was before the file grew
        def __init__(self, st):
            self.st_mode, self.st_size = st.st_mode, 10

    def read(fd, n):
        data = real_read(fd, n)
        read_total.append(len(data))
        return data

    monkeypatch.setattr(J.os, "fstat", lambda fd: Small(real_fstat(fd)))
    monkeypatch.setattr(J.os, "read", read)
    data, reason, kind = J.read_answer_file(str(big))
    assert data is None and kind == "too_large" and "more than" in reason
    assert sum(read_total) == J.MAX_ANSWER_BYTES + 1


# ---------------------------------------------------------------- the names the rest of the toolkit reads

#: Source files outside judge/, tests and docs that still spell a metric name themselves: the Harbor
#: verifier's copy of the reward keys (used only when the judge itself cannot be loaded, held equal
#: below) and the baselines' runner, whose bytes are an input of docs/RESULTS.md (its inputs digest:
#: editing it needs a regenerated doc).  Everything else reads the judge's REWARD_KEYS, through
#: video_arena/scoring/metrics.py (the score tables, the explorer's template context) or the judge
#: module (the Harbor templates' render context).  This list only shrinks.
SPELL_METRIC_NAMES = {"harbor_templates/tests/score_harbor.py"}
#: the directories (and the top-level scripts) whose source is searched, and the kinds of file read
SOURCE_TOPS = ("video_arena", "harbor_templates", "agents", "benchmarks", "scripts", "image")
SOURCE_SUFFIXES = {".py", ".j2", ".sh", ".toml", ".cfg", ".json", ".md", ".txt", ".css", ".js", ".html"}


def test_the_reward_keys_are_the_judges(J):
    import importlib.util

    assert tuple(J.reward_of(J.judge(gt_of([row(10)]), answer_of([])))) == J.REWARD_KEYS
    spec = importlib.util.spec_from_file_location("score_harbor_copy",
                                                  REPO / "harbor_templates" / "tests" / "score_harbor.py")
    verifier = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(verifier)
    assert verifier.REWARD_KEYS == J.REWARD_KEYS

    from video_arena.harbor.generate import template_env
    from video_arena.protocol_b import states
    from video_arena.scoring import caveats as CV
    from video_arena.scoring import cells as SC

    assert SC.METRICS == J.REWARD_KEYS == tuple(SC.LABELS)
    assert states.MAX_ANSWER_BYTES == CV.MAX_ANSWER_BYTES == J.MAX_ANSWER_BYTES
    assert json.loads(template_env().globals["zero_reward_json"]) == dict.fromkeys(J.REWARD_KEYS, 0.0)


def test_metric_names_are_spelled_only_where_listed(J):
    names = [k for k in J.REWARD_KEYS if "_" in k]  # "reward" alone is an everyday word
    assert len(names) == len(J.REWARD_KEYS) - 1
    sources = [p for top in SOURCE_TOPS for p in (REPO / top).rglob("*")
               if p.suffix in SOURCE_SUFFIXES and p.is_file()] + list(REPO.glob("*.py"))
    found = {p.relative_to(REPO).as_posix() for p in sources
             if any(n in p.read_text(encoding="utf-8", errors="replace") for n in names)}
    assert found == SPELL_METRIC_NAMES, (sorted(found - SPELL_METRIC_NAMES), sorted(SPELL_METRIC_NAMES - found))
