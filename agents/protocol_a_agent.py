"""Harbor agent for Protocol A (thin): the logic is video_arena.protocol_a.harbor_agent.

    PYTHONPATH=agents harbor run -p harbor/video-arena-a -a protocol_a_agent:ProtocolA \
        -m openai/<model> -n 5 --ak reasoning_effort=high

Options (--ak): reasoning_effort, enable_thinking, max_frames, jpeg_q, max_tokens, temperature,
timeout, condition (kept in the trial's agent/_conditions/ for verification), extra_body.  See docs/HARBOR.md,
"Protocol A on Harbor".
"""
from video_arena.protocol_a.harbor_agent import ProtocolA

__all__ = ["ProtocolA"]
