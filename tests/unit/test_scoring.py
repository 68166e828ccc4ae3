"""The scorer: missing vs 0.0, the 0-row column, mean of game means, dropped games, compare on the
shared set, bootstrap intervals, outputs, diagnostics, bad inputs, and docs/SCORING.md's worked example.

Every results folder here is made by hand in tmp_path against a small tasks tree, so each expected
number can be computed in the test itself.
"""
from __future__ import annotations

import csv
import json
import re
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from video_arena.paths import REPO_ROOT
from video_arena.scoring import cli
from video_arena.scoring import cells as SC
from video_arena.scoring import scorer as S
from video_arena.scoring import statistics as SS
from video_arena.core.judge_loader import load_judge

J = load_judge()

from scoring_helpers import EVENTS, FIELDS, GAME_TOML, gt_doc, make_tasks, runner_digests  # noqa: E402
from video_arena.core.results import ANSWER_DIGEST_STATES  # noqa: E402
from video_arena.digests import sha256_bytes  # noqa: E402


def oracle() -> dict:
    return {"events": [{k: e[k] for k in FIELDS} for e in EVENTS]}


def half() -> dict:
    """Two of four events exactly right: every F1 = 2*2/(2+4) = 2/3, T2 = T3 = 1.0."""
    return {"events": oracle()["events"][:2]}


def shifted() -> dict:
    """Every row 5 s late: no T1 pair; reward = t1 = 0, T2/T3 not computable."""
    return {"events": [dict(r, t=r["t"] + 5) for r in oracle()["events"]]}


def cell(results: Path, game: str, case_id: str, answer: dict | bytes | None, *, protocol="B",
         answer_state="wrote", stop_reason="completed", model="m1", run: dict | None | str = "default",
         **extra) -> Path:
    d = results / game / case_id
    d.mkdir(parents=True, exist_ok=True)
    if answer is not None:
        (d / "answer.json").write_bytes(answer if isinstance(answer, bytes) else json.dumps(answer).encode())
    if run == "default":
        # the digests the runners write into every record (answer_sha256: the answer's, for the states
        # that name one), unless the test names its own
        digests = runner_digests(protocol) if protocol in ("A", "B") else {}
        if answer_state in ANSWER_DIGEST_STATES:  # the answer's (a stand-in when the test removed it)
            digests["answer_sha256"] = sha256_bytes((d / "answer.json").read_bytes() if answer is not None
                                                    else b"an answer removed after the run")
        run = {"protocol": protocol, "model": model, "game": game, "case_id": case_id,
               "stop_reason": stop_reason, "answer_state": answer_state, **digests, **extra}
    if isinstance(run, dict):
        (d / "run.json").write_text(json.dumps(run))
    elif isinstance(run, str):
        (d / "run.json").write_text(run)
    return d


@pytest.fixture
def tree(tmp_path):
    tasks = tmp_path / "tasks"
    ids = make_tasks(tasks, {"chess": 4, "go": 2, "gomoku": 2})
    return tmp_path, tasks, ids


def score(results, tasks, **kw):
    kw.setdefault("n_boot", 200)
    kw.setdefault("progress", False)
    kw.setdefault("verify_requests", False)  # the fixture cells carry no receipts (verification: its own tests)
    return S.score_results(results, tasks, **kw)


# ------------------------------------------------------------------------------------------------
# cells: missing vs 0.0
# ------------------------------------------------------------------------------------------------
def test_missing_is_not_zero_and_never_wrote_is_zero(tree):
    tmp, tasks, ids = tree
    res = tmp / "res"
    c = ids["chess"]
    cell(res, "chess", c[0], oracle())                                          # 1.0
    cell(res, "chess", c[1], {"events": []}, answer_state="never_wrote")        # 0.0, 0-row
    cell(res, "chess", c[2], None, stop_reason="harness_error")                 # never ran: missing
    (res / "chess" / c[3] / "logs").mkdir(parents=True)                         # killed before run.json: missing
    s = score(res, tasks)
    g = s.games["chess"]
    assert (g.n_scored, g.n_cases) == (2, 4)
    assert g.counts["missing"] == 2
    assert g.counts["zero_rows"] == 1
    assert g.counts["format_error"] == 0  # a never_wrote cell is not a format error
    assert g.means["reward"] == pytest.approx(0.5)  # (1 + 0) / 2, not (1 + 0 + 0 + 0) / 4
    status = {cl.case_id: cl.status for cl in g.cells}
    assert status == {c[0]: "scored", c[1]: "scored", c[2]: "missing", c[3]: "missing"}


def test_an_answer_without_its_run_record_is_an_integrity_error_never_missing(tree):
    """Deleting (or breaking) a finished cell's run.json must not turn it into a missing cell: that
    would drop it from the denominator.  The reverse (a run.json that says it left an answer, the
    answer gone) is the test below."""
    tmp, tasks, ids = tree
    res = tmp / "res"
    c = ids["chess"]
    cell(res, "chess", c[0], oracle())
    cell(res, "chess", c[1], {"events": []}, run=None)                          # run.json deleted
    cell(res, "chess", c[2], {"events": []}, run="{not json")                   # run.json damaged
    (res / "chess" / c[3] / "logs").mkdir(parents=True)                         # neither: missing
    s = score(res, tasks)
    by = {cl.case_id: cl for cl in s.games["chess"].cells}
    assert [by[x].status for x in c] == ["scored", "corrupt", "corrupt", "missing"]
    assert by[c[1]].reason.startswith("INTEGRITY: answer.json without a readable run.json (no run.json)")
    assert s.games["chess"].counts["missing"] == 1 and len(s.integrity_errors()) == 2
    rc = cli.main([str(res), "--tasks-root", str(tasks), "--quiet", "--bootstrap", "0", "--no-verify-requests"])
    assert rc == 1


def test_no_answer_states_score_zero_even_without_answer_file(tree):
    tmp, tasks, ids = tree
    res = tmp / "res"
    c = ids["chess"]
    cell(res, "chess", c[0], None, protocol="A", answer_state="no_answer")
    cell(res, "chess", c[1], None, answer_state="deleted")
    cell(res, "chess", c[2], None, answer_state="wrote")       # claims an answer, has none: an integrity error
    cell(res, "chess", c[3], oracle(), answer_state="never_wrote")  # the state decides, not stray bytes
    g = score(res, tasks).games["chess"]
    by = {cl.case_id: cl for cl in g.cells}
    assert by[c[0]].status == by[c[1]].status == by[c[3]].status == "scored"
    assert by[c[2]].status == "corrupt" and by[c[2]].reason.startswith("INTEGRITY: answer.json is missing")
    assert g.counts["zero_rows"] == 3 and g.means["reward"] == 0.0
    assert g.n["t2_macro_acc"] == 0 and g.means["t2_macro_acc"] is None


def test_malformed_answer_is_zero_with_format_error_and_empty_list_is_zero_row(tree):
    tmp, tasks, ids = tree
    res = tmp / "res"
    c = ids["chess"]
    cell(res, "chess", c[0], b"{not json")
    cell(res, "chess", c[1], {"events": []})
    cell(res, "chess", c[2], oracle())
    g = score(res, tasks).games["chess"]
    assert g.n_scored == 3 and g.counts["format_error"] == 1
    assert g.counts["zero_rows"] == 2  # the unparseable answer has no rows either
    assert g.means["reward"] == pytest.approx(1 / 3)


def test_unreadable_run_json_is_reported_not_a_crash(tree):
    tmp, tasks, ids = tree
    res = tmp / "res"
    c = ids["chess"]
    cell(res, "chess", c[0], oracle(), run="{truncated")
    cell(res, "chess", c[1], oracle(), run="[1, 2]")
    cell(res, "chess", c[2], oracle())
    cell(res, "chess", c[3], None, run="{truncated")
    s = score(res, tasks)
    g = s.games["chess"]
    # beside an answer it is an integrity error (never a missing cell); alone, a cell that never ran
    assert g.n_scored == 1 and g.counts["corrupt"] == 2 and g.counts["missing"] == 1
    assert any("run.json not JSON" in w for w in s.warnings)
    assert any("not a JSON object" in w for w in s.warnings)


def test_run_json_naming_another_case_is_missing(tree):
    tmp, tasks, ids = tree
    res = tmp / "res"
    c = ids["chess"]
    d = cell(res, "chess", c[0], oracle())
    run = json.loads((d / "run.json").read_text())
    run["case_id"] = c[1]
    (d / "run.json").write_text(json.dumps(run))
    g = score(res, tasks).games["chess"]
    assert g.n_scored == 0 and "names case_id" in g.cells[0].reason


def test_t2_t3_averaged_where_computable_with_own_n(tree):
    tmp, tasks, ids = tree
    res = tmp / "res"
    c = ids["chess"]
    cell(res, "chess", c[0], half())      # reward 2/3, t2 = t3 = 1.0
    cell(res, "chess", c[1], shifted())   # reward 0, t2/t3 None
    g = score(res, tasks).games["chess"]
    assert g.means["reward"] == pytest.approx(1 / 3)
    assert g.means["t1_f1"] == pytest.approx(1 / 3)
    assert g.n["reward"] == 2 and g.n["t2_macro_acc"] == 1
    assert g.means["t2_macro_acc"] == pytest.approx(1.0)
    assert g.harbor_means()["t2_macro_acc"] == pytest.approx(0.5)  # Harbor's zero-filled view


# ------------------------------------------------------------------------------------------------
# aggregation
# ------------------------------------------------------------------------------------------------
def test_overall_is_mean_of_game_means_and_failed_game_drops_out(tree):
    tmp, tasks, ids = tree
    res = tmp / "res"
    for cid in ids["chess"][:3]:
        cell(res, "chess", cid, half())                     # 2/3 each
    cell(res, "go", ids["go"][0], oracle())                 # 1.0
    for cid in ids["gomoku"]:
        cell(res, "gomoku", cid, oracle(), stop_reason="harness_error")  # every cell failed
    s = score(res, tasks)
    o = s.overall()
    assert o["games"] == ["chess", "go"]
    assert o["means"]["reward"] == pytest.approx((2 / 3 + 1.0) / 2)
    assert o["means"]["reward"] != pytest.approx((3 * 2 / 3 + 1.0) / 4)  # not the mean of cells
    assert s.dropped_games() == {"gomoku": "0/2 scored (2 missing)"}
    text = cli.format_system(s)
    assert "dropped from the overall mean: gomoku 0/2 scored" in text
    assert "3/4" in text and "1/2" in text and "0/2" in text


def test_game_without_cases_is_reported_not_scored(tmp_path):
    tasks = tmp_path / "tasks"
    ids = make_tasks(tasks, {"chess": 1, "cs2": 0})
    res = tmp_path / "res"
    cell(res, "chess", ids["chess"][0], oracle())
    s = score(res, tasks)
    assert s.no_case_games == ["cs2"] and "cs2" not in s.games
    assert "no cases in the tasks tree: cs2" in cli.format_system(s)


# ------------------------------------------------------------------------------------------------
# compare
# ------------------------------------------------------------------------------------------------
def _fill(res: Path, game: str, case_ids: list[str], answers: list[dict]):
    for cid, ans in zip(case_ids, answers):
        cell(res, game, cid, ans)


def test_compare_shared_set_inverts_env_means(tree):
    """Seed 000: an env-mean comparison can read < 1x where the shared-set comparison reads 2x.
    A scores chess 2/3 and go 0.0, never ran gomoku; B scores chess 1/3 and gomoku 1.0, go failed."""
    tmp, tasks, ids = tree
    a, b = tmp / "A", tmp / "B"
    _fill(a, "chess", ids["chess"][:2], [half(), half()])                 # 2/3
    _fill(a, "go", ids["go"], [shifted(), shifted()])                     # 0.0
    _fill(b, "chess", ids["chess"][:2], [half(), shifted()])              # 1/3
    for cid in ids["go"]:
        cell(b, "go", cid, oracle(), stop_reason="harness_error")         # missing
    _fill(b, "gomoku", ids["gomoku"], [oracle(), oracle()])               # 1.0
    sa, sb = score(a, tasks), score(b, tasks)
    own = sa.overall()["means"]["reward"] / sb.overall()["means"]["reward"]
    assert own == pytest.approx((1 / 3) / (2 / 3))  # 0.5x: A looks worse over each one's own games
    cmp = SS.compare(sa, sb)
    assert cmp["shared_games"] == ["chess"]
    assert cmp["dropped_games"] == {"go": "B: 0/2 scored", "gomoku": "A: 0/2 scored"}
    r = cmp["overall_shared"]["reward"]
    assert r["ratio"] == pytest.approx(2.0) and r["diff"] == pytest.approx(1 / 3)
    text = cli.format_compare(cmp)
    assert "shared games (a case scored by both): chess" in text
    assert "go (B: 0/2 scored)" in text and "gomoku (A: 0/2 scored)" in text
    assert "2.00x" in text and "not comparable" in text


def test_compare_paired_interval_and_refuses_mixed_tolerances(tree):
    tmp, tasks, ids = tree
    a, b = tmp / "A", tmp / "B"
    _fill(a, "chess", ids["chess"], [oracle(), half(), shifted(), half()])
    _fill(b, "chess", ids["chess"], [oracle(), half(), shifted(), half()])
    sa, sb = score(a, tasks), score(b, tasks)
    cmp = SS.compare(sa, sb)
    # identical systems, identical cases: the paired bootstrap difference is exactly 0
    assert cmp["games"]["chess"]["reward"]["diff_ci95"] == [0.0, 0.0]
    sd = score(b, tasks, tolerance=5.0)
    with pytest.raises(SC.ScoringInputError, match="cannot compare"):
        SS.compare(sa, sd)


def test_compare_is_on_the_cases_both_scored_paired_and_says_how_many(tree):
    """A scored chess cases 0-2, B cases 1-3: the comparison is over cases 1 and 2 only (each system's
    own game mean is over a different set), with a paired interval, and it says 2 paired, 1 left out
    on each side.  On the paired cases A and B answered the same: A-B = 0 exactly."""
    tmp, tasks, ids = tree
    a, b = tmp / "A", tmp / "B"
    c = ids["chess"]
    _fill(a, "chess", c[:3], [shifted(), half(), oracle()])        # case 0 is A's worst
    _fill(b, "chess", c[1:], [half(), oracle(), oracle()])         # case 3 is B's best
    sa, sb = score(a, tasks), score(b, tasks)
    assert sa.games["chess"].means["reward"] != pytest.approx(sb.games["chess"].means["reward"])
    cmp = SS.compare(sa, sb)
    e = cmp["games"]["chess"]
    assert (e["n_paired"], e["n_a_only"], e["n_b_only"]) == (2, 1, 1)
    assert e["reward"]["n_paired"] == 2
    assert e["reward"]["a"] == pytest.approx((2 / 3 + 1) / 2) == e["reward"]["b"]
    assert e["reward"]["diff"] == pytest.approx(0.0) and e["reward"]["diff_ci95"] == [0.0, 0.0]
    assert cmp["overall_shared"]["reward"]["diff"] == pytest.approx(0.0)
    assert (cmp["n_paired_cases"], cmp["n_a_only"], cmp["n_b_only"]) == (2, 1, 1)
    text = cli.format_compare(cmp)
    assert "paired: compared on the 2 case(s) both systems scored; left out: 1 scored by A only, 1 by B only" in text
    assert re.search(r"chess\s+2/4\s+1\s+1\s+0\.833\s+0\.833\s+\+0\.000", text), text
    # a game both scored, but on no common case, is dropped and named
    d = tmp / "D"
    _fill(d, "chess", c[3:], [oracle()])
    cmp2 = SS.compare(score(a, tasks), score(d, tasks))
    assert cmp2["shared_games"] == [] and "no case scored by both" in cmp2["dropped_games"]["chess"]


# ------------------------------------------------------------------------------------------------
# bootstrap
# ------------------------------------------------------------------------------------------------
def test_bootstrap_interval_contains_mean_and_is_deterministic(tree):
    tmp, tasks, ids = tree
    res = tmp / "res"
    _fill(res, "chess", ids["chess"], [oracle(), half(), shifted(), {"events": []}])
    s1 = score(res, tasks, n_boot=2000, seed=7)
    s2 = score(res, tasks, n_boot=2000, seed=7)
    s3 = score(res, tasks, n_boot=2000, seed=8)
    g = s1.games["chess"]
    lo, hi = g.ci["reward"]
    assert lo <= g.means["reward"] <= hi and lo < hi
    assert 0.0 <= lo and hi <= 1.0
    assert s2.games["chess"].ci == g.ci
    assert (s2.games["chess"].replicates["reward"] == g.replicates["reward"]).all()
    # another seed draws other resamples (with 4 cells the percentiles themselves may coincide)
    assert not (s3.games["chess"].replicates["reward"] == g.replicates["reward"]).all()
    olo, ohi = s1.overall()["ci95"]["reward"]
    assert olo <= s1.overall()["means"]["reward"] <= ohi
    # adding a game does not move chess's interval
    cell(res, "go", ids["go"][0], half())
    assert score(res, tasks, n_boot=2000, seed=7).games["chess"].ci == g.ci


def test_bootstrap_single_cell_and_disabled(tree):
    tmp, tasks, ids = tree
    res = tmp / "res"
    cell(res, "chess", ids["chess"][0], half())
    assert score(res, tasks).games["chess"].ci["reward"] == pytest.approx((2 / 3, 2 / 3))
    assert score(res, tasks, n_boot=0).games["chess"].ci["reward"] is None


# ------------------------------------------------------------------------------------------------
# diagnostics and provenance
# ------------------------------------------------------------------------------------------------
def test_cell_at_another_tolerance_is_refused_from_the_mean(tree, capsys):
    tmp, tasks, ids = tree
    res = tmp / "res"
    c = ids["chess"]
    cell(res, "chess", c[0], oracle())
    cell(res, "chess", c[1], shifted(), tolerance_s=6.0)                  # would match at 6 s
    cell(res, "chess", c[2], oracle(), condition={"tolerance": 3.0})      # says 3: fine
    g = score(res, tasks).games["chess"]
    by = {cl.case_id: cl for cl in g.cells}
    assert by[c[1]].status == "diagnostic" and "6 s tolerance" in by[c[1]].reason
    assert by[c[2]].status == "scored"
    assert g.n_scored == 2 and g.counts["diagnostic"] == 1 and g.means["reward"] == 1.0
    # a folder holding cells made for two tolerances is refused as mixed; --allow-mixed shows it
    assert cli.main([str(res), "--tasks-root", str(tasks), "--quiet", "--bootstrap", "50"]) == 2
    err = capsys.readouterr().err
    assert "tolerance_s: 3 s (1 cell) vs 6 s (1 cell)" in err or "tolerance_s: 6 s (1 cell) vs 3 s (1 cell)" in err
    assert cli.main([str(res), "--tasks-root", str(tasks), "--quiet", "--bootstrap", "50", "--allow-mixed"]) == 0
    out = capsys.readouterr().out
    assert f"excluded chess/{c[1]}: diagnostic" in out and "DIAGNOSTIC (--allow-mixed)" in out


def test_diagnostic_tolerance_run_is_labelled(tree, capsys):
    tmp, tasks, ids = tree
    res = tmp / "res"
    cell(res, "chess", ids["chess"][0], shifted(), tolerance_s=6.0)
    s = score(res, tasks, tolerance=6.0)
    assert s.diagnostic and s.games["chess"].means["reward"] == 1.0
    assert cli.main([str(res), "--tasks-root", str(tasks), "--quiet", "--tolerance", "6"]) == 0
    assert "DIAGNOSTIC" in capsys.readouterr().out


def test_verify_requests_excludes_mismatches(tree, monkeypatch):
    tmp, tasks, ids = tree
    res = tmp / "res"
    c = ids["chess"]
    cell(res, "chess", c[0], oracle(), protocol="A", answer_state="answered")
    bad = cell(res, "chess", c[1], oracle(), protocol="A", answer_state="answered")
    cell(res, "chess", c[2], oracle(), protocol="B")  # not a Protocol A cell: not verified
    seen = []

    def verify_cell(cell_dir, tasks_root, conditions=None):
        seen.append((Path(cell_dir).name, Path(tasks_root)))
        return (Path(cell_dir) != bad, "request sha256 does not rebuild")

    from video_arena.core import provenance

    monkeypatch.setattr(provenance, "verify_cell", verify_cell)
    g = score(res, tasks, verify_requests=True).games["chess"]
    assert sorted(n for n, _ in seen) == sorted([c[0], c[1]])
    assert seen[0][1] == tasks.resolve()
    by = {cl.case_id: cl for cl in g.cells}
    assert by[c[1]].status == "unverified" and "does not rebuild" in by[c[1]].reason
    assert g.n_scored == 2 and g.counts["unverified"] == 1


# ------------------------------------------------------------------------------------------------
# bad inputs
# ------------------------------------------------------------------------------------------------
def test_bad_inputs_are_clear_errors(tree, capsys):
    tmp, tasks, ids = tree
    base = ["--tasks-root", str(tasks), "--quiet"]
    assert cli.main([str(tmp / "nope")] + base) == 2
    assert "does not exist" in capsys.readouterr().err
    empty = tmp / "empty"
    empty.mkdir()
    assert cli.main([str(empty)] + base) == 2
    assert "is not a results folder" in capsys.readouterr().err
    res = tmp / "res"
    d = cell(res, "chess", ids["chess"][0], oracle())
    assert cli.main([str(d)] + base) == 2  # a cell folder, not a results folder
    assert "that is one cell's folder" in capsys.readouterr().err
    assert cli.main([str(res / "chess")] + base) == 2
    assert "that is one game's folder" in capsys.readouterr().err
    (res / "chesss").mkdir()
    assert cli.main([str(res)] + base) == 2
    err = capsys.readouterr().err
    assert "unknown game folder(s) chesss" in err and "chess, go, gomoku" in err
    (res / "chesss").rmdir()
    assert cli.main([str(res), "--tasks-root", str(tmp / "no-tasks"), "--quiet"]) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert cli.main([str(res), "--plot", str(tmp / "x.svg")] + base) == 2


def test_stray_case_folders_are_warned_and_ignored(tree):
    tmp, tasks, ids = tree
    res = tmp / "res"
    cell(res, "chess", ids["chess"][0], oracle())
    cell(res, "chess", "ZZZZZZZZ", oracle())
    s = score(res, tasks)
    assert s.games["chess"].n_scored == 1
    assert any("not cases of the tasks tree" in w and "ZZZZZZZZ" in w for w in s.warnings)


def test_unusable_ground_truth_counts_missing_and_exits_1(tree, capsys):
    tmp, tasks, ids = tree
    res = tmp / "res"
    c = ids["chess"]
    cell(res, "chess", c[0], oracle())
    cell(res, "chess", c[1], oracle())
    (tasks / "chess" / "gt" / f"{c[1]}.json").write_text('{"format": "wrong"}')
    (tasks / "chess" / "manifest.json").unlink()  # with a manifest this is an integrity error (test_scoring_caveats)
    assert cli.main([str(res), "--tasks-root", str(tasks), "--quiet", "--bootstrap", "0"]) == 1
    assert "ground truth is unusable" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------
# outputs
# ------------------------------------------------------------------------------------------------
def test_csv_json_plot_outputs(tree, capsys):
    tmp, tasks, ids = tree
    a, b = tmp / "A", tmp / "B"
    _fill(a, "chess", ids["chess"], [oracle(), half(), shifted(), {"events": []}])
    _fill(b, "chess", ids["chess"], [half(), half(), half(), half()])
    cell(a, "go", ids["go"][0], oracle())
    out = tmp / "out"
    rc = cli.main([str(a), "--tasks-root", str(tasks), "--compare", str(b), "--quiet", "--seed", "3",
                   "--csv", str(out / "g.csv"), "--cells-csv", str(out / "c.csv"),
                   "--json", str(out / "s.json"), "--plot", str(out / "p.png")])
    assert rc == 0
    rows = list(csv.DictReader((out / "g.csv").open()))
    chess_a = next(r for r in rows if r["system"] == "A" and r["game"] == "chess")
    assert chess_a["n_scored"] == "4" and chess_a["zero_rows"] == "1"  # the empty list; shifted has rows
    assert float(chess_a["reward"]) == pytest.approx((1 + 2 / 3 + 0 + 0) / 4)
    assert float(chess_a["reward_ci_lo"]) <= float(chess_a["reward"]) <= float(chess_a["reward_ci_hi"])
    overall_a = next(r for r in rows if r["system"] == "A" and r["game"] == "OVERALL")
    assert float(overall_a["reward"]) == pytest.approx(((5 / 3) / 4 + 1.0) / 2)
    cells = list(csv.DictReader((out / "c.csv").open()))
    assert len(cells) == 2 * (4 + 2 + 2)
    assert {c["status"] for c in cells} == {"scored", "missing"}
    doc = json.loads((out / "s.json").read_text())
    assert doc["format"] == "video-arena-score/1" and doc["tolerance_s"] == 3.0 and not doc["diagnostic"]
    assert doc["bootstrap"] == {"n": 2000, "seed": 3, "level": 0.95, "method": "percentile"}
    assert [s["label"] for s in doc["systems"]] == ["A", "B"]
    assert doc["compare"]["shared_games"] == ["chess"] and doc["compare"]["dropped_games"]["go"] == "B: 0/2 scored"
    assert doc["systems"][0]["games"]["chess"]["counts"]["zero_rows"] == 1
    png = (out / "p.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_judge_command_prints_record(tmp_path, capsys):
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(gt_doc("chess", "AAAAAAAA")))
    ans = tmp_path / "a.json"
    ans.write_text(json.dumps(half()))
    assert cli.judge_main([str(gt), str(ans)]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["reward"] == pytest.approx(2 / 3) and rec["matches"] == [[0, 0], [1, 1]]
    assert cli.judge_main([str(gt), str(tmp_path / "missing.json"), "--summary"]) == 0
    assert json.loads(capsys.readouterr().out) == {"reward": 0.0, "t1_f1": 0.0, "t2_macro_acc": 0.0, "t3_macro_acc": 0.0}
    assert cli.judge_main([str(tmp_path / "nogt.json"), str(ans)]) == 2


# ------------------------------------------------------------------------------------------------
# docs/SCORING.md's worked example, read from the page itself
# ------------------------------------------------------------------------------------------------
def _doc_block(name: str) -> dict:
    text = (REPO_ROOT / "docs" / "SCORING.md").read_text(encoding="utf-8")
    m = re.search(rf"<!-- worked-example:{name} -->\s*```json\n(.*?)```", text, re.S)
    assert m, f"docs/SCORING.md lost its worked-example:{name} block"
    return json.loads(m.group(1))


def test_worked_example_judge_numbers():
    gt, answer = J.validate_gt(_doc_block("gt")), _doc_block("answer")
    rec = J.judge(gt, json.dumps(answer))
    assert rec["format_error"] is None
    assert (rec["n_pred"], rec["n_gt"], rec["n_matched"], rec["n_matched_strict"]) == (6, 5, 4, 3)
    assert rec["matches"] == [[0, 0], [2, 2], [3, 3], [5, 4]]
    assert rec["t1_precision"] == pytest.approx(4 / 6) and rec["t1_recall"] == pytest.approx(4 / 5)
    assert rec["t1_f1"] == pytest.approx(float(Fraction(8, 11)))
    assert rec["t2_macro_acc"] == pytest.approx(float(Fraction(5, 6)))
    assert rec["t3_macro_acc"] == pytest.approx(float(Fraction(2, 3)))
    assert rec["t2_per_class"] == {"down": [1, 1], "flat": [1, 1], "up": [1, 2]}
    assert rec["t3_per_class"] == {"black": [1, 1], "even": [2, 2], "white": [0, 1]}
    assert rec["reward"] == pytest.approx(float(Fraction(6, 11)))
    assert (rec["reward_precision"], rec["reward_recall"]) == (pytest.approx(0.5), pytest.approx(0.6))
    # the labels the page derives from v_before/v_after with band 0.05 and neutral 0.5
    for e in gt["events"]:
        d = e["v_after"] - e["v_before"]
        assert e["delta"] == ("up" if d > 0.05 else "down" if d < -0.05 else "flat")
        s = e["v_after"] - 0.5
        assert e["state"] == ("white" if s > 0.05 else "black" if s < -0.05 else "even")


def test_worked_example_aggregation(tmp_path):
    gt = _doc_block("gt")
    tasks = tmp_path / "tasks"
    ids = {"chess": ["Wrk3xmp1", "Wrk3xmp2", "Wrk3xmp3"], "go": ["GoCase01"]}
    for game, cids in ids.items():
        (tasks / game / "gt").mkdir(parents=True)
        (tasks / game / "game.toml").write_text(GAME_TOML.replace('name = "chess"', f'name = "{game}"'))
        (tasks / game / "cases.json").write_text(json.dumps({"game": game, "cases": [{"case_id": c} for c in cids]}))
        for c in cids:
            (tasks / game / "gt" / f"{c}.json").write_text(json.dumps(dict(gt, game=game, case_id=c)))
    res = tmp_path / "res"
    cell(res, "chess", "Wrk3xmp1", _doc_block("answer"))
    cell(res, "chess", "Wrk3xmp2", {"events": []}, answer_state="never_wrote")
    cell(res, "chess", "Wrk3xmp3", None, stop_reason="harness_error")
    cell(res, "go", "GoCase01", J.oracle_answer(gt))
    s = score(res, tasks)
    chess, go = s.games["chess"], s.games["go"]
    assert (chess.n_scored, chess.n_cases, chess.counts["zero_rows"]) == (2, 3, 1)
    assert chess.means["reward"] == pytest.approx(float(Fraction(3, 11)))
    assert chess.means["t2_macro_acc"] == pytest.approx(5 / 6) and chess.n["t2_macro_acc"] == 1
    assert go.means["reward"] == 1.0
    assert s.overall()["means"]["reward"] == pytest.approx(float(Fraction(7, 11)))


# ------------------------------------------------------------------------------------------------
# the judge loader
# ------------------------------------------------------------------------------------------------
def test_load_judge_is_cached_under_a_stable_name_and_fails_clearly(tmp_path):
    from video_arena.core import judge_loader as L

    j1, j2 = L.load_judge(), L.load_judge()
    assert j1 is j2 and j1.__name__ == L.MODULE_NAME and sys.modules[L.MODULE_NAME] is j1
    assert Path(j1.__file__).resolve() == (REPO_ROOT / "judge" / "judge.py").resolve()
    with pytest.raises(L.JudgeUnavailable, match="does not exist"):
        L.load_judge(tmp_path / "nope.py")
    broken = tmp_path / "broken.py"
    broken.write_text("def judge(gt, answer):\n    return {}\n")
    with pytest.raises(L.JudgeUnavailable, match="lacks judge_files, reward_of, oracle_answer, load_gt"):
        L.load_judge(broken)
    assert L.load_judge() is j1
