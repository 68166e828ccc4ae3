"""Video-Arena toolkit: the benchmark's contract (tasks tree, instructions, judge), case builders,
Protocol A/B runners, Harbor dataset generator and the offline scorer."""

__version__ = "0.1.0"
