"""Harbor agent for the chance / majority baseline (thin): the logic is video_arena.baselines.harbor.

    PYTHONPATH=. harbor run -p <Protocol B dataset> -a agents.chance_agent:ChanceAgent --ak seed=0 \
        --ak rates=chess=6 [--ak mode=majority] -n 2
"""
from video_arena.baselines.harbor import ChanceAgent

__all__ = ["ChanceAgent"]
