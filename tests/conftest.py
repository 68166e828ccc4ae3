import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="session")
def J():
    """The judge module, loaded from judge/judge.py exactly as the scorer loads it."""
    from video_arena.core.judge_loader import load_judge
    return load_judge()


@pytest.fixture(scope="module")
def no_tasks_env():
    """A test module's own tasks tree is the tasks and media root, whatever the shell exports."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("VA_MEDIA_ROOT", raising=False)
        mp.delenv("VA_TASKS_ROOT", raising=False)
        yield


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pytest-xdist, when asked for): one worker per core, at most 4, since the end-to-end tests each
    run Docker, Harbor and ffmpeg, which use more than one core themselves. VA_TEST_WORKERS overrides."""
    wanted = os.environ.get("VA_TEST_WORKERS", "")
    if wanted:
        return int(wanted)
    return max(1, min(4, len(os.sched_getaffinity(0))))
