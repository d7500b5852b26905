#!/usr/bin/env bash
# bench/profile_gpu.sh: kforge profile on the GPU machine (docs/profile.md).
# Runs `kforge profile --json` on every trigger kernel of
# tests/data/profile/expected.tsv and on each built-in task's naive and fast
# .cu candidates, and writes a table: kernel, bottleneck class, top advice,
# analysers fired, expected, profile seconds. Needs a GPU, ncu (KFORGE_NCU or
# PATH), and a built kforge (make).
#
#   bash bench/profile_gpu.sh [OUT_DIR]     (default bench/out/profile)
#
# OUT_DIR/profile.md is the table docs/profile.md takes, OUT_DIR/*.json the
# profiles, OUT_DIR/summary.tsv the same rows as tab-separated values.
set -u
cd "$(dirname "$0")/.."
OUT=${1:-bench/out/profile}
KF=${KFORGE:-build/kforge}
mkdir -p "$OUT"
[ -x "$KF" ] || { echo "no $KF: run make first" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is needed for the table" >&2; exit 2; }
if [ -z "${KFORGE_NCU:-}" ] && ! command -v ncu >/dev/null; then
	for f in /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu; do
		[ -x "$f" ] && export KFORGE_NCU=$f
	done
fi
echo "ncu: ${KFORGE_NCU:-$(command -v ncu)}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true

rows=()
while IFS=$'\t' read -r task cand want; do
	case "$task" in ''|'#'*) continue;; esac
	rows+=("$task"$'\t'"$cand"$'\t'"$want")
done < tests/data/profile/expected.tsv
for cand in tasks/*/*/candidates/naive.cu tasks/*/*/candidates/fast.cu; do
	[ -e "$cand" ] || continue
	rows+=("$(dirname "$(dirname "$cand")")"$'\t'"$cand"$'\t'"?")
done

: > "$OUT/summary.tsv"
for row in "${rows[@]}"; do
	IFS=$'\t' read -r task cand want <<< "$row"
	name=$(echo "$cand" | sed 's#/#_#g; s#\.cu$##')
	t0=$(date +%s.%N)
	"$KF" profile "$task" "$cand" --json > "$OUT/$name.json" 2> "$OUT/$name.err"
	rc=$?
	t1=$(date +%s.%N)
	secs=$(python3 -c "print(f'{$t1-$t0:.1f}')")
	printf '%s\t%s\t%s\t%s\t%s\n' "$cand" "$want" "$rc" "$secs" "$OUT/$name.json" >> "$OUT/summary.tsv"
	echo "$cand: exit $rc, ${secs} s"
done

python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
lines = ["| kernel | bottleneck class (candidate) | top advice | analysers fired | expected | profile s |",
         "|---|---|---|---|---|---|"]
hits = misses = false_alarms = 0
for row in open(f"{out}/summary.tsv"):
    cand, want, rc, secs, path = row.rstrip("\n").split("\t")
    try:
        p = json.load(open(path))
    except Exception:
        p = {"error": open(path.replace(".json", ".err")).read().strip()[:200]}
    if "error" in p:
        lines.append(f"| {cand} | error | {p['error'][:120]} | - | {want} | {secs} |")
        continue
    fired = [f["analyser"] for f in p.get("findings", [])]
    fired_u = sorted(set(fired), key=fired.index)
    cls = p["sides"]["candidate"]["class"]
    top = p["findings"][0]["recommend"][:100] + "..." if p.get("findings") else "-"
    if want not in ("?",):
        exp = [] if want == "-" else want.split(",")
        for e in exp:
            if e in fired_u: hits += 1
            else: misses += 1
        false_alarms += len([f for f in fired_u if f not in exp])
    lines.append(f"| {cand} | {cls} | {top} | {', '.join(fired_u) or '-'} | {want} | {secs} |")
lines.append("")
lines.append(f"Trigger kernels: {hits} expected analysers fired, {misses} missed, "
             f"{false_alarms} fired beyond those expected.")
open(f"{out}/profile.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
