"""verl: kforge serve as a custom reward function.

    reward.custom_reward_function.path=integrations/verl_reward.py
    reward.custom_reward_function.name=compute_score_async   # or compute_score
    reward.reward_manager.name=naive                          # verl's default

These are current verl's keys (verl-project/verl at 1dda039,
verl/trainer/config/_generated_ppo_trainer.yaml lines 780-793). The older
top-level custom_reward_function.* and reward_model.reward_manager are
still in the config (lines 737-742), so main_ppo takes them without a word,
but no longer moves them under reward.* (only
verl/experimental/fully_async_policy/fully_async_main.py line 237 calls
migrate_legacy_reward_impl): with them this file is never loaded
and verl's default_compute_score raises NotImplementedError for the
data_source "kforge" (verl/utils/reward_score/__init__.py line 107).

The dataset's reward_model.ground_truth holds the problem id (e.g.
"reduction/row_sum"). A dict is returned: verl takes "score" as the reward
and logs the other keys.

verl scores one rollout per call: without a reward model the agent loop
sends each finished rollout to a reward loop worker
(verl/experimental/agent_loop/agent_loop.py lines 937-999); with one,
verl/experimental/reward_loop/reward_loop.py makes one task per rollout
(lines 138-143) after splitting the batch over the workers (343-356). The
naive manager (verl/experimental/reward_loop/reward_manager/naive.py)
awaits a coroutine compute_score (lines 30, 66-73) and otherwise runs it in
the loop's default executor (75-84), with keyword arguments and the row's
extra_info (line 44); the rollout's uid is not in extra_info. So
`compute_score_async` is the entry point; with $KFORGE_GROUP_SIZE set to
actor_rollout_ref.rollout.n, the rollouts of one row (the same
extra_info["index"]) form a group across their calls, and group designs
($KFORGE_REWARD=cuda_l1 or leap_rank) work per call. Leave it unset for
validation with another n (a group that never completes waits the
server's --group-wait). verl's trainer no longer has a batch reward
manager: reward.reward_manager.name is looked up in the reward loop's
registry (naive, dapo, gdpo, rate_limited, remote;
verl/trainer/ppo/reward.py lines 89-95), where "batch" raises "Unknown
reward manager: batch" (verl/experimental/reward_loop/reward_manager/
registry.py line 52).
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kforge_client  # noqa: E402


def _result(a):
    return {"score": kforge_client.as_float(a["reward"]),
            "correct": float(a["correct"]), "compiled": float(a["compiled"]),
            "speedup": float(a["speedup"] or 0.0),
            "infra_error": float(a["reward"] is None),
            "group_members": float(a["metrics"].get("group_members") or 1)}


def _submitted(text):
    """The code of the last submit_kernel tool call written in a rollout's
    text, or None. Chat templates write a tool call as a JSON object,
    {"name": "submit_kernel", "arguments": {"code": ...}} (the arguments
    also as a JSON string); the object starts at one of the few braces
    before its name."""
    dec = json.JSONDecoder()
    k = text.rfind('"submit_kernel"')
    while k >= 0:
        j = text.rfind("{", 0, k)
        for _ in range(4):
            if j < 0:
                break
            try:
                obj, _ = dec.raw_decode(text, j)
            except ValueError:
                obj = None
            if isinstance(obj, dict) and obj.get("name") == "submit_kernel":
                args = obj.get("arguments")
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except ValueError:
                        args = None
                if isinstance(args, dict) and isinstance(args.get("code"),
                                                         str):
                    return args["code"]
            j = text.rfind("{", 0, j)
        k = text.rfind('"submit_kernel"', 0, k)
    return None


def _completion(solution_str):
    """What kforge scores for a rollout: its text, or, where the text holds
    no fenced block, the last kernel it submitted through verl_tool's
    submit_kernel, fenced. On verl's tool route the kernel is a tool
    call's JSON argument, not a fenced block, and the rollout would
    otherwise get the no-code reward whatever its trials showed."""
    text = solution_str or ""
    if "```" in text:
        return text
    code = _submitted(text)
    if code is None:
        return text
    longest = max((len(m) for m in re.findall("`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return "%s\n%s\n%s\n" % (fence, code, fence)


def _item(solution_str, ground_truth, extra_info):
    item = {"id": "0", "problem_id": ground_truth,
            "completion": _completion(solution_str)}
    size = int(os.environ.get("KFORGE_GROUP_SIZE") or 0)
    index = (extra_info or {}).get("index")
    if size > 1 and index is not None:
        item["group_id"] = f"verl-index-{index}"
        item["group_size"] = size
    return item


def compute_score(data_source, solution_str, ground_truth, extra_info=None,
                  **kwargs):
    """One rollout (verl's naive reward manager)."""
    return _result(kforge_client.score(
        [_item(solution_str, ground_truth, extra_info)],
        reward=os.environ.get("KFORGE_REWARD"))[0])


async def compute_score_async(data_source, solution_str, ground_truth,
                              extra_info=None, **kwargs):
    """One rollout, as a coroutine (verl's reward loop awaits it)."""
    answers = await kforge_client.score_async(
        [_item(solution_str, ground_truth, extra_info)],
        reward=os.environ.get("KFORGE_REWARD"))
    return _result(answers[0])

