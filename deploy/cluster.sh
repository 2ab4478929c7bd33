#!/usr/bin/env bash
# Local Strata cluster on loopback, started by `make cluster`: one etcd
# (Debian's etcd-server, `make deps`) and three brokers on ports
# 19092-19094, every topic replicated three times with
# min.insync.replicas=2. Data and logs live under ./data/cluster (kept
# across runs; `rm -rf data/cluster` starts afresh). Ctrl-C stops it all.
#
# A broker whose etcd lease expires shuts itself down, as a fenced broker
# should; each broker therefore runs under a small supervisor loop that
# starts it again, as systemd or docker's restart policy would.
#
# Environment: STRATA_BIN (default bin/strata), ETCD_BIN (default etcd on
# PATH, else /usr/bin/etcd), CLUSTER_DIR (default data/cluster).
set -euo pipefail
# Job control puts every background job in its own process group, so Ctrl-C
# reaches only this script, which then stops brokers before etcd.
set -m

cd "$(dirname "$0")/.."
BIN=${STRATA_BIN:-bin/strata}
ETCD=${ETCD_BIN:-$(command -v etcd || echo /usr/bin/etcd)}
DIR=${CLUSTER_DIR:-data/cluster}
CONFIG=deploy/server.properties
ETCD_CLIENT=127.0.0.1:12379
ETCD_PEER=127.0.0.1:12380
BROKERS=(1 2 3)

[[ -x $BIN ]] || { echo "cluster: $BIN not found; run \`make build\`" >&2; exit 1; }
[[ -x $ETCD ]] || { echo "cluster: etcd not found; run \`make deps\` (Debian package etcd-server)" >&2; exit 1; }
mkdir -p "$DIR"

pids=()
stop() {
	trap - INT TERM EXIT
	echo
	echo "cluster: stopping"
	# Brokers first (controlled shutdown needs etcd), then etcd.
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill -TERM "${pids[i]}" 2>/dev/null || true
		wait "${pids[i]}" 2>/dev/null || true
	done
	echo "cluster: stopped (data kept in $DIR)"
}
trap stop INT TERM EXIT

# wait_port HOST:PORT WHAT waits up to 30 s for a TCP listener.
wait_port() {
	local host=${1%:*} port=${1##*:}
	for _ in $(seq 300); do
		if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	echo "cluster: $2 not listening on $1 after 30s; see its log under $DIR" >&2
	exit 1
}

"$ETCD" --name etcd1 --data-dir "$DIR/etcd" \
	--listen-client-urls "http://$ETCD_CLIENT" --advertise-client-urls "http://$ETCD_CLIENT" \
	--listen-peer-urls "http://$ETCD_PEER" --initial-advertise-peer-urls "http://$ETCD_PEER" \
	--initial-cluster "etcd1=http://$ETCD_PEER" --max-txn-ops 16384 \
	>>"$DIR/etcd.log" 2>&1 &
pids+=($!)
wait_port "$ETCD_CLIENT" etcd

# supervise ID runs broker ID, starting it again whenever it exits, until
# the loop itself is sent SIGTERM.
supervise() {
	local id=$1 child=
	trap '[[ -n $child ]] && kill -TERM "$child" 2>/dev/null; wait "$child" 2>/dev/null; exit 0' TERM
	while true; do
		"$BIN" serve --config "$CONFIG" \
			--set node.id="$id" \
			--set listeners="PLAINTEXT://127.0.0.1:1909$((id + 1))" \
			--set log.dirs="$DIR/broker-$id" \
			--set metadata.etcd.endpoints="http://$ETCD_CLIENT" \
			--set metrics.listener="127.0.0.1:1964$((id + 3))" \
			--set console.listener="127.0.0.1:1965$((id + 3))" \
			--set remote.log.storage.local.dir="$DIR/tier-store" \
			--set default.replication.factor=3 \
			--set min.insync.replicas=2 \
			--set offsets.topic.replication.factor=3 \
			>>"$DIR/broker-$id.log" 2>&1 &
		child=$!
		wait "$child" && rc=0 || rc=$?
		echo "cluster: broker $id exited (status $rc); restarting in 1s (log: $DIR/broker-$id.log)" >&2
		sleep 1
	done
}

for id in "${BROKERS[@]}"; do
	supervise "$id" &
	pids+=($!)
done
for id in "${BROKERS[@]}"; do
	wait_port "127.0.0.1:1909$((id + 1))" "broker $id"
done

cat <<EOF
cluster: etcd at http://$ETCD_CLIENT, brokers 1-3 at 127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094
  metrics:   http://127.0.0.1:19644/metrics (broker 1), :19645, :19646
  data/logs: $DIR (etcd.log, broker-N.log)
  topics default to 3 replicas with min.insync.replicas=2. Try:
    kcat -b 127.0.0.1:19092 -L
    echo hello | kcat -b 127.0.0.1:19092 -t demo -P -X acks=all
    kcat -b 127.0.0.1:19093 -t demo -C -e
    $BIN perf produce -brokers 127.0.0.1:19092,127.0.0.1:19093 -topic perf -records 100000
  kill -9 a broker (pgrep -f 'node.id=2') to watch failover; its supervisor restarts it.
Press Ctrl-C to stop.
EOF
wait
