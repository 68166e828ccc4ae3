"""`video-arena score` (and what it shares with explore and publish) on results folders and Harbor jobs
someone else wrote (docs/SECURITY.md, "Untrusted results folders and Harbor jobs"): every folder below
the one named is a real folder reached through no link; a condition copy is read once per run, bounded,
never through a link; a number no float holds is never a traceback; a run record's integrity comes
before any other gate.  Every hostile input is one of the committed results-contract fixtures
(tests/fixtures/results_contract: a run-a folder, a run-b folder, two Harbor jobs) changed in one place."""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from scoring_helpers import CONTRACT, CONTRACT_CASES, contract_tasks
from video_arena import safe_io
from video_arena.core.condition import DEFAULT_CONDITION, MAX_CONDITION_BYTES, canonical_json
from video_arena.core.results import RUNNER_DIGESTS
from video_arena.digests import sha256_bytes
from video_arena.scoring import cli
from video_arena.scoring.harbor_jobs import score_any
from video_arena.scoring.scorer import score_results

FIX, CASES = CONTRACT, CONTRACT_CASES


@pytest.fixture
def tasks(tmp_path, no_tasks_env):
    return contract_tasks(tmp_path)


def copy(src: str, tmp_path: Path, name: str | None = None) -> Path:
    dst = tmp_path / (name or src)
    shutil.copytree(FIX / src, dst, symlinks=True)
    return dst


def edit_run(run_json: Path, **changes) -> None:
    """Set keys of a run record (None is written as null; drop_keys removes a key)."""
    doc = json.loads(run_json.read_text())
    doc.update(changes)
    run_json.write_text(json.dumps(doc))


def drop_keys(run_json: Path, *keys: str) -> None:
    doc = json.loads(run_json.read_text())
    for k in keys:
        doc.pop(k, None)
    run_json.write_text(json.dumps(doc))


def score_cli(results: Path, tasks: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main([str(results), "--tasks-root", str(tasks), "--quiet", "--bootstrap", "0", *extra])
    return rc, out.getvalue(), err.getvalue()


def one_line(rc: int, err: str) -> None:
    assert rc == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err


def cells(results: Path, tasks: Path, **kw) -> dict:
    s = score_any(results, tasks, progress=False, n_boot=0, **kw)
    return {c.case_id: c for c in s.cells()}


def oracle_of(tasks: Path, cid: str) -> bytes:
    gt = json.loads((tasks / "chess" / "gt" / f"{cid}.json").read_text())
    return json.dumps({"events": [{k: e[k] for k in ("t", "type", "actor", "where", "delta", "state")}
                                  for e in gt["events"]]}).encode()


def caveat_columns(table: str, game: str = "chess") -> dict[str, str]:
    lines = table.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.strip().startswith("caveats "))
    row = next(ln.split() for ln in lines[head + 2:] if ln.split()[:1] == [game])
    return dict(zip(lines[head].split(), row))


# --------------------------------------------------------------------------------------------------
# Protocol A condition files: read once per run, bounded, never through a link
# --------------------------------------------------------------------------------------------------
def custom_condition(results: Path, body: bytes | None = None) -> tuple[str, Path]:
    """A condition file that is no versioned one, kept as run-a keeps it (`_conditions/<digest>.json`), and
    every cell of the run-a folder pointed at it; (its digest, its path)."""
    doc = json.loads(DEFAULT_CONDITION.read_text())
    doc["description"] = "a custom condition"
    sha = sha256_bytes(canonical_json(doc))
    path = results / "_conditions" / f"{sha}.json"
    path.write_bytes(body if body is not None else json.dumps(doc).encode())
    for cid in CASES:
        edit_run(results / "chess" / cid / "run.json", condition_sha256=sha)
    return sha, path


def test_a_condition_copy_is_read_once_per_run_with_a_bound(tasks, tmp_path, monkeypatch):
    """Three verified cells share one custom condition: its copy is read once, through the bounded reader."""
    res = copy("run_a", tmp_path)
    _, path = custom_condition(res)
    reads = []
    real = safe_io.read_bounded

    def spy(p, cap):
        if Path(p).name == path.name:
            reads.append(cap)
        return real(p, cap)

    monkeypatch.setattr(safe_io, "read_bounded", spy)
    got = cells(res, tasks)
    assert [c.status for c in got.values()].count("scored") == 3   # each request rebuilt from the one copy
    assert all(c.non_reference for c in got.values() if c.status == "scored")
    assert reads == [MAX_CONDITION_BYTES], reads


@pytest.mark.parametrize("kind", ["link", "oversize"])
def test_a_condition_copy_through_a_link_or_over_the_cap_is_not_read(kind, tasks, tmp_path):
    res = copy("run_a", tmp_path)
    sha, path = custom_condition(res)
    if kind == "link":
        elsewhere = tmp_path / "elsewhere.json"
        path.rename(elsewhere)
        path.symlink_to(elsewhere)
    else:   # a valid condition, padded past the cap
        doc = json.loads(path.read_text())
        doc["notes"] = "x" * MAX_CONDITION_BYTES
        path.write_text(json.dumps(doc))
    got = cells(res, tasks)
    why = got[CASES[0]].reason
    assert got[CASES[0]].status == "unverified" and f"_conditions/{sha}.json is " in why, why
    assert ("unreadable" if kind == "link" else "larger than") in why


def test_a_linked_conditions_folder_is_refused(tasks, tmp_path):
    res = copy("run_a", tmp_path)
    shutil.move(res / "_conditions", tmp_path / "conditions-elsewhere")
    (res / "_conditions").symlink_to(tmp_path / "conditions-elsewhere")
    rc, _, err = score_cli(res, tasks)
    one_line(rc, err)
    assert "_conditions is a symbolic link" in err


# --------------------------------------------------------------------------------------------------
# links below the folder named: game, cell and trial folders
# --------------------------------------------------------------------------------------------------
def test_a_linked_game_folder_is_refused_by_score_and_explore(tasks, tmp_path, capsys):
    res = tmp_path / "res"
    res.mkdir()
    (res / "chess").symlink_to(FIX / "run_b" / "chess")
    rc, _, err = score_cli(res, tasks)
    one_line(rc, err)
    assert f"{res / 'chess'} is a symbolic link" in err
    from video_arena.explore import site
    capsys.readouterr()
    rc = site.main([str(res), "-o", str(tmp_path / "site"), "--tasks-root", str(tasks), "--jobs", "1"])
    err = capsys.readouterr().err
    one_line(rc, err)
    assert not (tmp_path / "site").exists()


def test_a_linked_cell_folder_is_an_integrity_error_never_scored(tasks, tmp_path):
    """chess/<case> -> another run's cell (a better answer): not read, not missing, an integrity error."""
    res = copy("run_b", tmp_path)
    other = copy("run_b", tmp_path, "other")
    (other / "chess" / CASES[0] / "answer.json").write_bytes(oracle_of(tasks, CASES[0]))
    edit_run(other / "chess" / CASES[0] / "run.json",
             answer_sha256=sha256_bytes((other / "chess" / CASES[0] / "answer.json").read_bytes()))
    shutil.rmtree(res / "chess" / CASES[0])
    (res / "chess" / CASES[0]).symlink_to(other / "chess" / CASES[0])
    rc, out, err = score_cli(res, tasks)
    assert rc == 1 and f"chess/{CASES[0]}: INTEGRITY: the cell folder chess/{CASES[0]} is a symbolic link" in err
    assert cells(res, tasks)[CASES[0]].status == "corrupt"


def test_a_linked_trial_folder_is_refused(tasks, tmp_path):
    job = copy("job_b", tmp_path)
    trial = next(d for d in sorted(job.iterdir()) if d.name.startswith("chess-Gm4pR9zT"))
    shutil.move(trial, tmp_path / trial.name)
    trial.symlink_to(tmp_path / trial.name)
    rc, _, err = score_cli(job, tasks, "--allow-mixed")
    one_line(rc, err)
    assert f"{trial} is a symbolic link" in err


def test_a_linked_artifact_folder_is_not_read(tasks, tmp_path):
    """A trial whose artifacts/app/ is a link to a perfect answer: the link is not followed (no answer)."""
    job = copy("job_b", tmp_path)
    trial = next(d for d in sorted(job.iterdir()) if d.name.startswith("chess-Hc2dW5yU") and
                 (d / "artifacts" / "app").is_dir())
    elsewhere = tmp_path / "app"
    elsewhere.mkdir()
    (elsewhere / "answer.json").write_bytes(oracle_of(tasks, CASES[2]))
    shutil.rmtree(trial / "artifacts" / "app")
    (trial / "artifacts" / "app").symlink_to(elsewhere)
    s = score_any(job, tasks, progress=False, n_boot=0)
    c = next(c for c in s.cells() if getattr(c, "trial", "") == trial.name)
    assert c.status == "scored" and c.metric("reward") == 0.0 and c.answer_check == "unreadable"


def test_a_protocol_a_trials_linked_agent_folder_is_not_its_record(tasks, tmp_path):
    job = copy("job_a", tmp_path)
    trial = next(d for d in job.iterdir() if (d / "result.json").is_file())
    shutil.move(trial / "agent", tmp_path / "agent")
    (trial / "agent").symlink_to(tmp_path / "agent")
    c = cells(job, tasks)[CASES[0]]
    assert c.n_json_blocks is None and c.condition_sha256 is None   # agent/run.json was not read


# --------------------------------------------------------------------------------------------------
# numbers no float holds, and numbers out of range
# --------------------------------------------------------------------------------------------------
HUGE = 10 ** 400


@pytest.mark.parametrize("src, key", [("run_b", "wall_s"), ("run_b", "turns_used"),
                                      ("run_b", "max_turns"), ("run_a", "wall_s"), ("run_a", "duration_s"),
                                      ("run_a", "t1_recall_ceiling"), ("run_a", "frames_used"),
                                      ("run_a", "n_json_blocks")])
def test_a_401_digit_number_in_a_run_record_is_read_as_not_recorded(src, key, tasks, tmp_path):
    res = copy(src, tmp_path)
    edit_run(res / "chess" / CASES[0] / "run.json", **{key: HUGE})
    rc, out, err = score_cli(res, tasks, "--no-verify-requests", "--json", str(tmp_path / "s.json"))
    assert rc == 0 and "Traceback" not in err, err
    c = cells(res, tasks, verify_requests=False)[CASES[0]]
    assert c.status == "scored"
    assert {"turns_used": c.turns_used, "max_turns": c.max_turns, "t1_recall_ceiling": c.recall_ceiling,
            "frames_used": c.frames_used, "n_json_blocks": c.n_json_blocks}.get(key) is None


def test_a_401_digit_tolerance_makes_the_cell_a_diagnostic(tasks, tmp_path):
    res = copy("run_a", tmp_path)
    edit_run(res / "chess" / CASES[0] / "run.json", tolerance_s=HUGE)
    c = cells(res, tasks, verify_requests=False)[CASES[0]]
    assert c.status == "diagnostic" and "nan s tolerance" in c.reason


def test_a_401_digit_number_builds_the_explorer_site(tasks, tmp_path):
    from video_arena.explore import site
    res = copy("run_b", tmp_path)
    edit_run(res / "chess" / CASES[0] / "run.json", wall_s=HUGE)
    job = copy("job_a", tmp_path)
    trial = next(d for d in job.iterdir() if (d / "result.json").is_file())
    receipt = json.loads((trial / "agent" / "receipt.json").read_text())
    receipt["video_ts"][0] = HUGE
    (trial / "agent" / "receipt.json").write_text(json.dumps(receipt))
    for src in (res, job):
        assert site.main([str(src), "-o", str(tmp_path / f"site-{src.name}"), "--tasks-root", str(tasks),
                          "--jobs", "1", "--allow-mixed"]) == 0


@pytest.mark.parametrize("reward", [HUGE, "NaN"])
def test_a_harbor_reward_no_float_holds_is_a_mismatch_never_a_traceback(reward, tasks, tmp_path):
    job = copy("job_b", tmp_path)
    trial = next(d for d in sorted(job.iterdir()) if (d / "artifacts" / "app" / "answer.json").is_file())
    text = (trial / "result.json").read_text()
    doc = json.loads(text)
    doc["verifier_result"]["rewards"]["reward"] = float("nan") if reward == "NaN" else reward
    (trial / "result.json").write_text(json.dumps(doc))
    rc, out, err = score_cli(job, tasks, "--allow-mixed", "--json", str(tmp_path / "s.json"),
                             "--cells-csv", str(tmp_path / "c.csv"))
    assert rc == 1 and "Traceback" not in err and "1 trial(s) whose Harbor reward differs" in err, err
    json.loads((tmp_path / "s.json").read_text())   # strict JSON: no NaN, the value as its text


def test_n_attempts_out_of_range_is_read_as_not_recorded(tasks, tmp_path):
    job = copy("job_a", tmp_path)
    cfg = json.loads((job / "config.json").read_text())
    cfg["n_attempts"] = 5000
    (job / "config.json").write_text(json.dumps(cfg))
    s = score_any(job, tasks, progress=False, n_boot=0)
    assert len(s.cells()) == 4 and any("n_attempts 5000" in w for w in s.warnings)


# --------------------------------------------------------------------------------------------------
# integrity before every other gate
# --------------------------------------------------------------------------------------------------
def test_a_deleted_protocol_a_answer_is_an_integrity_error_whatever_verification_finds(tasks, tmp_path):
    """The request's verification reads answer.json too: it must not turn a removed answer into an
    'unverified' cell (out of the mean, exit 0)."""
    res = copy("run_a", tmp_path)
    (res / "chess" / CASES[0] / "answer.json").unlink()
    rc, out, err = score_cli(res, tasks)
    assert rc == 1 and f"chess/{CASES[0]}: INTEGRITY: answer.json is missing" in err, err
    assert "excluded chess/" not in out
    assert cells(res, tasks)[CASES[0]].status == "corrupt"


def test_a_swapped_answer_without_its_digest_is_never_judged(tasks, tmp_path):
    """The issue's reproduction: run.json's answer_sha256 removed and the answer swapped for the oracle's
    raised the run-b fixture's reward from 0.267 to 0.450."""
    res = copy("run_b", tmp_path)
    cell = res / "chess" / CASES[0]
    drop_keys(cell / "run.json", "answer_sha256")
    (cell / "answer.json").write_bytes(oracle_of(tasks, CASES[0]))
    rc, out, err = score_cli(res, tasks)
    assert rc == 1 and f"chess/{CASES[0]}: INTEGRITY: run.json holds no answer_sha256" in err, err
    s = score_any(res, tasks, progress=False, n_boot=0)
    assert s.games["chess"].counts["corrupt"] == 1 and s.games["chess"].means["reward"] < 0.267


@pytest.mark.parametrize("src, key", [(src, key) for src, proto in (("run_a", "A"), ("run_b", "B"))
                                      for key in RUNNER_DIGESTS[proto]])
@pytest.mark.parametrize("how", ["absent", "null", "not a digest"])
def test_a_record_missing_a_digest_its_runner_always_writes_is_an_integrity_error(src, key, how, tasks, tmp_path):
    res = copy(src, tmp_path)
    run_json = res / "chess" / CASES[0] / "run.json"
    if how == "absent":
        drop_keys(run_json, key)
    else:
        edit_run(run_json, **{key: None if how == "null" else "../../../elsewhere"})
    rc, out, err = score_cli(res, tasks, "--no-verify-requests")
    assert rc == 1 and f"chess/{CASES[0]}: INTEGRITY: run.json holds no {key}" in err, err


def test_a_record_naming_no_protocol_is_an_integrity_error(tasks, tmp_path):
    res = copy("run_b", tmp_path)
    drop_keys(res / "chess" / CASES[0] / "run.json", "protocol")
    rc, _, err = score_cli(res, tasks)
    assert rc == 1 and f"chess/{CASES[0]}: INTEGRITY: run.json names no protocol" in err, err


def test_a_protocol_a_trials_record_missing_a_digest_is_an_integrity_error(tasks, tmp_path):
    job = copy("job_a", tmp_path)
    trial = next(d for d in job.iterdir() if (d / "result.json").is_file())
    drop_keys(trial / "agent" / "run.json", "answer_sha256")
    rc, _, err = score_cli(job, tasks)
    assert rc == 1 and f"INTEGRITY: trial {trial.name}: agent/run.json holds no answer_sha256" in err, err


def test_answers_written_directly_are_asked_for_their_digest_only(tasks, tmp_path):
    """The baselines' oracle, nop and grid ceiling write their records themselves (no request, no prompt):
    `runner_records=False` asks them for answer_sha256 only, and a record without it is still refused."""
    res = tmp_path / "oracle"
    for cid in CASES[:2]:
        d = res / "chess" / cid
        d.mkdir(parents=True)
        data = oracle_of(tasks, cid)
        (d / "answer.json").write_bytes(data)
        (d / "run.json").write_text(json.dumps({"protocol": "B", "model": "oracle", "game": "chess", "case_id": cid,
                                                "stop_reason": "completed", "answer_state": "wrote",
                                                "answer_sha256": sha256_bytes(data)}))
    drop_keys(res / "chess" / CASES[1] / "run.json", "answer_sha256")
    s = score_results(res, tasks, progress=False, n_boot=0, verify_requests=False, runner_records=False)
    by = {c.case_id: c.status for c in s.cells()}
    assert by[CASES[0]] == "scored" and by[CASES[1]] == "corrupt"
    s = score_results(res, tasks, progress=False, n_boot=0, verify_requests=False)
    assert {c.case_id: c.status for c in s.cells()}[CASES[0]] == "corrupt"   # not run-b's record


# --------------------------------------------------------------------------------------------------
# flagged columns: isolation not recorded, served model not named
# --------------------------------------------------------------------------------------------------
def test_null_isolation_is_a_flagged_column_and_a_compared_value(tasks, tmp_path):
    res = copy("run_b", tmp_path)
    edit_run(res / "chess" / CASES[0] / "run.json", isolation=None)
    rc, _, err = score_cli(res, tasks)
    assert rc == 2 and "isolation: bwrap (2 cells) vs null (1 cell)" in err, err
    rc, out, _ = score_cli(res, tasks, "--allow-mixed", "--csv", str(tmp_path / "g.csv"),
                           "--json", str(tmp_path / "s.json"), "--cells-csv", str(tmp_path / "c.csv"))
    assert rc == 0 and caveat_columns(out)["iso?"] == "1" and caveat_columns(out)["no-iso"] == "0"
    head, chess = (tmp_path / "g.csv").read_text().splitlines()[:2]
    assert dict(zip(head.split(","), chess.split(",")))["isolation_unrecorded"] == "1"
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["systems"][0]["caveats"]["isolation_unrecorded"] == 1
    assert "isolation_unrecorded" in (tmp_path / "c.csv").read_text().splitlines()[0]
    # every cell null: one measurement, each flagged
    for cid in CASES[1:3]:
        edit_run(res / "chess" / cid / "run.json", isolation={"enforced": True})
    rc, out, _ = score_cli(res, tasks, "--report", "md")
    assert rc == 0 and "| isolation not recorded |" in out
    row = next(ln for ln in out.splitlines() if ln.startswith("| chess | 3/4 | 0 |"))
    assert row.split("|")[15].strip() == "3", row   # the isolation-not-recorded column


def test_a_reply_naming_no_model_is_a_flagged_column(tasks, tmp_path):
    res = copy("run_a", tmp_path)
    edit_run(res / "chess" / CASES[0] / "run.json", served_model="fixture-model")
    edit_run(res / "chess" / CASES[1] / "run.json", served_model=None)
    edit_run(res / "chess" / CASES[2] / "run.json", served_model="fixture-model")
    rc, out, _ = score_cli(res, tasks, "--no-verify-requests", "--json", str(tmp_path / "s.json"))
    assert rc == 0
    cols = caveat_columns(out)
    assert cols["served?"] == "1" and cols["served"] == "0"
    assert json.loads((tmp_path / "s.json").read_text())["systems"][0]["caveats"]["served_unnamed"] == 1
    got = cells(res, tasks, verify_requests=False)
    assert got[CASES[1]].served_unnamed and not got[CASES[0]].served_unnamed
    assert not got[CASES[3]].served_unnamed   # never ran: no reply to name a model


# --------------------------------------------------------------------------------------------------
# the generic helpers (video_arena/safe_io.py) and the spellings they are held to
# --------------------------------------------------------------------------------------------------
def test_numbers_are_finite_and_in_range_or_not_numbers():
    assert safe_io.finite_number(HUGE) is None and safe_io.finite_number(float("nan")) is None
    assert safe_io.finite_number(True) is None and safe_io.finite_number("1") is None
    assert safe_io.finite_number(2, 0, 1) is None and safe_io.finite_number(0.5, 0, 1) == 0.5
    assert safe_io.whole_number(HUGE, 0, 10 ** 9) is None and safe_io.whole_number(3.0, 0, 9) is None
    assert safe_io.whole_number(3, 0, 9) == 3


def test_a_link_below_the_root_is_found_and_the_root_itself_may_be_one(tmp_path):
    real = tmp_path / "real"
    (real / "a" / "b").mkdir(parents=True)
    (tmp_path / "named").symlink_to(real)                     # the folder the user names may be a link
    assert safe_io.link_below(tmp_path / "named", tmp_path / "named" / "a" / "b" / "f") is None
    (real / "c").symlink_to(real / "a")
    assert safe_io.link_below(real, real / "c" / "b") == real / "c"
    assert safe_io.real_dir(real, real / "c" / "b") is None and safe_io.real_dir(real, real / "a" / "b")


def test_the_isolation_modes_read_are_the_ones_run_b_writes():
    from video_arena.protocol_b.isolation import MODE_BWRAP, MODE_NONE
    from video_arena.scoring import caveats as CV
    assert CV.ISOLATION_MODES == (MODE_BWRAP, MODE_NONE)
