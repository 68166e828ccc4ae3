"""What a Harbor agent of the toolkit subclasses and reads (the Protocol A agent, the perception
baseline's agent, the network probe): Harbor's agent base class, the environment it is handed, the
context it fills, and the environment variables `--ae KEY=VALUE` gave it.

Importing this module imports Harbor's agent framework (about 0.9 s of CPU on the development
machine, `python -X importtime -c "import harbor.agents.base"`): only the agents import it, and
Harbor imports them.
"""
from __future__ import annotations

from harbor.agents.base import BaseAgent
from harbor.agents.capabilities import AgentCapabilities
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

__all__ = ["AgentCapabilities", "AgentContext", "BaseAgent", "BaseEnvironment", "extra_env"]


def extra_env(agent: BaseAgent) -> dict[str, str]:
    """The variables `harbor run --ae KEY=VALUE` handed the agent (BaseAgent.extra_env)."""
    return dict(agent.extra_env)
