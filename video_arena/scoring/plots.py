"""`video-arena score --plot OUT.png`: game means with their 95 % intervals, one bar per system."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from video_arena.scoring import statistics as SS  # noqa: E402

COLOURS = ["#3b6fb6", "#e08a2c", "#4a9a5b", "#b44b6e"]


def plot_game_means(systems: list[SS.SystemScore], out: Path, comparison: dict[str, Any] | None = None,
                    metric: str = "reward") -> Path:
    """Bars of each game's mean `metric` per system, with the bootstrap interval as error bars and
    scored cases/n_cases under each bar; the last group is the overall mean (on the shared games when
    comparing).  Games nobody scored are shown with an 'n/a' marker so the gap is visible."""
    games = sorted(set().union(*(s.games.keys() for s in systems)))
    shared = comparison["shared_games"] if comparison else None
    groups = games + ["overall"]
    k = len(systems)
    width = 0.8 / k
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(groups) * max(1, k) ** 0.5 + 2), 4.6), dpi=120)
    for si, s in enumerate(systems):
        overall = s.overall(shared)
        for gi, g in enumerate(groups):
            x = gi - 0.4 + width * (si + 0.5)
            if g == "overall":
                mean, ci, note = overall["means"][metric], overall["ci95"][metric], f"{len(overall['games'])}g"
            else:
                gs = s.games.get(g)
                if gs is None:
                    continue
                mean, ci, note = gs.means[metric], gs.ci[metric], f"{gs.n_scored_cases}/{gs.n_cases}"
            if mean is None:
                ax.text(x, 0.01, "not scored", ha="center", va="bottom", fontsize=7, color="0.4", rotation=90)
                ax.text(x, -0.02, note, ha="center", va="top", fontsize=6.5, color="0.3", rotation=90)
                continue
            yerr = None
            if ci is not None:
                yerr = [[max(0.0, mean - ci[0])], [max(0.0, ci[1] - mean)]]
            ax.bar(x, mean, width * 0.92, color=COLOURS[si % len(COLOURS)],
                   label=s.label if gi == 0 or (g == "overall" and not games) else None,
                   yerr=yerr, capsize=3, error_kw={"elinewidth": 1, "ecolor": "0.15"},
                   hatch="//" if g == "overall" else None, edgecolor="white" if g != "overall" else "0.2")
            ax.text(x, -0.02, note, ha="center", va="top", fontsize=6.5, color="0.3", rotation=90)
    handles, labels = ax.get_legend_handles_labels()
    if not handles:  # first group empty for every system: add proxies
        handles = [plt.Rectangle((0, 0), 1, 1, color=COLOURS[i % len(COLOURS)]) for i in range(k)]
        labels = [s.label for s in systems]
    ax.legend(handles, labels, fontsize=8, loc="upper right", frameon=False)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g if g != "overall" else ("overall\n(shared)" if shared is not None else "overall")
                        for g in groups], fontsize=9)
    ax.tick_params(axis="x", pad=34, length=0)
    ax.set_ylim(-0.0, 1.05)
    ax.set_ylabel(metric + ("  (strict-tuple F1)" if metric == "reward" else ""))
    diag = ("  DIAGNOSTIC tolerance" if systems[0].tolerance_diagnostic else "") + \
        ("  DIAGNOSTIC: mixed cells" if any(s.mixed for s in systems) or (comparison or {}).get("mixed") else "")
    ax.set_title(f"Video-Arena game means, 95% bootstrap intervals (tolerance {systems[0].tolerance_s:g} s){diag}",
                 fontsize=10)
    ax.grid(axis="y", color="0.9", linewidth=0.8)
    ax.set_axisbelow(True)
    for spine in ("top", "right"):
        ax.spines[spine].set_visible(False)
    fig.text(0.01, 0.01, "under each bar: scored cases/n_cases (overall: number of games)", fontsize=7, color="0.4")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    return out
