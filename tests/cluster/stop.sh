#!/usr/bin/env bash
# Stop the test cluster that start.sh started: its jobs cancelled, then each daemon by the PID that
# start.sh wrote (SIGTERM, SIGKILL after 20 s), the Ray head's own processes with it.
set -uo pipefail
ROOT=/tmp/ood-store-test-cluster
[ -d "$ROOT/pids" ] || exit 0
for name in plain accounting; do
    conf=$ROOT/$name/etc/slurm.conf
    [ -f "$conf" ] && SLURM_CONF=$conf timeout 20 scancel --full --quiet --user=root 2>/dev/null
done
stop() {
    local file=$ROOT/pids/$1 pid
    [ -f "$file" ] || return 0
    pid=$(cat "$file")
    if kill -TERM "$pid" 2>/dev/null; then
        for _ in $(seq 40); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$file"
    echo "stopped $1 (process $pid)"
}
for name in slurmd-plain slurmd-accounting slurmctld-plain slurmctld-accounting slurmdbd mariadbd ray-head munged; do
    stop "$name"
done
rm -f "$ROOT/cluster.json"
