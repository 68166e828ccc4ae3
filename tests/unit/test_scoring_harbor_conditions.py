"""A Harbor job's condition (issue 22): each trial's agent kwargs (`--ak`, max_turns among them) and its
timeout multipliers are read from the trial's config and compared like the native condition fields; a
job whose trials differ is refused naming the difference (--allow-mixed: a DIAGNOSTIC)."""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from video_arena.scoring import cli
from video_arena.scoring import harbor_jobs as HJ

from scoring_helpers import EVENTS, FIELDS, make_job, make_tasks, trial  # noqa: E402

ORACLE = {"events": [{k: e[k] for k in FIELDS} for e in EVENTS]}


def _edit_config(d: Path, fn) -> None:
    """Apply fn to the trial's TrialConfig, in config.json and in result.json's copy of it."""
    cfg = json.loads((d / "config.json").read_text())
    fn(cfg)
    (d / "config.json").write_text(json.dumps(cfg))
    res = json.loads((d / "result.json").read_text())
    fn(res["config"])
    (d / "result.json").write_text(json.dumps(res))


@pytest.mark.parametrize("change,named", [
    (lambda c: c["agent"]["kwargs"].update(max_turns=100), "max_turns: "),
    (lambda c: c["agent"]["kwargs"].update(temperature=0.7), "agent_kwargs_sha256: "),
    (lambda c: c.update(agent_timeout_multiplier=2.0), "timeout_multipliers: "),
    (lambda c: c.update(timeout_multiplier=3.0), "timeout_multipliers: "),
])
def test_a_job_whose_trials_ran_under_different_kwargs_is_refused(tmp_path, change, named):
    tasks = tmp_path / "tasks"
    ids = make_tasks(tasks, {"chess": 2})
    job = make_job(tmp_path / "jobs", "j")
    trial(job, "chess", ids["chess"][0], ORACLE)
    _edit_config(trial(job, "chess", ids["chess"][1], ORACLE), change)
    s = HJ.score_any(job, tasks, n_boot=0, progress=False, verify_requests=False)
    assert any(m.startswith(named) for m in s.mixed), s.mixed
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = cli.main([str(job), "--tasks-root", str(tasks), "--quiet", "--bootstrap", "0"])
    assert rc == 2 and "REFUSED" in err.getvalue() and named in err.getvalue()


def test_a_job_of_one_configuration_is_one_measurement(tmp_path):
    tasks = tmp_path / "tasks"
    ids = make_tasks(tasks, {"chess": 2})
    job = make_job(tmp_path / "jobs", "j")
    for c in ids["chess"]:
        trial(job, "chess", c, ORACLE)
    s = HJ.score_any(job, tasks, n_boot=0, progress=False, verify_requests=False)
    assert s.mixed == []
    cell = s.cells()[0]
    assert cell.condition["max_turns"] == 200 and cell.condition["timeout_multipliers"]


def test_a_harbor_context_overflow_trial_scores_zero_and_is_counted_in_its_own_column(tmp_path):
    """The one rule (docs/SCORING.md) on the Harbor path: a Protocol A trial whose request did not fit
    the model's context (the agent's ContextOverflowError; its verifier never ran) is 0.0 on every
    metric, not missing: the game mean is the share of trials answered."""
    tasks = tmp_path / "tasks"
    ids = make_tasks(tasks, {"chess": 2})
    job = make_job(tmp_path / "jobs", "j")
    trial(job, "chess", ids["chess"][0], ORACLE,
          judge_case={"game": "chess", "case_id": ids["chess"][0], "protocol": "A"})
    trial(job, "chess", ids["chess"][1], None, rewards=None, exception="ContextOverflowError",
          message="the server refused the request as over the model's context")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = cli.main([str(job), "--tasks-root", str(tasks), "--quiet", "--bootstrap", "0",
                       "--no-verify-requests"])
    assert rc == 0, out.getvalue()
    hdr = next(ln for ln in out.getvalue().splitlines() if ln.split()[:1] == ["game"]).split()
    row = next(ln for ln in out.getvalue().splitlines() if ln.split()[:1] == ["chess"]).split()
    cols = dict(zip(hdr[:9], row[:9]))
    assert cols["scored"] == "2/2" and cols["miss"] == "0" and cols["ovfl"] == "1", out.getvalue()
    assert cols["reward"] == "0.500", out.getvalue()
    s = HJ.score_any(job, tasks, n_boot=0, progress=False, verify_requests=False)
    over = [c for c in s.cells() if c.context_overflow][0]
    assert over.status == "scored" and over.protocol == "A"
    assert {m: over.metric(m) for m in ("reward", "t1_f1", "t2_zero_filled", "t3_zero_filled")} == dict.fromkeys(
        ("reward", "t1_f1", "t2_zero_filled", "t3_zero_filled"), 0.0)
