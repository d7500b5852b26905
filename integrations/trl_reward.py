"""TRL: kforge serve as a GRPOTrainer reward function.

    from trl_reward import kforge_reward          # or kforge_reward_async
    GRPOTrainer(..., reward_funcs=[kforge_reward], train_dataset=ds)

The dataset needs a "problem_id" column (TRL passes every column as a
keyword argument, one value per completion). The completions of one prompt
form a group, so a group design can be set with $KFORGE_REWARD.

What TRL's GRPOTrainer does with it (trl/trainer/grpo_trainer.py,
_calculate_rewards, at f2cd57710 on main, version 1.10.0.dev0, lines
1612-1683, and alike in the later release 1.16.0, lines 1579-1660): every
dataset column but prompt/completion/completion_ids is a
keyword argument, one value per completion, beside `trainer_state`,
`log_extra` and `log_metric`; a None reward becomes NaN and is left out of
the group's statistics; a coroutine function is awaited beside the other
reward functions. So: a completion the server could not score (infra) is
None; `kforge_reward_async` scores in a thread while other reward functions
run; the share of correct completions and their mean speedup are logged as
kforge/correct and kforge/speedup (over the timed ones) when `log_metric`
is there, and each completion's verdict as the column kforge_status of the
completions log when `log_extra` is there.

A completion is the last assistant message with text: a message whose
content is None (a tool call) or a list of parts (text parts joined) is
handled, and a completion without text is scored as "" (no code: the
model's failure, its reward the design's lowest).
"""
import asyncio
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kforge_client  # noqa: E402


def _content_text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # parts: [{"type": "text", "text": ...}]
        return "".join(p.get("text") or "" for p in content
                       if isinstance(p, dict) and p.get("type", "text")
                       == "text")
    return ""


def _text(x):
    # conversational datasets: a list of messages; the reply is the last
    # assistant message that has text (tool messages and calls skipped)
    if isinstance(x, list):
        for m in reversed(x):
            if isinstance(m, dict) and m.get("role", "assistant") == \
                    "assistant":
                t = _content_text(m.get("content"))
                if t:
                    return t
        return ""
    return x if isinstance(x, str) else ""


def kforge_reward(prompts, completions, problem_id, **kwargs):
    items = []
    for i, (p, c, pid) in enumerate(zip(prompts, completions, problem_id)):
        items.append({"id": str(i), "problem_id": pid,
                      "completion": _text(c),
                      "group_id": hashlib.sha1(str(p).encode()).hexdigest()})
    answers = kforge_client.score(items,
                                  reward=os.environ.get("KFORGE_REWARD"))
    log_extra = kwargs.get("log_extra")
    if callable(log_extra) and answers:  # columns of TRL's completions log
        log_extra("kforge_status", [a.get("status") for a in answers])
    log_metric = kwargs.get("log_metric")
    if callable(log_metric) and answers:
        correct = [a for a in answers if a.get("correct")]
        log_metric("kforge/correct", len(correct) / len(answers))
        timed = [float(a["speedup"]) for a in correct
                 if isinstance(a.get("speedup"), (int, float))]
        if timed:  # a server that does not time gives none
            log_metric("kforge/speedup", sum(timed) / len(timed))
    # None: the server failed, not the model (TRL leaves it out)
    return [a["reward"] for a in answers]


async def kforge_reward_async(prompts, completions, problem_id, **kwargs):
    """kforge_reward in a worker thread: TRL awaits it beside the other
    reward functions instead of waiting for each in turn."""
    return await asyncio.to_thread(kforge_reward, prompts, completions,
                                   problem_id, **kwargs)
