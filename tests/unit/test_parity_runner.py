"""`video-arena parity` without Docker: the Harbor chance agent runs the script run-b runs with the same
arguments, the comparison pairs the two folders task by task, and the doc section is replaced between
its markers only (the Docker run itself: `video-arena parity`, its figures in docs/HARBOR.md)."""
from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from scoring_helpers import ORACLE, b_run, make_job, make_tasks, trial, write_cell
from video_arena.baselines import harbor as H
from video_arena.baselines import parity_runs as BP
from video_arena.baselines import run as BR
from video_arena.harbor import parity as HP


def test_the_harbor_chance_agent_runs_the_run_b_command():
    agent = H.ChanceAgent.__new__(H.ChanceAgent)  # no Harbor logs dir needed for its arguments
    where = {"chess": ["abcdefgh", "12345678"]}
    agent.seed, agent.rates, agent.mode, agent.where = 3, "chess=6", "chance", BR.where_arg(where)
    native = BR.chance_cmd("chance", 3, {"chess": 6.0}, where)
    assert shlex.split(native)[-len(agent.script_args()):] == agent.script_args()
    assert H.ChanceAgent.script.name == Path(BR.CHANCE).name and H.PerceptionAgent.script == BR.PERCEPTION
    name, extra = BP.harbor_agent("chance", 3, {"chess": 6.0}, where)
    assert name == H.CHANCE_AGENT and "seed=3" in extra and "rates=chess=6" in extra
    assert f"where={BR.where_arg(where)}" in extra


def test_compare_runs_pairs_tasks_and_counts_identical_answers(tmp_path):
    tasks = tmp_path / "tasks"
    ids = make_tasks(tasks, {"chess": 3})["chess"]
    native, job = tmp_path / "native", make_job(tmp_path / "jobs", "j")
    for i, cid in enumerate(ids[:2]):
        write_cell(native, b_run("chess", cid), ORACLE)
        trial(job, "chess", cid, ORACLE if i == 0 else {"events": ORACLE["events"][:2]})
    write_cell(native, b_run("chess", ids[2]), ORACLE)  # scored natively only: counted, not compared
    p = HP.compare_runs(native, job, tasks, n_boot=200)
    assert (p.n_paired, p.n_native_only, p.n_harbor_only, p.n_same_answer) == (2, 1, 0, 1)
    assert [t["same_answer"] for t in p.per_task] == [True, False]
    assert p.per_task[0]["difference"] == 0.0 and p.per_task[1]["difference"] < 0
    assert p.mean_difference == pytest.approx(sum(t["difference"] for t in p.per_task) / 2, abs=1e-5)
    with pytest.raises(HP.ParityError):
        HP.compare_runs(job, job, tasks)  # a job where the native folder goes


def test_the_doc_section_is_replaced_between_its_markers_only(tmp_path):
    doc = tmp_path / "HARBOR.md"
    doc.write_text(f"before\n{BP.BEGIN}\nold table\n{BP.END}\nafter\n")
    BP.write_doc(doc, f"{BP.BEGIN}\nnew table\n{BP.END}")
    assert doc.read_text() == f"before\n{BP.BEGIN}\nnew table\n{BP.END}\nafter\n"
    doc.write_text("no markers\n")
    with pytest.raises(BP.ParityRunError):
        BP.write_doc(doc, "x")


def test_the_repository_doc_has_the_markers_and_a_generated_section():
    text = (Path(__file__).resolve().parents[2] / "docs" / "HARBOR.md").read_text()
    section = text.split(BP.BEGIN, 1)[1].split(BP.END, 1)[0]
    assert "Made by `video-arena parity" in section
    assert json.dumps("chance")[1:-1] in section and "perception" in section
