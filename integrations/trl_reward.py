"""TRL: kforge serve as a GRPOTrainer reward function.

    from trl_reward import kforge_reward
    GRPOTrainer(..., reward_funcs=[kforge_reward], train_dataset=ds)

The dataset needs a "problem_id" column (TRL passes every column as a
keyword argument, one value per completion). The completions of one prompt
form a group, so a group design can be set with $KFORGE_REWARD.
"""
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kforge_client  # noqa: E402


def _text(x):
    # conversational datasets: a list of messages; the last is the reply
    if isinstance(x, list):
        return x[-1]["content"] if x else ""
    return x


def kforge_reward(prompts, completions, problem_id, **kwargs):
    items = []
    for i, (p, c, pid) in enumerate(zip(prompts, completions, problem_id)):
        items.append({"id": str(i), "problem_id": pid,
                      "completion": _text(c),
                      "group_id": hashlib.sha1(str(p).encode()).hexdigest()})
    answers = kforge_client.score(items,
                                  reward=os.environ.get("KFORGE_REWARD"))
    # None: the server failed, not the model (TRL leaves it out)
    return [a["reward"] for a in answers]
