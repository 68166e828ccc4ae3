"""The Harbor seam: every name the toolkit takes from Harbor, public or private, and everything it
knows about the folders Harbor writes, for the one Harbor release pyproject.toml pins.

    version.py       HARBOR_VERSION (the pin; a test holds it to pyproject.toml) and the version gate
    trials.py        Harbor's job and trial folders: result.json and config.json as read, trial names,
                     ATIF trajectories (stdlib only: the readers import it without importing Harbor)
    task_models.py   task loading (TaskConfig, Task, the verifier mode) and `harbor lint`
    speedups.py      validate's two replacements of Harbor internals, on only with HARBOR_VERSION
    environments.py  Harbor's environment registry and what each class declares it can run
    agents.py        what a Harbor agent subclasses and reads (BaseAgent, its environment and context)
    registry.py      Harbor's registry.json model and client (publish)

No other module of the package imports `harbor` or names one of its private attributes
(tests/unit/test_harbor_api.py): a new Harbor release is adopted here, and here only.
"""
