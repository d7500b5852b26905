"""kforge's OpenEnv types: the action, observation and state that `kforge serve`
speaks on /reset, /step, /state and /ws (docs/rl.md, "OpenEnv"). GET /schema
answers these models' JSON schemas; src/server/openenv.c holds them as text and
validates against them. Needs openenv-core (pip install openenv-core)."""

from typing import Any, Dict, List, Optional

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field


class KforgeAction(Action):
    """A kernel for kforge to compile, check and time: exactly one of completion
    (a model's raw reply; the code is taken from its fenced block) and code (the
    source itself)."""

    completion: Optional[str] = Field(
        default=None, description="A model's raw reply; its fenced code block is evaluated"
    )
    code: Optional[str] = Field(default=None, description="The kernel's source itself")
    problem_id: Optional[str] = Field(
        default=None,
        description="The problem of a stateless HTTP /step (default: kforge serve "
        "--openenv-problem); in a session, if given, the episode's problem",
    )


class KforgeObservation(Observation):
    """What kforge answers a reset or a step with."""

    episode_id: Optional[str] = Field(
        default=None, description="kforge's episode (GET /v1/episodes/{id})"
    )
    problem_id: str = Field(description="The task, relative to kforge serve --tasks")
    text: str = Field(
        description="What the model reads next: the task's prompt after a reset, "
        "kforge's feedback on the kernel after a step"
    )
    system: Optional[str] = Field(
        default=None, description="The system prompt after a reset; null after a step"
    )
    turn: int = Field(ge=0, description="Steps scored in the episode")
    max_turns: int = Field(ge=1, description="Steps the episode allows")
    result: Optional[Dict[str, Any]] = Field(
        default=None,
        description="After a step: the scored item (status, correct, compiled, "
        "speedup, reward, feedback, metrics) as POST /v1/episodes/{id}/step gives it",
    )


class KforgeState(State):
    """A session's episode; episode_id null and step_count 0 before a reset."""

    problem_id: Optional[str] = Field(default=None, description="The episode's task")
    max_turns: Optional[int] = Field(default=None, description="Steps the episode allows")
    done: bool = Field(default=False, description="Whether the episode has terminated")
    rewards: List[Optional[float]] = Field(
        default_factory=list, description="The reward of each scored step"
    )
    trajectory_reward: Optional[float] = Field(
        default=None, description="The first-turn-anchored reward of the steps so far"
    )


def schemas() -> Dict[str, Any]:
    """What GET /schema answers (http_server.py's get_schemas)."""
    return {
        "action": KforgeAction.model_json_schema(),
        "observation": KforgeObservation.model_json_schema(),
        "state": KforgeState.model_json_schema(),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(schemas(), sort_keys=True))
