"""Runs the trainer glue of integrations/ against a live `kforge serve`
(its URL the first argument) serving tests/fixtures as its tasks; prints OK.
Run by tests/server_test.c (test_server_integrations)."""
import asyncio
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
os.environ["KFORGE_URL"] = sys.argv[1]

import kforge_client  # noqa: E402
import openrlhf_reward  # noqa: E402
import trl_env  # noqa: E402
import trl_reward  # noqa: E402
import verl_reward  # noqa: E402
import verl_tool  # noqa: E402

GOOD = open(os.path.join(ROOT, "tests/fixtures/scale/candidates/sum.c")).read()
WRONG = GOOD.replace("x[i] + x[i]", "3 * x[i]")
assert WRONG != GOOD
ok_reply = "Here it is:\n```c\n" + GOOD + "```\n"
wrong_reply = "```c\n" + WRONG + "```"


def check_verl():
    # As verl's naive reward manager calls it (naive.py at verl 1dda039,
    # lines 66-84): keyword arguments, the row's extra_info with num_turns
    # and rollout_reward_scores added; a plain function runs in an
    # executor, a coroutine function is awaited.
    def info():
        return {"index": 0, "num_turns": 2, "rollout_reward_scores": {}}
    r = verl_reward.compute_score(
        data_source="kforge", solution_str=ok_reply, ground_truth="scale",
        extra_info=info())
    assert r["correct"] == 1.0 and math.isfinite(r["score"]), r
    r = verl_reward.compute_score(
        data_source="kforge", solution_str="no code", ground_truth="scale",
        extra_info=info())
    assert r["correct"] == 0.0 and r["compiled"] == 0.0, r

    async def one(sol):
        return await verl_reward.compute_score_async(
            data_source="kforge", solution_str=sol, ground_truth="scale",
            extra_info=info())
    good, wrong = asyncio.run(one(ok_reply)), asyncio.run(one(wrong_reply))
    assert good["correct"] == 1.0 and wrong["correct"] == 0.0, (good, wrong)
    assert good["score"] > wrong["score"], (good, wrong)
    assert good["group_members"] == 1.0, good
    # verl's tool route: the kernels are submit_kernel calls' JSON
    # arguments in the rollout's text (a Hermes-style template's
    # <tool_call> blocks, the arguments as an object or a string), with
    # the tool's answers between them and no fenced block: the last call's
    # kernel is the one scored.
    import json as _json

    def call(code, as_string=False):
        args = {"code": code}
        return "<tool_call>\n%s\n</tool_call>" % _json.dumps(
            {"name": "submit_kernel",
             "arguments": _json.dumps(args) if as_string else args})
    tools = ("I will try.\n" + call(WRONG) +
             "\n<tool_response>wrong_answer</tool_response>\n" +
             call(GOOD, as_string=True) +
             "\n<tool_response>ok</tool_response>\nDone.")
    r = verl_reward.compute_score(
        data_source="kforge", solution_str=tools, ground_truth="scale",
        extra_info=info())
    assert r["correct"] == 1.0 and r["compiled"] == 1.0, r
    r = verl_reward.compute_score(
        data_source="kforge", solution_str=call(GOOD) + call(WRONG),
        ground_truth="scale", extra_info=info())
    assert r["correct"] == 0.0 and r["compiled"] == 1.0, r


def check_verl_reward_loop():
    # As verl's reward loop workers call it: one coroutine per rollout,
    # several at once (agent_loop.py 937-999, reward_loop.py 138-143 at
    # verl 1dda039); with KFORGE_GROUP_SIZE the rollouts of one row are one
    # group.
    os.environ["KFORGE_GROUP_SIZE"] = "3"

    async def run():
        sols = [ok_reply, wrong_reply, "no code"]
        return await asyncio.gather(*[
            verl_reward.compute_score_async(
                data_source="kforge", solution_str=s, ground_truth="scale",
                extra_info={"index": 7, "num_turns": None,
                            "rollout_reward_scores": {}})
            for s in sols])
    try:
        rs = asyncio.run(run())
    finally:
        del os.environ["KFORGE_GROUP_SIZE"]
    assert [r["correct"] for r in rs] == [1.0, 0.0, 0.0], rs
    assert [r["group_members"] for r in rs] == [3.0] * 3, rs
    assert rs[0]["score"] > rs[1]["score"], rs


def check_verl_tool():
    # As verl's tool agent loop calls a tool: create with the row's
    # create_kwargs, execute with the call's arguments, release.
    tool = verl_tool.KforgeTool({"type": "native"}, None)
    assert tool.name == "submit_kernel"

    async def call(args):
        iid, _ = await tool.create(create_kwargs={"problem_id": "scale"})
        try:
            return await tool.execute(iid, args, agent_data=None)
        finally:
            await tool.release(iid)
    resp, wrong, m = asyncio.run(call({"code": WRONG}))
    assert "wrong_answer" in resp.text and m["correct"] == 0.0, resp.text
    resp, good, m = asyncio.run(call({"code": GOOD}))
    assert m["correct"] == 1.0 and good > wrong, (good, wrong)
    resp, r, m = asyncio.run(call({}))
    assert "needs code" in resp.text and r == 0.0
    assert not tool._problems
    try:
        asyncio.run(tool.create(create_kwargs={}))
    except ValueError as e:
        assert "problem_id" in str(e)
    else:
        raise AssertionError("a tool without problem_id was created")


def check_trl():
    prompts = ["write y = 2x"] * 2
    rewards = trl_reward.kforge_reward(
        prompts=prompts,
        completions=[[{"role": "assistant", "content": ok_reply}],
                     [{"role": "assistant", "content": wrong_reply}]],
        problem_id=["scale", "scale"], completion_ids=[[1], [2]],
        trainer_state=None)
    assert len(rewards) == 2 and rewards[0] > rewards[1], rewards
    # A model's NUL before its code: taken out by the client, the code
    # after it is scored (the server refuses a body with one).
    seen = {}
    rewards = trl_reward.kforge_reward(
        prompts=prompts[:1],
        completions=[[{"role": "assistant",
                       "content": "\x00\x00junk\x00 " + ok_reply}]],
        problem_id=["scale"], completion_ids=[[1]], trainer_state=None,
        log_extra=lambda k, v: seen.__setitem__(k, v))
    assert seen.get("kforge_status") == ["ok"], (seen, rewards)
    # A tool-call-only last message (content None), a reply in parts and a
    # completion with no text at all: scored, none raises.
    logged, extra = {}, {}
    rewards = asyncio.run(trl_reward.kforge_reward_async(
        prompts=prompts * 2,
        completions=[
            [{"role": "assistant", "content": ok_reply},
             {"role": "assistant", "content": None,
              "tool_calls": [{"type": "function",
                              "function": {"name": "f", "arguments": {}}}]}],
            [{"role": "assistant",
              "content": [{"type": "text", "text": ok_reply}]}],
            [{"role": "assistant", "content": None}],
            [{"role": "tool", "content": "42"}]],
        problem_id=["scale"] * 4, completion_ids=[[1]] * 4,
        trainer_state=None,
        log_metric=lambda k, v: logged.__setitem__(k, v),
        log_extra=lambda k, v: extra.__setitem__(k, v)))
    assert len(rewards) == 4, rewards
    assert rewards[0] > rewards[2] and rewards[1] > rewards[2], rewards
    assert rewards[2] == rewards[3], rewards
    assert logged.get("kforge/correct") == 0.5, logged
    assert logged.get("kforge/speedup", 1) > 0, logged
    assert extra.get("kforge_status") == ["ok", "ok", "compile_error",
                                          "compile_error"], extra


def check_trl_env():
    # As GRPOTrainer uses it: built with no argument, reset with the row's
    # columns, public methods as tools with type hints and Args, then
    # get_reward() once per rollout.
    import inspect
    env = trl_env.KforgeEnv()
    tools = [n for n, m in inspect.getmembers(env, inspect.ismethod)
             if n not in ("reset", "get_reward") and not n.startswith("_")]
    assert tools == ["submit_kernel"], tools
    sig = inspect.signature(env.submit_kernel)
    assert sig.parameters["code"].annotation is str, sig
    assert "Args:" in env.submit_kernel.__doc__
    assert env.reset(prompt=[{"role": "user", "content": "y = 2x"}],
                     problem_id="scale") is None
    nothing = env.get_reward()
    fb = env.submit_kernel(WRONG)
    assert "wrong_answer" in fb, fb
    wrong = env.get_reward()
    fb = env.submit_kernel(GOOD)
    assert "ok" in fb, fb
    good = env.get_reward()
    assert good > wrong >= nothing, (good, wrong, nothing)
    env.reset(problem_id="scale")
    assert env.get_reward() == nothing
    for _ in range(4):
        env.submit_kernel(WRONG)
    assert "No submissions left" in env.submit_kernel(GOOD)
    assert env.get_reward() == wrong
    try:
        env.reset(prompt="p")
    except ValueError as e:
        assert "problem_id" in str(e)
    else:
        raise AssertionError("reset without problem_id was accepted")


def check_openrlhf():
    prompt = "Write y = 2x in C.\n"
    out = openrlhf_reward.reward_func(
        [prompt + ok_reply, prompt + "I cannot."], [prompt, prompt],
        ["scale", "scale"])
    scores = [float(x) for x in out["scores"]]
    assert scores == [1.0, 0.0], out
    assert float(out["rewards"][0]) > float(out["rewards"][1])
    assert set(out["extra_logs"]) >= {"speedup", "correct"}


def check_openrlhf_agent():
    # Driven as MultiTurnAgentExecutor drives it: built with no argument,
    # reset, then step after each generation; the rollout's reward is the
    # sum of the steps' rewards (.item() of each), its score the last's.
    try:
        import openrlhf_agent
    except ImportError as e:  # torch is OpenRLHF's; absent here
        print("check_openrlhf_agent skipped:", e)
        return
    assert issubclass(openrlhf_agent.AgentExecutor,
                      openrlhf_agent.MultiTurnAgentExecutor)
    ex = openrlhf_agent.AgentExecutor()

    async def run(actions):
        inst = ex.agent_instance_cls()
        r = await inst.reset({"observation": "Write y = 2x.", "label": "scale"})
        assert r["observation"] == "Write y = 2x."
        total, steps = 0.0, []
        for act in actions:
            out = await inst.step({"observation_text": "o", "action_text": act,
                                   "label": "scale", "sampling_params": None})
            total += out["rewards"].item()
            steps.append(out)
            if out["done"]:
                break
        return total, steps

    total, steps = asyncio.run(run([wrong_reply, ok_reply, wrong_reply]))
    assert len(steps) == 2 and steps[-1]["done"], steps
    assert not steps[0]["done"] and "wrong_answer" in \
        steps[0]["environment_feedback"], steps[0]
    assert steps[-1]["scores"].item() == 1.0
    alone = kforge_client.score([{"id": "x", "problem_id": "scale",
                                  "completion": ok_reply}])[0]["reward"]
    assert math.isclose(total, alone, abs_tol=1e-9), (total, alone)
    os.environ["KFORGE_MAX_TURNS"] = "2"
    try:
        total, steps = asyncio.run(run([wrong_reply] * 3))
    finally:
        del os.environ["KFORGE_MAX_TURNS"]
    assert len(steps) == 2 and steps[-1]["done"], steps
    assert steps[-1]["scores"].item() == 0.0 and total < 0, total


def check_split_batch():
    # A batch split into requests of 2 items, groups across them: the same
    # rewards and advantages as in one request.
    replies = [ok_reply, wrong_reply, "no code", ok_reply, wrong_reply]
    items = [{"id": f"s{i}", "problem_id": "scale", "completion": r,
              "group_id": "g0" if i < 3 else "g1"}
             for i, r in enumerate(replies)]
    whole = kforge_client.score(items)
    split = kforge_client.score(items, max_items=2)
    assert [a["id"] for a in split] == [a["id"] for a in whole], split
    for a, b in zip(whole, split):
        # the same up to the order of a sum (the group's items joined in
        # the order their requests came)
        assert math.isclose(a["reward"], b["reward"], rel_tol=1e-12,
                            abs_tol=1e-12), (a, b)
        assert math.isclose(a["metrics"]["advantage"],
                            b["metrics"]["advantage"], rel_tol=1e-12,
                            abs_tol=1e-12), (a, b)
        assert b["metrics"]["group_complete"], b
    assert split[0]["metrics"]["group_members"] == 3, split[0]


def check_errors():
    try:
        kforge_client.score([{"id": "x", "problem_id": "no/such",
                              "code": GOOD}])
    except kforge_client.KforgeError as e:
        assert e.status == 404 and "no/such" in e.error["message"]
    else:
        raise AssertionError("an unknown problem was accepted")


for check in (check_verl, check_verl_reward_loop, check_verl_tool,
              check_trl, check_trl_env, check_openrlhf, check_openrlhf_agent,
              check_split_batch, check_errors):
    check()
    print(check.__name__, "passed")
print("OK")
