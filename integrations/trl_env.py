"""TRL: kforge serve as a GRPOTrainer environment (environment_factory).

    from trl_env import KforgeEnv
    GRPOTrainer(..., environment_factory=KforgeEnv, train_dataset=ds)

The dataset needs a "problem_id" column. What TRL's GRPOTrainer does with
the class (trl/trainer/grpo_trainer.py at f2cd57710, 2026-07-24, main at
1.10.0.dev0; the lines of the later release 1.16.0 in brackets): it calls
the factory with no argument and keeps the instances in a pool, one per
rollout, reusing them ("construct once, reset often", lines 626-657
[671-704; more are made when a batch needs them, 2343-2360]); before each
generation it calls `reset(**example)` with the dataset row's columns as
keyword arguments, and a string it returns is appended to the last user
message (lines 2320-2333 [2385-2398]); every public method other than
`reset` and `get_reward` is a tool the model may call (line 2307
[2364-2375]), its schema read from the type hints and the docstring's
Args; `get_reward()` is called once per finished rollout and added as a
reward source of weight 1 (lines 660-684 [706-730]); None there is left
out of the group's statistics.

The tool is `submit_kernel(code)`: kforge compiles, checks and times the
code against the row's problem and the feedback (status, reason, times)
is the tool's answer, so the model can submit again. The rollout's reward
is that of its last submission (the kernel it ended with); a rollout that
never submitted gets the design's reward for a reply without code (the
model's failure, not None). After `max_submissions` (default 4,
$KFORGE_MAX_SUBMISSIONS) the tool answers without scoring. A submission
the server could not score (infra_error) has reward None.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kforge_client  # noqa: E402


class KforgeEnv:
    """One rollout's kernel: submit_kernel as the tool, kforge's reward."""

    def __init__(self, url=None, reward=None, max_submissions=None):
        self._url = url
        self._reward = reward or os.environ.get("KFORGE_REWARD")
        self._max = int(max_submissions or
                        os.environ.get("KFORGE_MAX_SUBMISSIONS") or 4)
        self._problem = None
        self._answers = []
        self._seq = 0

    def reset(self, problem_id=None, **kwargs):
        if not problem_id:
            raise ValueError("KforgeEnv.reset: the example has no "
                             "problem_id (the dataset needs a problem_id "
                             "column naming a kforge problem)")
        self._problem = str(problem_id)
        self._answers = []
        return None

    def _score(self, item):
        self._seq += 1
        item = dict(item, id=f"env-{id(self)}-{self._seq}",
                    problem_id=self._problem)
        return kforge_client.score([item], reward=self._reward,
                                   url=self._url)[0]

    def submit_kernel(self, code: str) -> str:
        """
        Compile, check and time a kernel for this problem with kforge.

        Args:
            code: The complete source of the kernel: C or CUDA defining
                kf_entry, or for a KernelBench problem Python defining
                ModelNew.

        Returns:
            kforge's verdict on it: status, reason, and times where it ran.
        """
        if self._problem is None:
            return "No problem: the environment was not reset."
        if len(self._answers) >= self._max:
            return (f"No submissions left ({self._max} made); the last "
                    "one stands.")
        a = self._score({"code": code})
        self._answers.append(a)
        return a.get("feedback") or a.get("status", "")

    def get_reward(self):
        if self._problem is None:
            return None
        if not self._answers:
            return self._score({"completion": ""}).get("reward")
        return self._answers[-1].get("reward")
