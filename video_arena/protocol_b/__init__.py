"""Protocol B (agentic): sandbox, preflight, process-tree runner, answer states.

    runner.py     `video-arena run-b` (thin CLI): arguments, checks before the first cell, the pool, resume
    agent_cell.py one cell end to end: sandbox, template, spawn, collect, audit, run.json (via core/results.py)
    spawn.py      the start wrapper and marker, the capped log pumps, the two spawn strategies
    sandbox.py    the three-file sandbox outside the repository, the agent's scrubbed environment
    isolation.py  bubblewrap: the agent's own PID and mount namespace (allow-list), no capabilities
    preflight.py  ffmpeg/ffprobe/python3 (hard) and Python modules/tesseract (warnings)
    procs.py      the cell's processes: its PID namespace (isolated) or its process tree (--no-isolation)
    states.py     wrote / never_wrote / deleted by digest against the seed

The egress audit of a transcript is video_arena/core/audit.py (the scorer audits Harbor transcripts
with it too), the turn-1 prompt video_arena/core/prompts.py (shared with the Harbor generator).
"""
