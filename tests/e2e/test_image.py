"""The sandbox image, checked inside a real container: the seed's toolset is there (each tool's real
job is in test_image_toolset.py), the agent is unprivileged and owns /app, and nothing of the
verifier or the solution is in it.

The image is built by `video-arena image build` logic (reused when current: about 6 minutes cold
on 2 cores, seconds when cached). The container runs with no network, as a Protocol B trial does.
"""
from __future__ import annotations

import json
import shlex
import subprocess
import textwrap
import uuid

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.docker, pytest.mark.timeout(3600)]

TOOLS = ["ffmpeg", "ffprobe", "tesseract", "python3", "tmux", "jq", "bc", "file", "less", "vim", "bash"]
MODULES = ["numpy", "scipy", "pandas", "PIL", "cv2", "skimage", "imageio", "av", "matplotlib",
           "pytesseract", "tqdm"]


def _exec(container: str, script: str, user: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    cmd = ["docker", "exec"] + (["--user", user] if user else []) + [container, "bash", "-c", script]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _ok(container: str, script: str, user: str | None = None, timeout: float = 300) -> str:
    res = _exec(container, script, user=user, timeout=timeout)
    assert res.returncode == 0, f"{script!r} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}"
    return res.stdout


@pytest.fixture(scope="module")
def inspect(sandbox_image) -> dict:
    out = subprocess.run(["docker", "image", "inspect", sandbox_image], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)[0]


@pytest.fixture(scope="module")
def container(sandbox_image):
    """One long-lived container started the way Harbor's prebuilt compose starts `main`."""
    name = f"va-image-test-{uuid.uuid4().hex[:8]}"
    subprocess.run(["docker", "run", "-d", "--rm", "--name", name, "--network", "none", sandbox_image,
                    "sh", "-c", "sleep infinity"], check=True, capture_output=True, text=True)
    try:
        yield name
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, text=True)


def test_image_config_has_no_entrypoint_and_runs_as_agent_in_app(inspect):
    cfg = inspect["Config"]
    assert not cfg.get("Entrypoint"), f"image has an ENTRYPOINT: {cfg.get('Entrypoint')}"
    assert cfg.get("User") == "agent"
    assert cfg.get("WorkingDir") == "/app"


def test_container_user_is_unprivileged_agent(container):
    out = _ok(container, "id -u; id -un; id -g; pwd; echo $HOME")
    assert out.split() == ["1000", "agent", "1000", "/app", "/home/agent"]
    # no way back to root: no sudo, and root's password is locked
    assert _exec(container, "command -v sudo").returncode != 0
    assert _exec(container, "su -c true root </dev/null").returncode != 0


def test_app_is_owned_and_writable_by_agent(container):
    assert _ok(container, "stat -c '%U:%G' /app").strip() == "agent:agent"
    _ok(container, 'printf \'{"events": []}\' > /app/answer.json && mkdir -p /app/work && '
                   'python3 -c \'import json; print(json.load(open("/app/answer.json")))\'')
    assert _ok(container, "stat -c '%U' /app/answer.json").strip() == "agent"
    # ...and the agent cannot write outside its own places
    assert _exec(container, "touch /usr/local/bin/x").returncode != 0


def test_every_tool_is_on_path_for_plain_and_login_shells(container):
    for shell in ("bash -c", "bash -lc"):
        script = " && ".join(f"command -v {t}" for t in TOOLS)
        out = _ok(container, f"{shell} {shlex.quote(script)}")
        assert len(out.split()) == len(TOOLS), out
    versions = _ok(container, "ffmpeg -version | head -1; ffprobe -version | head -1; tmux -V; jq --version; "
                              "echo '6*7' | bc; file --version | head -1; less --version | head -1; "
                              "vim --version | head -1; bash --version | head -1")
    assert "ffmpeg version" in versions and "ffprobe version" in versions and "tmux" in versions
    assert "\n42\n" in versions and "VIM" in versions


def test_tesseract_has_english(container):
    langs = _ok(container, "tesseract --list-langs 2>&1").split()
    assert "eng" in langs


def test_python_is_311_and_imports_the_toolset(container):
    code = textwrap.dedent(f"""
        import importlib, sys
        assert sys.version_info[:2] == (3, 11), sys.version
        for name in {MODULES!r}:
            m = importlib.import_module(name)
            print(name, getattr(m, "__version__", "?"))
        import cv2
        assert "GUI:                           NONE" in cv2.getBuildInformation()  # the headless build
    """)
    out = _ok(container, f"python3 -c {shlex.quote(code)}")
    assert [line.split()[0] for line in out.splitlines()] == MODULES


def test_no_verifier_solution_ground_truth_or_engines(container):
    assert _exec(container, "test -e /tests || test -e /solution || test -e /logs/verifier").returncode != 0
    names = ["judge.py", "gt.json", "case.json", "solve.sh", "score_harbor.py", "test.sh", "answer_seed.json",
             "cases.json", "stockfish*", "katago*", "*.bin.gz", "*.mp4"]
    find = "find / -xdev \\( " + " -o ".join(f"-iname {shlex.quote(n)}" for n in names) + " \\) -print 2>/dev/null"
    found = _exec(container, find, user="root").stdout.split()
    found = [f for f in found if not f.startswith("/app/")]  # clip.mp4 is this test module's own
    assert found == [], f"files that must not be in the agent's image: {found}"
    gt_dirs = _exec(container, "find / -xdev -type d \\( -name gt -o -name video_arena \\) -print 2>/dev/null",
                    user="root").stdout.split()
    assert gt_dirs == [], gt_dirs
    assert _exec(container, "python3 -c 'import video_arena'").returncode != 0
