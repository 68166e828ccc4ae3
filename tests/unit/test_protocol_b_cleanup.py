"""A Protocol B sandbox's clean-up against whatever an agent leaves in it (issue 36): the runner's own
`Sandbox.remove()` on trees built the way a hostile agent builds them.  Nothing outside the sandbox may
change, whatever points there.

As root the owner's mode bits do not bind (CAP_DAC_OVERRIDE), so a folder of mode 000 stops only an
ordinary user's runner: the removals that must get through modes run in a child without the capabilities
that bypass them (setpriv), as an ordinary user's runner would.  The end-to-end form (a real agent under
bubblewrap, the real runner) is tests/e2e/test_hostile_agents.py `test_what_an_agent_leaves_behind_...`."""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from video_arena.protocol_b.sandbox import Sandbox
from video_arena.protocol_b.states import collect_answer

REPO = Path(__file__).resolve().parents[2]
#: the capabilities that let root ignore a mode (and clear an immutable flag)
BYPASS_MODES = ("dac_override", "dac_read_search", "fowner")


@pytest.fixture(autouse=True)
def _never_leave_a_deep_tree(tmp_path: Path):
    """Whatever a failing test leaves (a tree 2,000 deep would make pytest's own clean-up of old temporary
    folders raise RecursionError in a later session): removed with rm, after every other teardown."""
    yield
    subprocess.run(["rm", "-rf", "--one-file-system", str(tmp_path)], capture_output=True, timeout=600)


def sandbox_at(container: Path) -> Sandbox:
    return Sandbox(container=container, path=container / "sandbox", prompt_path=container / "prompt.txt",
                   marker="", instruction_sha256="", prompt_sha256="", seed_bytes=b"{}")


def remove_as(container: Path, drop: tuple[str, ...] = BYPASS_MODES, budget: str = "") -> dict:
    """`Sandbox.remove()` of `container` in a child process that the owner's mode bits bind (as root:
    `drop`ped from its capabilities); what it returned, as a dict."""
    code = ("import dataclasses, json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[2]);"
            "from tests.unit.test_protocol_b_cleanup import sandbox_at;"
            f"r = sandbox_at(Path(sys.argv[1])).remove({budget});"
            "print(json.dumps(dataclasses.asdict(r) if dataclasses.is_dataclass(r) else {}))")
    argv = [sys.executable, "-c", code, str(container), str(REPO)]
    if os.geteuid() == 0 and drop:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root without setpriv: cannot drop the capabilities that bypass a mode")
        argv = [setpriv, "--bounding-set", ",".join("-" + c for c in drop), "--", *argv]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if p.returncode and "setpriv" in p.stderr:
        pytest.skip(f"setpriv cannot drop capabilities here: {p.stderr.strip()}")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under `root` (and root): its type, mode, link count, size, mtime and bytes."""
    out = {}
    for p in [root, *sorted(root.rglob("*"))]:
        st = os.lstat(p)
        data = p.read_bytes() if stat.S_ISREG(st.st_mode) else None
        out[str(p.relative_to(root))] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_nlink,
                                         st.st_size, st.st_mtime_ns, data)
    return out


@pytest.fixture
def victim(tmp_path: Path):
    """A host folder beside the sandbox root that links in the sandbox point at: it must not change."""
    v = tmp_path / "victim"
    (v / "sub").mkdir(parents=True)
    (v / "keep.txt").write_text("keep")
    (v / "sub" / "secret.txt").write_text("secret")
    os.chmod(v / "sub", 0o500)
    yield v
    if (v / "sub").is_dir():
        os.chmod(v / "sub", 0o700)


def nest(top: Path, depth: int) -> Path:
    """Folders `depth` deep under `top`, made with mkdir in a loop (no path ever that long)."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            new = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = new
        os.symlink("/", "to_root", dir_fd=fd)
        os.mkdir("locked", dir_fd=fd)
        os.chmod(f"/proc/self/fd/{fd}", 0o500)  # the deepest folder: no w
    finally:
        os.close(fd)
    return top


def litter(sandbox: Path, victim: Path, files: int = 500) -> None:
    """What a hostile agent leaves: links out of the sandbox (to a host folder and a file in it, to /, to
    the folder above, a loop, a dangling one), a FIFO, a socket, hard links in and out, many files, and
    folders no one may read, search or write, a sticky one, a file of mode 000; last, the sandbox folder
    itself of mode 000."""
    sandbox.mkdir()
    (sandbox / "answer.json").write_text('{"events": []}')
    for name, target in (("to_victim", victim), ("to_victim_file", victim / "keep.txt"), ("to_root", "/"),
                         ("to_parent", ".."), ("loop", "loop"), ("dangling", "/no/such/path")):
        os.symlink(target, sandbox / name)
    os.mkfifo(sandbox / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sandbox / "sock"))
    sock.close()
    os.link(victim / "keep.txt", sandbox / "hard_victim")
    os.link(sandbox / "answer.json", sandbox / "hard_answer")
    (sandbox / "many").mkdir()
    for k in range(files):
        (sandbox / "many" / str(k)).touch()
    modes = {"m000": 0o000, "no_x": 0o600, "no_r": 0o300, "no_w": 0o500, "sticky": stat.S_ISVTX | 0o555}
    for name, mode in modes.items():
        inner = sandbox / "modes" / name / "inner"
        inner.mkdir(parents=True)
        (inner / "f").write_text("x")
        os.symlink(victim, inner / "to_victim")
        os.chmod(inner, mode)
        os.chmod(inner.parent, mode)
    (sandbox / "modes" / "file000").write_text("x")
    os.chmod(sandbox / "modes" / "file000", 0)
    os.chmod(sandbox, 0)


def test_a_tree_nested_past_the_recursion_limit_is_removed(tmp_path: Path) -> None:
    """2,000 folders deep (Python's recursion limit is 1,000: shutil.rmtree raised RecursionError, so the
    cell had no run.json and its sandbox stayed on disk)."""
    container = tmp_path / "va-b-deep"
    (container / "sandbox").mkdir(parents=True)
    nest(container / "sandbox", 2000)
    result = sandbox_at(container).remove()
    assert result.removed and not container.exists(), result
    assert result.entries >= 2000 and result.problems == []


def test_whatever_the_agent_leaves_is_removed_and_nothing_outside_changes(tmp_path: Path, victim: Path) -> None:
    """Links out of the sandbox (to a host folder, one of its files, /, ..), a FIFO, a socket, hard links
    to a host file, 500 files, folders of mode 000 / no x / no r / no w / sticky at the top and 300
    deep, the sandbox folder itself of mode 000: all removed by a runner the modes bind; the host folder
    the links point at, and the file hard-linked, keep every byte, mode and link count."""
    before = snapshot(victim)
    container = tmp_path / "sb" / "va-b-litter"
    container.mkdir(parents=True)
    (container / "prompt.txt").write_text("prompt")
    litter(container / "sandbox", victim)
    os.chmod(container / "sandbox", 0o700)
    deep = container / "sandbox" / "deeper"
    deep.mkdir()
    nest(deep, 300)
    os.chmod(deep, 0)
    os.chmod(container / "sandbox", 0)
    result = remove_as(container)
    assert snapshot(victim) == before
    assert (tmp_path / "sb").is_dir() and list((tmp_path / "sb").iterdir()) == [], result
    assert result["removed"] and result["problems"] == []


def test_the_answer_an_agent_locks_is_collected_as_it_wrote_it(tmp_path: Path) -> None:
    """answer.json of mode 000 in a sandbox folder of mode 000: the runner gives its owner access back
    once the agent is gone and collects the answer (it was counted as deleted by a runner the modes
    bind); a locked answer with a second hard link keeps its mode (that link may lie outside)."""
    container = tmp_path / "va-b-locked"
    sandbox = container / "sandbox"
    sandbox.mkdir(parents=True)
    (sandbox / "answer.json").write_bytes(b'{"events": [1]}')
    os.chmod(sandbox / "answer.json", 0)
    os.chmod(sandbox, 0)
    code = ("import json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[2]);"
            "from tests.unit.test_protocol_b_cleanup import sandbox_at; from video_arena.protocol_b.states "
            "import collect_answer; sb = sandbox_at(Path(sys.argv[1])); restored = sb.restore_access();"
            "c = collect_answer(sb.answer_path, b'{}'); print(json.dumps([restored, c.state, c.export.decode()]))")
    argv = [sys.executable, "-c", code, str(container), str(REPO)]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv") or pytest.skip("root without setpriv")
        argv = [setpriv, "--bounding-set", ",".join("-" + c for c in BYPASS_MODES), "--", *argv]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == [["folder", "file"], "wrote", '{"events": [1]}']
    # a second link: the file's mode is not the sandbox's to change
    os.chmod(sandbox / "answer.json", 0)
    os.link(sandbox / "answer.json", tmp_path / "elsewhere.json")
    assert sandbox_at(container).restore_access() == []
    assert stat.S_IMODE(os.stat(tmp_path / "elsewhere.json").st_mode) == 0
    os.chmod(tmp_path / "elsewhere.json", 0o600)
    assert collect_answer(sandbox / "answer.json", b"{}").state == "wrote"


def _chattr(path: Path, flags: int) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        fcntl.ioctl(fd, 0x40086602, flags.to_bytes(4, sys.byteorder) + bytes(4))
    finally:
        os.close(fd)


@pytest.fixture
def immutable_tree(tmp_path: Path):
    """A file chattr +i in a folder chattr +a (only root with CAP_LINUX_IMMUTABLE can make them: an agent
    run --no-isolation by root)."""
    container = tmp_path / "va-b-immutable"
    (container / "sandbox" / "locked").mkdir(parents=True)
    (container / "sandbox" / "locked" / "f").write_text("x")
    (container / "sandbox" / "locked" / "g").write_text("y")
    try:
        _chattr(container / "sandbox" / "locked" / "f", 0x10)
        _chattr(container / "sandbox" / "locked", 0x20)
    except OSError as exc:
        pytest.skip(f"cannot make a file immutable here: {exc}")
    yield container
    for p in (container / "sandbox" / "locked", container / "sandbox" / "locked" / "f"):
        try:
            _chattr(p, 0)
        except OSError:
            pass


def test_immutable_and_append_only_flags_are_cleared_where_the_runner_may(immutable_tree: Path) -> None:
    result = remove_as(immutable_tree, drop=())
    assert not immutable_tree.exists() and result["removed"], result


def test_what_cannot_be_removed_is_reported_never_raised(immutable_tree: Path) -> None:
    """Without CAP_LINUX_IMMUTABLE the flags stay: the clean-up says what is left and why (the cell is
    recorded all the same: test_protocol_b_runner.py), and removes the rest."""
    result = remove_as(immutable_tree, drop=("linux_immutable",))
    assert result["removed"] is False and result["failures"] >= 1
    assert any("locked" in p and "not permitted" in p for p in result["problems"]), result
    assert (immutable_tree / "sandbox" / "locked" / "f").read_text() == "x"


def test_a_tree_filled_while_it_is_removed_is_given_up_on_within_the_budget(tmp_path: Path) -> None:
    """A process that keeps creating files in the sandbox while it is removed (under --no-isolation, one
    that escaped the kill): the clean-up stops at its budget and says so (or wins), never runs on."""
    container = tmp_path / "va-b-busy"
    (container / "sandbox" / "busy").mkdir(parents=True)
    stop, started = threading.Event(), threading.Event()
    fd = os.open(container / "sandbox" / "busy", os.O_RDONLY | os.O_DIRECTORY)

    def fill() -> None:
        k = 0
        while not stop.is_set():
            try:
                os.mkdir(f"d{k}", dir_fd=fd)
                os.close(os.open(f"d{k}/f", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
            except OSError:
                pass
            k += 1
            if k == 100:
                started.set()
        os.close(fd)

    filler = threading.Thread(target=fill, daemon=True)
    filler.start()
    started.wait(30)
    try:
        result = sandbox_at(container).remove(time_budget_s=0.5)
    finally:
        stop.set()
        filler.join()
    assert result.removed == (not container.exists())
    if not result.removed:
        assert "time budget" in result.note(), result
    shutil.rmtree(container, ignore_errors=True)


def test_a_mount_inside_the_sandbox_is_never_entered(tmp_path: Path, victim: Path) -> None:
    """A bind mount of a host folder inside the sandbox (root, --no-isolation): shutil.rmtree deleted the
    host folder's files through it.  The clean-up removes the rest and leaves the mount point, said so.
    Run in a mount namespace of its own (unshare), so the mount dies with it."""
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("needs root and unshare to make a mount")
    before = snapshot(victim)
    container = tmp_path / "va-b-mount"
    (container / "sandbox" / "m").mkdir(parents=True)
    (container / "sandbox" / "other").write_text("x")
    code = ("import dataclasses, json, subprocess, sys; from pathlib import Path; sys.path.insert(0, sys.argv[3]);"
            "from tests.unit.test_protocol_b_cleanup import sandbox_at;"
            "subprocess.run(['mount', '--bind', sys.argv[2], sys.argv[1] + '/sandbox/m'], check=True);"
            "r = sandbox_at(Path(sys.argv[1])).remove();"
            "print(json.dumps(dataclasses.asdict(r) if dataclasses.is_dataclass(r) else {}))")
    p = subprocess.run([unshare, "--mount", "--propagation", "private", sys.executable, "-c", code, str(container),
                        str(victim), str(REPO)], capture_output=True, text=True, timeout=60)
    if p.returncode and "unshare" in p.stderr:
        pytest.skip(f"no mount namespace here: {p.stderr.strip()}")
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout)
    assert victim.is_dir() and snapshot(victim) == before
    assert result["removed"] is False and any("mount point" in x for x in result["problems"]), result
    assert sorted(os.listdir(container / "sandbox")) == ["m"] and os.listdir(container / "sandbox" / "m") == []
