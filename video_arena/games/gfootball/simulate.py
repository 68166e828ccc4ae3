"""Run one Google Research Football match between the simulator's built-in AI teams, and V_t rollouts.

Runs in the engine's own Python 3.11 venv (scripts/install-gfootball.sh), never in the toolkit's:

    <engine venv>/bin/python simulate.py --seed S --left-difficulty A --right-difficulty B \
        --steps 3000 --rollouts K --horizon H [--rollout-seed R] [--at-steps 10,20,..] [--dump DIR] --out match.json

It plays the match headless (no rendering; the patched engine), records the per-step state
(match_state.encode_state), derives the events from the quantized state exactly as the plugin's
`replay` does, and from the engine snapshot at step 0 and at every event step (plus --at-steps) runs K
rollouts of H steps (fewer at the end of the match) in which the built-in AI plays on, the engine's
random generator reseeded per rollout (GameEnv.reseed, patch 03).  It writes one JSON document: the
state, the events, each rollout's final score and steps left, the engine configuration and timings.
With --horizon 0 and --rollouts K it plays every rollout to the end of the match (the full V_t).  With
--dump DIR the environment also writes its own episode dump (gfootball's `.dump`, what
`write_full_episode_dumps` writes) into DIR: the same match as the recorded state, read back by dump.py.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _load_match_state():
    spec = importlib.util.spec_from_file_location("va_gf_match_state", HERE / "match_state.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


MS = _load_match_state()
SCENARIO = "va_builtin_ai_match"


def _register_scenario(left_difficulty: float, right_difficulty: float, steps: int) -> None:
    """gfootball's 11_vs_11_stochastic line-up with both teams' AI difficulty and the duration set."""
    # deferred: the gfootball engine, an optional install (scripts/setup.sh): only simulating a match needs it
    import gfootball.scenarios as sc

    def build_scenario(builder):
        builder.config().game_duration = steps
        builder.config().left_team_difficulty = left_difficulty
        builder.config().right_team_difficulty = right_difficulty
        builder.config().deterministic = False
        for team in (sc.Team.e_Left, sc.Team.e_Right):
            builder.SetTeam(team)
            builder.AddPlayer(-1.000000, 0.000000, sc.e_PlayerRole_GK)
            builder.AddPlayer(0.000000, 0.020000, sc.e_PlayerRole_RM)
            builder.AddPlayer(0.000000, -0.020000, sc.e_PlayerRole_CF)
            builder.AddPlayer(-0.422000, -0.19576, sc.e_PlayerRole_LB)
            builder.AddPlayer(-0.500000, -0.06356, sc.e_PlayerRole_CB)
            builder.AddPlayer(-0.500000, 0.063559, sc.e_PlayerRole_CB)
            builder.AddPlayer(-0.422000, 0.195760, sc.e_PlayerRole_RB)
            builder.AddPlayer(-0.184212, -0.10568, sc.e_PlayerRole_CM)
            builder.AddPlayer(-0.267574, 0.000000, sc.e_PlayerRole_CM)
            builder.AddPlayer(-0.184212, 0.105680, sc.e_PlayerRole_CM)
            builder.AddPlayer(-0.010000, -0.21610, sc.e_PlayerRole_LM)

    mod = types.ModuleType(f"gfootball.scenarios.{SCENARIO}")
    mod.build_scenario = build_scenario
    sys.modules[mod.__name__] = mod


def make_core(seed: int, left_difficulty: float, right_difficulty: float, steps: int, dump_dir: str = ""):
    """The engine core of one match; with `dump_dir` the environment also writes its own episode dump there
    (write_full_episode_dumps), its config carrying both teams' difficulties (the scenario sets them in
    code, which a dump's config would not otherwise show)."""
    # deferred: the gfootball engine, an optional install (scripts/setup.sh): only simulating a match needs it
    import gfootball.env as football_env

    _register_scenario(left_difficulty, right_difficulty, steps)
    options = {"game_engine_random_seed": int(seed), "action_set": "default"}
    if dump_dir:
        options |= {"left_team_difficulty": float(left_difficulty), "right_team_difficulty": float(right_difficulty)}
    env = football_env.create_environment(
        env_name=SCENARIO, representation="raw", rewards="scoring",
        number_of_left_players_agent_controls=0, number_of_right_players_agent_controls=0,
        write_full_episode_dumps=bool(dump_dir), logdir=dump_dir, other_config_options=options)
    env.reset()
    return env, env.unwrapped._env   # FootballEnvCore


def _observe(obs: dict) -> tuple:
    ball = tuple(float(v) for v in obs["ball"])
    left = [tuple(float(v) for v in p) for p in obs["left_team"]]
    right = [tuple(float(v) for v in p) for p in obs["right_team"]]
    active = tuple(int(bool(v)) for v in list(obs["left_team_active"]) + list(obs["right_team_active"]))
    return (ball, left, right, int(obs["game_mode"]), tuple(int(v) for v in obs["score"]),
            (int(obs["ball_owned_team"]), int(obs["ball_owned_player"])), active)


def play(core, steps: int, snapshot_every_step: bool = True):
    rows, snaps = [_observe(core._observation)], {0: core.get_state({})}
    done = False
    for i in range(1, steps + 1):
        if done:
            raise RuntimeError(f"the match ended after {i - 1} steps, {steps} expected")
        obs, _, done, _ = core.step([])
        rows.append(_observe(obs))
        if snapshot_every_step:
            snaps[i] = core.get_state({})
    return rows, snaps


def rollout(core, snap: bytes, seed: int, horizon: int) -> tuple[int, int, int]:
    """(left goals, right goals, steps left) after `horizon` steps (0: to the end) from `snap`."""
    core.set_state(snap)
    core._env.reseed(int(seed) & 0x7FFFFFFF)
    obs = core._observation
    n = 0
    while obs["steps_left"] > 0 and (horizon <= 0 or n < horizon):
        obs, _, done, _ = core.step([])
        n += 1
        if done:
            break
    return int(obs["score"][0]), int(obs["score"][1]), int(obs["steps_left"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, required=True, help="game_engine_random_seed of the match")
    ap.add_argument("--left-difficulty", type=float, required=True)
    ap.add_argument("--right-difficulty", type=float, required=True)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--rollouts", type=int, default=0, help="rollouts per evaluated state (0: none)")
    ap.add_argument("--horizon", type=int, default=0, help="steps per rollout (0: to the end of the match)")
    ap.add_argument("--rollout-seed", type=int, default=0, help="base of the per-rollout engine reseeds")
    ap.add_argument("--at-steps", default="", help="evaluate these steps instead of step 0 + the event steps")
    ap.add_argument("--dump", default="", help="also write the environment's own episode dump into this folder")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

    t0 = time.monotonic()
    env, core = make_core(a.seed, a.left_difficulty, a.right_difficulty, a.steps, a.dump)
    rows, snaps = play(core, a.steps, snapshot_every_step=a.rollouts > 0)
    if a.dump:   # one more step: the environment ends the episode and writes the whole dump (the record is done)
        core.step([])
    t_match = time.monotonic() - t0
    ball, left, right, mode, score, owner, active = (list(c) for c in zip(*rows))
    state = MS.encode_state(ball, left, right, mode, score, owner, active)
    events = MS.derive_events(MS.decode_state(state))
    if a.at_steps:
        eval_steps = [int(s) for s in a.at_steps.split(",") if s.strip()]
    else:
        eval_steps = [0] + [e.step for e in events]

    t1 = time.monotonic()
    rollouts = []
    if a.rollouts > 0:
        for j, s in enumerate(eval_steps):
            outs = []
            for k in range(a.rollouts):
                seed = (a.rollout_seed * 1_000_003 + s * 1009 + k * 7919 + 1) % 2_000_000_000
                outs.append(list(rollout(core, snaps[s], seed, a.horizon)))
            rollouts.append({"step": s, "outcomes": outs})
    t_roll = time.monotonic() - t1
    doc = {
        "engine": {"gfootball": "2.10.2", "patches": "video_arena/games/gfootball/patches",
                   "python": sys.version.split()[0]},
        "match": {"seed": a.seed, "left_difficulty": a.left_difficulty, "right_difficulty": a.right_difficulty,
                  "steps": a.steps},
        "final_score": list(score[-1]),
        "state": state,
        "events": [[e.step, e.type, e.actor, e.where] for e in events],
        "rollouts": rollouts,
        "rollout_budget": {"rollouts": a.rollouts, "horizon": a.horizon, "rollout_seed": a.rollout_seed},
        "timing_s": {"match": round(t_match, 2), "rollouts": round(t_roll, 2),
                     "rollout_steps": sum((a.steps - r["step"]) - o[2] for r in rollouts for o in r["outcomes"])},
    }
    env.close()
    Path(a.out).write_text(json.dumps(doc), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
