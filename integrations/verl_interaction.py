"""verl: kforge serve as a multi-turn Interaction (an episode per rollout).

interaction_config.yaml:

    interaction:
      - name: kforge
        class_name: verl_interaction.KforgeInteraction   # on PYTHONPATH
        config: {url: "http://127.0.0.1:8471", max_turns: 4}

The sample's interaction_kwargs give problem_id. Each assistant turn is
scored; the feedback is the next user message; the turn's reward is the
step's reward; calculate_score gives the first-turn-anchored trajectory
reward.

What verl really calls (verl at b178a3c,
verl/experimental/agent_loop/tool_agent_loop.py): start_interaction
(line 160) and generate_response after each assistant turn (386), whose
reward goes to turn_scores only (395, 208); calculate_score and
finalize_interaction are never called, and once max_assistant_turns
assistant turns are done the loop ends before the interaction sees the
last one (256-257). The training reward is the reward function's, on the
whole response: use verl_reward.compute_score_async, which scores the last
kernel of it. So the server's episode is ended here as soon as verl will
ask nothing more: when a step is done, or, with max_assistant_turns in the
config (set it to verl's), after the turn before the last; and
finalize_interaction ends it too, for callers that do call it.
"""
import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kforge_client  # noqa: E402

try:
    from verl.interactions.base import BaseInteraction
except ImportError:  # verl absent: the same interface, standalone
    class BaseInteraction:
        def __init__(self, config):
            self.config = config
            self.name = config.get("name", "kforge")


class KforgeInteraction(BaseInteraction):
    def __init__(self, config):
        super().__init__(config)
        self.url = config.get("url")
        self.max_turns = config.get("max_turns")
        self.reward = config.get("reward")
        # verl's multi_turn.max_assistant_turns, when given
        self.max_assistant_turns = config.get("max_assistant_turns")
        self._episodes = {}  # instance_id -> [episode id, last answer, open]

    def _call(self, method, path, body=None):
        return asyncio.to_thread(kforge_client.request, method, path, body,
                                 self.url)

    async def start_interaction(self, instance_id=None, problem_id=None,
                                **kwargs):
        body = {"problem_id": problem_id or kwargs["ground_truth"]}
        if self.max_turns:
            body["max_turns"] = self.max_turns
        if self.reward:
            body["reward"] = self.reward
        ep = await self._call("POST", "/v1/episodes", body)
        instance_id = instance_id or ep["episode_id"]
        self._episodes[instance_id] = [ep["episode_id"], ep, True]
        return instance_id

    async def _end(self, ep):
        if not ep[2]:
            return
        ep[2] = False
        try:
            await self._call("DELETE", f"/v1/episodes/{ep[0]}")
        except kforge_client.KforgeError as e:
            if e.status != 404:  # expired already: nothing to end
                raise
        # verl never finalizes: keep the last 65536 rollouts' answers for
        # calculate_score, forget older ended ones
        while len(self._episodes) > 65536:
            old = next((k for k, v in self._episodes.items() if not v[2]),
                       None)
            if old is None:
                break
            del self._episodes[old]

    async def generate_response(self, instance_id, messages, **kwargs):
        reply = next((m["content"] for m in reversed(messages)
                      if m.get("role") == "assistant"), "")
        ep = self._episodes[instance_id]
        step = await self._call("POST", f"/v1/episodes/{ep[0]}/step",
                                {"completion": reply})
        ep[1] = step
        last = (self.max_assistant_turns and
                step["turn"] >= self.max_assistant_turns - 1)
        if step["done"] or last:
            await self._end(ep)
        return (step["done"], step["observation"],
                kforge_client.as_float(step["reward"]),
                {"status": step["item"]["status"],
                 "speedup": step["item"]["speedup"]})

    async def calculate_score(self, instance_id=None, **kwargs):
        last = self._episodes[instance_id][1]
        return kforge_client.as_float(last.get("trajectory_reward"))

    async def finalize_interaction(self, instance_id=None, **kwargs):
        ep = self._episodes.pop(instance_id, None)
        if ep:
            await self._end(ep)
