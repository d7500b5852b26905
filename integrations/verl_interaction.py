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
        self._episodes = {}  # instance_id -> (episode id, last answer)

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
        self._episodes[instance_id] = [ep["episode_id"], ep]
        return instance_id

    async def generate_response(self, instance_id, messages, **kwargs):
        reply = next((m["content"] for m in reversed(messages)
                      if m.get("role") == "assistant"), "")
        ep = self._episodes[instance_id]
        step = await self._call("POST", f"/v1/episodes/{ep[0]}/step",
                                {"completion": reply})
        ep[1] = step
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
            try:
                await self._call("DELETE", f"/v1/episodes/{ep[0]}")
            except kforge_client.KforgeError:
                pass  # expired already
