"""`import va_core as C`: the benchmark's core API under the name the seed documents.

    r = C.resolve("chess", "cZWtZEBE")
    text = C.instruction_for("video", r["instruction"])    # Protocol A
    text = C.instruction_for("agentic", r["instruction"])  # Protocol B
"""
from video_arena.core import *  # noqa: F401,F403
from video_arena.core import __all__  # noqa: F401
