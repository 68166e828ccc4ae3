"""The Protocol B turn-1 prompt (docs/PROTOCOLS.md, "Protocol B: agentic"; docs/HARBOR.md, "A task folder": the Harbor task's instruction.md).

The same text drives the native runner (prompt.txt beside the sandbox) and the Harbor dataset
(task instruction.md pointing at /app), so a native number and a Harbor number measure one thing.
"""
from __future__ import annotations

SANDBOX_FILES = ("match.mp4", "instruction.md", "answer.json")


def turn1_prompt(workdir: str, max_turns: int, timeout_min: float) -> str:
    """The first user turn of a Protocol B cell.  `max_turns` 0 = the harness cannot count turns."""
    if max_turns < 0 or timeout_min <= 0:
        raise ValueError("max_turns must be >= 0 and timeout_min > 0")
    minutes = f"{timeout_min:g}"
    if max_turns:
        budget = (f"You have at most {max_turns} tool-call turns and {minutes} minutes of wall clock. "
                  "Whichever runs out first ends your work.")
    else:
        budget = f"You have {minutes} minutes of wall clock; at the limit your work is stopped."
    return (
        f"Your working directory is {workdir}. It holds exactly three files:\n"
        "- match.mp4: a video of one whole match, the only input;\n"
        "- instruction.md: the task. Read it first and follow it;\n"
        '- answer.json: your answer, which now holds the empty answer {"events": []}.\n'
        "\n"
        "ffmpeg, ffprobe, Python 3 (with numpy, scipy, pandas, Pillow, OpenCV, scikit-image, imageio, "
        "PyAV, matplotlib, pytesseract, tqdm) and tesseract are already installed. Do not install "
        "anything, download anything, use external services or models, or look the match up: work "
        "from the video alone.\n"
        "\n"
        f"{budget} Rewrite answer.json with every row you have as you go, not only at the end: when "
        "the budget runs out, whatever answer.json holds is scored, and rows that are not in it "
        "score nothing. Do not delete or rename answer.json.\n"
    )
