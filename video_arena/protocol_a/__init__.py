"""Protocol A: one request per case (docs/PROTOCOLS.md "Protocol A: video understanding", docs/HARBOR.md "Protocol A on Harbor").

    engine.py      the call: retries, redraws, degradations (the reference body and its hash are
                   core/request.py, which the scorer's check, core/provenance.py, rebuilds)
    server_limits.py  what a server's refusal says: image cap, context overflow, body size
    request_cell.py one cell end to end: answer.json, run.json, prompt.txt, reply.txt, receipt.json
    runner.py      `video-arena run-a` / run_protocol_a.py
    harbor_agent.py  the ProtocolA Harbor agent (agents/protocol_a_agent.py re-exports it)

The sampling grid and the stills cache are video_arena/media/grid.py, the condition file
video_arena/core/condition.py: the scorer and the explorer read them without importing a runner.
Only the modules are imported here, lazily by their users: the Harbor agent pulls in `harbor`, which
the native runner does not need.
"""
