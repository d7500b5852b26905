"""verl: kforge serve as a custom reward function.

    custom_reward_function.path=integrations/verl_reward.py
    custom_reward_function.name=compute_score          # or compute_score_batch
    reward_model.reward_manager=naive                  # batch for the other

The dataset's reward_model.ground_truth holds the problem id (e.g.
"reduction/row_sum"). A dict is returned: verl takes "score" as the reward
and logs the other keys.

verl's reward loop (verl at b178a3c) scores one rollout per call:
verl/experimental/reward_loop/reward_loop.py lines 104-109 make one task
per rollout and gather them, the batch split over the reward loop workers
(lines 286-290); the naive manager
(verl/experimental/reward_loop/reward_manager/naive.py) awaits a coroutine
compute_score (lines 30, 66-73) and otherwise runs it in the loop's
default executor (75-84); it passes the row's extra_info (line 44), not
the rollout's uid. So `compute_score_async` is the entry point there; with
$KFORGE_GROUP_SIZE set to actor_rollout_ref.rollout.n, the rollouts of one
row (the same extra_info["index"]) form a group across their calls, and
group designs ($KFORGE_REWARD=cuda_l1 or leap_rank) work per call. Leave it
unset for validation with another n (a group that never completes waits
the server's --group-wait).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kforge_client  # noqa: E402


def _result(a):
    return {"score": kforge_client.as_float(a["reward"]),
            "correct": float(a["correct"]), "compiled": float(a["compiled"]),
            "speedup": float(a["speedup"] or 0.0),
            "infra_error": float(a["reward"] is None),
            "group_members": float(a["metrics"].get("group_members") or 1)}


def _item(solution_str, ground_truth, extra_info):
    item = {"id": "0", "problem_id": ground_truth, "completion": solution_str}
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


def compute_score_batch(data_sources, solution_strs, ground_truths,
                        extra_infos=None, **kwargs):
    """A whole batch in one request (verl's batch reward manager); rollouts
    of one prompt (extra_info["uid"] or "index") form a group, so group
    designs such as cuda_l1 work: set $KFORGE_REWARD to the design name."""
    items = []
    for i, (sol, gt) in enumerate(zip(solution_strs, ground_truths)):
        item = {"id": str(i), "problem_id": gt, "completion": sol}
        info = (extra_infos or [None] * len(solution_strs))[i] or {}
        group = info.get("uid", info.get("index"))
        if group is not None:
            item["group_id"] = str(group)
        items.append(item)
    answers = kforge_client.score(items, reward=os.environ.get("KFORGE_REWARD"))
    return [_result(a) for a in answers]
