"""Every committed Harbor job config (configs/harbor/*.yaml) passes `harbor run -c FILE --dry-run`
(Harbor 0.26's own validation: the config, the agent import, the datasets and their tasks, nothing
run), from a folder laid out as the configs expect (the datasets make-harbor writes, from the fixture
tree); and the Protocol B oracle config runs on this host (with the CPU override it needs) and scores 1.0."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from video_arena.harbor import spec as S
from video_arena.harbor.generate import Options, generate
from video_arena.harbor.oracle_check import harbor_executable, resource_args

pytestmark = [pytest.mark.slow, pytest.mark.docker]

REPO = Path(__file__).resolve().parents[2]
TREE = REPO / "tests" / "fixtures" / "harbor_tree"
CONFIGS = sorted((REPO / "configs" / "harbor").glob("*.yaml"))
#: the adapter's own job config (Harbor's adapter layout: adapters/<id>/run_<id>.yaml)
ADAPTER_CONFIG = REPO / "adapters" / "video-arena" / "run_video-arena.yaml"
#: the dataset folder each config names, and how make-harbor writes it (docs/HARBOR.md)
DATASETS = {"harbor/video-arena": ("B", "compose-none"), "harbor/video-arena-a": ("A", "strict"),
            "harbor/video-arena-phase": ("B", "phase")}


@pytest.fixture(scope="module")
def layout(sandbox_image, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("configs")
    for rel, (protocol, net) in DATASETS.items():
        generate(Options(out=root / rel, protocol=protocol, net=net, media="copy", base_image=sandbox_image,
                         tasks_root=TREE, progress=False))
    for name in ("harbor_templates", "agents"):
        (root / name).symlink_to(REPO / name)
    return root


def _env() -> dict[str, str]:
    path = f"{Path(harbor_executable()).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # `uv` for the metric
    # a dry run never calls a model; the credential check only wants a key to be set
    return dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", PATH=path, PYTHONPATH="agents",
                OPENAI_API_KEY="dry-run", ANTHROPIC_API_KEY="dry-run")


def test_there_is_a_config_per_documented_run():
    assert {c.name for c in CONFIGS} == {"oracle-a.yaml", "nop-a.yaml", "oracle-b.yaml", "nop-b.yaml",
                                         "terminus-2.yaml", "claude-code.yaml", "protocol-a.yaml"}
    for c in [*CONFIGS, ADAPTER_CONFIG]:
        assert "--override-cpus" in c.read_text(), f"{c.name} does not say how to set CPUs on a small host"


@pytest.mark.parametrize("config", [*CONFIGS, ADAPTER_CONFIG], ids=[c.name for c in [*CONFIGS, ADAPTER_CONFIG]])
def test_config_passes_harbor_dry_run(layout, config):
    p = subprocess.run([harbor_executable(), "run", "-c", str(config), "--dry-run"], cwd=layout, env=_env(),
                       capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert p.returncode == 0 and "Dry run OK" in p.stdout, p.stdout[-3000:] + p.stderr[-3000:]


def test_oracle_config_runs_on_this_host(layout):
    p = subprocess.run([harbor_executable(), "run", "-c", str(REPO / "configs/harbor/oracle-b.yaml"), "-y",
                        "-o", str(layout / "jobs"), "--job-name", "oracle-b", *resource_args()],
                       cwd=layout, env=_env(), capture_output=True, text=True, timeout=1200,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    result = json.loads((layout / "jobs" / "oracle-b" / "result.json").read_text())
    (ev,) = result["stats"]["evals"].values()
    (metric,) = ev["metrics"]
    assert metric["reward"] == 1.0 and metric["n_cases"] == 2 and S.CPUS >= 1
