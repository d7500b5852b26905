#!/bin/bash
# verifier_gpu.sh: the verifier's GPU checks, as steps that fit machines
# whose commands are limited in time (run a few steps per command):
#   tests   the GPU tests (kforge-tests gpu)
#   kb      the KernelBench-format cuda corpus
#   cuda    the whole cuda corpus
#   honest  bench/honest_under_load.py with 16 compiles beside it, started
#           in a session of its own (setsid) from a copy of the tree, so
#           that it outlives the command; `collect` waits for it and
#           prints its summary
# Usage: BUILD=build HONEST_S=560 bench/verifier_gpu.sh STEP...
#        bench/verifier_gpu.sh collect [WAIT_SECONDS]
# Logs and a one-line-per-step env.txt under $OUT (default
# /tmp/kforge-verifier-gpu).
set -u
OUTDIR=${OUT:-/tmp/kforge-verifier-gpu}
RUN=/tmp/kforge-verifier-gpu-run
B=${BUILD:-build}
export KFORGE_CACHE=${KFORGE_CACHE:-/tmp/kfc} PYTHONUNBUFFERED=1
mkdir -p "$OUTDIR"
{ date -u; nvidia-smi -L; } >> "$OUTDIR/env.txt" 2>&1
step() { # NAME COMMAND...
	name=$1; shift
	t0=$(date +%s)
	"$@" > "$OUTDIR/$name.log" 2>&1
	echo "$name rc $? $(( $(date +%s) - t0 )) s" >> "$OUTDIR/env.txt"
	grep -h "as expected\|^tests:" "$OUTDIR/$name.log"
}
for s in "$@"; do
	case $s in
	tests) step tests env KFORGE_BUILD="$B" KFORGE_REQUIRE_GPU=1 \
		"$B/kforge-tests" gpu ;;
	kb) step kb "$B/kforge" redteam --backend cuda \
		--manifest redteam/kernelbench_cuda.json --time-cap 1 ;;
	cuda) step cuda "$B/kforge" redteam --backend cuda --time-cap 1 ;;
	honest)
		rm -rf $RUN && mkdir -p $RUN/tree && cp -a . $RUN/tree/
		(cd $RUN/tree && setsid nohup python3 bench/honest_under_load.py \
			--kforge "$B/kforge" --backend cuda --load compile \
			--load-procs 16 --time-cap 0.5 --rounds 20 \
			--min-evals 150 --max-seconds "${HONEST_S:-560}" \
			--json $RUN/honest.json > $RUN/honest.log 2>&1 \
			< /dev/null &)
		echo "honest started $(date -u)" >> "$OUTDIR/env.txt" ;;
	collect)
		for _ in $(seq 1 "${2:-560}"); do
			[ -e $RUN/honest.json ] && break
			sleep 1
		done
		cp $RUN/honest.log "$OUTDIR/" 2>/dev/null
		[ -e $RUN/honest.json ] &&
			gzip -c $RUN/honest.json > "$OUTDIR/honest.json.gz"
		tail -n 12 $RUN/honest.log
		break ;;
	[0-9]*) ;;
	*) echo "verifier_gpu.sh: unknown step '$s' (tests, kb, cuda, honest, collect)" >&2
		exit 2 ;;
	esac
done
cat "$OUTDIR/env.txt"
