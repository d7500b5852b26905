"""verl: kforge serve as a custom reward function.

    custom_reward_function.path=integrations/verl_reward.py
    custom_reward_function.name=compute_score          # or compute_score_batch
    reward_model.reward_manager=naive                  # batch for the other

The dataset's reward_model.ground_truth holds the problem id (e.g.
"reduction/row_sum"). A dict is returned: verl takes "score" as the reward
and logs the other keys.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kforge_client  # noqa: E402


def _result(a):
    return {"score": kforge_client.as_float(a["reward"]),
            "correct": float(a["correct"]), "compiled": float(a["compiled"]),
            "speedup": float(a["speedup"] or 0.0),
            "infra_error": float(a["reward"] is None)}


def compute_score(data_source, solution_str, ground_truth, extra_info=None,
                  **kwargs):
    """One rollout (verl's naive reward manager)."""
    item = {"id": "0", "problem_id": ground_truth, "completion": solution_str}
    return _result(kforge_client.score([item])[0])


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
