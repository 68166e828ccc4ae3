"""adapters/video-arena/: Harbor's adapter layout over the toolkit's generator, and the committed job configs.

The adapter's entry point writes the same tasks as `video-arena make-harbor`; every committed job config passes
`harbor run -c FILE --dry-run` on datasets the adapter generated (a config naming a missing dataset does not);
the oracle config runs as committed on this host (2 cores: it sets override_cpus) and every trial scores 1.0.
"""
from __future__ import annotations

import filecmp
import os
import subprocess
import sys
from pathlib import Path

import pytest

from video_arena import paths
from video_arena.harbor import generate
from video_arena.harbor.oracle_check import harbor_env, harbor_executable, read_trials

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
ADAPTER = REPO / "adapters" / "video-arena"
CONFIGS = sorted((ADAPTER / "configs").glob("*.yaml"))
FIXTURE_TREE = REPO / "tests" / "fixtures" / "harbor_tree"

sys.path.insert(0, str(ADAPTER))
import run_adapter  # noqa: E402

#: the dataset each config names -> the adapter's arguments that make it
DATASETS = {"harbor/video-arena": [], "harbor/video-arena-a": ["--protocol", "A"],
            "harbor/video-arena-phase-b": ["--net", "phase"],
            "harbor/video-arena-docker-a": ["--protocol", "A", "--net", "docker"],
            "harbor/video-arena-docker-b": ["--net", "docker"]}


def _tree_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_the_layout_is_harbors_and_the_template_is_the_toolkits():
    assert (ADAPTER / "template").resolve() == generate.templates_dir().resolve()     # one copy of the templates
    for name in ("README.md", "adapter.py", "run_adapter.py", "parity_experiment.json", "adapter_metadata.json"):
        assert (ADAPTER / name).is_file(), name
    assert {c.stem for c in CONFIGS} == {"oracle-a", "oracle-b", "nop-a", "nop-b", "terminus-2", "claude-code",
                                         "protocol-a-agent"}
    for c in CONFIGS:
        text = c.read_text(encoding="utf-8")
        assert "# CPUs:" in text and "override" in text, c.name       # each says how to run on a small host


def test_the_adapter_writes_what_make_harbor_writes(tmp_path):
    args = ["--games", "chess", "--limit", "1", "--tasks-root", str(FIXTURE_TREE), "--net", "docker"]
    assert run_adapter.main(["--output-dir", str(tmp_path / "adapter"), *args]) == 0
    assert generate.main(["--out", str(tmp_path / "toolkit"), *args, "--no-progress"]) == 0
    files = _tree_files(tmp_path / "adapter")
    assert files == _tree_files(tmp_path / "toolkit") and any(f.endswith("task.toml") for f in files)
    differ = [f for f in files if not filecmp.cmp(tmp_path / "adapter" / f, tmp_path / "toolkit" / f, shallow=False)]
    assert differ in ([], ["video-arena-dataset.json"]), differ     # the marker may carry its own time
    assert run_adapter.main(["--output-dir", str(tmp_path / "adapter"), *args]) != 0   # never replaced unasked


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """A working folder holding every dataset the configs name (one task of the fixture tree each)."""
    cwd = tmp_path_factory.mktemp("adapter-run")
    for rel, extra in DATASETS.items():
        assert run_adapter.main(["--output-dir", str(cwd / rel), "--games", "chess", "--limit", "1",
                                 "--tasks-root", str(FIXTURE_TREE), *extra]) == 0
    return cwd


def _harbor_env() -> dict[str, str]:
    return harbor_env(paths.media_root(FIXTURE_TREE)) | {"PYTHONPATH": str(REPO / "agents")}


def _harbor(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([harbor_executable(), "run", *args], cwd=cwd, env=_harbor_env(), capture_output=True,
                          text=True, timeout=900)


@pytest.fixture(scope="module")
def dry_runs(generated, tmp_path_factory) -> dict[str, tuple[int, str]]:
    """`harbor run -c FILE --dry-run` of every committed config, and of one naming a missing dataset, all at
    once (each spends most of its time waiting, not computing): {name: (exit status, stdout + stderr)}."""
    bad = tmp_path_factory.mktemp("bad-config") / "bad.yaml"
    bad.write_text((ADAPTER / "configs" / "oracle-b.yaml").read_text().replace("video-arena-docker-b", "no-such"))
    procs = {c.stem: subprocess.Popen([harbor_executable(), "run", "-c", str(c), "--dry-run", "-y"], cwd=generated,
                                      env=_harbor_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for c in [*CONFIGS, bad]}
    out = {}
    for name, p in procs.items():
        text, _ = p.communicate(timeout=900)
        out[name] = (p.returncode, text)
    return out


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.stem)
def test_every_committed_config_passes_a_harbor_dry_run(dry_runs, config):
    rc, text = dry_runs[config.stem]
    assert rc == 0 and "Dry run OK" in text, text[-3000:]


def test_a_config_naming_a_missing_dataset_fails_its_dry_run(dry_runs):
    rc, text = dry_runs["bad"]
    assert rc != 0 and "Dry run OK" not in text and "no-such" in text, text[-2000:]


def test_the_oracle_config_runs_as_committed_on_this_host(generated, sandbox_image):
    jobs = generated / "jobs"
    out = _harbor(generated, "-c", str(ADAPTER / "configs" / "oracle-b.yaml"), "--job-name", "oracle-b", "-y")
    assert out.returncode == 0, (out.stdout[-2000:], out.stderr[-2000:])
    trials = read_trials(jobs / "oracle-b", "oracle", "B")
    assert len(trials) == 1 and [t.problems for t in trials] == [[]]
    assert trials[0].rewards["reward"] == 1.0 and os.cpu_count() is not None
