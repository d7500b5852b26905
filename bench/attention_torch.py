"""Times torch's SDPA and flex_attention on an attention task's cuda shapes.

bench/attention_gpu.sh runs it once per variant:
    python3 bench/attention_torch.py TASK_DIR VARIANT
and reads one JSON line: {"sdpa_ms": .., "flex_ms": .., "sdpa_note": ..}.
The shapes and dtypes are those of the task's cuda_dims (task.json), the
semantics those of its reference (docs/attention.md); a value is null where
torch has no way to run the variant (SDPA has no soft-capping). Times are
medians of CUDA-event timed calls after warm-up.
"""
import json
import math
import sys

import torch
import torch.nn.functional as F

try:
    from torch.nn.attention.flex_attention import (create_block_mask,
                                                   flex_attention)
    FLEX = torch.compile(flex_attention, dynamic=False)
except Exception:  # torch without flex_attention
    FLEX = None


def timed(fn, reps=30, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


def main():
    tdir, variant = sys.argv[1], sys.argv[2]
    spec = json.load(open(tdir + "/task.json"))
    dims = spec["cuda_dims"]
    dt = {"float16": torch.float16,
          "bfloat16": torch.bfloat16}[spec["inputs"][0]["dtype"]]
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(0)

    def rnd(*shape):
        return torch.randn(*shape, device=dev, dtype=dt, generator=g)

    out = {"sdpa_ms": None, "flex_ms": None, "sdpa_note": ""}
    sdpa = flex = None
    if variant in ("causal", "sliding_window", "gqa", "alibi", "softcap",
                   "prefix_lm"):
        B, S = dims["B"], dims["S"]
        if variant == "gqa":
            HKV = dims["HKV"]
            H = 4 * HKV
        else:
            H = HKV = dims["H"]
        D = spec["inputs"][0]["shape"][3]
        q, k, v = rnd(B, H, S, D), rnd(B, HKV, S, D), rnd(B, HKV, S, D)
        i = torch.arange(S, device=dev)
        W, P, CAP = 256, 256, 30.0

        def causal(b, h, qi, ki):
            return ki <= qi

        def window(b, h, qi, ki):
            return (ki <= qi) & (qi - ki < W)

        def prefix(b, h, qi, ki):
            return (ki < P) | (ki <= qi)

        def alibi(score, b, h, qi, ki):
            return score - torch.exp2(-8.0 * (h + 1) / H) * (qi - ki)

        def softcap(score, b, h, qi, ki):
            return CAP * torch.tanh(score / CAP)

        mask_mod = {"causal": causal, "sliding_window": window,
                    "gqa": causal, "alibi": causal, "softcap": None,
                    "prefix_lm": prefix}[variant]
        score_mod = {"alibi": alibi, "softcap": softcap}.get(variant)
        if variant in ("causal", "gqa"):
            sdpa = lambda: F.scaled_dot_product_attention(
                q, k, v, is_causal=True, enable_gqa=(variant == "gqa"))
        elif variant in ("sliding_window", "prefix_lm"):
            keep = window(0, 0, i[:, None], i[None, :]) \
                if variant == "sliding_window" \
                else prefix(0, 0, i[:, None], i[None, :])
            sdpa = lambda: F.scaled_dot_product_attention(q, k, v,
                                                          attn_mask=keep)
            out["sdpa_note"] = "boolean mask"
        elif variant == "alibi":
            h = torch.arange(H, device=dev, dtype=torch.float32)
            bias = -torch.exp2(-8.0 * (h + 1) / H)[:, None, None] * \
                (i[:, None] - i[None, :]).float()
            bias = bias.masked_fill(i[None, :] > i[:, None],
                                    float("-inf")).to(dt)
            sdpa = lambda: F.scaled_dot_product_attention(q, k, v,
                                                          attn_mask=bias)
            out["sdpa_note"] = "additive bias"
        else:
            out["sdpa_note"] = "no soft-capping in SDPA"
        if FLEX:
            bm = create_block_mask(mask_mod, None, None, S, S, device=dev) \
                if mask_mod else None
            flex = lambda: FLEX(q, k, v, score_mod=score_mod, block_mask=bm,
                                enable_gqa=(variant == "gqa"))
    elif variant == "varlen":
        NB, H, S = dims["NB"], dims["H"], dims["S"]
        D = spec["inputs"][0]["shape"][2]
        lens = torch.randint(1, S + 1, (NB,), generator=torch.Generator()
                             .manual_seed(0)).tolist()
        T = sum(lens)
        q, k, v = rnd(1, H, T, D), rnd(1, H, T, D), rnd(1, H, T, D)
        starts = [sum(lens[:j]) for j in range(NB)]

        def loop():
            for s0, n in zip(starts, lens):
                F.scaled_dot_product_attention(
                    q[:, :, s0:s0 + n], k[:, :, s0:s0 + n],
                    v[:, :, s0:s0 + n], is_causal=True)
        sdpa = loop
        out["sdpa_note"] = "one call per sequence"
        if FLEX:
            doc = torch.repeat_interleave(
                torch.arange(NB, device=dev),
                torch.tensor(lens, device=dev))

            def same_doc_causal(b, h, qi, ki):
                return (doc[qi] == doc[ki]) & (ki <= qi)
            bm = create_block_mask(same_doc_causal, None, None, T, T,
                                   device=dev)
            flex = lambda: FLEX(q, k, v, block_mask=bm)
    elif variant == "paged_decode":
        B, HKV, NBLK, MAXB = dims["B"], dims["HKV"], dims["NBLK"], \
            dims["MAXB"]
        H, D, BS = 4 * HKV, 128, 16
        q = rnd(B, H, 1, D)
        kc, vc = rnd(NBLK, BS, HKV, D), rnd(NBLK, BS, HKV, D)
        bt = torch.randint(0, NBLK, (B, MAXB), device=dev, generator=g)
        ctx = torch.randint(1, BS * MAXB + 1, (B,), device=dev, generator=g)
        L = MAXB * BS
        pos = torch.arange(L, device=dev)
        valid = pos[None, :] < ctx[:, None]  # [B, L]

        def gather(c):  # [B, HKV, L, D]
            return c[bt].reshape(B, L, HKV, D).transpose(1, 2)

        def run_sdpa():
            return F.scaled_dot_product_attention(
                q, gather(kc), gather(vc), attn_mask=valid[:, None, None, :],
                enable_gqa=True)
        sdpa = run_sdpa
        out["sdpa_note"] = "cache gathered, padding masked"
        if FLEX:
            def in_ctx(b, h, qi, ki):
                return ki < ctx[b]
            bm = create_block_mask(in_ctx, B, None, 1, L, device=dev)
            flex = lambda: FLEX(q, gather(kc), gather(vc), block_mask=bm,
                                enable_gqa=True)
    else:
        raise SystemExit("unknown variant " + variant)
    with torch.no_grad():
        if sdpa:
            out["sdpa_ms"] = timed(sdpa)
        if flex:
            try:
                out["flex_ms"] = timed(flex)
            except Exception as e:  # a shape flex cannot compile
                out["flex_note"] = str(e).splitlines()[0][:120]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
