"""Drives `kforge serve` with OpenEnv's own client (openenv-core's GenericEnvClient,
over the WebSocket /ws) and checks GET /schema against models.py. Run by the test
test_server_openenv_client; prints "SKIP ..." and exits 0 where openenv-core is
not installed.

    python check_client.py http://127.0.0.1:8471 tests/fixtures/scale/candidates/sum.c
"""

import json
import os
import sys
import urllib.request

try:
    from openenv.core.generic_client import GenericEnvClient
except ImportError as e:
    print(f"SKIP openenv-core is not installed ({e})")
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

# kernrl's KernelObservation's own fields (OpenEnv envs/kernrl/models.py:35-62).
KERNRL_FIELDS = ["problem_id", "problem_description", "reference_code", "gpu_info", "turn",
                 "max_turns", "feedback", "compilation_success", "compilation_error",
                 "correctness_pass", "max_diff", "speedup"]

WRONG = """```c
#include <kforge/kernel.h>
int kf_entry(const DLTensor *in, int n_in, DLTensor *out, int n_out, void *stream)
{ (void)n_in; (void)n_out; (void)stream;
  const float *x = in[0].data; float *y = out[0].data;
  for (int64_t i = 0; i < kf_numel(&in[0]); i++) y[i] = 3 * x[i];
  return 0; }
```
"""


def main():
    url, good_path = sys.argv[1], sys.argv[2]
    good = open(good_path).read()
    with urllib.request.urlopen(url + "/schema") as r:
        served = json.load(r)
    assert served == json.loads(json.dumps(models.schemas())), "GET /schema differs from models.py"
    print("schema matches models.py")
    obs_fields = set(served["observation"]["properties"])
    assert obs_fields == set(KERNRL_FIELDS) | {"done", "reward", "metadata"}, sorted(obs_fields)
    from openenv.cli._validation import validate_running_environment

    report = validate_running_environment(url)
    failed = report["summary"]["failed_criteria"]
    print("openenv validate:", "passed" if report["passed"] else f"failed {failed}",
          report["summary"]["passed_count"], "of", report["summary"]["total_count"],
          "criteria, mode", report["mode"])
    assert report["passed"], failed
    with GenericEnvClient(base_url=url).sync() as env:
        r = env.reset(problem_id="scale", max_turns=3)
        print("reset:", "done", r.done, "reward", r.reward, "episode", r.observation["metadata"]["episode_id"])
        assert not r.done and r.reward is None and r.observation["problem_description"]
        assert set(r.observation) == set(KERNRL_FIELDS) | {"metadata"}, sorted(r.observation)
        models.KforgeObservation(**r.observation, reward=r.reward, done=r.done)
        r = env.step({"completion": WRONG})
        print("step (wrong):", "done", r.done, "reward", r.reward, "status", r.observation["metadata"]["status"])
        assert r.observation["metadata"]["status"] == "wrong_answer" and r.reward < 0
        assert r.observation["correctness_pass"] is False and r.observation["compilation_success"] is True
        models.KforgeObservation(**r.observation, reward=r.reward, done=r.done)
        r = env.step(models.KforgeAction(code=good))
        print("step (good):", "done", r.done, "reward", r.reward, "status", r.observation["metadata"]["status"])
        assert r.observation["metadata"]["status"] == "ok" and r.observation["correctness_pass"] is True
        models.KforgeObservation(**r.observation, reward=r.reward, done=r.done)
        st = env.state()
        print("state:", json.dumps(st))
        assert st["step_count"] == 2 and st["turn"] == 2 and isinstance(st["solved"], bool)
        models.KforgeState(**st)
        try:
            env.step({"kernel": good})
            raise AssertionError("a bad action was taken")
        except RuntimeError as e:
            print("bad action:", e)
            assert "VALIDATION_ERROR" in str(e)
    print("OK openenv client")


if __name__ == "__main__":
    main()
