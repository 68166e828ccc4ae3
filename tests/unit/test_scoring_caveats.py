"""Reports that cannot mislead: every caveat of a cell reaches the table, the CSVs and the JSON; a table
built from more than one measurement is refused (--allow-mixed: DIAGNOSTIC); compare refuses two
conditions; the native and the Harbor path print the same T2/T3; --exclude-flagged and the Harbor
trajectory audit; answer and ground-truth integrity; bounded reads; the Markdown report.

Every results folder is built here from the run records the runners write (tests/scoring_helpers.py).
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from video_arena.paths import REPO_ROOT
from video_arena.scoring import cli
from video_arena.scoring import scorer as S

from scoring_helpers import (J, ORACLE, a_run, b_run, gt_doc, make_job, make_tasks, trial,  # noqa: E402
                             write_cell)

HALF = {"events": ORACLE["events"][:2]}
SHIFTED = {"events": [dict(r, t=r["t"] + 5) for r in ORACLE["events"]]}


@pytest.fixture
def tree(tmp_path):
    tasks = tmp_path / "tasks"
    ids = make_tasks(tasks, {"chess": 3, "go": 2})
    return tmp_path, tasks, ids


def run_cli(tmp: Path, src: Path, tasks: Path, *extra: str) -> dict:
    """video-arena score with every output; returns rc, stdout, stderr, the game CSV, the cells CSV, JSON."""
    o = tmp / f"out-{len(list(tmp.glob('out-*')))}"
    o.mkdir()
    argv = [str(src), "--tasks-root", str(tasks), "--quiet", "--bootstrap", "100", "--csv", str(o / "g.csv"),
            "--cells-csv", str(o / "c.csv"), "--json", str(o / "s.json"), *extra]
    if "--verify-requests" not in extra:  # the fixture cells carry no receipts (verification: its own tests)
        argv.append("--no-verify-requests")
    import contextlib
    import io
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(argv)
    res = {"rc": rc, "out": out.getvalue(), "err": err.getvalue()}
    if (o / "g.csv").is_file():
        res["csv"] = {r["game"]: r for r in csv.DictReader((o / "g.csv").open())}
        res["cells"] = {r["case_id"]: r for r in csv.DictReader((o / "c.csv").open())}
        res["json"] = json.loads((o / "s.json").read_text())
    return res


def caveat_line(out: str, game: str) -> list[str]:
    """The fields of a game's (or 'overall') line in the printed caveat block."""
    block = out[out.index("  caveats "):]
    for line in block.splitlines()[2:]:
        if line.split() and line.split()[0] == game:
            return line.split()
    raise AssertionError(f"no caveat line for {game} in\n{block}")


CAVEAT_COL = {"scored": 1, "0-row": 2, "degraded": 3, "truncated": 4, "multi_block": 5, "audit": 6, "redrawn": 7,
              "over_turns": 8, "no_isolation": 9, "allow_paths": 10, "preflight": 11, "content_filtered": 12,
              "served": 13, "non_ref": 14, "served_unnamed": 15, "isolation_unrecorded": 16, "ceiling": 17}


# --------------------------------------------------------------------------------------------------
# caveats: one fixture folder per caveat
# --------------------------------------------------------------------------------------------------
CAVEAT_CASES = {
    # name: (run.json overrides of a Protocol A cell, the caveat column that must count it)
    "jpeg_q_raised": (dict(degraded=True, degradations=[{"kind": "jpeg_q", "from": 4, "to": 5, "why": "HTTP 413"}],
                           sampling={"fps": 1, "jpeg_q": 5, "max_frames": 256, "longest_side": 768}), "degraded"),
    "jpeg_q_raised_unrecorded": (dict(sampling={"fps": 1, "jpeg_q": 7, "max_frames": 256, "longest_side": 768},
                                      degradations=[{"kind": "jpeg_q", "from": 4, "to": 7, "why": "body cap"}]),
                                 "degraded"),
    "fewer_stills": (dict(frames_used=250), "degraded"),
    "degraded_flag_only": (dict(degraded=True), "degraded"),
    "truncated": (dict(protocol_complete=False, stop_reason="length", finish_reason="length"), "truncated"),
    "multi_block": (dict(n_json_blocks=3), "multi_block"),
    "content_filter": (dict(stop_reason="content_filter", finish_reason="content_filter"), "content_filtered"),
}


@pytest.mark.parametrize("name", sorted(CAVEAT_CASES))
def test_each_caveat_reaches_table_csv_json_and_cells_csv(tree, name):
    tmp, tasks, ids = tree
    over, column = CAVEAT_CASES[name]
    res = tmp / name
    c = ids["chess"]
    write_cell(res, a_run("chess", c[0], **over))
    write_cell(res, a_run("chess", c[1]))
    write_cell(res, a_run("go", ids["go"][0]))
    r = run_cli(tmp, res, tasks)
    assert r["rc"] == 0, r["err"]
    line = caveat_line(r["out"], "chess")
    assert line[CAVEAT_COL[column]] == "1"
    others = [k for k in ("degraded", "truncated", "multi_block", "content_filtered") if k != column]
    assert all(line[CAVEAT_COL[k]] == "0" for k in others), line
    assert caveat_line(r["out"], "go")[CAVEAT_COL[column]] == "0"
    assert caveat_line(r["out"], "overall")[CAVEAT_COL[column]] == "1"
    assert r["csv"]["chess"][column] == "1" and r["csv"]["OVERALL"][column] == "1" and r["csv"]["go"][column] == "0"
    assert r["cells"][c[0]][column] == "True" and r["cells"][c[1]][column] == "False"
    sysj = r["json"]["systems"][0]
    assert sysj["games"]["chess"]["caveats"][column] == 1 and sysj["caveats"][column] == 1
    assert not sysj["mixed"]  # a per-cell fallback is a caveat, never a mixed condition
    # the cell is still scored (a caveat is not an exclusion)
    assert r["cells"][c[0]]["status"] == "scored"


def test_short_video_with_fewer_stills_than_max_frames_is_not_degraded(tree):
    tmp, tasks, ids = tree
    res = tmp / "short"
    # a 180 s video at 1 FPS has 180 stills: fewer than max_frames 256 and not a degradation
    write_cell(res, a_run("chess", ids["chess"][0], duration_s=180.0, frames_used=180, fps_eff=1.0,
                          t1_recall_ceiling=1.0))
    write_cell(res, a_run("chess", ids["chess"][1], duration_s=180.0, frames_used=170, fps_eff=1.0))
    r = run_cli(tmp, res, tasks)
    assert r["cells"][ids["chess"][0]]["degraded"] == "False"
    assert r["cells"][ids["chess"][1]]["degraded"] == "True"   # 170 < 180 stills the grid gives
    assert r["cells"][ids["chess"][1]]["degradations"] == "frames"


def test_zero_rows_recall_ceiling_reasoning_effort_and_audit(tree):
    tmp, tasks, ids = tree
    res = tmp / "mix-of-caveats"
    c = ids["chess"]
    write_cell(res, b_run("chess", c[0], verdict="flagged"))
    write_cell(res, b_run("chess", c[1], verdict="unaudited", answer_state="never_wrote"), {"events": []})
    write_cell(res, b_run("chess", c[2], verdict="clean", turns_used=None, audit=None))  # no audit: not clean
    write_cell(res, b_run("go", ids["go"][0]))
    r = run_cli(tmp, res, tasks)
    assert r["rc"] == 0, r["err"]
    line = caveat_line(r["out"], "chess")
    assert line[CAVEAT_COL["scored"]] == "3/3" and line[CAVEAT_COL["0-row"]] == "1"
    assert line[CAVEAT_COL["audit"]] == "3" and caveat_line(r["out"], "go")[CAVEAT_COL["audit"]] == "0"
    assert r["csv"]["chess"]["audit_flagged"] == "3" and r["csv"]["OVERALL"]["audit_flagged"] == "3"
    assert r["cells"][c[0]]["audit_verdict"] == "flagged" and r["cells"][c[2]]["audit_verdict"] == "none"
    assert r["cells"][c[0]]["turns_used"] == "12"
    # recall ceiling and reasoning effort (Protocol A)
    res2 = tmp / "ceiling"
    write_cell(res2, a_run("chess", c[0], t1_recall_ceiling=0.5, reasoning_effort="high"))
    write_cell(res2, a_run("chess", c[1], t1_recall_ceiling=1.0, reasoning_effort="high"))
    write_cell(res2, a_run("go", ids["go"][0], t1_recall_ceiling=0.25, reasoning_effort="high"))
    r = run_cli(tmp, res2, tasks)
    assert r["rc"] == 0, r["err"]
    assert caveat_line(r["out"], "chess")[CAVEAT_COL["ceiling"]] == "0.750"
    assert caveat_line(r["out"], "overall")[CAVEAT_COL["ceiling"]] == "0.500"   # mean of game means
    assert "high (2)" in " ".join(caveat_line(r["out"], "chess"))
    assert float(r["csv"]["chess"]["t1_recall_ceiling_mean"]) == pytest.approx(0.75)
    assert r["csv"]["OVERALL"]["reasoning_effort"] == "high (3)"
    assert r["json"]["systems"][0]["caveats"]["reasoning_effort"] == {"high": 3}
    assert r["json"]["systems"][0]["conditions"]["reasoning_effort"] == {"high": 3}


# --------------------------------------------------------------------------------------------------
# mixing: one fixture folder per kind, each refused; --allow-mixed prints it as a DIAGNOSTIC
# --------------------------------------------------------------------------------------------------
def _grid(**k):
    return {"fps": 1, "jpeg_q": 4, "max_frames": 256, "longest_side": 768, **k}


_RP = {"model": "m1", "max_tokens": 48000, "temperature": 0, "reasoning_effort": None}
MIXES = {
    "condition_sha256": (dict(condition_sha256="f" * 64), "condition_sha256: "),
    "fps": (dict(sampling=_grid(fps=2)), "fps2-n256-ls768-q4"),
    "longest_side": (dict(sampling=_grid(longest_side=512)), "fps1-n256-ls512-q4"),
    "transport": (dict(transport="mp4"), "transport: "),
    "model": (dict(model="m2"), "model: "),
    "reasoning_effort": (dict(reasoning_effort="low"), "reasoning_effort: "),
    "tolerance": (dict(tolerance_s=5), "tolerance_s: "),
    "protocol": (None, "protocol: A (1 cell) vs B (1 cell)"),
    # issue 22: every knob that changes the measurement
    "max_tokens": (dict(request_params={**_RP, "max_tokens": 512}), "max_tokens: "),
    "temperature": (dict(request_params={**_RP, "temperature": 0.9}), "temperature: "),
    "enable_thinking": (dict(request_params={**_RP, "enable_thinking": True}, enable_thinking=True),
                        "enable_thinking: "),
    "extra_body": (dict(request_params={**_RP, "extra_body": {"top_k": 1}}), "extra_body_sha256: "),
    "instruction": (dict(instruction_sha256="e" * 64), "instruction_sha256 (chess, Protocol A): "),
    "judge_version": (dict(toolkit={"judge_version": "0.9"}), "judge_version: "),
    # issue 38: a game's definition has a version, two of one game are two benchmarks
    "game_version": (dict(game_version=2), "game_version (chess): 1 (1 cell) vs 2 (1 cell)"),
}
#: the other cell of a mix, where the reference a_run does not record the field
_BASE_OVER = {"instruction": dict(instruction_sha256="d" * 64), "judge_version": dict(toolkit={"judge_version": "1.0"}),
              "game_version": dict(game_version=1)}
_B_MIXES = {
    "max_turns": (dict(max_turns=100), "max_turns: 100 (1 cell) vs 200 (1 cell)"),
    "timeout_min": (dict(timeout_min=30), "timeout_min: "),
    "agent_cmd": (dict(agent_cmd="other-agent --max-turns {max_turns}"), "agent_cmd_sha256: "),
    "isolation": (dict(isolation={"mode": "none"}), "isolation: "),
}
_B_BASE = dict(max_turns=200, timeout_min=120, agent_cmd="my-agent --max-turns {max_turns} API_KEY=***",
               isolation={"mode": "bwrap"})


@pytest.mark.parametrize("kind", sorted(MIXES))
def test_each_kind_of_mixing_is_refused_and_allow_mixed_is_diagnostic(tree, kind):
    tmp, tasks, ids = tree
    over, named = MIXES[kind]
    res = tmp / f"mixed-{kind}"
    c = ids["chess"]
    write_cell(res, a_run("chess", c[0], **_BASE_OVER.get(kind, {})))
    write_cell(res, a_run("chess", c[1], **over) if over is not None else b_run("chess", c[1]))
    r = run_cli(tmp, res, tasks)
    assert r["rc"] == 2 and "REFUSED" in r["err"] and named in r["err"], r["err"]
    assert "csv" not in r and r["out"] == ""  # nothing printed or written as a result
    r = run_cli(tmp, res, tasks, "--allow-mixed")
    assert r["rc"] == 0, r["err"]
    assert "DIAGNOSTIC (--allow-mixed)" in r["out"] and named in r["out"]
    assert r["csv"]["chess"]["table_diagnostic"] == "True" and named in r["csv"]["OVERALL"]["mixed"]
    sysj = r["json"]["systems"][0]
    assert sysj["diagnostic"] is True and any(named in m for m in sysj["mixed"])
    assert r["json"]["diagnostic"] is True


@pytest.mark.parametrize("kind", sorted(_B_MIXES))
def test_each_protocol_b_setting_is_compared(tree, kind):
    tmp, tasks, ids = tree
    over, named = _B_MIXES[kind]
    res = tmp / f"mixed-b-{kind}"
    c = ids["chess"]
    write_cell(res, b_run("chess", c[0], **_B_BASE))
    write_cell(res, b_run("chess", c[1], **{**_B_BASE, **over}))
    r = run_cli(tmp, res, tasks)
    assert r["rc"] == 2 and "REFUSED" in r["err"] and named in r["err"], r["err"]
    r = run_cli(tmp, res, tasks, "--allow-mixed")
    assert r["rc"] == 0 and "DIAGNOSTIC (--allow-mixed)" in r["out"] and named in r["out"]


def test_operator_degradations_of_one_cell_are_caveats_not_mixing(tree):
    """Re-running one cell with a higher --jpeg-q (the fix for an oversize request) or a lower
    --max-frames is a recorded degradation of that cell: counted as degraded, not another condition."""
    tmp, tasks, ids = tree
    res = tmp / "operator"
    c = ids["chess"]
    write_cell(res, a_run("chess", c[0]))
    write_cell(res, a_run("chess", c[1], sampling=_grid(jpeg_q=6), degraded=True,
                          degradations=[{"kind": "jpeg_q", "from": 4, "to": 6, "why": "set by the operator"}]))
    write_cell(res, a_run("chess", c[2], sampling=_grid(max_frames=128), frames_used=128, degraded=True,
                          degradations=[{"kind": "max_frames", "from": 256, "to": 128, "why": "set by the operator"}]))
    r = run_cli(tmp, res, tasks)
    assert r["rc"] == 0, r["err"]
    assert {r["cells"][x]["grid"] for x in c} == {"fps1-n256-ls768-q4"}
    assert r["csv"]["chess"]["degraded"] == "2" and r["csv"]["chess"]["table_diagnostic"] == "False"
    assert r["cells"][c[1]]["degradations"] == "jpeg_q" and r["cells"][c[2]]["degradations"] == "max_frames"


def test_automatic_fallbacks_are_caveats_not_mixing(tree):
    """A per-cell jpeg_q raise (request cap) and a provider image cap are degradations of that cell: the
    declared grid is the run's, the table is not refused, the cells count as degraded."""
    tmp, tasks, ids = tree
    res = tmp / "fallbacks"
    c = ids["chess"]
    write_cell(res, a_run("chess", c[0], sampling=_grid(fps=1.0)))   # 1.0 and 1 are the same grid
    write_cell(res, a_run("chess", c[1], sampling=_grid(jpeg_q=6), degraded=True,
                          degradations=[{"kind": "jpeg_q", "from": 4, "to": 5, "why": "body over cap"},
                                        {"kind": "jpeg_q", "from": 5, "to": 6, "why": "HTTP 413"}]))
    write_cell(res, a_run("chess", c[2], sampling=_grid(max_frames=250), frames_used=250, degraded=True,
                          degradations=[{"kind": "max_frames", "from": 256, "to": 250,
                                         "why": "provider image cap: maximum allowed: 250"}]))
    r = run_cli(tmp, res, tasks)
    assert r["rc"] == 0, r["err"]
    assert {r["cells"][x]["grid"] for x in c} == {"fps1-n256-ls768-q4"}
    assert r["csv"]["chess"]["degraded"] == "2" and r["csv"]["chess"]["table_diagnostic"] == "False"


def test_compare_refuses_two_conditions_on_the_shared_games(tree):
    tmp, tasks, ids = tree
    a, b, b2 = tmp / "A", tmp / "B", tmp / "B2"
    for x in ids["chess"]:
        write_cell(a, a_run("chess", x))
        write_cell(b, a_run("chess", x, model="m2"))                                   # another model: compared
        write_cell(b2, a_run("chess", x, model="m2", transport="mp4"))                 # another transport: refused
    write_cell(b2, a_run("go", ids["go"][0], model="m2", transport="mp4"))   # not shared: not compared
    r = run_cli(tmp, a, tasks, "--compare", str(b))
    assert r["rc"] == 0, r["err"]
    assert r["json"]["compare"]["mixed"] == [] and r["json"]["compare"]["diagnostic"] is False
    r = run_cli(tmp, a, tasks, "--compare", str(b2))
    assert r["rc"] == 2 and "cannot compare" in r["err"] and "transport: A has image_parts; B has mp4" in r["err"]
    r = run_cli(tmp, a, tasks, "--compare", str(b2), "--allow-mixed")
    assert r["rc"] == 0 and "DIAGNOSTIC (--allow-mixed): the systems ran under different conditions" in r["out"]
    assert r["json"]["compare"]["diagnostic"] is True


# --------------------------------------------------------------------------------------------------
# one T2/T3 convention for the native and the Harbor path
# --------------------------------------------------------------------------------------------------
def test_native_and_harbor_print_the_same_t2_t3(tree):
    """The same answers as a native results folder and as a Harbor job: the headline T2/T3 (over cells
    with a match), the zero-filled column, and every other number are identical, and the zero-filled
    column is exactly the mean of Harbor's reward.json values."""
    tmp, tasks, ids = tree
    answers = {("chess", ids["chess"][0]): ORACLE, ("chess", ids["chess"][1]): SHIFTED,   # no match: T2 null
               ("chess", ids["chess"][2]): HALF, ("go", ids["go"][0]): SHIFTED, ("go", ids["go"][1]): ORACLE}
    res = tmp / "native"
    job = make_job(tmp / "jobs", "same-answers")
    reward_json = {}
    for (g, c), ans in answers.items():
        write_cell(res, b_run(g, c), ans)
        d = trial(job, g, c, ans)
        reward_json[(g, c)] = json.loads((d / "verifier" / "reward.json").read_text())
    rn, rh = run_cli(tmp, res, tasks), run_cli(tmp, job, tasks)
    assert rn["rc"] == rh["rc"] == 0, (rn["err"], rh["err"])
    keys = ("reward", "t1_f1", "t2_macro_acc", "n_t2", "t3_macro_acc", "n_t3", "t2_zero_filled", "t3_zero_filled")
    for g in ("chess", "go", "OVERALL"):
        assert {k: rn["csv"][g][k] for k in keys} == {k: rh["csv"][g][k] for k in keys}
    # the two conventions really differ here, and the zero-filled one is Harbor's mean of reward.json
    chess = [reward_json[("chess", c)] for c in ids["chess"]]
    assert float(rn["csv"]["chess"]["t2_zero_filled"]) == pytest.approx(sum(x["t2_macro_acc"] for x in chess) / 3)
    assert float(rn["csv"]["chess"]["t2_macro_acc"]) == pytest.approx(1.0) and rn["csv"]["chess"]["n_t2"] == "2"
    assert float(rn["csv"]["chess"]["t2_zero_filled"]) == pytest.approx(2 / 3)
    # the printed tables carry the same numbers (the header lines differ: results vs job)
    table = lambda out: [ln for ln in out[:out.index("  caveats ")].splitlines()  # noqa: E731
                         if ln.startswith(("  chess", "  go", "  overall ("))]
    assert table(rn["out"]) == table(rh["out"]) and "t2|t3 zf" in rn["out"]


# --------------------------------------------------------------------------------------------------
# audit: --exclude-flagged, Harbor trajectories
# --------------------------------------------------------------------------------------------------
def _atif(commands: list[str], message: str = "Looking at the frames.") -> dict:
    steps = [{"step_id": 1, "source": "user", "message": "the task"}]
    for i, cmd in enumerate(commands, 2):
        steps.append({"step_id": i, "source": "agent", "message": message, "reasoning_effort": "medium",
                      "tool_calls": [{"tool_call_id": f"c{i}", "function_name": "bash_command",
                                      "arguments": {"keystrokes": cmd + "\n", "duration": 1.0}}],
                      "observation": {"results": [{"source_call_id": f"c{i}",
                                                   "content": "ERROR: try pip install opencv-python"}]}})
    return {"schema_version": "ATIF-v1.6", "session_id": "s", "agent": {"name": "terminus-2", "version": "2"},
            "steps": steps}


def test_harbor_trajectory_audit_turns_and_exclude_flagged(tree):
    tmp, tasks, ids = tree
    job = make_job(tmp / "jobs", "audited")
    c = ids["chess"]
    d0 = trial(job, "chess", c[0], ORACLE)
    (d0 / "agent" / "trajectory.json").write_text(json.dumps(_atif(["ffprobe match.mp4", "ls"])))
    d1 = trial(job, "chess", c[1], ORACLE)
    (d1 / "agent" / "trajectory.json").write_text(json.dumps(_atif(["pip install opencv-python", "ls", "ls"])))
    d2 = trial(job, "chess", c[2], HALF)  # no transcript at all: unaudited
    cc = [{"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "name": "Bash", "input": {"command": "curl https://lichess.org/abc"}}]}},
          {"type": "result", "num_turns": 7}]
    (trial(job, "go", ids["go"][0], ORACLE) / "agent" / "claude-code.txt").write_text(
        "\n".join(json.dumps(x) for x in cc))
    assert d2.is_dir()
    r = run_cli(tmp, job, tasks)
    assert r["rc"] == 0, r["err"]
    cells = {(x["game"], x["case_id"]): x for x in r["json"]["systems"][0]["cells"]}
    v = {k: (x["audit_verdict"], x["turns_used"]) for k, x in cells.items()}
    assert v[("chess", c[0])] == ("clean", 2)   # a tool result quoting "pip install" is not the agent's action
    assert v[("chess", c[1])] == ("flagged", 3)
    assert v[("chess", c[2])] == ("unaudited", None)
    assert v[("go", ids["go"][0])] == ("flagged", 7)
    assert cells[("chess", c[0])]["reasoning_effort"] == "medium"
    assert r["csv"]["chess"]["audit_flagged"] == "2" and r["csv"]["OVERALL"]["audit_flagged"] == "3"
    r = run_cli(tmp, job, tasks, "--exclude-flagged")
    assert r["rc"] == 0, r["err"]
    assert "--exclude-flagged: 3 audit-flagged cell(s) excluded" in r["out"]
    assert r["csv"]["chess"]["n_scored"] == "1" and r["csv"]["chess"]["flagged_excluded"] == "2"
    assert float(r["csv"]["chess"]["reward"]) == 1.0
    assert r["json"]["systems"][0]["caveats"]["excluded_flagged"] == 3


def test_exclude_flagged_native(tree):
    tmp, tasks, ids = tree
    res = tmp / "b"
    c = ids["chess"]
    write_cell(res, b_run("chess", c[0], verdict="flagged"))
    write_cell(res, b_run("chess", c[1]), SHIFTED)
    r = run_cli(tmp, res, tasks, "--exclude-flagged")
    assert r["rc"] == 0
    assert r["cells"][c[0]]["status"] == "flagged" and r["csv"]["chess"]["reward"] == "0.0"
    assert "1 audit-flagged cell(s) excluded" in r["out"] and f"excluded chess/{c[0]}: flagged" in r["out"]


# --------------------------------------------------------------------------------------------------
# integrity: answers against answer_sha256, ground truth against the manifest
# --------------------------------------------------------------------------------------------------
def test_changed_answer_is_an_integrity_error_never_a_score(tree):
    tmp, tasks, ids = tree
    res = tmp / "forged"
    c = ids["chess"]
    d = write_cell(res, a_run("chess", c[0]), SHIFTED)       # recorded: the shifted answer (0.0)
    (d / "answer.json").write_text(json.dumps(ORACLE))        # replaced afterwards by a perfect one
    write_cell(res, a_run("chess", c[1]), HALF)
    write_cell(res, a_run("chess", c[2]), ORACLE, record_sha=False)  # a record without its digest: never judged
    r = run_cli(tmp, res, tasks)
    assert r["rc"] == 1
    assert f"chess/{c[0]}: INTEGRITY: answer.json has SHA-256" in r["err"]
    assert f"chess/{c[2]}: INTEGRITY: run.json holds no answer_sha256" in r["err"]
    assert "INTEGRITY ERROR in 2 cell(s)" in r["out"]
    assert r["cells"][c[0]]["status"] == "corrupt" and r["cells"][c[0]]["reward"] == ""
    assert r["cells"][c[2]]["status"] == "corrupt" and r["cells"][c[2]]["reward"] == ""
    assert r["csv"]["chess"]["n_scored"] == "1" and r["csv"]["chess"]["corrupt"] == "2"
    assert float(r["csv"]["chess"]["reward"]) == pytest.approx(2 / 3)   # the forged 1.0s are nowhere
    assert r["cells"][c[1]]["answer_check"] == "ok"
    assert r["json"]["systems"][0]["integrity_errors"][0]["case_id"] == c[0]


def test_changed_ground_truth_is_an_integrity_error(tree):
    tmp, tasks, ids = tree
    res = tmp / "gt"
    c = ids["chess"]
    write_cell(res, a_run("chess", c[0]))
    write_cell(res, a_run("chess", c[1]))
    gt = gt_doc("chess", c[1])
    gt["events"] = gt["events"][:2]   # still a valid ground truth, just not the manifest's
    (tasks / "chess" / "gt" / f"{c[1]}.json").write_text(json.dumps(gt))
    r = run_cli(tmp, res, tasks)
    assert r["rc"] == 1 and f"ground truth chess/gt/{c[1]}.json has SHA-256" in r["err"]
    assert r["cells"][c[1]]["status"] == "corrupt" and r["csv"]["chess"]["n_scored"] == "1"
    # a Harbor job is checked the same way
    job = make_job(tmp / "jobs", "j")
    trial(job, "chess", c[1], ORACLE)
    r = run_cli(tmp, job, tasks)
    assert r["rc"] == 1 and "INTEGRITY" in r["err"] and r["cells"][c[1]]["status"] == "corrupt"


def test_harbor_protocol_a_trial_reads_its_agent_run_json(tree):
    """A Protocol A trial's agent/ folder is a native cell: its caveats and its answer digest count."""
    tmp, tasks, ids = tree
    job = make_job(tmp / "jobs", "pa")
    c = ids["chess"]
    d = trial(job, "chess", c[0], HALF, judge_case={"game": "chess", "case_id": c[0], "protocol": "A"})
    (d / "agent" / "run.json").write_text(json.dumps(a_run("chess", c[0], protocol_complete=False, n_json_blocks=2,
                                                           answer_sha256=J and __import__("hashlib").sha256(
                                                               (d / "artifacts/app/answer.json").read_bytes()
                                                           ).hexdigest())))
    d = trial(job, "chess", c[1], ORACLE, judge_case={"game": "chess", "case_id": c[1], "protocol": "A"})
    (d / "agent" / "run.json").write_text(json.dumps(a_run("chess", c[1], answer_sha256="0" * 64)))
    r = run_cli(tmp, job, tasks)
    assert r["rc"] == 1 and "INTEGRITY" in r["err"]
    assert r["cells"][c[0]]["truncated"] == "True" and r["cells"][c[0]]["multi_block"] == "True"
    assert r["cells"][c[0]]["answer_check"] == "ok" and r["cells"][c[0]]["audit_verdict"] == ""
    assert r["cells"][c[1]]["status"] == "corrupt"


def test_harbor_protocol_b_agent_cannot_forge_an_agent_run_json(tree):
    """A Protocol B trial's agent has a shell in the container and /logs/agent is its to write: an
    agent/run.json there is not the Protocol A agent's record.  It must not replace the audit of the
    transcript (a forged clean verdict), nor name an answer digest that makes the cell corrupt."""
    tmp, tasks, ids = tree
    job = make_job(tmp / "jobs", "forged")
    c = ids["chess"]
    d0 = trial(job, "chess", c[0], ORACLE)
    (d0 / "agent" / "trajectory.json").write_text(json.dumps(_atif(["pip install opencv-python", "ls"])))
    (d0 / "agent" / "run.json").write_text(json.dumps(b_run("chess", c[0], turns_used=1, max_turns=500)))
    d1 = trial(job, "chess", c[1], HALF)
    (d1 / "agent" / "trajectory.json").write_text(json.dumps(_atif(["ls"])))
    (d1 / "agent" / "run.json").write_text(json.dumps(a_run("chess", c[1], answer_sha256="0" * 64)))
    r = run_cli(tmp, job, tasks)
    assert r["rc"] == 0, r["err"]
    assert (r["cells"][c[0]]["audit_verdict"], r["cells"][c[0]]["turns_used"]) == ("flagged", "2")
    assert r["cells"][c[1]]["status"] == "scored" and r["cells"][c[1]]["audit_verdict"] == "clean"
    r = run_cli(tmp, job, tasks, "--exclude-flagged")
    assert r["cells"][c[0]]["status"] == "flagged"


@pytest.mark.parametrize("over,named", [
    ({"max_turns": [200]}, "max_turns: "),
    ({"isolation": {"mode": {"kind": "bwrap"}}}, "isolation: "),
    ({"toolkit": {"judge_version": ["1"]}}, "judge_version: "),
])
def test_a_condition_field_of_an_odd_type_is_named_never_a_traceback(tree, over, named):
    """A run.json whose condition field holds a list or an object (hand-edited, or an older runner)
    is a value like any other: the table is refused naming it, never a TypeError (unhashable)."""
    tmp, tasks, ids = tree
    res = tmp / "odd"
    c = ids["chess"]
    write_cell(res, b_run("chess", c[0], **over))
    write_cell(res, b_run("chess", c[1], max_turns=200, isolation={"mode": "bwrap"}, toolkit={"judge_version": "1"}))
    r = run_cli(tmp, res, tasks)
    assert r["rc"] == 2 and named in r["err"], r["err"]
    assert run_cli(tmp, res, tasks, "--allow-mixed")["rc"] == 0


def test_sparse_2gb_answer_is_read_bounded(tree):
    """A 2 GB sparse answer.json: the scorer reads at most the judge's cap + 1 byte (max RSS of a child
    process far below the file), scores it 0.0 with a format error, and never hashes it whole."""
    tmp, tasks, ids = tree
    res = tmp / "sparse"
    c = ids["chess"]
    d = write_cell(res, a_run("chess", c[0], answer_sha256="0" * 64), None)
    with open(d / "answer.json", "wb") as fh:
        fh.truncate(2 * 1024 ** 3)
    write_cell(res, a_run("chess", c[1]))
    probe = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(REPO_ROOT)!r})

        def hwm_kb():  # this process's own peak RSS (ru_maxrss would include the forking parent's)
            for line in open("/proc/self/status"):
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])

        from video_arena.scoring import scorer as S
        s = S.score_results({str(res)!r}, {str(tasks)!r}, n_boot=0, progress=False, verify_requests=False)
        cell = [c for c in s.cells() if c.case_id == {c[0]!r}][0]
        print(json.dumps({{"status": cell.status, "reward": cell.metric("reward"), "check": cell.answer_check,
                          "fmt": cell.record["format_error"],
                          "maxrss_kb": hwm_kb()}}))
    """)
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["status"] == "scored" and out["reward"] == 0.0 and out["check"] == "oversize"
    assert "more than the 16777216 bytes" in out["fmt"]
    assert out["maxrss_kb"] < 400 * 1024, out   # 2 GB file; the cap is 16 MiB


# --------------------------------------------------------------------------------------------------
# --report md
# --------------------------------------------------------------------------------------------------
def test_markdown_report(tree):
    tmp, tasks, ids = tree
    res = tmp / "md"
    c = ids["chess"]
    tk = {"toolkit_version": "0.1.0", "judge_version": "1.0.0", "git_commit": "ab" * 20, "git_dirty": True}
    write_cell(res, a_run("chess", c[0], protocol_complete=False, toolkit=tk))
    write_cell(res, a_run("chess", c[1]), HALF)
    write_cell(res, a_run("go", ids["go"][0]), SHIFTED)
    out_md = tmp / "paper" / "appendix.md"
    r = run_cli(tmp, res, tasks, "--report", "md", "--report-out", str(out_md))
    assert r["rc"] == 0, r["err"]
    md = out_md.read_text()
    png = out_md.with_suffix(".png")
    assert png.is_file() and png.stat().st_size > 1000
    assert f"]({png.name})" in md
    assert "| chess | 2/3 | 0.833 | [" in md and "| go | 1/2 | 0.000 |" in md
    assert "| **overall** (2 games, mean of game means) | 3/5 | **0.417** |" in md
    assert "| chess | 2/3 | 0 | 1 | 0 | 0 | 0 | 1 | 0 | 0 | 0 |" in md   # caveats: truncated 1
    assert "- Condition (SHA-256, first 12): " in md and "fps1-n256-ls768-q4 (3)" in md
    assert "- Answers checked against the run record's SHA-256: ok (3)" in md
    [tk_line] = [ln for ln in md.splitlines() if ln.startswith("- Toolkit that made the runs")]
    assert "0.1.0 abababababab dirty judge 1.0.0 (1)" in tk_line and "(not recorded) (2)" in tk_line
    assert "/tmp" not in md and str(tmp) not in md   # nothing of this machine's paths
    # refused the same way as the text table
    write_cell(res, a_run("go", ids["go"][1], model="other"))
    r = run_cli(tmp, res, tasks, "--report", "md")
    assert r["rc"] == 2 and "model: " in r["err"]
    r = run_cli(tmp, res, tasks, "--report", "md", "--allow-mixed")
    assert r["rc"] == 0 and "> **DIAGNOSTIC** (`--allow-mixed`)" in r["out"]


def test_symlinked_answer_is_not_followed_and_unmanifested_gt_is_named(tmp_path):
    tasks = tmp_path / "tasks"
    ids = make_tasks(tasks, {"chess": 2}, manifest=False)
    res = tmp_path / "res"
    c = ids["chess"]
    d = write_cell(res, b_run("chess", c[0], answer_sha256="0" * 64), None)
    (d / "answer.json").symlink_to(tasks / "chess" / "gt" / f"{c[0]}.json")  # the truth, as an "answer"
    write_cell(res, b_run("chess", c[1]))
    r = run_cli(tmp_path, res, tasks)
    assert r["rc"] == 0, r["err"]
    assert r["cells"][c[0]]["status"] == "scored" and r["cells"][c[0]]["reward"] == "0.0"
    assert r["cells"][c[0]]["answer_check"] == "unreadable"
    assert "ground truth not checked against a manifest (no manifest.json): chess" in r["out"]
    assert r["json"]["systems"][0]["ground_truth_unchecked"] == ["chess"]


def test_compare_refuses_two_systems_of_different_generation_settings(tree):
    """Issue 22: max_tokens (and temperature, max_turns, timeouts, isolation, judge version) differing
    between two systems is refused by --compare; the model is what a comparison compares."""
    tmp, tasks, ids = tree
    a, b = tmp / "A22", tmp / "B22"
    for x in ids["chess"]:
        write_cell(a, a_run("chess", x))
        write_cell(b, a_run("chess", x, model="m2", request_params={**_RP, "model": "m2", "max_tokens": 8000}))
    r = run_cli(tmp, a, tasks, "--compare", str(b))
    assert r["rc"] == 2 and "max_tokens: A has 48000; B has 8000" in r["err"], r["err"]
