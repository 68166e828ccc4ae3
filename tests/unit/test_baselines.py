"""Baselines: chance/majority (seeded, reproducible, blind), the grid ceiling, the Protocol A "model",
the RESULTS.md inputs digest.  The perception agent on real media is in tests/e2e/test_baselines_e2e.py."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from video_arena.baselines import chance_agent as C
from video_arena.baselines import run as R
from video_arena.core import tasks as T
from video_arena.core.prompts import protocol_a_prompt
from video_arena.games import readers as RD

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "tasks"
GAMES = R.perception_games(TASKS)


def _python_outside_repo() -> str | None:
    """A Python >= 3.11 whose executable and prefix lie outside the repository (not the .venv)."""
    for name in ("python3.11", "python3.12", "python3"):
        exe = shutil.which(name)
        if not exe:
            continue
        try:
            info = subprocess.run([exe, "-c", "import sys;print(sys.executable);print(sys.version_info>=(3,11))"],
                                  capture_output=True, text=True, timeout=30).stdout.split()
        except (OSError, subprocess.TimeoutExpired):
            continue
        if len(info) == 2 and info[1] == "True" and REPO not in Path(info[0]).resolve().parents:
            return info[0]
    return None


def make_sandbox(root: Path, game: str = "chess", seconds: float = 30.0) -> Path:
    box = root / "box"
    box.mkdir(parents=True)
    subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", f"color=c=gray:s=64x64:r=2:d={seconds}",
                    "-pix_fmt", "yuv420p", str(box / "match.mp4")], check=True)
    shutil.copy(TASKS / game / "instruction.md", box / "instruction.md")
    (box / "answer.json").write_text('{"events": []}')
    return box


@pytest.mark.parametrize("game", GAMES)
def test_instruction_parse_gives_the_game_toml_vocabulary(game: str) -> None:
    gd = T.load_game(game, TASKS) if hasattr(T, "load_game") else None
    spec = C.parse_instruction((TASKS / game / "instruction.md").read_text())
    toml = __import__("tomllib").loads((TASKS / game / "game.toml").read_text())
    assert spec["game"] == toml["title"].lower()
    assert spec["types"] == toml["events"]["types"]
    assert spec["sides"] == toml["sides"]
    assert spec["no_where"] == toml["events"].get("types_without_where", [])
    v = toml["value"]
    assert spec["states"] == [v["state_above"], v["state_below"], v["state_even"]]
    assert spec["deltas"] == ["up", "down", "flat"]
    del gd


def test_chance_rows_are_seeded_uniform_and_majority_is_the_same_rows_flat_even() -> None:
    spec = C.parse_instruction((TASKS / "go" / "instruction.md").read_text())
    a = C.rows(spec, 600.0, 6.0, 0, "chance")
    assert a == C.rows(spec, 600.0, 6.0, 0, "chance")
    assert a != C.rows(spec, 600.0, 6.0, 1, "chance")
    assert len(a) == 60 and all(0 <= r["t"] < 600 for r in a)
    assert [r["t"] for r in a] == sorted(r["t"] for r in a)
    assert {r["type"] for r in a} <= set(spec["types"]) and len({r["type"] for r in a}) == 3
    assert all(r["where"] == "" for r in a if r["type"] == "pass")
    assert {r["state"] for r in a} == set(spec["states"]) and {r["delta"] for r in a} == {"up", "down", "flat"}
    m = C.rows(spec, 600.0, 6.0, 0, "majority")
    assert [(r["t"], r["type"], r["actor"], r["where"]) for r in m] == [(r["t"], r["type"], r["actor"], r["where"]) for r in a]
    assert {(r["delta"], r["state"]) for r in m} == {("flat", "even")}


def test_chance_answer_is_judge_valid_for_every_game(J) -> None:
    for game in GAMES:
        cid = T.load_cases(game, TASKS)[0]["case_id"]
        gt = J.load_gt(TASKS / game / "gt" / f"{cid}.json")
        spec = C.parse_instruction((TASKS / game / "instruction.md").read_text())
        rec = J.judge(gt, {"events": C.rows(spec, gt["duration_s"], 6.0, 0, "chance")})
        assert not rec["format_error"], (game, rec["format_error"])
        assert rec["n_pred"] > 0


def test_chance_agent_is_bit_for_bit_reproducible_in_a_sandbox(tmp_path: Path) -> None:
    outs = []
    for k in range(2):
        box = make_sandbox(tmp_path / str(k))
        r = subprocess.run([sys.executable, str(R.CHANCE), "--sandbox", str(box), "--mode", "chance", "--seed", "3",
                            "--rates", "chess=6"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        outs.append((box / "answer.json").read_bytes())
        assert sorted(p.name for p in box.iterdir()) == ["answer.json", "instruction.md", "match.mp4"]
    assert outs[0] == outs[1]
    assert len(json.loads(outs[0])["events"]) == 3  # 6/min over 30 s


def test_chance_agent_without_a_rate_fails_in_one_line(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path)
    r = subprocess.run([sys.executable, str(R.CHANCE), "--sandbox", str(box), "--rates", "go=6"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "no rate for 'chess'" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
@pytest.mark.parametrize("mode", ["chance", "majority"])
def test_chance_agent_opens_no_file_but_the_sandboxs(tmp_path: Path, mode: str) -> None:
    """strace every open/exec of the agent's process tree (itself and ffprobe): outside the sandbox it
    touches only the system (Python's install, shared libraries, /etc, /dev, /proc), never the repository,
    the tasks tree or any ground truth."""
    py = _python_outside_repo()
    if py is None:
        pytest.skip("no Python >= 3.11 outside the repository")
    box = make_sandbox(tmp_path)
    agent = tmp_path / "agent" / "chance_agent.py"  # a copy: the repository's path is not opened
    agent.parent.mkdir()
    shutil.copy(R.CHANCE, agent)
    log = tmp_path / "strace.log"
    r = subprocess.run(["strace", "-f", "-qq", "-e", "trace=open,openat,execve", "-o", str(log), py, str(agent),
                        "--sandbox", ".", "--mode", mode, "--rates", "chess=6"], cwd=box, capture_output=True,
                       text=True, env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    prefix = Path(subprocess.run([py, "-c", "import sys;print(sys.base_prefix)"], capture_output=True,
                                 text=True).stdout.strip())
    allowed = [prefix, Path("/usr"), Path("/lib"), Path("/lib64"), Path("/etc"), Path("/dev"), Path("/proc"),
               Path("/sys"), agent.parent]
    in_box, outside = set(), set()
    for line in log.read_text().splitlines():
        m = re.search(r'(?:open|openat|execve)\((?:AT_FDCWD, )?"([^"]+)"', line)
        if not m or "ENOENT" in line and "execve" in line:
            continue
        p = Path(m.group(1))
        full = (box / p) if not p.is_absolute() else p
        full = Path(os.path.normpath(full))
        if full.parent == box:
            in_box.add(full.name)
        elif not any(full == a or a in full.parents for a in allowed):
            outside.add(str(full))
    assert in_box, "strace saw no sandbox file (the log is not what this test thinks)"
    assert in_box <= {"match.mp4", "instruction.md", "answer.json", ".answer.json.tmp"}, in_box
    assert not outside, sorted(outside)
    for p in [str(TASKS), str(REPO)]:
        assert p not in log.read_text().replace(str(tmp_path), "")


def test_grid_ceiling_places_each_event_in_its_frame_interval(J) -> None:
    gt = {"events": [{"t": 0.5, "type": "move", "actor": "a", "where": "x", "delta": "flat", "state": "even"},
                     {"t": 10.0, "type": "move", "actor": "b", "where": "y", "delta": "up", "state": "a"},
                     {"t": 11.0, "type": "move", "actor": "a", "where": "z", "delta": "up", "state": "a"},
                     {"t": 12.0, "type": "move", "actor": "b", "where": "v", "delta": "up", "state": "a"},
                     {"t": 99.0, "type": "move", "actor": "a", "where": "w", "delta": "up", "state": "a"}]}
    ts = [0.0, 5.0, 10.0, 20.0, 30.0]  # 99 s lies after the last frame: never seen
    rows = R.grid_ceiling_answer(gt, ts, 3.0)["events"]
    assert [(r["t"], r["where"]) for r in rows] == [(2.5, "x"), (7.5, "y"), (13.333, "z"), (16.667, "v")]
    assert rows[1]["delta"] == "up" and rows[1]["state"] == "a"


def test_grid_ceiling_on_a_real_case_is_judged_within_the_recall_bound(J) -> None:
    game = "go"
    cid = T.load_cases(game, TASKS)[0]["case_id"]
    gt = J.load_gt(TASKS / game / "gt" / f"{cid}.json")
    from video_arena.media.grid import GridSpec, grid_times

    times, fps_eff = grid_times(str(gt["duration_s"]), GridSpec())
    rec = J.judge(gt, R.grid_ceiling_answer(gt, [float(t) for t in times], 3.0))
    assert rec["t2_macro_acc"] == 1.0 and rec["t3_macro_acc"] == 1.0
    assert rec["t1_precision"] <= 1.0
    bound = min(1.0, 6.0 * float(fps_eff))
    assert rec["t1_recall"] <= 1.0 and (bound < 1.0 or rec["t1_recall"] > 0.9)


def test_protocol_a_action_answers_from_the_request_alone() -> None:
    ts = [k * 4.5 for k in range(256)]
    prompt = protocol_a_prompt(TASKS / "chess" / "instruction.md", ts)
    body = {"model": "chance", "messages": [{"role": "user", "content": [{"type": "text", "text": prompt},
                                                                         {"type": "image_url", "image_url": {"url": "data:"}}]}]}
    act = R.protocol_a_action("chance", 0, {"chess": 6.0})
    a = json.loads(act(body)["content"])
    assert a == json.loads(act(json.loads(json.dumps(body)))["content"])
    assert a == C.answer_for_prompt(prompt, ts, {"chess": 6.0}, 0, "chance")
    assert len(a["events"]) == round(6.0 * 256 * 4.5 / 60)
    maj = json.loads(R.protocol_a_action("majority", 0, {"chess": 6.0})(body)["content"])
    assert [r["t"] for r in maj["events"]] == [r["t"] for r in a["events"]]
    assert "cannot answer" in R.protocol_a_action("chance", 0, {})({"messages": []})["content"]


def test_rates_come_from_game_toml_and_a_missing_rate_is_an_error(tmp_path: Path) -> None:
    assert R.rates(TASKS, ["chess", "go", "gomoku", "doudizhu", "dota2"]) == {
        "chess": 6.0, "go": 6.0, "gomoku": 10.0, "doudizhu": 15.0, "dota2": 0.6}
    (tmp_path / "x").mkdir()
    toml = (TASKS / "chess" / "game.toml").read_text().replace('name = "chess"', 'name = "x"')
    (tmp_path / "x" / "game.toml").write_text(toml.replace("events_per_minute = 6", ""))
    with pytest.raises(R.BaselinesError, match="events_per_minute"):
        R.rates(tmp_path, ["x"])
    (tmp_path / "y").mkdir()
    (tmp_path / "y" / "game.toml").write_text(toml.replace('name = "x"', 'name = "y"')
                                              .replace("events_per_minute = 6", "events_per_minute = -1"))
    with pytest.raises(R.BaselinesError, match="events_per_minute must be a number >= 0"):
        R.rates(tmp_path, ["y"])


def test_the_perception_games_are_the_games_with_a_reader_and_their_readers_say_what_they_read() -> None:
    """The perception agent reads the games that have a pixel reader (games/<game>/reader.py); what it
    reads is each reader's READS."""
    assert set(GAMES) == set(RD.reader_games()) >= {"badminton", "chess", "doudizhu", "dota2", "gfootball", "go", "gomoku"}
    reads = R.perception_reads(TASKS)
    assert "chess: the two tinted squares; " in reads
    assert "go and gomoku: the new stone and removed stones" in reads
    for game in GAMES:
        assert " ".join(RD.load_reader(game).READS.split()) in reads


def test_committed_results_doc_matches_its_inputs() -> None:
    """docs/RESULTS.md is regenerated by `video-arena baselines`; its numbers stand only while its
    inputs (tasks, agents, judge) are the ones it names: a changed input needs a regenerated doc."""
    doc = (REPO / "docs" / "RESULTS.md").read_text()
    m = re.search(r"Inputs digest [^`]*`([0-9a-f]{64})`", doc)
    cmd = re.search(r"Generated by `video-arena baselines --games ([a-z0-9_,]+)(?: --limit (\d+))?", doc)
    assert m and cmd, "docs/RESULTS.md has no inputs digest or command line"
    games = cmd.group(1).split(",")
    with_cases = {p.parent.name for p in TASKS.glob("*/cases.json") if R.case_ids(TASKS, p.parent.name, None)}
    assert set(games) == with_cases, "docs/RESULTS.md must cover every game that has built-in cases"
    limit = int(cmd.group(2)) if cmd.group(2) else None
    assert m.group(1) == R.inputs_digest(TASKS, games, limit), (
        "docs/RESULTS.md is stale: its inputs changed; rerun `video-arena baselines`")


def test_an_overall_over_fewer_games_says_so_in_the_committed_doc() -> None:
    """A row with n/a games has an overall over other games: every such overall names its k of N, and
    a full row names none (the perception agent reads four of the seven games)."""
    doc = (REPO / "docs" / "RESULTS.md").read_text()
    tables = [t for t in doc.split("\n## ")[1:] if "| overall |" in t.split("\n", 3)[2]]
    assert len(tables) == 4
    partial = 0
    for t in tables:
        head, *rows = [ln for ln in t.splitlines() if ln.startswith("| ") and not ln.startswith("|---")]
        n = len(head.split(" | ")) - 3
        for row in rows:
            cells = [c.strip() for c in row.strip("| ").split(" | ")]
            if cells[0].startswith("recall bound"):
                continue
            per_game, overall = cells[2:-1], cells[-1]
            k = sum(not c.startswith("n/a") for c in per_game)
            assert len(per_game) == n, row
            if 0 < k < n:
                partial += 1
                assert overall.endswith(f"({k} of {n} games)"), row
            else:
                assert "games)" not in overall, row
    assert partial >= 4   # the perception agent's row in each table at least


def test_overall_cell_names_a_partial_row() -> None:
    ov = {"n_games": {"reward": 4}, "means": {"reward": 0.25}, "ci95": {"reward": (0.2, 0.3)}}
    assert R.overall_cell(ov, "reward", 7) == "0.250 [0.200, 0.300] (4 of 7 games)"
    assert R.overall_cell(ov, "reward", 4) == "0.250 [0.200, 0.300]"
    ov0 = {"n_games": {"reward": 0}, "means": {"reward": None}, "ci95": {"reward": None}}
    assert R.overall_cell(ov0, "reward", 7) == "n/a"


def test_a_table_score_would_refuse_never_goes_into_the_doc() -> None:
    from types import SimpleNamespace as NS

    R.check_reportable("oracle", NS(mixed=[], integrity_errors=lambda: []))
    with pytest.raises(R.BaselinesError, match="more than one measurement.*max_turns: 100"):
        R.check_reportable("chance-b", NS(mixed=["max_turns: 100 (1 cell) vs 200 (1 cell)"], integrity_errors=lambda: []))
    bad = NS(game="chess", case_id="x1", reason="answer digest differs")
    with pytest.raises(R.BaselinesError, match="1 cell.*chess/x1: answer digest differs"):
        R.check_reportable("nop", NS(mixed=[], integrity_errors=lambda: [bad]))


WITH_CASES = sorted(p.parent.name for p in TASKS.glob("*/cases.json") if R.case_ids(TASKS, p.parent.name, None))


@pytest.mark.parametrize("game", WITH_CASES)
def test_chance_agent_gets_its_rate_for_every_game_through_the_baselines_command(tmp_path: Path, game: str) -> None:
    """The agent looks its rate up by the instruction's title ("starcraft ii", "google research football"), not
    the folder name: run through the exact --rates the baselines command passes, every game with cases gets
    rows (a missed lookup once gave gfootball and sc2 no answer in B and zero rows in A, silently)."""
    import shlex

    title_rates = R.agent_rates(TASKS, R.rates(TASKS, WITH_CASES))
    argv = shlex.split(R.chance_cmd("chance", 0, title_rates))
    rates_arg = argv[argv.index("--rates") + 1]
    box = make_sandbox(tmp_path, game, seconds=300.0)
    r = subprocess.run([sys.executable, str(R.CHANCE), "--sandbox", str(box), "--mode", "chance", "--rates", rates_arg],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rate = R.rates(TASKS, [game])[game]
    assert len(json.loads((box / "answer.json").read_text())["events"]) == round(rate * 300 / 60) > 0
    text = (TASKS / game / "instruction.md").read_text()
    a = C.answer_for_prompt(text, [float(t) for t in range(300)], title_rates, 0, "chance")
    assert len(a["events"]) == round(rate * 300 / 60)


def test_protocol_a_chance_answer_without_a_rate_is_an_error_not_zero_rows() -> None:
    text = (TASKS / "sc2" / "instruction.md").read_text()
    with pytest.raises(C.InstructionError, match="no rate for 'starcraft ii'"):
        C.answer_for_prompt(text, [0.0, 1.0], {"sc2": 1.0}, 0, "chance")


@pytest.mark.parametrize("game", sorted(p.parent.name for p in TASKS.glob("*/cases.json")
                                        if R.case_ids(TASKS, p.parent.name, None)))
def test_chance_rows_carry_a_where_the_game_accepts(game: str) -> None:
    """Chance is chance only if its rows could match: every `where` it writes for a type with a location
    is a value of the game's own where rule, compared as the judge compares (lower case), the type's
    own rule or the game's general one (a dota2 tower with `where` "" could never match)."""
    from video_arena.core import load_game

    gd = load_game(game, TASKS)
    spec = C.parse_instruction((TASKS / game / "instruction.md").read_text())
    rows = C.rows(spec, 3600.0, 10.0, 0, "chance", R.agent_where(TASKS, [game]).get(spec["game"]))
    located = [r for r in rows if r["type"] not in spec["no_where"]]
    assert located, f"{game}: no chance row of a type with a location"
    for r in located:
        patterns = {gd.where_pattern(r["type"]), dict(gd.where_patterns).get("*")} - {None}
        assert any(re.fullmatch(p, r["where"].lower()) for p in patterns), (game, r)
