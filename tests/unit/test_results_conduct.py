"""Issue 22, results side: attempts are kept and re-draws counted; a vanished answer is an integrity
error; the turn cap is warned about and checked; isolation, allow-paths and preflight warnings are
caveat columns.  The runners are the real ones (run-a against the local test server, run-b with a
scripted agent) over the small tasks tree of tests/fixtures/results_contract/."""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from fixtures.openai_test_server import OpenAITestServer
from scoring_helpers import CONTRACT, CONTRACT_CASES, b_run, contract_tasks, write_cell
from video_arena.protocol_a import runner as run_a
from video_arena.protocol_b import runner as run_b
from video_arena.scoring import cli
from video_arena.scoring.harbor_jobs import score_any

FIX, CASES = CONTRACT, CONTRACT_CASES


@pytest.fixture
def tasks(tmp_path, no_tasks_env):
    return contract_tasks(tmp_path)


def oracle(tasks: Path, cid: str) -> str:
    gt = json.loads((tasks / "chess" / "gt" / f"{cid}.json").read_text())
    return json.dumps({"events": [{k: e[k] for k in ("t", "type", "actor", "where", "delta", "state")}
                                  for e in gt["events"]]})


def score_cli(results: Path, tasks: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main([str(results), "--tasks-root", str(tasks), "--quiet", "--bootstrap", "0", *extra])
    return rc, out.getvalue(), err.getvalue()


def caveat_row(text: str, game: str = "chess") -> list[str]:
    """The game's row of the caveat block under the table, split on blanks."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip().startswith("caveats"))
    return next(ln for ln in lines[start:] if ln.strip().startswith(game)).split()


def caveats(results: Path, tasks: Path) -> dict:
    return score_any(results, tasks, progress=False, n_boot=0).games["chess"].caveats()


def run_a_cli(tasks, out, srv, *extra, limit=2):
    return run_a.main(["--model", "m", "--base-url", srv.base_url, "--out", str(out), "--tasks-root", str(tasks),
                       "--no-progress", "--cache-dir", str(out.parent / "cache"), "--limit", str(limit), *extra])


# --------------------------------------------------------------------------------------------------
# attempts
# --------------------------------------------------------------------------------------------------
def test_run_a_force_keeps_the_earlier_attempt_and_the_scorer_counts_the_redraw(tasks, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    out = tmp_path / "res"
    with OpenAITestServer() as srv:
        srv.script({"content": "no answer here"}, {"status": 400, "error": "refused"})
        assert run_a_cli(tasks, out, srv) == 0  # case 1: no_answer (ran), case 2: harness_error (never ran)
        first = (out / "chess" / CASES[0] / "run.json").read_bytes()
        srv.script({"content": oracle(tasks, CASES[1])})
        assert run_a_cli(tasks, out, srv) == 0  # resume: only the harness_error cell runs again
        c2 = json.loads((out / "chess" / CASES[1] / "run.json").read_text())
        assert c2["attempt"] == 2 and c2["previous_attempts"][0]["stop_reason"] == "harness_error"
        assert caveats(out, tasks)["redrawn"] == 0  # a cell that never ran is not a re-draw
        srv.script({"content": oracle(tasks, CASES[0])})
        assert run_a_cli(tasks, out, srv, "--force", limit=1) == 0  # re-draw the low-scoring cell
    cell = out / "chess" / CASES[0]
    assert (cell / "attempts" / "1" / "run.json").read_bytes() == first  # nothing lost
    assert (cell / "attempts" / "1" / "reply.txt").read_text() == "no answer here"
    run = json.loads((cell / "run.json").read_text())
    assert run["attempt"] == 2 and run["previous_attempts"][0]["answer_state"] == "no_answer"
    rc, text, _ = score_cli(out, tasks)
    assert rc == 0
    assert caveats(out, tasks)["redrawn"] == 1
    assert caveat_row(text)[7] == "1"  # the redrawn column
    # removing the history does not hide the re-draw: the run record names it, and the gap is warned about
    shutil.rmtree(cell / "attempts")
    s = score_any(out, tasks, progress=False, n_boot=0)
    assert s.games["chess"].caveats()["redrawn"] == 1
    assert any("attempt history incomplete" in w for w in s.warnings)


def test_run_b_force_keeps_the_earlier_attempt(tasks, tmp_path):
    out = tmp_path / "res"
    agent = f"{shlex_quote(sys.executable)} {shlex_quote(str(FIX / 'agent_rows.py'))} {{prompt}}"
    argv = ["--agent-cmd", agent, "--out", str(out), "--tasks-root", str(tasks), "--limit", "1", "--no-isolation",
            "--skip-preflight", "--sandbox-root", str(tmp_path / "sb"), "--no-progress", "--max-turns", "0"]
    assert run_b.main(argv) == 0
    cell = out / "chess" / CASES[0]
    first = (cell / "run.json").read_bytes()
    assert run_b.main(argv + ["--force"]) == 0
    assert (cell / "attempts" / "1" / "run.json").read_bytes() == first
    assert (cell / "attempts" / "1" / "logs" / "runner.log").is_file()
    run = json.loads((cell / "run.json").read_text())
    assert run["attempt"] == 2 and run["previous_attempts"][0]["ran"] is True
    assert caveats(out, tasks)["redrawn"] == 1


def shlex_quote(s: str) -> str:
    import shlex
    return shlex.quote(s)


# --------------------------------------------------------------------------------------------------
# a vanished answer
# --------------------------------------------------------------------------------------------------
def test_an_answer_removed_after_the_run_is_an_integrity_error_naming_the_cell(tasks, tmp_path):
    res = tmp_path / "res"
    for cid in CASES[:2]:
        write_cell(res, b_run("chess", cid), {"events": []})
    (res / "chess" / CASES[1] / "answer.json").unlink()
    rc, text, err = score_cli(res, tasks)
    assert rc == 1
    assert f"chess/{CASES[1]}: INTEGRITY: answer.json is missing" in err
    assert "INTEGRITY ERROR in 1 cell(s)" in text
    g = score_any(res, tasks, progress=False, n_boot=0).games["chess"]
    assert g.counts["missing"] == 2 and g.counts["corrupt"] == 1  # the two cases never run, not this one


# --------------------------------------------------------------------------------------------------
# turn cap
# --------------------------------------------------------------------------------------------------
def _run_b_stderr(tasks, tmp_path, agent_cmd, *extra) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = run_b.main(["--agent-cmd", agent_cmd, "--out", str(tmp_path / "res"), "--tasks-root", str(tasks),
                         "--limit", "1", "--no-isolation", "--skip-preflight", "--sandbox-root", str(tmp_path / "sb"),
                         "--no-progress", *extra])
    return rc, err.getvalue()


def test_run_b_warns_before_the_first_cell_when_the_template_lacks_max_turns(tasks, tmp_path):
    agent = f"{shlex_quote(sys.executable)} {shlex_quote(str(FIX / 'agent_rows.py'))} {{prompt}}"
    rc, err = _run_b_stderr(tasks, tmp_path, agent, "--max-turns", "5")
    assert rc == 0
    warn = [ln for ln in err.splitlines() if "{max_turns}" in ln]
    assert len(warn) == 1 and "warning" in warn[0] and "5" in warn[0]
    assert err.index(warn[0]) < err.index("cell(s) to run")


def test_max_turns_0_means_uncounted_no_warning_no_flag(tasks, tmp_path):
    agent = f"{shlex_quote(sys.executable)} {shlex_quote(str(FIX / 'agent_rows.py'))} {{prompt}}"
    rc, err = _run_b_stderr(tasks, tmp_path, agent, "--max-turns", "0")
    assert rc == 0 and "{max_turns}" not in err
    run = json.loads((tmp_path / "res" / "chess" / CASES[0] / "run.json").read_text())
    assert run["max_turns"] == 0 and run["turns_used"] == 2
    assert "tool-call turns" not in (tmp_path / "res" / "chess" / CASES[0] / "prompt.txt").read_text()
    assert caveats(tmp_path / "res", tasks)["over_turns"] == 0


def test_cells_over_their_turn_cap_are_flagged(tasks, tmp_path):
    res = tmp_path / "res"
    write_cell(res, b_run("chess", CASES[0], max_turns=5, turns_used=7), {"events": []})
    write_cell(res, b_run("chess", CASES[1], max_turns=5, turns_used=5), {"events": []})
    write_cell(res, b_run("chess", CASES[2], max_turns=0, turns_used=900), {"events": []})
    write_cell(res, b_run("chess", CASES[3], max_turns=5, turns_used=None), {"events": []})
    s = score_any(res, tasks, progress=False, n_boot=0)
    assert s.games["chess"].caveats()["over_turns"] == 1
    assert {c.case_id for c in s.cells() if c.over_turns} == {CASES[0]}


# --------------------------------------------------------------------------------------------------
# isolation, allow-paths, preflight
# --------------------------------------------------------------------------------------------------
def test_isolation_allow_paths_and_preflight_warnings_are_caveat_columns(tasks, tmp_path):
    res = tmp_path / "res"
    iso = {"mode": "bwrap", "enforced": True, "allowed": []}
    write_cell(res, b_run("chess", CASES[0], isolation=iso, preflight={"skipped": False, "warnings": []}),
               {"events": []})
    write_cell(res, b_run("chess", CASES[1], isolation={"mode": "none", "enforced": False, "allowed": []}),
               {"events": []})
    write_cell(res, b_run("chess", CASES[2], isolation=dict(iso, allowed=[{"path": "/opt/agent", "mode": "ro"}])),
               {"events": []})
    write_cell(res, b_run("chess", CASES[3], isolation=iso,
                          preflight={"skipped": False, "warnings": ["tesseract missing"]}), {"events": []})
    cv = caveats(res, tasks)
    assert (cv["no_isolation"], cv["allow_paths"], cv["preflight_warned"]) == (1, 1, 1)
    # the isolation mode is also a compared condition field (core/condition_fields.py): a table with
    # an isolated and a non-isolated cell is refused, and --allow-mixed shows the columns
    rc, _, err = score_cli(res, tasks)
    assert rc == 2 and "isolation: bwrap (3 cells) vs none (1 cell)" in err, err
    rc, text, _ = score_cli(res, tasks, "--allow-mixed")
    assert rc == 0
    hdr = next(ln for ln in text.splitlines() if ln.strip().startswith("caveats"))
    assert hdr.split()[7:12] == ["redrawn", "turns>cap", "no-iso", "allow", "preflight"]
    assert caveat_row(text)[7:12] == ["0", "0", "1", "1", "1"]
    csv_path = tmp_path / "t.csv"
    score_cli(res, tasks, "--csv", str(csv_path), "--allow-mixed")
    head, chess = csv_path.read_text().splitlines()[:2]
    rowd = dict(zip(head.split(","), chess.split(",")))
    assert (rowd["no_isolation"], rowd["allow_paths"], rowd["preflight_warned"]) == ("1", "1", "1")


def test_a_real_isolated_cell_records_what_the_columns_read(tasks, tmp_path):
    """The keys the columns read are the ones run-b writes (isolation.record(), the preflight summary)."""
    if not shutil.which("bwrap"):
        pytest.skip("bwrap is not installed")
    agents = tmp_path / "agents"
    agents.mkdir()
    shutil.copyfile(FIX / "agent_rows.py", agents / "agent_rows.py")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = run_b.main(["--agent-cmd", f"python3 {agents / 'agent_rows.py'} {{prompt}}", "--out",
                         str(tmp_path / "res"), "--tasks-root", str(tasks), "--limit", "1", "--skip-preflight",
                         "--sandbox-root", str(tmp_path / "sb"), "--no-progress", "--max-turns", "0",
                         "--allow-path", f"{agents}:ro"])
    if rc == 2 and "isolation" in err.getvalue().lower():
        pytest.skip(f"namespaces unavailable here: {err.getvalue().strip()}")
    assert rc == 0, err.getvalue()
    c = next(c for c in score_any(tmp_path / "res", tasks, progress=False, n_boot=0).cells() if c.status == "scored")
    assert (c.isolation, c.n_allow_paths, c.preflight) == ("bwrap", 1, "skipped")
    assert os.path.isdir(tmp_path / "res")


def test_a_harbor_protocol_a_artifact_removed_after_the_run_is_an_integrity_error(tasks, tmp_path):
    """A Protocol A trial's agent/run.json says it answered: a missing artifact is not a 0.0."""
    job = tmp_path / "job_a"
    shutil.copytree(FIX / "job_a", job)
    trial = next(d for d in job.iterdir() if (d / "result.json").is_file())
    (trial / "artifacts" / "app" / "answer.json").unlink()
    rc, _, err = score_cli(job, tasks)
    assert rc == 1 and f"chess/{CASES[0]}: INTEGRITY: trial {trial.name}: the answer artifact is missing" in err
