"""The one comma-list parser every command's --games / --case-ids / --protocols option goes through."""
from __future__ import annotations

import pytest

from video_arena.cli_args import comma_list


@pytest.mark.parametrize("text, items", [
    ("chess", ["chess"]),
    ("chess,go", ["chess", "go"]),
    (" chess , go,,gomoku ,", ["chess", "go", "gomoku"]),  # spaces and empty items
    ("go,chess,go", ["go", "chess", "go"]),                # order kept, nothing merged
    (",", []),
    ("", []),
])
def test_comma_list(text, items):
    assert comma_list(text) == items
