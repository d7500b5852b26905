#!/bin/bash
# Redis SIGKILLed twice under a farm batch (docs/scale.md): a loopback
# redis-server with the AOF on (appendfsync as $1, default everysec), three
# host workers, 200 checks-only evaluations of the honest rowsum kernel;
# redis-server SIGKILLed after 60 and after 120 answers, each time started
# again on the same directory and port. Prints the submitter's summary and
# how many of the 200 were answered ok. Run from the kforge tree.
set -u
FSYNC=${1:-everysec}
D=$(mktemp -d /tmp/kforge-farm-restart-XXXXXX)
PORT=$((20000 + RANDOM % 20000))
URL=redis://127.0.0.1:$PORT
export KFORGE_CACHE=$D/cache
start() {
	redis-server --port $PORT --bind 127.0.0.1 --dir "$D" --appendonly yes \
		--appendfsync "$FSYNC" --save "" --daemonize no >"$D/redis.out" 2>&1 &
	RPID=$!
	until redis-cli -p $PORT ping >/dev/null 2>&1; do sleep 0.05; done
}
answered() {
	local n
	n=$(redis-cli -p $PORT HGET kforge:stats done 2>/dev/null)
	echo "${n:-0}"
}
start
W=()
for i in 1 2 3; do
	build/kforge farm worker --redis $URL --name r$i \
		--visibility-timeout 3 >"$D/w$i.log" 2>&1 &
	W+=($!)
done
for i in $(seq 200); do
	echo "tests/fixtures/rowsum tests/fixtures/rowsum/candidates/same.c"
done >"$D/batch"
build/kforge eval --batch "$D/batch" --redis $URL --no-timing --trials 5 \
	--seed 1 >"$D/out.txt" 2>"$D/err.txt" &
SUB=$!
for at in 60 120; do
	while [ "$(answered)" -lt $at ]; do sleep 0.1; done
	kill -9 $RPID
	wait $RPID 2>/dev/null
	echo "redis-server SIGKILLed after $at or more answers, started again"
	start
done
wait $SUB
echo "submitter exit $?; ok: $(grep -c ' ok ' "$D/out.txt") of 200"
tail -1 "$D/err.txt"
kill "${W[@]}"
wait "${W[@]}" 2>/dev/null
kill $RPID
wait $RPID 2>/dev/null
rm -rf "$D"
