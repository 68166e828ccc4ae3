import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="session")
def J():
    """The judge module, loaded from judge/judge.py exactly as the scorer loads it."""
    from video_arena.scoring.judge_loader import load_judge
    return load_judge()
