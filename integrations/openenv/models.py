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
    """What kforge answers a reset or a step with: the fields of kernrl's
    KernelObservation (OpenEnv's envs/kernrl/models.py:35-62 at 685de41), with
    the same names, types and defaults. kforge's own facts (episode_id, the
    system prompt, the scored item) are in metadata, which kforge sends inside
    the observation (upstream's serialize_observation leaves metadata out)."""

    problem_id: str = Field(..., description="The task, relative to kforge serve --tasks")
    problem_description: str = Field(
        ..., description="The task's prompt as kforge renders it (the user message)"
    )
    reference_code: str = Field(
        ..., description="The task's reference source on the server's backend"
    )
    gpu_info: str = Field(..., description="The device kforge evaluates on")
    turn: int = Field(default=0, ge=0, description="Steps scored in the episode")
    max_turns: int = Field(default=10, ge=1, description="Steps the episode allows")
    feedback: str = Field(
        default="", description="kforge's feedback on the last kernel; empty after a reset"
    )
    compilation_success: bool = Field(
        default=False, description="Whether the kernel compiled (true after a reset, as kernrl's)"
    )
    compilation_error: Optional[str] = Field(
        default=None, description="Why the kernel did not compile, when it did not"
    )
    correctness_pass: Optional[bool] = Field(
        default=None, description="Whether the kernel's outputs matched the reference; null when not checked"
    )
    max_diff: Optional[float] = Field(
        default=None, description="The largest absolute error over the outputs checked; null when none was"
    )
    speedup: Optional[float] = Field(
        default=None, description="The reference's time over the kernel's (median)"
    )


class KforgeState(State):
    """A session's episode: kernrl's KernelState fields (models.py:65-76) and
    kforge's own; episode_id null and step_count 0 before a reset."""

    problem_id: Optional[str] = Field(default=None, description="The episode's task")
    turn: int = Field(default=0, ge=0, description="Steps scored in the episode")
    max_turns: int = Field(default=10, ge=1, description="Steps the episode allows")
    best_speedup: float = Field(
        default=0.0, ge=0.0, description="The best speedup of a correct kernel so far"
    )
    solved: bool = Field(
        default=False,
        description="Whether a correct kernel with speedup above 1.05 was scored (kernrl's rule)",
    )
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
