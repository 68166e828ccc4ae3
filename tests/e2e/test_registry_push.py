"""Cluster push, end to end: `video-arena image push` to a real registry (Debian's docker-registry on
loopback), a dataset pinned to the printed digest, `validate --require-pinned`, and a real Harbor
oracle trial (--net compose-none, mount mode) whose sandbox image is pulled from that registry.

To prove the bits come from the registry, the pushed image is the sandbox image plus one small layer
of its own (a random nonce file), so no other local image holds that layer; after the push every local
reference to it is removed and `docker image inspect` must fail. The trial must then score 1.0, the
registry's access log must show the daemon fetching the manifest by digest and the nonce layer's blob
during the trial, and the image Docker holds afterwards must be the pushed image ID.

Mount mode's [environment].docker_image is pulled by `docker compose up`; copy mode's Dockerfile
`FROM REGISTRY/NAME@sha256:...` is pulled by Harbor's build of the task image, checked the same way
with VA_E2E_REGISTRY_MODES=mount,copy (left out of the default run to keep its time down).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from video_arena.harbor.generate import Options, generate
from video_arena.container_host.image import DEFAULT_TAG
from video_arena.harbor.oracle_check import check_jobs, print_table
from video_arena.harbor.validate import Validator, compose_available
from video_arena.paths import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.docker]

FIXTURE_TREE = Path(__file__).resolve().parents[1] / "fixtures" / "harbor_tree"
MANIFEST_V2 = "application/vnd.docker.distribution.manifest.v2+json"
#: Mount mode by default; VA_E2E_REGISTRY_MODES=mount,copy adds copy mode (one more build and trial),
#: kept out of the default run for the suite's time budget.
MODES = tuple(m for m in os.environ.get("VA_E2E_REGISTRY_MODES", "mount").split(",") if m) or ("mount",)


def _docker(*args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
    res = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout,
                         stdin=subprocess.DEVNULL)
    if check:
        assert res.returncode == 0, f"docker {' '.join(args)}: {res.stderr.strip()}"
    return res


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Registry:
    """Debian's docker-registry on 127.0.0.1:<free port>, its own config and storage under `root`."""

    def __init__(self, root: Path, readonly: bool = False):
        binary = shutil.which("docker-registry") or shutil.which("docker-registry", path="/usr/bin:/usr/sbin")
        if not binary:
            msg = "docker-registry is not installed (apt-get install docker-registry; scripts/apt-packages.txt)"
            if os.environ.get("VA_REQUIRE_DOCKER", "") not in ("", "0"):
                pytest.fail(msg, pytrace=False)
            pytest.skip(msg)
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.port = _free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.log = root / "registry.log"
        maintenance = "  maintenance:\n    readonly:\n      enabled: true\n" if readonly else ""
        config = root / "config.yml"
        config.write_text(
            "version: 0.1\n"
            "log:\n  level: info\n  accesslog:\n    disabled: false\n"
            f"storage:\n  filesystem:\n    rootdirectory: {root / 'storage'}\n{maintenance}"
            f"http:\n  addr: {self.host}\n")
        self._log_fh = open(self.log, "wb")
        self.proc = subprocess.Popen([binary, "serve", str(config)], stdout=self._log_fh,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://{self.host}/v2/", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"docker-registry did not start on {self.host}: {self.log.read_text()[-2000:]}",
                            pytrace=False)
            time.sleep(0.2)

    def log_text(self) -> str:
        self._log_fh.flush()
        return self.log.read_text(errors="replace")

    def manifest(self, path: str, digest: str) -> bytes:
        req = urllib.request.Request(f"http://{self.host}/v2/{path}/manifests/{digest}",
                                     headers={"Accept": MANIFEST_V2})
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self._log_fh.closed:
            self._log_fh.close()
        shutil.rmtree(self.root / "storage", ignore_errors=True)  # the pushed image: GBs, not kept


@pytest.fixture
def registry(tmp_path):
    reg = Registry(tmp_path / "registry")
    yield reg
    reg.stop()


@pytest.fixture
def source_image(request, docker) -> str:
    """The sandbox image as it is now (another process may re-tag it later: its ID is what counts).
    Built (or reused) only when absent, so a running test never rebuilds somebody's image."""
    if _docker("image", "inspect", DEFAULT_TAG, check=False).returncode != 0:
        request.getfixturevalue("sandbox_image")
    return _docker("image", "inspect", "--format", "{{.Id}}", DEFAULT_TAG).stdout.strip()


@pytest.fixture
def proof_image(source_image, tmp_path):
    """The sandbox image plus one layer only this test has (a nonce file): (local tag, image ID)."""
    nonce = uuid.uuid4().hex[:12]
    ctx = tmp_path / "proof-context"
    ctx.mkdir()
    (ctx / "nonce").write_text(nonce + "\n")
    (ctx / "Dockerfile").write_text(f"FROM va-push-e2e-from:{nonce}\nCOPY nonce /etc/video-arena-push-proof\n")
    tag = f"va-push-e2e:{nonce}"
    _docker("tag", source_image, f"va-push-e2e-from:{nonce}")
    try:
        env = dict(os.environ, DOCKER_BUILDKIT="0")  # the classic builder (no buildx plugin needed)
        res = subprocess.run(["docker", "build", "-q", "-t", tag, str(ctx)], capture_output=True, text=True,
                             env=env, timeout=300, stdin=subprocess.DEVNULL)
        assert res.returncode == 0, res.stderr
    finally:
        _docker("rmi", f"va-push-e2e-from:{nonce}", check=False)
    image_id = _docker("image", "inspect", "--format", "{{.Id}}", tag).stdout.strip()
    yield tag, image_id, nonce
    _docker("rmi", "-f", image_id, check=False)  # every reference to the proof image, pulled or built


def video_arena(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    """The real CLI in a child process (what an operator types)."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "video_arena.cli", *args], capture_output=True, text=True,
                          env=env, cwd=REPO_ROOT, timeout=timeout, stdin=subprocess.DEVNULL)


def _one_line_error(res: subprocess.CompletedProcess, prefix: str) -> str:
    assert res.returncode == 1 and res.stdout == "", (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith(prefix)]
    assert len(lines) == 1, res.stderr
    return lines[0]


def test_push_pin_validate_and_a_trial_that_pulls_from_the_registry(registry, proof_image, tmp_path):
    tag, image_id, nonce = proof_image
    target = f"{registry.host}/va-e2e/base:{nonce}"

    # 1. push: one line on stdout, the repo digest
    res = video_arena("image", "push", target, "--image", tag)
    assert res.returncode == 0, res.stderr
    pinned = res.stdout.strip()
    m = re.fullmatch(re.escape(f"{registry.host}/va-e2e/base@") + r"(sha256:[0-9a-f]{64})", pinned)
    assert m and res.stdout == pinned + "\n", res.stdout
    digest = m.group(1)
    # the registry serves exactly that manifest, and it is the local image (config digest = image ID)
    body = registry.manifest("va-e2e/base", digest)
    assert "sha256:" + hashlib.sha256(body).hexdigest() == digest
    manifest = json.loads(body)
    assert manifest["config"]["digest"] == image_id
    nonce_layer = manifest["layers"][-1]["digest"]

    # 2. no local copy is left: the daemon must pull it back
    _docker("rmi", target, tag)
    assert _docker("image", "inspect", image_id, check=False).returncode != 0, "the proof image is still local"

    # 3. datasets pinned to the digest (mount: docker_image; copy: Dockerfile FROM) validate as pinned
    datasets = {}
    for media in MODES:
        out = tmp_path / f"dataset-{media}"
        gen = generate(Options(out=out, protocol="B", net="compose-none", media=media, base_image=pinned,
                               tasks_root=FIXTURE_TREE, limit=1, progress=False))
        assert len(gen.tasks) == 1 and not gen.missing_media
        (task,) = [p for p in out.iterdir() if (p / "task.toml").is_file()]
        where = task / ("task.toml" if media == "mount" else "environment/Dockerfile")
        assert (f'docker_image = "{pinned}"' if media == "mount" else f"\nFROM {pinned}\n") in where.read_text()
        reports, dproblems = Validator(FIXTURE_TREE, compose_available(), require_pinned=True).check_dataset(
            out, progress=False)
        assert not dproblems and all(r.ok for r in reports), [(r.path.name, r.problems) for r in reports]
        datasets[media] = out

    # 4. a real oracle trial per mode scores 1.0 on the image pulled from the registry during it
    #    (mount: `docker compose up` pulls docker_image; copy: Harbor's build pulls FROM)
    for media, out in datasets.items():
        assert _docker("image", "inspect", image_id, check=False).returncode != 0, "the proof image is local"
        log_before = len(registry.log_text())
        trials = check_jobs({"B": out}, tmp_path / "jobs", f"{media}-{nonce}", FIXTURE_TREE, n_concurrent=1,
                            agents=("oracle",))
        print_table(trials)
        assert [t for t in trials if not t.ok] == [] and len(trials) == 1, media
        assert {k: v for k, v in trials[0].rewards.items() if not k.startswith("case:")} == {"reward": 1.0, "t1_f1": 1.0, "t2_macro_acc": 1.0, "t3_macro_acc": 1.0}
        during = registry.log_text()[log_before:]
        assert re.search(rf'"GET /v2/va-e2e/base/manifests/{digest} HTTP/1.1" 200', during), (media, during[-3000:])
        assert re.search(rf'"GET /v2/va-e2e/base/blobs/{nonce_layer} HTTP/1.1" 200', during), (media, during[-3000:])
        if media == "mount":
            assert _docker("image", "inspect", "--format", "{{.Id}}", pinned).stdout.strip() == image_id
        print(f"{media}: pulled {pinned} (image {image_id}) from the registry, oracle reward "
              f"{trials[0].rewards['reward']}")
        _docker("rmi", "-f", image_id)  # the next mode must pull it again


def test_push_errors_against_real_registries(proof_image, tmp_path):
    """Unreachable and refusing registries, and references that are not push targets: one line each."""
    tag, _image_id, nonce = proof_image
    closed = f"127.0.0.1:{_free_port()}"
    line = _one_line_error(video_arena("image", "push", f"{closed}/va/base:{nonce}", "--image", tag),
                           "video-arena image push: error:")
    assert f"registry {closed} is unreachable" in line and "connection refused" in line
    readonly = Registry(tmp_path / "readonly", readonly=True)
    try:
        line = _one_line_error(video_arena("image", "push", f"{readonly.host}/va/base:{nonce}", "--image", tag),
                               "video-arena image push: error:")
        assert f"registry {readonly.host} refused the push" in line
    finally:
        readonly.stop()
    for bad, says in ((f"va/base:{nonce}", "names no registry"),
                      (f"{closed}/va/base@sha256:" + "0" * 64, "the digest is what the push prints"),
                      (f"{closed}/VA/base", "is not valid"),
                      (f"{closed}/va/base:{nonce}", "image va-push-e2e:missing is not present locally")):
        extra = ["--image", "va-push-e2e:missing"] if "missing" in says else ["--image", tag]
        line = _one_line_error(video_arena("image", "push", bad, *extra), "video-arena image push: error:")
        assert says in line, line
    for bad, says in ((f"{closed}/va/base@sha256:" + "0" * 63, "64 lowercase hex"),
                      (f"{closed}/va/base:v1@sha256:" + "0" * 64, "drop the tag")):
        line = _one_line_error(video_arena("make-harbor", "--out", str(tmp_path / "never"), "--tasks-root",
                                           str(FIXTURE_TREE), "--base-image", bad, "--no-progress"),
                               "make-harbor: error:")
        assert says in line, line
    assert not (tmp_path / "never").exists()
