"""Shared data of the scorer tests (native results folders and Harbor jobs): four chess truth
events and the answers built from them, whose scores are known exactly."""
from __future__ import annotations

import json
import random
import shutil
import string
from pathlib import Path

from video_arena.digests import sha256_bytes
from video_arena.paths import REPO_ROOT
from video_arena.core.judge_loader import load_judge

J = load_judge()

#: The results-contract fixtures (a run-a folder, a run-b folder, two Harbor jobs, their tasks tree) and
#: the cases of their tasks tree
CONTRACT = Path(__file__).resolve().parent / "fixtures" / "results_contract"
CONTRACT_CASES = ["Fx7kQ2aB", "Gm4pR9zT", "Hc2dW5yU", "Jr8nK3vE"]


def contract_tasks(tmp_path: Path) -> Path:
    """A copy of the results-contract fixtures' tasks tree (a test may change it)."""
    dst = tmp_path / "tasks"
    shutil.copytree(CONTRACT / "tasks", dst)
    return dst

SPEC = {"game": "chess", "sides": ["white", "black"],
        "event_types": ["move", "capture", "castle", "promotion", "check", "checkmate"],
        "delta_labels": ["up", "down", "flat"], "state_labels": ["white", "black", "even"], "band": 0.05}
GAME_TOML = (REPO_ROOT / "video_arena" / "games" / "chess" / "game.toml").read_text(encoding="utf-8")

EVENTS = [
    {"t": 10.0, "type": "move", "actor": "white", "where": "e4", "delta": "flat", "state": "even", "v_before": 0.5, "v_after": 0.52},
    {"t": 20.0, "type": "move", "actor": "black", "where": "e5", "delta": "flat", "state": "even", "v_before": 0.52, "v_after": 0.5},
    {"t": 30.0, "type": "capture", "actor": "white", "where": "d5", "delta": "up", "state": "white", "v_before": 0.5, "v_after": 0.7},
    {"t": 40.0, "type": "check", "actor": "black", "where": "b4", "delta": "down", "state": "black", "v_before": 0.7, "v_after": 0.3},
]
FIELDS = ("t", "type", "actor", "where", "delta", "state")


def gt_doc(game: str, case_id: str) -> dict:
    return {"format": "video-arena-gt/1", "game": game, "case_id": case_id, "spec": dict(SPEC, game=game),
            "duration_s": 50.0, "events": EVENTS, "v_series": [[0.0, 0.5]] + [[e["t"], e["v_after"]] for e in EVENTS],
            "v_definition": "test", "record": {}}


def make_tasks(root: Path, games: dict[str, int], manifest: bool = True) -> dict[str, list[str]]:
    """A tasks tree with `n` cases per game (ids like ChCase00), each with the four-event ground truth,
    and (unless manifest=False) the manifest.json naming each ground truth's SHA-256, as build-cases
    writes it."""
    ids = {}
    for game, n in games.items():
        d = root / game
        (d / "gt").mkdir(parents=True)
        (d / "game.toml").write_text(GAME_TOML.replace('name = "chess"', f'name = "{game}"'), encoding="utf-8")
        ids[game] = [f"{game[:2].title()}Case{i:02d}"[:8].ljust(8, "x") for i in range(n)]
        (d / "cases.json").write_text(json.dumps({"game": game, "cases": [{"case_id": c} for c in ids[game]]}))
        for c in ids[game]:
            (d / "gt" / f"{c}.json").write_text(json.dumps(gt_doc(game, c)))
        if manifest:
            (d / "manifest.json").write_text(json.dumps({
                "format": "video-arena-cases-manifest/1", "game": game, "n_cases": n,
                "cases": [{"case_id": c, "gt_sha256": sha256_bytes((d / "gt" / f"{c}.json").read_bytes())}
                          for c in ids[game]]}))
    return ids


# --------------------------------------------------------------------------------------------------
# Harbor 0.26 job folders (the Harbor notes, section 7)
# --------------------------------------------------------------------------------------------------
def rewards_of(answer: dict | None) -> dict:
    """What the dataset's verifier writes: the judge's reward_of (computed here, not typed in)."""
    return J.reward_of(J.judge(gt_doc("chess", "x"), None if answer is None else json.dumps(answer)))


AGENT = {"name": "terminus-2", "import_path": None, "model_name": "openai/m1", "base_url": None,
         "model_api_key_name": None, "model_api_format": None, "skip_model_parsing": False, "n_concurrent": None,
         "concurrency_group": None, "skills": [], "override_timeout_sec": None,
         "override_setup_timeout_sec": None, "max_timeout_sec": None, "resume_trajectory": False,
         "load_trajectory": None, "extra_allowed_hosts": [], "kwargs": {"max_turns": 200}, "mcp_servers": []}
ENVIRONMENT = {"type": "docker", "import_path": None, "force_build": False, "delete": True, "stream": False,
               "cpu_enforcement_policy": "auto", "memory_enforcement_policy": "auto", "override_cpus": None,
               "override_memory_mb": None, "override_storage_mb": None, "override_gpus": None,
               "override_tpu": None, "mounts": None, "extra_docker_compose": [], "kwargs": {},
               "extra_allowed_hosts": []}
MULTIPLIERS = {"timeout_multiplier": 1.0, "agent_timeout_multiplier": None, "verifier_timeout_multiplier": None,
               "agent_setup_timeout_multiplier": None, "environment_build_timeout_multiplier": None}


def make_job(jobs: Path, name: str, n_attempts: int = 1, model: str = "openai/m1") -> Path:
    job = jobs / name
    job.mkdir(parents=True)
    cfg = {"schema_version": 1, "job_name": name, "jobs_dir": "jobs", "n_attempts": n_attempts,
           "install_only": False, "skip_credential_checks": False, **MULTIPLIERS, "debug": False,
           "n_concurrent_trials": 4, "quiet": False,
           "retry": {"max_retries": 0, "include_exceptions": None, "exclude_exceptions": ["AgentTimeoutError"],
                     "wait_multiplier": 1.0, "min_wait_sec": 1.0, "max_wait_sec": 60.0},
           "override_error_policy": {}, "environment": ENVIRONMENT,
           "verifier": {"override_timeout_sec": None, "max_timeout_sec": None, "disable": False},
           "metrics": [], "agents": [dict(AGENT, model_name=model)], "user_agent": None,
           "datasets": [{"path": "harbor/video-arena"}], "tasks": [], "artifacts": [],
           "extra_instruction_paths": [], "extra_instructions": [], "source_jobs": []}
    (job / "config.json").write_text(json.dumps(cfg, indent=4))
    (job / "lock.json").write_text("{}")
    (job / "job.log").write_text("")
    return job


_rng = random.Random(7)


def trial(job: Path, game: str, case_id: str, answer: dict | None, *, rewards: dict | None | str = "judge",
          exception: str | None = None, message: str = "boom", verifier_ran: bool = True,
          result: bool = True, judge_case: dict | None = None, started_at: str = "2026-01-01T00:00:00Z",
          model: str = "openai/m1") -> Path:
    """One trial folder.  `answer` None: no artifact collected.  `rewards`: "judge" = what the dataset's
    verifier writes for this answer; a dict: that reward.json; None: no verifier result."""
    taskdir = f"{game}-{case_id}"
    name = f"{taskdir[:32]}__{''.join(_rng.choices(string.ascii_letters + string.digits, k=7))}"
    d = job / name
    for sub in ("agent", "verifier", "artifacts"):
        (d / sub).mkdir(parents=True)
    tcfg = {"schema_version": 1,
            "task": {"path": f"harbor/video-arena/{taskdir}", "git_url": None, "git_commit_id": None,
                     "name": None, "ref": None, "overwrite": False, "download_dir": None, "source": "video-arena"},
            "trial_name": name, "trials_dir": f"jobs/{job.name}", "install_only": False, **MULTIPLIERS,
            "agent": dict(AGENT, model_name=model), "user_agent": None, "environment": ENVIRONMENT,
            "verifier": {"override_timeout_sec": None, "max_timeout_sec": None, "disable": False},
            "override_error_policy": {}, "artifacts": [], "extra_instruction_paths": [], "extra_instructions": [],
            "job_id": "6f1b8a4e-0000-4000-8000-000000000000", "source_trial": None}
    (d / "config.json").write_text(json.dumps(tcfg, indent=4))
    (d / "trial.log").write_text("")
    manifest = [{"source": "/app/answer.json", "destination": None, "service": "main",
                 "status": "ok" if answer is not None else "failed"}]
    (d / "artifacts" / "manifest.json").write_text(json.dumps(manifest))
    if answer is not None:
        (d / "artifacts" / "app").mkdir()
        (d / "artifacts" / "app" / "answer.json").write_text(json.dumps(answer))
    if rewards == "judge":
        rewards = rewards_of(answer)
    if verifier_ran and rewards is not None:
        (d / "verifier" / "reward.json").write_text(json.dumps(rewards))
        (d / "verifier" / "judge.json").write_text(json.dumps({
            "format": "video-arena-harbor-verifier/1", "error": None,
            "case": judge_case or {"game": game, "case_id": case_id, "protocol": "B",
                                   "task_name": f"video-arena/{taskdir}"},
            "answer_state": "wrote" if answer is not None else "missing", "rewards": rewards}))
        (d / "verifier" / "test-stdout.txt").write_text("reward: " + json.dumps(rewards) + "\n")
    exc_info = None
    if exception:
        exc_info = {"exception_type": exception, "exception_message": message,
                    "exception_traceback": f"Traceback (most recent call last):\n{exception}: {message}\n",
                    "occurred_at": started_at}
        (d / "exception.txt").write_text(exc_info["exception_traceback"])
    if not result:
        return d
    timing = {"started_at": started_at, "finished_at": started_at}
    vr = {"rewards": rewards} if (verifier_ran and rewards is not None) else None
    # Harbor 0.26's computed reward_valid: rewards present and every exception's policy keeps the reward
    valid_types = {"AgentTimeoutError", "NonZeroAgentExitCodeError", "RuntimeError"}  # RuntimeError: unknown type
    doc = {"schema_version": 1, "id": "0b7e9c1a-1111-4111-8111-111111111111",
           "task_name": f"video-arena/{taskdir}", "trial_name": name, "trial_uri": f"file:///jobs/{job.name}/{name}",
           "task_id": {"path": f"harbor/video-arena/{taskdir}"}, "source": "video-arena",
           "task_checksum": "0" * 64, "config": tcfg,
           "agent_info": {"name": "terminus-2", "version": "2.0.0",
                          "model_info": {"name": model.split("/")[-1], "provider": model.split("/")[0]}},
           "agent_result": {"n_input_tokens": 100, "n_cache_tokens": 0, "n_output_tokens": 10, "cost_usd": None,
                            "model_usage": None, "rollout_details": None, "metadata": None},
           "verifier_result": vr, "verifier_environment_mode": "separate" if vr else None,
           "exception_info": exc_info, "started_at": started_at, "finished_at": started_at,
           "environment_setup": timing, "agent_setup": timing, "agent_execution": timing,
           "verifier": timing if vr else None, "step_results": None,
           "reward_valid": bool(vr and vr["rewards"]) and (exception is None or exception in valid_types)}
    (d / "result.json").write_text(json.dumps(doc, indent=4))
    return d





# --------------------------------------------------------------------------------------------------
# native run records as the runners write them (docs/PROTOCOLS.md)
# --------------------------------------------------------------------------------------------------
ORACLE = {"events": [{k: e[k] for k in FIELDS} for e in EVENTS]}


def runner_digests(protocol: str, **recorded) -> dict:
    """The digests a runner writes into every record of a cell that ran (video_arena/core/results.py
    RUNNER_DIGESTS) but the answer's (write_cell records that one): stand-ins of 64 hex digits, unless
    `recorded` names the value (these tests' tasks trees hold no instruction to compare them with)."""
    from video_arena.core.results import RUNNER_DIGESTS
    return {k: recorded.get(k, sha256_bytes(f"{protocol}:{k}".encode())) for k in RUNNER_DIGESTS[protocol]
            if k != "answer_sha256"}


def reference_condition_sha() -> str:
    from video_arena.core.condition import load_condition
    return load_condition().sha256


def a_run(game: str, case_id: str, **over) -> dict:
    """A Protocol A run.json (video_arena/protocol_a/request_cell.py): a 600 s video, 256 stills, the reference
    condition; `over` replaces keys."""
    fps_eff = 256 / 600
    run = {"protocol": "A", "runner": "native", "model": "m1", "game": game, "case_id": case_id,
           **runner_digests("A", condition_sha256=reference_condition_sha()),
           "condition": "video-arena-a", "tolerance_s": 3,
           "transport": "image_parts", "request_timeout_s": 1800, "reasoning_effort": None, "enable_thinking": None,
           "request_params": {"model": "m1", "max_tokens": 48000, "temperature": 0, "reasoning_effort": None},
           "stop_reason": "stop", "finish_reason": "stop", "answer_state": "answered", "n_rows": 4,
           "n_json_blocks": 1, "frames_used": 256, "fps_eff": fps_eff, "t1_recall_ceiling": min(1.0, 6 * fps_eff),
           "duration_s": 600.0, "protocol_complete": True, "degraded": False, "degradations": [],
           "sampling": {"fps": 1, "jpeg_q": 4, "max_frames": 256, "longest_side": 768}}
    run.update(over)
    return run


def b_run(game: str, case_id: str, verdict: str = "clean", **over) -> dict:
    """A Protocol B run.json (video_arena/protocol_b/runner.py) with an egress-audit verdict."""
    run = {"protocol": "B", "model": "m1", "game": game, "case_id": case_id, "stop_reason": "completed",
           "answer_state": "wrote", "turns_used": 12, "audit": {"verdict": verdict, "matches": []},
           **runner_digests("B")}
    run.update(over)
    return run


def write_cell(results: Path, run: dict, answer: dict | bytes | None = ORACLE, record_sha: bool = True) -> Path:
    """<results>/<game>/<case_id>/{run.json, answer.json}; the run records the answer's SHA-256 (as the
    runners do) unless record_sha is False."""
    d = results / run["game"] / run["case_id"]
    d.mkdir(parents=True, exist_ok=True)
    run = dict(run)
    if answer is not None:
        data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        (d / "answer.json").write_bytes(data)
        if record_sha:
            run.setdefault("answer_sha256", sha256_bytes(data))
    (d / "run.json").write_text(json.dumps(run))
    return d
