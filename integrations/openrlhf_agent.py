"""OpenRLHF: kforge serve as a multi-turn agent (--train.agent_func_path).

    python -m openrlhf.cli.train_ppo_ray ... \\
        --train.agent_func_path integrations/openrlhf_agent.py

The dataset's label is the problem id. Each turn the model writes a kernel;
kforge compiles, checks and times it; its feedback is the next user turn.

What OpenRLHF does with the module (OpenRLHF 0.11.2 from PyPI,
openrlhf/trainer/ray/vllm_engine.py lines 19-30; openrlhf/utils/agent.py):
it loads the file and builds its `AgentExecutor` (a subclass of
AgentExecutorBase); MultiTurnAgentExecutor builds one AgentInstance per
prompt with no argument (agent.py line 39), calls `reset({"observation":
prompt, "label": label})` (42-44) and then `step(states)` after each
generation with observation_text, action_text, label and sampling_params
(114-120). The rollout's reward is the SUM of the steps' "rewards" (a
tensor: `.item()` at line 122), its score the last step's "scores" (123);
the loop ends on "done" or when the token budget is spent (94-97), without
a call to the instance. So each step's reward here is the change in the
turn's reward since the previous turn: the sum is the reward of the last
kernel written, however the loop ends; no server state is kept (each turn
is one /v1/score call), so nothing is left open. "scores" is 1 for a
correct kernel. The episode is done on a correct kernel or after
$KFORGE_MAX_TURNS turns (4). A turn the server could not score
(infra_error) changes nothing.

$KFORGE_FEEDBACK is the text around the feedback, with {feedback} in it
(default "\\n\\nUser: {feedback}\\n\\nAssistant: "): set it to your chat
template's user turn.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kforge_client  # noqa: E402

try:
    from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor
except ImportError:  # OpenRLHF absent: the same interface, standalone
    class AgentInstanceBase:
        def __init__(self, *args, **kwargs):
            pass

    class MultiTurnAgentExecutor:
        def __init__(self, agent_instance_cls):
            self.agent_instance_cls = agent_instance_cls

FEEDBACK = "\n\nUser: {feedback}\n\nAssistant: "


class AgentInstance(AgentInstanceBase):
    def __init__(self, *args, **kwargs):
        self.max_turns = int(os.environ.get("KFORGE_MAX_TURNS") or 4)
        self.template = os.environ.get("KFORGE_FEEDBACK") or FEEDBACK
        self.reward = os.environ.get("KFORGE_REWARD")
        self.last = 0.0
        self.turn = 0

    async def reset(self, states: dict, **kwargs):
        self.last = 0.0
        self.turn = 0
        return {"observation": states["observation"]}

    async def step(self, states: dict, **kwargs):
        self.turn += 1
        a = (await kforge_client.score_async(
            [{"id": f"turn-{self.turn}", "problem_id": states["label"],
              "completion": states["action_text"]}],
            reward=self.reward))[0]
        infra = a["reward"] is None
        now = self.last if infra else float(a["reward"])
        delta, self.last = now - self.last, now
        correct = bool(a.get("correct"))
        done = correct or self.turn >= self.max_turns
        speedup = a.get("speedup")
        return {
            "rewards": torch.tensor(delta),
            "scores": torch.tensor(1.0 if correct else 0.0),
            "environment_feedback": "" if done else self.template.format(
                feedback=a.get("feedback") or a.get("status", "")),
            "done": done,
            "sampling_params": states.get("sampling_params"),
            "extra_logs": {
                "kforge_correct": torch.tensor(1.0 if correct else 0.0),
                "kforge_speedup": torch.tensor(
                    float(speedup) if speedup is not None else 0.0),
                "kforge_infra_error": torch.tensor(1.0 if infra else 0.0),
                "kforge_turns": torch.tensor(float(self.turn)),
            },
        }


class AgentExecutor(MultiTurnAgentExecutor):
    def __init__(self):
        super().__init__(AgentInstance)
