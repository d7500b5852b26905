#!/bin/sh
# kernelbench_gpu.sh: evaluates the KernelBench-format tasks of
# tests/data/kernelbench on a CUDA device through the PyTorch bridge and
# prints one line per evaluation. Usage: bench/kernelbench_gpu.sh [BUILD]
B=${1:-build}
K=$B/kforge
D=tests/data/kernelbench
C=$D/candidates
OUTDIR=${OUT:-/tmp/kforge-kb-gpu}
mkdir -p "$OUTDIR"
export KFORGE_CACHE=${KFORGE_CACHE:-$OUTDIR/cache}
n=0
run() { # TASK CANDIDATE ARGS...
	task=$1; cand=$2; shift 2
	n=$((n + 1))
	case $cand in *.*) file=$C/$task/$cand ;; *) file=$C/$task/$cand.py ;; esac
	"$K" eval "$D/level1/$task.py" "$file" --backend cuda \
		--seed 1 --json "$@" > "$OUTDIR/$n.json" 2> "$OUTDIR/$n.err"
	python3 - "$OUTDIR/$n.json" "$task/$cand" "$*" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("%-32s %-28s no result (%s)" % (sys.argv[2], sys.argv[3], e))
    sys.exit(0)
c = r.get("compile", {}).get("candidate", {})
line = "%-32s %-28s %-14s %-15s compile %7.2f s" % (
    sys.argv[2], sys.argv[3], r["status"], r.get("check", "-"),
    c.get("seconds", 0))
for key in ("timing", "timing_kernelbench"):
    t = r.get(key)
    if not t:
        continue
    if t["protocol"] == "kforge":
        line += "  kforge: ref %.4f ms cand %.4f ms x%.3f" % (
            t["reference"]["median"], t["candidate"]["median"],
            t["speedup"]["median"])
    else:
        line += "  kernelbench: ref %.4f ms cand %.4f ms x%.3f" % (
            t["reference"]["mean"], t["candidate"]["mean"], t["speedup"])
if r.get("degenerate", {}).get("flag"):
    line += "  degenerate"
print(line)
if r["status"] != "ok":
    print("    reason:", (r.get("reason") or "")[:300])
PY
}
run 1_ReLU correct --time-cap 2 --protocol both
run 1_ReLU cuda_inline --time-cap 2 --protocol both
run 1_ReLU kernel.cu --time-cap 2 --protocol both
run 1_ReLU side_stream --no-timing
run 1_ReLU side_stream --protocol kernelbench
run 1_ReLU cached --no-timing
run 1_ReLU patch_reference --no-timing
run 1_ReLU slow_reference --time-cap 2
run 1_ReLU forge_clock --time-cap 2
run 1_ReLU busy_later --time-cap 2
run 1_ReLU mutate --no-timing
run 2_Matmul correct --time-cap 2 --protocol both
run 2_Matmul tf32 --no-timing
run 3_Sum_reduction cudnn_benchmark --no-timing
run 3_Sum_reduction correct --time-cap 2 --protocol both
run 4_Constant_relu zeros --no-timing
