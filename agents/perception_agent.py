"""Harbor agent for the perception baseline (thin): the logic is video_arena.baselines.harbor.

    PYTHONPATH=. harbor run -p <Protocol B dataset> -a agents.perception_agent:PerceptionAgent -n 2
"""
from video_arena.baselines.harbor import PerceptionAgent

__all__ = ["PerceptionAgent"]
