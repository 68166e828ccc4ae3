"""The Harbor seam (video_arena/harbor_api/): the one pinned version, the only importer of Harbor and the
only user of Harbor's private names; the trial folder reader; trial names."""
from __future__ import annotations

import ast
import importlib.util
import json
import re
import tokenize
from pathlib import Path

import pytest

from video_arena.harbor_api import trials as TR
from video_arena.harbor_api import version as HV

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "video_arena"
SEAM = PKG / "harbor_api"
#: The project's code: the package, the Harbor agents, the benchmarks, the verifier script, the judge and
#: the thin entry points.  The seam excepted, none of it may reach Harbor directly.
SOURCES = sorted([*PKG.rglob("*.py"), *REPO.glob("*.py"),
                  *(p for d in ("agents", "benchmarks", "judge", "harbor_templates") for p in (REPO / d).rglob("*.py"))])


def _outside_seam() -> list[Path]:
    return [p for p in SOURCES if not p.is_relative_to(SEAM)]


def test_the_version_is_the_pin_and_the_installed_harbor():
    pyproject = (REPO / "pyproject.toml").read_text()
    assert re.findall(r'"harbor==([^"]+)"', pyproject) == [HV.HARBOR_VERSION]
    assert HV.installed_version() == HV.HARBOR_VERSION and HV.is_pinned_release()


def version_literals(text: str, version: str) -> list[str]:
    """The release `version` written in `text`, in full or as its major.minor ("0.26.0", "0.26", "0.26.1"),
    never part of another number (0.267, 10.26)."""
    minor = re.escape(".".join(version.split(".")[:2]))
    return re.findall(rf"(?<![\w.]){minor}(?:\.\d+)*(?!\w|\.\d)", text)


def strings_and_comments(path: Path) -> str:
    """The text of a module's strings (docstrings, f-strings) and comments: where a version is written
    (a number in the code, `x = 0.26`, is no version)."""
    kinds = {tokenize.STRING, tokenize.COMMENT, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    with path.open("rb") as f:
        return "\n".join(t.string for t in tokenize.tokenize(f.readline) if t.type in kinds)


def test_the_version_literal_is_written_in_the_seam_only(tmp_path):
    hits = {str(p.relative_to(REPO)): version_literals(strings_and_comments(p), HV.HARBOR_VERSION) for p in SOURCES}
    assert {k: v for k, v in hits.items() if v} == {"video_arena/harbor_api/version.py": [HV.HARBOR_VERSION]}
    # the check can fail: a docstring's "Harbor 0.26", a comment's and a pin are found, other numbers are not
    probe = tmp_path / "probe.py"
    probe.write_text('"""Harbor 0.26: the layout."""\nPIN = "harbor==0.26.0"  # as of 0.26.1\n'
                     'x = 0.26\nMSG = f"{x} of 10.26 or 0.267"\n')
    assert version_literals(strings_and_comments(probe), "0.26.0") == ["0.26", "0.26.0", "0.26.1"]


def _harbor_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        out += [n for n in names if n == "harbor" or n.startswith("harbor.")]
    return out


def test_only_the_seam_imports_harbor():
    found = {str(p.relative_to(REPO)): _harbor_imports(p) for p in _outside_seam()}
    assert {k: v for k, v in found.items() if v} == {}
    assert _harbor_imports(SEAM / "agents.py")  # the check sees an import where there is one


_PRIVATE = re.compile(r"\A_[A-Za-z][A-Za-z0-9_]*\Z")


def _private_names(path: Path) -> tuple[set[str], set[str]]:
    """(single-underscore names a file uses: attributes, names, imported names, string constants;
    the ones it defines: functions, classes, assignments, its own attributes, parameters)."""
    used, defined = set(), set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute):  # self._x = ... defines; obj._x = ... patches obj: a use
            own = isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            (defined if own else used).add(node.attr)
        elif isinstance(node, ast.Name):
            (defined if isinstance(node.ctx, ast.Store) else used).add(node.id)
        elif isinstance(node, ast.alias):
            used.add(node.name.rsplit(".", 1)[-1])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            used.add(node.value)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
    return {n for n in used if _PRIVATE.fullmatch(n)}, {n for n in defined if _PRIVATE.fullmatch(n)}


def _harbor_private_uses(files: list[Path]) -> dict[str, set[str]]:
    """file -> the private names it uses that the package never defines and Harbor's source does."""
    ours: set[str] = set()
    uses: dict[str, set[str]] = {}
    for p in SOURCES:
        used, defined = _private_names(p)
        ours |= defined
        if p in files:
            uses[str(p.relative_to(REPO))] = used
    harbor_src = "\n".join(f.read_text(encoding="utf-8", errors="replace") for f in
                           Path(importlib.util.find_spec("harbor").origin).parent.rglob("*.py"))
    harbors = {n for names in uses.values() for n in names - ours if re.search(rf"\b{n}\b", harbor_src)}
    return {f: names & harbors for f, names in uses.items() if names & harbors}


def test_no_private_harbor_name_outside_the_seam():
    assert _harbor_private_uses(_outside_seam()) == {}
    # the check can fail: the seam itself uses Harbor's private names (the registry, the compose loader)
    seam = _harbor_private_uses(sorted(SEAM.glob("*.py")))
    assert {"_ENVIRONMENT_REGISTRY", "_compose_mode"} <= seam["video_arena/harbor_api/environments.py"]
    assert "_load_compose" in seam["video_arena/harbor_api/speedups.py"]


_SPLITTERS = {"split", "rsplit", "partition", "rpartition", "index", "rindex", "find", "rfind"}


def trial_name_parsing(path: Path) -> list[int]:
    """Lines where `path` takes a Harbor trial name apart at its `__` (`name.split("__")`, `"__" in name`):
    the seam's trials.trial_task does that, for every reader."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SPLITTERS:
            args = node.args
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            args = [node.left]
        else:
            continue
        if any(isinstance(a, ast.Constant) and a.value == "__" for a in args):
            out.append(node.lineno)
    return sorted(out)


def test_trial_names_are_taken_apart_in_the_seam_only(tmp_path):
    found = {str(p.relative_to(REPO)): trial_name_parsing(p) for p in _outside_seam()}
    assert {k: v for k, v in found.items() if v} == {}
    assert trial_name_parsing(SEAM / "trials.py")  # the check sees trial_task's split
    # the check can fail: the forms a reader would write, and not a `__` that is no trial name's
    probe = tmp_path / "probe.py"
    probe.write_text('a = name.split("__")[0]\nb = "__" in name\nc = name.rpartition("__")\n'
                     'd = path.replace("__", "/")\ne = name.startswith("__")\n')
    assert trial_name_parsing(probe) == [1, 2, 3]


def test_private_facts_only_with_the_pinned_harbor(monkeypatch):
    from video_arena.harbor_api import environments as HE

    assert HE.task_form_facts(True)["_compose_mode"] is True
    monkeypatch.setattr(HV, "installed_version", lambda: "0.27.0")
    assert HE.task_form_facts(True) == {}
    expr = ast.parse("not self._compose_mode", mode="eval").body
    assert HE._eval(expr, "x", compose=True) == "if compose mode"  # nothing assumed: conditional


def test_trial_task_names():
    assert TR.trial_task("chess-Fx7kQ2aB__abc1234") == "chess-Fx7kQ2aB"
    assert TR.trial_task("video-arena/chess-Fx7kQ2aB__x") == "chess-Fx7kQ2aB"
    assert TR.trial_task("chess-Fx7kQ2aB") == "chess-Fx7kQ2aB" and TR.trial_task(None) == ""


def test_trial_reader(tmp_path):
    job = tmp_path / "job"
    t = job / "chess-Fx7kQ2aB__abc1234"
    (t / "verifier").mkdir(parents=True)
    (t / "agent").mkdir()
    (job / "config.json").write_text(json.dumps({"job_name": "job", "n_attempts": 1}))
    (t / "config.json").write_text(json.dumps({"task": {"path": "ds/chess-Fx7kQ2aB"},
                                               "agent": {"name": "nop", "kwargs": {"max_turns": 5}}}))
    (t / "result.json").write_text(json.dumps({
        "task_name": "video-arena/chess-Fx7kQ2aB", "verifier_result": {"rewards": {"reward": 0.0}},
        "exception_info": {"exception_type": "AgentTimeoutError", "exception_message": "late"}}))
    (t / "verifier" / "judge.json").write_text(json.dumps({"answer_state": "never_wrote",
                                                           "case": {"protocol": "B"}}))
    (t / "agent" / "exit-code.txt").write_text("3\n")
    unfinished = job / "chess-Gm4pR9zT__def5678"
    unfinished.mkdir()
    (unfinished / "config.json").write_text(json.dumps({"task": {"path": "ds/chess-Gm4pR9zT"}}))
    assert TR.is_harbor_job(job) and not TR.is_harbor_job(t)
    a, b = TR.read_job(job)
    assert (a.task_key, a.protocol, a.model, a.exit_code, a.judge_answer_state) == \
        ("chess-Fx7kQ2aB", "B", "nop", "3", "never_wrote")
    assert a.exceptions == [("AgentTimeoutError", "late")] and a.rewards == {"reward": 0.0}
    assert a.exception_info == {"exception_type": "AgentTimeoutError", "exception_message": "late"}
    assert a.agent_kwargs() == {"max_turns": 5} and a.answer_path == t / "artifacts" / "app" / "answer.json"
    assert b.result is None and b.error.startswith("no result.json") and b.task_key == "chess-Gm4pR9zT"
    assert b.exception_info is None and b.harbor_logs() == []
    assert TR.finished_trials(job) == 1
    assert TR.split_task_key("chess-Fx7kQ2aB", {"chess": {"Fx7kQ2aB"}}) == ("chess", "Fx7kQ2aB")


def test_atif_lines_are_the_agent_steps_of_every_trajectory():
    traj = {"steps": [{"source": "user", "message": "task"},
                      {"source": "agent", "message": [{"text": "look"}], "reasoning_content": "hm",
                       "reasoning_effort": "high", "tool_calls": [{"function_name": "bash", "arguments": {"c": "ls"}}]},
                      {"source": "agent", "message": "again", "is_copied_context": True}],
            "subagent_trajectories": [{"steps": [{"source": "agent", "message": "sub"}]}]}
    lines, turns, efforts = TR.atif_lines(traj)
    assert turns == 2 and efforts == {"high"}
    assert [json.loads(x)["text"] for x in lines] == ["look\nhm", "again", "sub"]
    assert json.loads(lines[0])["tool_calls"] == [{"function": {"name": "bash", "arguments": {"c": "ls"}}}]


@pytest.mark.parametrize("module", ["task_models", "speedups", "environments", "agents", "registry"])
def test_the_seam_modules_import(module):
    importlib.import_module(f"video_arena.harbor_api.{module}")


def test_the_protocol_a_agent_reads_its_ae_through_the_seam(tmp_path, monkeypatch):
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of litellm's price list
    from video_arena.protocol_a.harbor_agent import ProtocolA, game_case_of

    agent = ProtocolA(logs_dir=tmp_path, model_name="openai/m", extra_env={"OPENAI_BASE_URL": "http://from-ae"})
    monkeypatch.setenv("OPENAI_BASE_URL", "http://from-host")
    assert agent._env("OPENAI_BASE_URL") == "http://from-ae"  # --ae wins over the host's environment
    assert game_case_of("video-arena/chess-Fx7kQ2aB__x9", tmp_path) == ("chess", "Fx7kQ2aB")
