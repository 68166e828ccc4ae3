"""adapters/video-arena/ (Harbor's adapter layout) is thin: its entry point writes exactly what
`video-arena make-harbor` writes with the same options."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ADAPTER = REPO / "adapters" / "video-arena"
TREE = REPO / "tests" / "fixtures" / "harbor_tree"


def _tree(root: Path) -> dict[str, bytes]:
    """Every file's bytes; the dataset marker without its generation time (the one thing that differs)."""
    out = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    marker = json.loads(out.pop("video-arena-dataset.json"))
    assert marker.pop("generated_at")
    out["video-arena-dataset.json"] = json.dumps(marker, sort_keys=True).encode()
    return out


def _run(args: list[str], extra_path: str = "") -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{REPO}{':' + extra_path if extra_path else ''}"}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)


def test_adapter_layout_files():
    for rel in ("README.md", "parity_experiment.json", "adapter_metadata.json", "run_video-arena.yaml",
                "src/video_arena_adapter/main.py", "src/video_arena_adapter/adapter.py",
                "src/video_arena_adapter/task-template/task.toml.j2"):
        assert (ADAPTER / rel).is_file(), rel


def test_adapter_entry_point_writes_what_make_harbor_writes(tmp_path):
    opts = ["--protocol", "B", "--net", "compose-none", "--media", "copy", "--tasks-root", str(TREE), "--no-progress"]
    a = _run(["-m", "video_arena_adapter.main", "--output-dir", str(tmp_path / "adapter"), "--limit", "1", *opts],
             extra_path=str(ADAPTER / "src"))
    assert a.returncode == 0, a.stdout + a.stderr
    m = _run(["-m", "video_arena.cli", "make-harbor", "--out", str(tmp_path / "make"), "--limit", "1", *opts])
    assert m.returncode == 0, m.stdout + m.stderr
    adapter, make = _tree(tmp_path / "adapter"), _tree(tmp_path / "make")
    assert adapter and adapter == make


def test_adapter_refuses_task_ids_in_one_line(tmp_path):
    p = _run(["-m", "video_arena_adapter.main", "--output-dir", str(tmp_path / "x"), "--task-ids", "a"],
             extra_path=str(ADAPTER / "src"))
    assert p.returncode == 2 and "--task-ids is not supported" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "x").exists()
