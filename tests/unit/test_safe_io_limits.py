"""safe_io.run_limited: a parser run in a child with bounds on its CPU, wall time, memory and output; every
limit it goes past is one line (LimitExceeded), never a hang, an exhausted host or a traceback."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from video_arena.safe_io import LimitExceeded, run_limited

CHILDREN = "bounded_children"
LIMITS = {"wall_s": 30.0, "cpu_s": 1, "memory_bytes": 512 * 1024 * 1024, "output_bytes": 1024}


@pytest.fixture(autouse=True)
def children_importable(monkeypatch):
    here = str(Path(__file__).resolve().parents[1] / "fixtures")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))


def test_the_answer_comes_back():
    assert run_limited(CHILDREN, "echo", b"bytes", **LIMITS) == b"got bytes"


@pytest.mark.parametrize("function, data, limits, says", [
    ("spin", b"", {}, "used more than 1 s of CPU"),
    ("sleep", b"", {"wall_s": 1.0}, "took more than 1 s"),
    ("allocate", b"", {"cpu_s": 30}, "needed more than 512 MiB of memory"),   # page faults cost CPU on a busy host
    ("flood", b"5000", {}, "wrote more than 1024 bytes"),
    ("crash", b"", {}, "failed (exit 1: KeyError: 'a field the parser did not expect')"),
])
def test_each_limit_is_one_line(function, data, limits, says):
    with pytest.raises(LimitExceeded) as err:
        run_limited(CHILDREN, function, data, **(LIMITS | limits))
    assert str(err.value) == says and "\n" not in str(err.value)
