"""Harbor's adapter files of a published dataset, from what was measured: README.md (Harbor's adapter
README sections, every game's licence and provenance as its manifest records them),
adapter_metadata.json and parity_experiment.json; and the summary of each Harbor job given with
`publish --jobs` (its trials counted, each answer re-judged natively).

Parity claims only what was measured: without a native run beside a job (`--parity`) the parity file
is Harbor's template with no experiment, never a number (video_arena/harbor/parity.py compares).
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from video_arena import paths
from video_arena import safe_io
from video_arena.core.tasks import TasksTree
from video_arena.harbor import spec as S
from video_arena.harbor.publish_dataset import PublishError, json_object, lstat_or_none
from video_arena.harbor_api import trials as TR
from video_arena.harbor_api.version import installed_version


def summarise_job(job: Path, task_names: set[str], tasks_root: Path | None) -> dict[str, Any]:
    """One Harbor job of this dataset: per agent, trials, Harbor's mean reward, the natively re-judged
    mean and the disagreements (the scorer re-judges every collected answer with judge/judge.py)."""
    # deferred: the scoring modules (about 0.2 s of CPU); only --jobs
    from video_arena.scoring.cells import ScoringInputError
    from video_arena.scoring.harbor_jobs import score_job

    if lstat_or_none(job / "config.json") is None:
        raise PublishError(f"{job} is not a Harbor job folder (no config.json)")
    cfg = json_object(job / "config.json")
    agents = [str(a.get("name") or a.get("import_path") or "?") for a in cfg.get("agents") or []
              if isinstance(a, dict)] if isinstance(cfg.get("agents") or [], list) else []
    trials = []
    for trial in TR.read_job(job):  # the one reader of trial folders: real folders, bounded reads, no links
        if trial.error == TR.NO_RESULT:
            continue
        rfile = trial.result_path
        if trial.result is None:  # skipping it would understate n_trials in the adapter files
            raise PublishError(f"{rfile} is unreadable ({trial.error}); a job still running, or a damaged trial: "
                               f"publish only finished jobs")
        vr = trial.result.get("verifier_result") or {}
        if not isinstance(vr, dict) or not isinstance(vr.get("rewards") or {}, dict):
            raise PublishError(f"{rfile} is not a Harbor trial result (a JSON object, its verifier_result and "
                               f"rewards objects)")
        tname = str(trial.result.get("task_name") or "")
        if tname.split("/", 1)[-1] not in task_names:
            raise PublishError(f"{job}: trial {trial.name} ran {tname!r}, not a task of this dataset")
        trials.append(trial)
    ran = sorted({t.task_name.split("/", 1)[-1] for t in trials})
    if not trials:
        raise PublishError(f"{job} holds no finished trial")
    try:
        system = score_job(job, tasks_root, n_boot=0, progress=False)
    except ScoringInputError as exc:
        raise PublishError(f"cannot score {job}: {exc}") from None
    harbor_rewards = []
    for t in trials:
        rewards = t.rewards
        if rewards:
            v = safe_io.finite_number(rewards.get("reward"), 0.0, 1.0)  # the judge's rewards are in [0, 1]
            if v is None:
                raise PublishError(f"{job}: trial of {t.task_name[:120]!r} records reward "
                                   f"{repr(rewards.get('reward'))[:40]}, not a finite number from 0 to 1")
            harbor_rewards.append(v)
    scored = [c for c in system.cells() if getattr(c, "trial", None) and c.status == "scored"]
    native = [float(c.record["reward"]) for c in scored if c.record]
    facts = system.harbor or {}
    models = sorted({str(a.get("model_name")) for a in cfg.get("agents") or [] if isinstance(a, dict)
                     and a.get("model_name")}) if isinstance(cfg.get("agents") or [], list) else []
    return {
        "job": job.name, "agent": ",".join(agents), "model": ",".join(models) or None,
        "n_trials": len(trials), "n_tasks": len(ran), "n_scored": len(scored),
        "n_missing": len(facts.get("missing") or []),
        "harbor_mean_reward": round(sum(harbor_rewards) / len(harbor_rewards), 6) if harbor_rewards else None,
        "native_mean_reward": round(sum(native) / len(native), 6) if native else None,
        "n_reward_checked": facts.get("reward_checked", 0),
        "n_reward_mismatches": len(facts.get("mismatches") or []),
        "harbor_version": installed_version(),
    }


def game_provenance(games: list[str], tasks_root: Path | None) -> dict[str, dict[str, Any]]:
    """Per game, its manifest's `provenance` as recorded (source, licence, engines, ...), and the case
    licences when the cases name their own (imported cases do)."""
    tree = TasksTree(paths.tasks_root(tasks_root))
    out: dict[str, dict[str, Any]] = {}
    for g in games:
        path = tree.manifest_path(g)
        doc, err = safe_io.read_json_object(path) if lstat_or_none(path) is not None else (None, "absent")
        if doc is None:
            out[g] = {"licence": f"not recorded (tasks tree {g}/manifest.json {err})"}
            continue
        prov = doc.get("provenance")
        entry = dict(prov) if isinstance(prov, dict) else {}
        if "licence" not in entry:
            entry["licence"] = "not recorded in the manifest's provenance"
        cases = doc.get("cases") if isinstance(doc.get("cases"), list) else []
        case_licences = sorted({str(c["licence"]) for c in cases if isinstance(c, dict) and c.get("licence")})
        if case_licences and case_licences != [str(entry["licence"])]:
            entry["case_licences"] = case_licences
        out[g] = entry
    return out


def _agent_label(agent: str, model: str | None) -> str:
    """Harbor's `agent@version+model` naming, as far as the job records it."""
    return agent + (f"+{model}" if model else "")


def parity_entries(name: str, tasks: list[str], pairs: list[tuple[dict[str, Any], Any]]) -> list[dict[str, Any]]:
    """parity_experiment.json: Harbor's template, one entry per agent measured both ways."""
    # deferred: harbor/parity.py and the scoring modules (about 0.2 s of CPU); a refusal does not pay it
    from video_arena.harbor.parity import sem_str

    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    out = []
    for run, par in pairs:
        out.append({
            "adapter_name": name, "agent": run["agent"], "model": run["model"], "date": today,
            "adapted_benchmark_size": len(tasks), "parity_benchmark_size": par.n_paired,
            "number_of_runs": 1,
            "notes": (f"original = the project's own harness ({par.native}: {par.native_agent}), harbor = Harbor "
                      f"job {par.job} ({par.harbor_agent}); per task and per game below; mean difference "
                      f"Harbor - native {par.mean_difference:+.4f}, 95 % CI {par.difference_ci95} over "
                      f"{par.n_paired} paired tasks: {'matching' if par.matching else 'NOT matching'}"
                      + (f"; {par.n_native_only} task(s) scored only natively, {par.n_harbor_only} only on "
                         "Harbor (not compared)" if par.n_native_only or par.n_harbor_only else "")),
            "original_parity_repo": None, "adapter_pr": [], "dataset_pr": [], "parity_pr": [],
            "metrics": [{
                "benchmark_name": "Video-Arena", "metric": "reward",
                "original": sem_str([par.mean_native]), "harbor": sem_str([par.mean_harbor]),
                "original_runs": [par.mean_native], "harbor_runs": [par.mean_harbor],
            }],
            "video_arena_parity": par.to_doc(),
        })
    return out


def adapter_files(name: str, version: str, marker: dict[str, Any], tasks: list[str], sizes: dict[str, int],
                  runs: list[dict[str, Any]], git_url: str, provenance: dict[str, dict[str, Any]],
                  pairs: list[tuple[dict[str, Any], Any]] | None = None) -> dict[str, str]:
    pairs = pairs or []
    protocol = marker.get("protocol")
    games = sorted({t.rsplit("-", 1)[0] for t in tasks})
    counts: dict[str, int] = {}
    for r in runs:
        counts[r["agent"]] = counts.get(r["agent"], 0) + r["n_trials"]
    mismatches = sum(r["n_reward_mismatches"] for r in runs)
    checked = sum(r["n_reward_checked"] for r in runs)
    matching = sorted(_agent_label(r["agent"], r["model"]) for r, p in pairs if p.matching)
    unmatching = sorted(_agent_label(r["agent"], r["model"]) for r, p in pairs if not p.matching)
    parity = parity_entries(name, tasks, pairs)
    parity_note = (f"{len(pairs)} agent(s) measured both ways (native harness and Harbor): "
                   + "; ".join(f"{_agent_label(r['agent'], r['model'])} {'matching' if p.matching else 'NOT matching'}"
                               for r, p in pairs)
                   if pairs else "no parity experiment recorded (publish --parity NATIVE_RESULTS --jobs JOB)")
    check_note = (f"{checked} Harbor trials re-judged natively, {mismatches} disagree with Harbor's reward"
                  if runs else "no Harbor job recorded (publish --jobs JOB ...)")
    metadata = [{
        "adapter_name": name,
        "adapter_builders": [],
        "original_benchmark": [{
            "split": "test", "size": len(tasks), "harness": "agent" if protocol == "B" else "llm",
            "supported_agents": None, "adaptable": True,
            "notes": f"Protocol {protocol}; native runners run-a / run-b; games: {', '.join(games)}",
        }],
        "harbor_adapter": [{
            "split": "test",
            "adapted_benchmark_size": len(tasks),
            "parity_benchmark_size": max((p.n_paired for _, p in pairs), default=None),
            "parity_sampling_rate": (round(max(p.n_paired for _, p in pairs) / len(tasks), 4) if pairs else None),
            "registry_benchmark_size": len(tasks),
            "added_agents": ["protocol_a_agent:ProtocolA"] if protocol == "A" else [],
            "parity_matching_agents": matching,
            "parity_unmatching_agents": unmatching or None,
            "parity_costs": None,
            "notes": (f"{name}@{version}: {len(tasks)} copy-mode tasks, {sizes['total']} bytes "
                      f"({sizes['media']} of video); base image {marker.get('base_image')}"
                      f"{'' if marker.get('base_image_pinned') else ' (a tag, not pinned)'}; --net {marker.get('net')}; "
                      f"trials: {', '.join(f'{a} {n}' for a, n in sorted(counts.items())) or 'none recorded'}; "
                      f"{check_note}; parity: {parity_note}; licences and provenance per game: `provenance`"),
        }],
        "provenance": provenance,
    }]
    readme = _readme(name, version, marker, tasks, games, sizes, runs, git_url, provenance, parity, parity_note,
                     check_note)
    return {"README.md": readme,
            "adapter_metadata.json": json.dumps(metadata, indent=2) + "\n",
            "parity_experiment.json": json.dumps(parity, indent=2) + "\n"}


def _provenance_lines(provenance: dict[str, dict[str, Any]], games: list[str]) -> str:
    out = []
    for g in games:
        entry = provenance.get(g) or {}
        out.append(f"### {g}\n")
        out.append(f"- **licence**: {entry.get('licence')}")
        for k, v in entry.items():
            if k == "licence":
                continue
            text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
            out.append(f"- {k}: {text}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _readme(name, version, marker, tasks, games, sizes, runs, git_url, provenance, parity, parity_note,
            check_note) -> str:
    protocol = marker.get("protocol")
    agent_hint = ("-a protocol_a_agent:ProtocolA -m openai/<model>" if protocol == "A"
                  else "-a terminus-2 -m <provider/model> --ak max_turns=200")
    rows = "\n".join(f"| {r['job']} | {r['agent']} | {r['n_trials']} | {r['harbor_mean_reward']} | "
                     f"{r['native_mean_reward']} | {r['n_reward_mismatches']} |" for r in runs) \
        or "| (none recorded) | | | | | |"
    prow, grow = [], []
    for e in parity:
        p, m = e["video_arena_parity"], e["metrics"][0]
        ci = p["difference_ci95"]
        prow.append(f"| {e['agent']} | {e['model'] or '-'} | reward | {e['number_of_runs']} | "
                    f"{e['parity_benchmark_size']} tasks ({100 * e['parity_benchmark_size'] / len(tasks):.0f}% of "
                    f"the full set) | {m['original']} | {m['harbor']} | {p['mean_difference_harbor_minus_native']:+.4f} "
                    f"{ci} | {'yes' if p['matching'] else 'no'} |")
        for g, x in p["per_game"].items():
            grow.append(f"| {e['agent']} | {g} | {x['n_tasks']} | {x['native']:.4f} | {x['harbor']:.4f} | "
                        f"{x['mean_difference']:+.4f} | {x['difference_ci95']} |")
    parity_table = ("| Agent | Model | Metric | Number of Runs | Dataset Size | Original Benchmark Performance "
                    "| Harbor Adapter Performance | Harbor - original (95 % CI) | matching |\n"
                    "|---|---|---|---|---|---|---|---|---|\n" + ("\n".join(prow) or "| (none measured) | | | | | | | | |"))
    if grow:
        parity_table += ("\n\nPer game (tasks scored both ways):\n\n| Agent | game | tasks | original | Harbor "
                         "| Harbor - original | 95 % CI |\n|---|---|---|---|---|---|---|\n" + "\n".join(grow))
    lic = _provenance_lines(provenance, games)
    return f"""## Video-Arena (Protocol {protocol}) -> Harbor Adapter

## Overview

Video-Arena is a long-video game benchmark: a model watches a whole HUD-free match and reports every
critical event (T1), how each event moved a hidden game state V_t (T2) and where that leaves the match
(T3). This dataset, `{name}@{version}`, holds {len(tasks)} Protocol {protocol} tasks (one per match) over
the games {', '.join(games)}; each is scored by the same stdlib judge as the project's native runners.

## Generated Task Structure

```
<game>-<case_id>/
    task.toml           budget, separate root verifier, agent user `agent`, artifact /app/answer.json
    instruction.md
    environment/        Dockerfile (FROM {marker.get('base_image')}), match.mp4, answer.json (the empty seed){', instruction.md' if protocol == 'B' else ''}{', docker-compose.yaml (network_mode: none)' if marker.get('net') == 'compose-none' else ''}
    tests/              test.sh, score_harbor.py, judge.py, gt.json, case.json (verifier only)
    solution/           solve.sh, answer.json (oracle only)
```

Copy mode: the video is baked into each task's image, so the tasks need no host path and run on any
Harbor environment that builds a Dockerfile. Size: {sizes['total']} bytes, of which {sizes['media']} bytes of video.

## Run Evaluation / Harness

```bash
harbor run -d {name}@{version} --registry-path registry.json -a oracle          # every trial 1.0
harbor run -d {name}@{version} --registry-path registry.json {agent_hint} -e <docker|podman|daytona|modal|...> -n <N>
harbor job resume -p jobs/<job>                                                  # after an interruption
```

The registry rows point at `{git_url}`.

## Comparison with Original Benchmark (Parity)

"Original" is the same agent run through the project's own harness (`video-arena run-a` / `run-b`,
scored by `video-arena score`); "Harbor" is its Harbor job's reward (the verifier's `reward.json`).
Per task the two rewards are paired; the difference is Harbor - original with a 95 % bootstrap
interval over the paired tasks, and an agent is matching when that interval holds 0
(`parity_experiment.json` has every task). {parity_note}.

{parity_table}

Harbor jobs recorded, each trial's answer re-judged with the project's judge ({check_note}):

| job | agent | trials | Harbor mean reward | native mean reward | disagreements |
|---|---|---|---|---|---|
{rows}

## Notes & Caveats

- The network: `--net {marker.get('net')}`{' (compose `network_mode: none`, for Docker/Podman hosts without Harbor egress control; cloud environments need a --net strict dataset)' if marker.get('net') == 'compose-none' else ' (`[environment] network_mode = "no-network"`: the environment must enforce it)'}.
- The base image is {'pinned by digest' if marker.get('base_image_pinned') else 'a tag, not a digest: only hosts where that tag is the same image run the same bits'}.
- Each trial asks for {S.CPUS} CPUs and {S.MEMORY_MB} MB; a smaller host needs `--override-cpus`, which is a smaller budget than the benchmark's.
- Report the mean of the per-game means with n; a trial that ends in a harness exception is missing, not 0.0.
- This repository holds each task's ground truth (`tests/gt.json`) and oracle answer (`solution/`), as every
  Harbor dataset does: Harbor never puts them in the agent's container, but an agent that can browse the web
  could fetch them from wherever the repository is hosted. Evaluate with the network off for agents, or host
  the repository where evaluated agents cannot reach it.

## Citation

Cite the Video-Arena toolkit and, per game, the sources of its matches (below).

## Licences of the matches

Every game's licence and provenance as its `manifest.json` records them (also in
`adapter_metadata.json`, key `provenance`):

{lic}"""
