"""Hostile agents against the real `video-arena run-b`, isolation on (bubblewrap).

The fixture tasks tree is copied where an attacker looks first: next to the results folder and the
sandbox root (from a sandbox, `../../../tasks`), with a second copy as a stand-in for a Harbor
dataset, and the runner is given $VA_TASKS_ROOT in its environment.  Every ground-truth file of
the copies carries a random canary.  Every attack ends with the same checks:

- no ground-truth byte read: the canary appears in no log, answer or run.json of the results;
- nothing alive: no host process carries the attack's marker (scanned from outside, /proc);
- the scorer's numbers unaffected: `video-arena score` on the results gives each cell what its
  exported answer earns from the judge, and the forgeries earn nothing.

The runner is a real process (`python -m video_arena.cli run-b`); --timeout-min 0.05 (3 s).
"""
from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from video_arena.protocol_b.isolation import namespaces_available

_NO_NS = namespaces_available()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(_NO_NS is not None, reason=f"no isolation here: {_NO_NS}")]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TASKS = FIXTURES / "protocol_b" / "tasks"
HOSTILE = FIXTURES / "agents" / "hostile.py"
CASE, CASE2 = "Tq3Vx8Lm", "Pz5Kw2Rn"
LIMIT_MIN = 0.05
GRACE = 0.2


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    """A tasks tree with canaried ground truth beside the results and the sandbox root."""
    base = tmp_path_factory.mktemp("arena")
    canary = "CANARY-" + secrets.token_hex(8)
    gts = []
    for copy in (base / "tasks", base / "datasets" / "video-arena-harbor" / "tasks"):
        shutil.copytree(TASKS, copy)
        for gt in sorted((copy / "toy" / "gt").glob("*.json")):
            doc = json.loads(gt.read_text(encoding="utf-8"))
            doc["canary"] = canary
            gt.write_text(json.dumps(doc), encoding="utf-8")
            gts.append(gt)
    agents = base / "agents"
    agents.mkdir()
    shutil.copy(HOSTILE, agents / "hostile.py")
    return {"base": base, "tasks": base / "tasks", "canary": canary, "gts": gts, "agents": agents,
            "gt_bytes": {p: p.read_bytes() for p in gts}}


def marker_procs(token: str) -> list[int]:
    """Host pids (not zombies) whose command line or environment holds `token`: read from outside."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            if stat[stat.rindex(b")") + 2:].split()[0] in (b"Z", b"X"):
                continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                blob = f.read()
            with open(f"/proc/{name}/environ", "rb") as f:
                blob += f.read()
        except (OSError, ValueError):
            continue
        if token.encode() in blob:
            out.append(int(name))
    return out


def run_b(arena, name: str, mode: str, *agent_args: str, extra: tuple[str, ...] = (), limit: int = 1,
          prefix: list[str] = (), token: str = "", out: Path | None = None):
    """Run one hostile mode through the real CLI (after `prefix`, a command the runner runs under; the
    same `token` again: the same command, so a resume); returns (record, out, stderr, peak RSS KiB, token)."""
    token = token or "VA-HOSTILE-" + secrets.token_hex(6)
    out = out or arena["base"] / f"out-{name}"
    py = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    # The attacker's best case: it knows the case id and where the ground truth lies on the host
    # (the prober is told nothing, so that whatever it prints was found, not given).
    known = "" if mode == "probe" else f"--case {CASE} " + " ".join(f"--gt {shlex.quote(str(p))}" for p in arena["gts"])
    cmd = (f"{shlex.quote(py)} {shlex.quote(str(arena['agents'] / 'hostile.py'))} {{prompt}} {mode} "
           f"{known} --marker {token} {' '.join(agent_args)}")
    argv = [*prefix, sys.executable, "-m", "video_arena.cli", "run-b", "--agent-cmd", cmd, "--out", str(out),
            "--tasks-root", str(arena["tasks"]), "--skip-preflight", "--sandbox-root", str(arena["base"] / "sb"),
            "--timeout-min", str(LIMIT_MIN), "--kill-grace-s", str(GRACE), "--limit", str(limit),
            "--allow-path", str(arena["agents"]), "--allow-path", sys.base_prefix, *extra]
    env = dict(os.environ, VA_TASKS_ROOT=str(arena["tasks"]))
    errf = arena["base"] / f"stderr-{name}.txt"
    with open(errf, "wb") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=arena["tasks"])
        # The runner's own peak RSS: VmHWM, sampled until it exits (a forked child's ru_maxrss starts
        # from the forking pytest process's RSS, which would measure pytest, not the runner).
        peak_kib = 0
        while True:
            pid, status = os.waitpid(proc.pid, os.WNOHANG)
            if pid:
                break
            try:
                with open(f"/proc/{proc.pid}/status") as st:
                    peak_kib = max([peak_kib] + [int(ln.split()[1]) for ln in st if ln.startswith("VmHWM:")])
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = errf.read_text(encoding="utf-8", errors="replace")
    assert proc.returncode == 0, stderr
    rec = json.loads((out / "toy" / CASE / "run.json").read_text(encoding="utf-8"))
    return rec, out, stderr, peak_kib, token


def hostile_report(out: Path, case: str = CASE) -> dict:
    text = (out / "toy" / case / "logs" / "agent.stdout.log").read_text(encoding="utf-8", errors="replace")
    return next(json.loads(x) for x in text.splitlines() if x.startswith('{"hostile"'))["hostile"]


def score(arena, out: Path) -> dict[str, dict]:
    j = out.parent / f"{out.name}-score.json"
    p = subprocess.run([sys.executable, "-m", "video_arena.cli", "score", str(out), "--tasks-root",
                        str(arena["tasks"]), "--json", str(j), "--quiet"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    cells = json.loads(j.read_text())["systems"][0]["cells"]
    return {c["case_id"]: c for c in cells}


def judge_directly(arena, answer: Path, case: str = CASE) -> float:
    gt = arena["tasks"] / "toy" / "gt" / f"{case}.json"
    p = subprocess.run([sys.executable, "-m", "video_arena.cli", "judge", str(gt), str(answer)],
                       capture_output=True, text=True, timeout=60)
    return json.loads(p.stdout)["reward"]


def common_checks(arena, out: Path, token: str) -> None:
    """No GT byte read or leaked, nothing alive, no sandbox left, the GT files untouched."""
    time.sleep(0.2)
    alive = marker_procs(token)
    for pid in alive:  # do not leave them running should the assertion fail
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert alive == [], f"processes of the attack outlived run-b: {alive}"
    for p in out.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            assert arena["canary"].encode() not in data, f"ground truth leaked into {p}"
            for gt in arena["gt_bytes"].values():
                assert gt[:200] not in data, f"ground truth bytes in {p}"
    for p, data in arena["gt_bytes"].items():
        assert p.read_bytes() == data and p.stat().st_nlink == 1, f"{p} was changed or linked"
    assert not any((arena["base"] / "sb").iterdir()), "a sandbox was left behind"


def test_fd_and_proc_prober_sees_nothing_of_the_host(arena) -> None:
    rec, out, _, _, token = run_b(arena, "probe", "probe")
    seen = hostile_report(out)
    blob = json.dumps(seen)
    for secret in (CASE, CASE2, str(arena["tasks"]), str(arena["base"] / "datasets"), "VA_TASKS_ROOT", str(out),
                   "/toy/", "/gt/"):
        assert secret not in blob, f"the prober saw {secret!r}"
    # stdout/stderr are pipes; no fd names a file of the results
    assert all(v.startswith(("pipe:", "/dev/null", "/proc/")) or v.startswith("<") or v == rec["sandbox"]
               for v in seen["fds"].values()), seen["fds"]
    # its own PID namespace: bwrap's init (1), the shell it exec'd (2), nothing of the host
    assert seen["pids"][:2] == [1, 2] and len(seen["pids"]) <= 4
    assert Path(seen["procs"]["1"]["cmdline"].split()[0]).name == "bwrap"
    assert seen["procs"]["1"]["cmdline"].split()[1] == "--args"  # its mounts are not on its command line
    assert set(seen["root"]) <= {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "proc", "dev",
                                 "tmp", "root", "home", *Path(sys.base_prefix).parts[1:2]}
    assert seen["attempts"] == {"mount": False, "mknod": False, "kill_init": seen["attempts"]["kill_init"]}
    assert rec["isolation"]["mode"] == "bwrap" and rec["isolation"]["enforced"] is True
    assert rec["stop_reason"] == "completed" and rec["answer_state"] == "never_wrote"
    common_checks(arena, out, token)
    assert score(arena, out)[CASE]["reward"] == 0.0


def test_gt_finder_finds_nothing(arena) -> None:
    rec, out, _, _, token = run_b(arena, "find", "find")
    found = hostile_report(out)
    assert found["n_hits"] == 0 and found["contents"] == {}, found
    assert not any(found["gt_visible"].values())
    assert rec["stop_reason"] == "completed"
    common_checks(arena, out, token)


def test_control_the_gt_finder_can_find_ground_truth_without_isolation(arena) -> None:
    """The finder is not blind: without isolation it reads the canaried ground truth."""
    rec, out, _, _, token = run_b(arena, "find-noiso", "find", "--roots", "../../..", extra=("--no-isolation",))
    found = hostile_report(out)
    assert found["n_hits"] > 0 and any(arena["canary"] in c for c in found["contents"].values())
    assert rec["isolation"]["mode"] == "none"
    shutil.rmtree(out)


def test_hard_link_forger_cannot_link_ground_truth(arena) -> None:
    rec, out, _, _, token = run_b(arena, "hardlink", "hardlink")
    links = hostile_report(out)["links"]
    assert links and "linked" not in links.values(), links
    assert rec["answer_state"] == "wrote" and rec["n_rows"] == 1
    common_checks(arena, out, token)
    cell = score(arena, out)[CASE]
    assert cell["reward"] == judge_directly(arena, out / "toy" / CASE / "answer.json") < 1.0


@pytest.mark.parametrize("launcher", ["wait", "exit"])
def test_fork_walkers_do_not_survive_the_cell(arena, launcher: str) -> None:
    """50 fork/setsid walkers (each a new pid every ~2 ms): the runner saw the cell's namespace empty
    before collecting, and no walker is alive after run-b returns (host /proc scanned from outside)."""
    # The walkers load the machine they run on (50 x a fork every 2 ms): on a host already busy, the launcher
    # that exits can take more than the 3 s limit to fork them all and report.  It ends its cell as soon as it
    # exits, so a longer limit costs nothing when it is quick (the last --timeout-min wins).
    extra = ("--timeout-min", "0.5") if launcher == "exit" else ()
    rec, out, stderr, _, token = run_b(arena, f"walker-{launcher}", "walker", "--walkers", "50",
                                              "--launcher", launcher, extra=extra)
    assert hostile_report(out)["walkers"] == 50
    if launcher == "wait":
        assert rec["stop_reason"] == "timeout" and rec["kill"]["reason"] == "limit"
        assert rec["kill"]["survivors"] == [] and rec["kill_to_gone_s"] is not None
    elif rec["stop_reason"] == "completed":  # the launcher exited at once: the walkers die with init
        assert rec["exit_code"] == 0
    else:  # a machine so loaded that the launcher had not exited by the limit
        assert rec["stop_reason"] == "timeout" and rec["kill"]["survivors"] == []
    assert "stray" not in stderr
    common_checks(arena, out, token)
    # nothing wrote the exported answer after collection
    exported = (out / "toy" / CASE / "answer.json").read_bytes()
    time.sleep(0.5)
    assert (out / "toy" / CASE / "answer.json").read_bytes() == exported
    assert score(arena, out)[CASE]["status"] == "scored"


def test_sparse_2gib_answer_is_too_large_with_bounded_memory(arena) -> None:
    rec, out, _, maxrss_kib, token = run_b(arena, "sparse", "sparse")
    assert hostile_report(out)["size"] == 2 << 30
    assert rec["answer_state"] == "too_large" and rec["answer_sha256"] is None
    exported = out / "toy" / CASE / "answer.json"
    assert exported.stat().st_size < 1024  # the seed, never a copy of the 2 GiB
    # The runner's peak RSS (and any child's) stays far below the answer's size.
    assert maxrss_kib < 400 * 1024, f"peak RSS {maxrss_kib} KiB"
    common_checks(arena, out, token)
    assert score(arena, out)[CASE]["reward"] == 0.0


def test_symlinked_answer_is_no_answer(arena) -> None:
    rec, out, _, _, token = run_b(arena, "symlink", "symlink")
    assert rec["answer_state"] == "deleted" and "symlink" in rec["answer_note"]
    common_checks(arena, out, token)
    assert score(arena, out)[CASE]["reward"] == 0.0


def test_agent_exiting_127_after_work_is_scored(arena) -> None:
    rec, out, _, _, token = run_b(arena, "exit127", "exit127")
    assert (rec["stop_reason"], rec["exit_code"], rec["answer_state"], rec["n_rows"]) == (
        "agent_error", 127, "wrote", 2)
    common_checks(arena, out, token)
    cell = score(arena, out)[CASE]
    assert cell["status"] == "scored"
    assert cell["reward"] == judge_directly(arena, out / "toy" / CASE / "answer.json") > 0.0


#: the capabilities that let root ignore a mode bit or an immutable flag
BYPASS_MODES = "-dac_override,-dac_read_search,-fowner,-linux_immutable"


def as_an_ordinary_user() -> list[str]:
    """The prefix that runs the runner as an ordinary user's runner is: bound by the owner's mode bits
    (as root: the capabilities that bypass them dropped, setpriv; bwrap keeps the ones it needs)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root without setpriv: cannot run the runner as an ordinary user would")
    return [setpriv, "--bounding-set", BYPASS_MODES, "--"]


@pytest.fixture
def victim(arena):
    """A host folder beside the sandbox root (invisible to an isolated agent, where its links point)."""
    v = arena["base"] / "victim"
    (v / "sub").mkdir(parents=True)
    (v / "keep.txt").write_text("keep")
    (v / "sub" / "secret.txt").write_text("secret")
    yield v
    shutil.rmtree(v, ignore_errors=True)


def tree_state(root: Path) -> dict[str, tuple]:
    return {str(p.relative_to(root)): (p.lstat().st_mode, p.lstat().st_nlink, p.lstat().st_mtime_ns,
                                       p.read_bytes() if p.is_file() else None)
            for p in [root, *sorted(root.rglob("*"))]}


def leave_no_tree(arena) -> None:
    """Whatever a failing run left under the sandbox root, removed with chattr and rm (a tree 2,000 deep
    would make pytest's own clean-up of old temporary folders raise RecursionError in a later session, an
    immutable file would stop it)."""
    for p in (arena["base"] / "sb").iterdir():
        if shutil.which("chattr"):
            subprocess.run(["chattr", "-R", "-i", "-a", str(p)], capture_output=True, timeout=600)
        subprocess.run(["rm", "-rf", "--one-file-system", str(p)], capture_output=True, timeout=600)


@pytest.mark.parametrize("what", ["nested", "everything"])
def test_what_an_agent_leaves_behind_neither_vetoes_its_cell_nor_reaches_outside(arena, victim, what: str) -> None:
    """Issue 36: an agent wrote a wrong answer, then nested 2,000 folders (`nested`, the runner as it
    is), so the runner's clean-up raised RecursionError: no run.json, the sandbox left on disk, the cell
    missing, and a resume re-ran it (attempt 2, nothing marked redrawn).  `everything` (hostile.py
    `litter`): folders 2,000 deep, 1,000 files, folders and the answer of mode 000, links to a host
    folder, FIFO, socket, hard links, a writer still filling a folder, against an ordinary user's runner.
    Either way the cell is recorded and scored as what it answered, the sandbox is gone, the host folder
    its links name is untouched, and a resume skips the cell."""
    before = tree_state(victim)
    args = ("litter", "--victim", str(victim), "--depth", "2000", "--files", "1000",
            *(["--only-nest"] if what == "nested" else []))
    prefix = as_an_ordinary_user() if what == "everything" else []
    try:
        rec, out, stderr, _, token = run_b(arena, f"litter-{what}", *args, extra=("--timeout-min", "2"),
                                           prefix=prefix)
    finally:
        leave_no_tree(arena)
    left = hostile_report(out)
    assert left["depth"] == 2000
    if what == "everything":
        assert left["links"]["hard_media"] == "linked"
        assert left["links"]["hard_prompt"] != "linked" and left["links"]["hard_victim"] != "linked"
    assert (rec["stop_reason"], rec["answer_state"], rec["n_rows"]) == ("completed", "wrote", 1)
    assert rec["sandbox_removed"] is True and "sandbox_note" not in rec
    assert "Traceback" not in stderr and "runner error" not in stderr
    common_checks(arena, out, token)
    assert tree_state(victim) == before
    cell = score(arena, out)[CASE]
    assert cell["status"] == "scored"
    assert cell["reward"] == judge_directly(arena, out / "toy" / CASE / "answer.json") < 1.0
    again, _, stderr2, _, _ = run_b(arena, f"litter-{what}", *args, extra=("--timeout-min", "2"), prefix=prefix,
                                    token=token)
    assert "1 finished cell(s) skipped" in stderr2 and again == rec
    assert not (out / "toy" / CASE / "attempts").exists()


def test_a_clean_up_that_cannot_finish_leaves_a_recorded_cell_and_the_host_untouched(arena, victim) -> None:
    """Without isolation a root agent can bind-mount a host folder into its sandbox (shutil.rmtree then
    deleted that folder's files through it, here on a folder whose name is not UTF-8) and make files
    immutable.  The runner clears the flags it
    may, never enters the mount, records the cell as it answered, says on stderr and in run.json that
    the sandbox was not fully removed (`sandbox_removed` false, `sandbox_note`), and a resume does not
    re-run the cell.  The runner runs in a mount namespace of its own, so the mount dies with it."""
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("needs root (and unshare) for an agent to mount")
    before = tree_state(victim)
    prefix = [unshare, "--mount", "--propagation", "private", "--"]
    try:
        rec, out, stderr, _, token = run_b(arena, "mount", "mount", "--victim", str(victim),
                                           extra=("--no-isolation",), prefix=prefix)
        assert tree_state(victim) == before
        made = hostile_report(out)
        assert made["mounted"] is True and made["flags"] == {"locked/f": True, "locked": True}, made
        assert (rec["stop_reason"], rec["answer_state"], rec["n_rows"]) == ("completed", "wrote", 1)
        assert rec["sandbox_removed"] is False and "mount point" in rec["sandbox_note"], rec
        assert tree_state(victim) == before
        sandbox = Path(rec["sandbox"])
        mount_point = os.fsdecode(b"m\xff")   # a name that is not UTF-8, in the note, the log and stderr
        assert sorted(os.listdir(sandbox)) == [mount_point] and os.listdir(sandbox / mount_point) == []
        assert mount_point in rec["sandbox_note"]
        [warning] = [ln for ln in stderr.splitlines() if "was not fully removed" in ln]
        assert f"toy/{CASE}" in warning and "the cell is recorded" in warning
        again, _, stderr2, _, _ = run_b(arena, "mount", "mount", "--victim", str(victim),
                                        extra=("--no-isolation",), prefix=prefix, token=token)
        assert "1 finished cell(s) skipped" in stderr2 and again == rec
        assert score(arena, out)[CASE]["status"] == "scored"
    finally:
        leave_no_tree(arena)


def test_an_agent_that_fills_the_disk_it_shares_with_the_results_is_recorded(arena) -> None:
    """An agent wrote a wrong answer, then filled the disk its sandbox shares with --out (a 16 MiB tmpfs
    here): the log pump died with a traceback, answer.json and run.json could not be written, the cell
    was missing and its sandbox kept the disk full.  Now the logs are drained and counted, the sandbox
    is removed first when the record has no room, and the cell is recorded and scored as it answered."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("needs root to mount a small filesystem")
    disk = arena["base"] / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(disk)], check=True)
    try:
        rec, out, stderr, _, token = run_b(arena, "fill", "fill", out=disk / "out",
                                           extra=("--sandbox-root", str(disk / "sb")))
        assert (rec["stop_reason"], rec["answer_state"], rec["n_rows"]) == ("completed", "wrote", 1)
        # 4 MiB of stdout, far under the 64 MiB cap: what was dropped did not fit on the full disk
        assert rec["sandbox_removed"] is True and rec["logs_truncated"]["stdout"] > 0
        assert "Traceback" not in stderr and "runner error" not in stderr
        assert os.listdir(disk / "sb") == [] and shutil.disk_usage(disk).used < 1 << 20
        cell = score(arena, out)[CASE]
        assert cell["status"] == "scored"
        assert cell["reward"] == judge_directly(arena, out / "toy" / CASE / "answer.json") < 1.0
        assert marker_procs(token) == []
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)
