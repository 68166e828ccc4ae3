"""Argument helpers shared by the commands (`--games chess,go`, `--case-ids ...`)."""
from __future__ import annotations


def comma_list(text: str) -> list[str]:
    """The items of a comma-separated option, stripped, empty ones dropped, in order:
    "chess, go,,gomoku " -> ["chess", "go", "gomoku"]."""
    return [item.strip() for item in text.split(",") if item.strip()]
