"""verl: kforge serve as a tool (kernel trials as tool calls).

tool_config.yaml:

    tools:
      - class_name: verl_tool.KforgeTool        # on PYTHONPATH
        config: {type: native}

The row's extra_info carries the problem:

    "tools_kwargs": {"submit_kernel": {"create_kwargs": {"problem_id": ID}}}

verl's tool loop runs a row only when the row has "agent_name":
"tool_agent" (a column beside data_source), or with
actor_rollout_ref.rollout.agent.default_agent_loop=tool_agent: the default
agent loop is single_turn_agent, which calls no tool
(verl/trainer/config/rollout/rollout.yaml line 245, applied to rows
without agent_name at verl/experimental/agent_loop/agent_loop.py 580-582).

What verl does with a tool (verl-project/verl at 1dda039,
verl/experimental/agent_loop/tool_agent_loop.py, _call_tool, lines
431-497): for each tool call it runs
`create(create_kwargs=tools_kwargs[name]["create_kwargs"])` (474), then
`execute(instance_id, arguments, agent_data=...)`, which returns
(ToolResponse, reward, metrics) (475-477), then `release(instance_id)`
(482-484); an exception becomes the tool's text. The reward lands in
`tool_rewards` only (line 364, kept in the rollout's extra_fields at 204):
the training reward is the reward function's (verl_reward, which scores the
last submit_kernel call's kernel where the rollout wrote no fenced block),
so the tool's answer is kforge's feedback, for the model to act on. The loop stops after
multi_turn.max_assistant_turns assistant turns (280).
"""
import os
import sys
from uuid import uuid4

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kforge_client  # noqa: E402

SCHEMA = {
    "type": "function",
    "function": {
        "name": "submit_kernel",
        "description": "Compile, check and time a kernel for this problem "
                       "with kforge; returns its verdict and times.",
        "parameters": {
            "type": "object",
            "properties": {
                "code": {"type": "string",
                         "description": "the complete kernel source: C or "
                                        "CUDA defining kf_entry, or Python "
                                        "defining ModelNew"}},
            "required": ["code"],
        },
    },
}

try:
    from verl.tools.base_tool import BaseTool
    from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse
except ImportError:  # verl absent: the same interface, standalone
    OpenAIFunctionToolSchema = None

    class ToolResponse:
        def __init__(self, text=None, image=None, video=None):
            self.text, self.image, self.video = text, image, video

    class BaseTool:
        def __init__(self, config, tool_schema):
            self.config = config
            self.tool_schema = tool_schema or self.get_openai_tool_schema()
            self.name = SCHEMA["function"]["name"]


class KforgeTool(BaseTool):
    def __init__(self, config=None, tool_schema=None):
        config = config or {}
        self._url = config.get("url")
        self._reward = config.get("reward") or os.environ.get("KFORGE_REWARD")
        self._problems = {}  # instance id -> problem id
        super().__init__(config, tool_schema)

    def get_openai_tool_schema(self):
        if OpenAIFunctionToolSchema is not None:
            return OpenAIFunctionToolSchema.model_validate(SCHEMA)
        return SCHEMA

    async def create(self, instance_id=None, create_kwargs=None, **kwargs):
        problem = (create_kwargs or {}).get("problem_id") or \
            kwargs.get("problem_id")
        if not problem:
            raise ValueError("submit_kernel: no problem_id in the row's "
                             "tools_kwargs.submit_kernel.create_kwargs")
        instance_id = instance_id or str(uuid4())
        self._problems[instance_id] = str(problem)
        return instance_id, ToolResponse()

    async def execute(self, instance_id, parameters, **kwargs):
        code = (parameters or {}).get("code")
        if not isinstance(code, str) or not code.strip():
            return ToolResponse(text="submit_kernel needs code: the "
                                     "kernel's source as a string."), 0.0, {}
        a = (await kforge_client.score_async(
            [{"id": instance_id, "problem_id": self._problems[instance_id],
              "code": code}], reward=self._reward, url=self._url))[0]
        reward = kforge_client.as_float(a["reward"])
        metrics = {"correct": float(bool(a.get("correct"))),
                   "compiled": float(bool(a.get("compiled"))),
                   "speedup": float(a.get("speedup") or 0.0),
                   "infra_error": float(a["reward"] is None)}
        return ToolResponse(text=a.get("feedback") or a.get("status")), \
            reward, metrics

    async def calc_reward(self, instance_id, **kwargs):
        return 0.0

    async def release(self, instance_id, **kwargs):
        self._problems.pop(instance_id, None)
