"""Protocol A: one request per case (docs/PROTOCOLS.md "Protocol A: video understanding", docs/HARBOR.md "Protocol A on Harbor").

    grid.py        the sampling grid: plan, shared ffmpeg commands, stills cache
    condition.py   the versioned condition file (conditions/*.json) and its digest
    engine.py      the request: reference body, request hash, retries, redraws, degradations
    cell.py        one cell end to end: answer.json, run.json, prompt.txt, reply.txt, receipt.json
    provenance.py  verify_cell(cell_dir, tasks_root) -> (ok, reason): the scorer's check
    runner.py      `video-arena run-a` / run_protocol_a.py
    harbor_agent.py  the ProtocolA Harbor agent (agents/protocol_a_agent.py re-exports it)

Only the modules are imported here, lazily by their users: the Harbor agent pulls in `harbor`, which
the native runner does not need.
"""
