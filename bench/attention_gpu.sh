#!/bin/bash
# The attention family on a GPU (docs/attention.md): for each variant,
# kforge attention gen writes the CUDA candidate from its spec
# (tasks/attention/specs/), kforge eval checks and times it against the
# task's reference on the cuda backend, and bench/attention_torch.py times
# torch's SDPA and flex_attention on the same shapes and dtype. Prints one
# row per variant: kforge's status, the candidate's median ms, SDPA's and
# flex_attention's ms, and their ratios to the candidate's time (above 1:
# the candidate is faster). Run from the kforge tree after make, on a
# machine with nvcc and a CUDA build of torch (2.5 or later for
# flex_attention). Extra arguments go to kforge eval. Results land in
# $OUT (default a fresh /tmp/kforge-attn-XXXXXX).
set -u
OUT=${OUT:-$(mktemp -d /tmp/kforge-attn-XXXXXX)}
PY=${PYTHON:-python3}
VARIANTS=${VARIANTS:-"causal sliding_window gqa alibi softcap prefix_lm varlen paged_decode"}
mkdir -p "$OUT"
printf '%-15s %-14s %10s %10s %10s %9s %9s  %s\n' variant kforge ms sdpa_ms \
	flex_ms sdpa/ms flex/ms note
for v in $VARIANTS; do
	spec=tasks/attention/specs/$v.json
	cand=$OUT/$v.cu
	if ! build/kforge attention gen "$spec" -o "$cand" 2>"$OUT/$v.gen.err"; then
		printf '%-15s %-14s %s\n' "$v" gen_failed "$(head -c 200 "$OUT/$v.gen.err")"
		continue
	fi
	build/kforge eval tasks/attention/$v "$cand" --backend cuda \
		--time-cap 1 --json "$@" >"$OUT/$v.json" 2>"$OUT/$v.err"
	"$PY" bench/attention_torch.py tasks/attention/$v "$v" \
		>"$OUT/$v.torch.json" 2>"$OUT/$v.torch.err" ||
		echo '{}' >"$OUT/$v.torch.json"
	"$PY" - "$v" "$OUT/$v.json" "$OUT/$v.torch.json" <<'PYEOF'
import json, sys
v, kf, tj = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    r = json.load(open(kf))
except Exception:
    r = {"status": "no_result"}
try:
    t = json.loads(open(tj).read().strip().splitlines()[-1])
except Exception:
    t = {}
ms = ((r.get("timing") or {}).get("candidate") or {}).get("median")
def f(x):
    return "-" if x is None else "%.3f" % x
def ratio(a):
    return "-" if a is None or not ms else "%.2f" % (a / ms)
note = t.get("sdpa_note", "") or ""
if r.get("status") != "ok" and r.get("reason"):
    note = (r.get("reason") or "")[:80]
print("%-15s %-14s %10s %10s %10s %9s %9s  %s" % (
    v, r.get("status", "?"), f(ms), f(t.get("sdpa_ms")), f(t.get("flex_ms")),
    ratio(t.get("sdpa_ms")), ratio(t.get("flex_ms")), note))
PYEOF
done
echo "results: $OUT"
