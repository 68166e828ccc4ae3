"""`video-arena score` on a Harbor job folder: agent timeout scored, harness exceptions missing, reward
mismatches reported, an absent answer artifact 0.0, several attempts per task, compare.

Every job here is made by hand in tmp_path with Harbor 0.26's layout (docs: the Harbor notes,
section 7): jobs/<job>/config.json and one <taskdir[:32]>__<7 chars>/ folder per trial with
config.json, result.json, [exception.txt], verifier/{reward.json, judge.json, test-stdout.txt},
artifacts/{manifest.json, app/answer.json} and agent/.  `test_fixture_is_what_harbor_reads` checks the
hand-made documents against Harbor's own models when Harbor is installed.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from video_arena.scoring import cli
from video_arena.scoring import harbor_jobs as HJ
from video_arena.scoring import cells as SC
from video_arena.core.judge_loader import load_judge

J = load_judge()

from scoring_helpers import (AGENT, EVENTS, FIELDS, b_run, gt_doc, make_job, make_tasks, rewards_of,  # noqa: E402
                             trial, write_cell)
ORACLE = {"events": [{k: e[k] for k in FIELDS} for e in EVENTS]}
HALF = {"events": ORACLE["events"][:2]}                                  # every F1 2/3
SHIFTED = {"events": [dict(r, t=r["t"] + 5) for r in ORACLE["events"]]}  # 0.0
ZEROS = {"reward": 0.0, "t1_f1": 0.0, "t2_macro_acc": 0.0, "t3_macro_acc": 0.0}


def score(path, tasks, **kw):
    kw.setdefault("n_boot", 200)
    kw.setdefault("progress", False)
    kw.setdefault("verify_requests", False)  # the fixture trials carry no receipts
    return HJ.score_any(path, tasks, **kw)


@pytest.fixture
def tree(tmp_path):
    tasks = tmp_path / "tasks"
    ids = make_tasks(tasks, {"chess": 4, "go": 2})
    return tmp_path, tasks, ids


# ------------------------------------------------------------------------------------------------
def test_fixture_is_what_harbor_reads(tree):
    """The hand-made documents parse with Harbor's own models, and our reward_valid is Harbor's."""
    pytest.importorskip("harbor")
    from harbor.models.job.config import JobConfig
    from harbor.models.trial.result import TrialResult
    tmp, tasks, ids = tree
    job = make_job(tmp / "jobs", "j")
    JobConfig.model_validate_json((job / "config.json").read_text())
    for exc, rw in ((None, "judge"), ("AgentTimeoutError", "judge"), ("RuntimeError", "judge"),
                    ("VerifierTimeoutError", None), ("EnvironmentStartTimeoutError", None)):
        d = trial(job, "chess", ids["chess"][0], ORACLE, exception=exc, rewards=rw)
        doc = json.loads((d / "result.json").read_text())
        parsed = TrialResult.model_validate(doc)
        assert parsed.reward_valid == doc["reward_valid"], (exc, parsed.reward_valid)
        assert parsed.task_name == "video-arena/chess-" + ids["chess"][0]


def test_agent_timeout_scored_and_harness_exceptions_missing(tree, capsys):
    tmp, tasks, ids = tree
    job = make_job(tmp / "jobs", "jt")
    c = ids["chess"]
    trial(job, "chess", c[0], ORACLE, exception="AgentTimeoutError", message="Agent timed out after 7200 s")
    trial(job, "chess", c[1], HALF)
    # Harbor keeps this one in its mean (an unknown exception type keeps the reward); a harness error
    # of the Protocol A agent is missing for us
    trial(job, "chess", c[2], None, rewards=ZEROS, exception="RuntimeError",
          message="Protocol A call never got a reply: HTTP 500")
    trial(job, "chess", c[3], ORACLE, rewards=None, verifier_ran=False, exception="VerifierTimeoutError")
    trial(job, "go", ids["go"][0], None, rewards=None, verifier_ran=False, exception="EnvironmentStartTimeoutError")
    trial(job, "go", ids["go"][1], ORACLE, rewards=None, verifier_ran=True, exception="RewardFileNotFoundError")
    assert HJ.is_harbor_job(job)
    s = score(job, tasks)
    ch = s.games["chess"]
    assert (ch.n_scored, ch.n_cases, ch.counts["missing"]) == (2, 4, 2)
    assert ch.means["reward"] == pytest.approx((1.0 + 2 / 3) / 2)       # the timed-out trial counts 1.0
    timed_out = next(x for x in ch.cells if x.case_id == c[0])
    assert timed_out.status == SC.STATUS_SCORED and timed_out.exception_type == "AgentTimeoutError"
    go = s.games["go"]
    assert go.n_scored == 0 and s.overall()["games"] == ["chess"] and "go" in s.dropped_games()
    assert s.harbor["missing_by_type"] == {"EnvironmentStartTimeoutError": 1, "RewardFileNotFoundError": 1,
                                           "RuntimeError": 1, "VerifierTimeoutError": 1}
    assert s.harbor["mismatches"] == []
    rc = cli.main([str(job), "--tasks-root", str(tasks), "--quiet", "--bootstrap", "50"])
    out = capsys.readouterr().out
    assert rc == 0
    assert f"missing chess/{c[2]} attempt 1" in out and "RuntimeError: Protocol A call never got a reply" in out
    assert f"missing chess/{c[3]} attempt 1" in out and "VerifierTimeoutError" in out
    assert "scored although the agent stopped with an exception: AgentTimeoutError 1" in out
    assert "every one equal to Harbor's reward.json" in out


def test_reward_valid_false_and_no_result_json_are_missing(tree):
    tmp, tasks, ids = tree
    job = make_job(tmp / "jobs", "jv")
    c = ids["chess"]
    d = trial(job, "chess", c[0], ORACLE)
    doc = json.loads((d / "result.json").read_text())
    doc["reward_valid"] = False
    (d / "result.json").write_text(json.dumps(doc))
    trial(job, "chess", c[1], ORACLE, result=False)           # an unfinished trial: case from its config
    trial(job, "chess", c[2], ORACLE)
    s = score(job, tasks)
    cells = {x.case_id: x for x in s.games["chess"].cells}
    assert cells[c[0]].status == SC.STATUS_MISSING and cells[c[0]].reason == "reward_valid is false"
    assert cells[c[1]].status == SC.STATUS_MISSING and "no result.json" in cells[c[1]].reason
    assert cells[c[1]].trial.startswith(f"chess-{c[1]}__")
    assert cells[c[2]].status == SC.STATUS_SCORED and cells[c[3]].reason == "not run (no trial folder)"


def test_reward_mismatch_is_reported_and_exits_1(tree, capsys):
    tmp, tasks, ids = tree
    job = make_job(tmp / "jobs", "jm")
    c = ids["chess"]
    stale = dict(rewards_of(HALF), reward=1.0)                   # a dataset judged with another judge
    trial(job, "chess", c[0], HALF, rewards=stale)
    near = {k: v + 1e-12 for k, v in rewards_of(ORACLE).items()}  # float noise is not a mismatch
    trial(job, "chess", c[1], ORACLE, rewards=near)
    s = score(job, tasks)
    mm = s.harbor["mismatches"]
    assert [(m["case_id"], m["diff"]) for m in mm] == [(c[0], "reward Harbor 1.0 vs judge 0.666667")]
    assert s.games["chess"].means["reward"] == pytest.approx((2 / 3 + 1.0) / 2)  # the re-judged values
    rc = cli.main([str(job), "--tasks-root", str(tasks), "--quiet", "--bootstrap", "0"])
    cap = capsys.readouterr()
    assert rc == 1
    assert "REWARD MISMATCH in 1 trial(s)" in cap.out and f"chess/{c[0]} attempt 1" in cap.out
    assert "differs from the re-judged reward" in cap.err


def test_missing_artifact_scores_zero_with_a_valid_reward(tree, tmp_path):
    tmp, tasks, ids = tree
    job = make_job(tmp / "jobs", "ja")
    c = ids["chess"]
    trial(job, "chess", c[0], None)                              # nop agent: no artifact, reward 0.0 valid
    trial(job, "chess", c[1], ORACLE)
    s = score(job, tasks)
    g = s.games["chess"]
    cell0 = next(x for x in g.cells if x.case_id == c[0])
    assert cell0.status == SC.STATUS_SCORED and cell0.metric("reward") == 0.0
    assert cell0.answer_state == "no_artifact" and cell0.zero_rows
    assert (g.n_scored, g.counts["zero_rows"], g.counts["format_error"]) == (2, 1, 0)
    assert g.means["reward"] == pytest.approx(0.5)
    assert s.harbor["mismatches"] == []


def test_multiple_attempts_mean_per_case_then_per_game(tree, capsys):
    tmp, tasks, ids = tree
    job = make_job(tmp / "jobs", "jk", n_attempts=3)
    c = ids["chess"]
    t = ["2026-01-01T00:00:0%dZ" % i for i in range(3)]
    trial(job, "chess", c[0], ORACLE, started_at=t[0])
    trial(job, "chess", c[0], HALF, started_at=t[1])
    trial(job, "chess", c[0], None, rewards=None, verifier_ran=False, exception="EnvironmentStartTimeoutError",
          started_at=t[2])
    for i, a in enumerate((SHIFTED, ORACLE, ORACLE)):
        trial(job, "chess", c[1], a, started_at=t[i])
    trial(job, "chess", c[2], ORACLE, started_at=t[0])            # one of three attempts ran
    s = score(job, tasks)
    g = s.games["chess"]
    # cases: c0 (1 + 2/3)/2 = 5/6, c1 (0 + 1 + 1)/3 = 2/3, c2 1; c3 not run
    assert g.means["reward"] == pytest.approx((5 / 6 + 2 / 3 + 1.0) / 3)
    assert g.means["reward"] != pytest.approx((1 + 2 / 3 + 0 + 1 + 1 + 1) / 6)   # not the pooled trial mean
    assert (g.n["reward"], g.n_trials["reward"]) == (3, 6)
    assert (g.n_scored, g.n_scored_cases, len(g.cells), g.counts["missing"]) == (6, 3, 12, 6)
    assert [x.attempt for x in g.cells if x.case_id == c[0]] == [1, 2, 3]
    assert s.harbor["n_not_run"] == 5 + 2 * 3                    # chess c2 (2), c3 (3); go not run (2 x 3)
    # T2: c1's shifted attempt has no T1 pair, so c1's T2 is the mean of its two oracle attempts
    assert g.n["t2_macro_acc"] == 3 and g.n_trials["t2_macro_acc"] == 5
    rc = cli.main([str(job), "--tasks-root", str(tasks), "--quiet", "--bootstrap", "0"])
    out = capsys.readouterr().out
    assert rc == 0
    row = next(line for line in out.splitlines() if line.strip().startswith("chess"))
    assert row.split()[1:3] == ["3/4", "6/12"]                   # cases, then trials
    assert "3 attempt(s) per task" in out and "a case's scored attempts are averaged first" in out


def test_single_attempt_job_scores_like_the_native_folder(tree):
    """Same answers as a native results folder: the same means, n and intervals."""
    tmp, tasks, ids = tree
    job = make_job(tmp / "jobs", "j1")
    native = tmp / "native"
    answers = {("chess", ids["chess"][0]): ORACLE, ("chess", ids["chess"][1]): HALF,
               ("chess", ids["chess"][2]): SHIFTED, ("go", ids["go"][0]): HALF}
    for (g, c), a in answers.items():
        trial(job, g, c, a)
        write_cell(native, b_run(g, c), a)
    h, n = score(job, tasks), score(native, tasks)
    assert h.harbor is not None and n.harbor is None
    for g in ("chess", "go"):
        assert h.games[g].means == n.games[g].means and h.games[g].n == n.games[g].n
        assert h.games[g].ci == n.games[g].ci
    assert h.overall()["means"] == n.overall()["means"]


def test_compare_two_jobs_on_the_shared_games(tree, capsys):
    tmp, tasks, ids = tree
    a = make_job(tmp / "jobs", "protocol-a", model="openai/m1")
    b = make_job(tmp / "jobs", "protocol-b", model="openai/m1")
    for c in ids["chess"]:
        trial(a, "chess", c, ORACLE)
        trial(b, "chess", c, HALF)
    for c in ids["go"]:
        trial(a, "go", c, ORACLE)
        trial(b, "go", c, None, rewards=None, verifier_ran=False, exception="EnvironmentStartTimeoutError")
    out_json = tmp / "cmp.json"
    cells_csv = tmp / "cells.csv"
    rc = cli.main([str(a), "--compare", str(b), "--tasks-root", str(tasks), "--quiet", "--bootstrap", "100",
                   "--json", str(out_json), "--cells-csv", str(cells_csv)])
    out = capsys.readouterr().out
    assert rc == 0
    doc = json.loads(out_json.read_text())
    cmp = doc["compare"]
    assert cmp["shared_games"] == ["chess"]
    assert cmp["dropped_games"] == {"go": "B: 0/2 scored"}
    assert cmp["overall_shared"]["reward"]["diff"] == pytest.approx(1 / 3)
    assert cmp["own_overall_not_comparable"]["a"]["games"] == ["chess", "go"]
    assert [s_["harbor"]["job"] for s_ in doc["systems"]] == ["protocol-a", "protocol-b"]
    assert "shared games (a case scored by both): chess" in out
    header = cells_csv.read_text().splitlines()[0].split(",")
    assert header[-len(HJ.HARBOR_CELL_FIELDS):] == HJ.HARBOR_CELL_FIELDS


def test_judge_json_naming_another_case_is_missing_and_bad_paths_are_clear(tree, capsys):
    tmp, tasks, ids = tree
    jobs = tmp / "jobs"
    job = make_job(jobs, "jc")
    c = ids["chess"]
    trial(job, "chess", c[0], ORACLE, judge_case={"game": "chess", "case_id": c[1], "protocol": "B"})
    d = trial(job, "chess", c[1], ORACLE)
    s = score(job, tasks)
    bad = next(x for x in s.games["chess"].cells if x.case_id == c[0])
    assert bad.status == SC.STATUS_MISSING and "judge.json names case_id" in bad.reason
    assert cli.main([str(jobs), "--tasks-root", str(tasks), "--quiet"]) == 2
    assert "holds Harbor jobs (jc): pass one job folder" in capsys.readouterr().err
    assert cli.main([str(d), "--tasks-root", str(tasks), "--quiet"]) == 2
    assert "is one Harbor trial; pass its job folder" in capsys.readouterr().err
