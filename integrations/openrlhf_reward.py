"""OpenRLHF: kforge serve as the remote reward model.

Point OpenRLHF at the server's route directly (no Python needed):

    --reward.remote_url http://127.0.0.1:8471/v1/openrlhf
        --data.label_key problem_id

or, where a reward function file is preferred, at this file:

    --reward.remote_url integrations/openrlhf_reward.py
        --data.label_key problem_id

(OpenRLHF's names since 0.10.2, the same in 0.11.2; before 0.10.2:
--remote_rm_url, --label_key.)

reward_func gets OpenRLHF's queries (prompt + response), prompts and labels
(problem ids) and returns {rewards, scores, extra_logs}.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kforge_client  # noqa: E402


def reward_func(queries, prompts, labels, **kwargs):
    out = kforge_client.request(
        "POST", "/v1/openrlhf",
        {"query": list(queries), "prompts": list(prompts),
         "labels": list(labels)})
    try:
        import torch  # OpenRLHF wants tensors; plain lists elsewhere
        out["rewards"] = torch.tensor(out["rewards"])
        out["scores"] = torch.tensor(out["scores"])
        out["extra_logs"] = {k: torch.tensor(v)
                             for k, v in out["extra_logs"].items()}
    except ImportError:
        pass
    return out
