#!/usr/bin/env bash
# Start the test cluster that the real-cluster tests (tests/test_evaluate_cluster.py) run against:
#   - munged (the system's, or one started here),
#   - Slurm "plain": slurmctld + slurmd on localhost, no accounting (slurm/plain/slurm.conf),
#   - Slurm "accounting": slurmctld + slurmd + slurmdbd on a MariaDB of its own (slurm/accounting/),
#   - a Ray head on 127.0.0.1:6940 with token authentication (RAY_AUTH_MODE=token, its token in
#     /tmp/ood-store-test-cluster/ray/auth_token).
# Every daemon runs in the foreground of a process of its own, whose PID is in
# /tmp/ood-store-test-cluster/pids/; tests/cluster/stop.sh stops them by those PIDs. When all answer,
# /tmp/ood-store-test-cluster/cluster.json says where they are.
#
# Usage (as root, Debian's slurm-wlm, slurmdbd, munge and mariadb-server installed; `make cluster`
# installs them and runs this): tests/cluster/start.sh VENV_BIN   (the folder with ray and python)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=/tmp/ood-store-test-cluster
BIN=$(cd "${1:?usage: start.sh VENV_BIN (the folder with ray and python of the project)}" && pwd)
[ "$(id -u)" = 0 ] || { echo "start.sh: runs the daemons as root: run it as root" >&2; exit 1; }
for tool in slurmctld slurmd slurmdbd sacctmgr munged mariadbd mariadb-install-db setpriv; do
    command -v "$tool" >/dev/null || { echo "start.sh: no $tool (make cluster installs it)" >&2; exit 1; }
done
started=$(date +%s)

"$HERE/stop.sh" >/dev/null 2>&1 || true  # a cluster an earlier run left behind
rm -rf "$ROOT"
mkdir -p "$ROOT/pids" "$ROOT/logs" "$ROOT/ray" "$ROOT/mariadb"
for name in plain accounting; do
    mkdir -p "$ROOT/$name/etc" "$ROOT/$name/state" "$ROOT/$name/spool"
    cp "$HERE/slurm/$name/"*.conf "$ROOT/$name/etc/"
done
chmod 600 "$ROOT/accounting/etc/slurmdbd.conf"  # slurmdbd refuses a configuration others can read

# start NAME COMMAND...: COMMAND in the background, in a session of its own, its PID in pids/NAME.
start() {
    local name=$1
    shift
    setsid "$@" >"$ROOT/logs/$name.log" 2>&1 </dev/null &
    echo $! >"$ROOT/pids/$name"
}
# wait_for WHAT SECONDS COMMAND...: until COMMAND succeeds, or fail naming WHAT.
wait_for() {
    local what=$1 seconds=$2
    shift 2
    for _ in $(seq "$seconds"); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 1
    done
    echo "start.sh: $what did not come up within $seconds s; its logs: $ROOT/logs/" >&2
    tail -n 20 "$ROOT"/logs/*.log >&2 || true
    exit 1
}

# The Ray head first: it takes longest to come up. Its own processes are its children.
python3 -c 'import secrets; print(secrets.token_hex(32))' >"$ROOT/ray/auth_token"
chmod 600 "$ROOT/ray/auth_token"
start ray-head env RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH="$ROOT/ray/auth_token" \
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 RAY_USAGE_STATS_ENABLED=0 \
    "$BIN/ray" start --head --block --node-ip-address=127.0.0.1 --port=6940 --num-cpus=2 \
    --include-dashboard=false --disable-usage-stats --temp-dir="$ROOT/ray/tmp" \
    --dashboard-port=6941 --dashboard-agent-listen-port=6942 --dashboard-agent-grpc-port=6943 \
    --metrics-export-port=6944 --runtime-env-agent-port=6945 --node-manager-port=6946 \
    --object-manager-port=6947 --min-worker-port=6950 --max-worker-port=6999

# munge: the system's if one answers, else one of ours (as the munge user, on munge's own key).
if ! munge -n >/dev/null 2>&1; then
    mkdir -p /run/munge && chown munge:munge /run/munge && chmod 755 /run/munge
    [ -s /etc/munge/munge.key ] || { mungekey --create && chown munge:munge /etc/munge/munge.key; }
    start munged setpriv --reuid=munge --regid=munge --init-groups munged --foreground
    wait_for munged 20 munge -n
fi

# MariaDB for slurmdbd: a data folder of its own, on 127.0.0.1:6930 only, no grant tables.
mariadb-install-db --user=root --datadir="$ROOT/mariadb/data" --auth-root-authentication-method=normal \
    --skip-test-db >"$ROOT/logs/mariadb-install.log" 2>&1
start mariadbd mariadbd --no-defaults --user=root --datadir="$ROOT/mariadb/data" \
    --socket="$ROOT/mariadb/mysqld.sock" --port=6930 --bind-address=127.0.0.1 --skip-grant-tables \
    --innodb-buffer-pool-size=64M --innodb-lock-wait-timeout=900 --log-error="$ROOT/logs/mariadbd-error.log"
wait_for MariaDB 60 mariadb --protocol=tcp -h 127.0.0.1 -P 6930 -e 'SELECT 1'

# Accounting: slurmdbd, the cluster, an account "lab" with root in it (associations are enforced).
export SLURM_CONF=$ROOT/accounting/etc/slurm.conf
start slurmdbd slurmdbd -D
wait_for slurmdbd 60 sacctmgr -n list cluster
sacctmgr -i add cluster accounting >/dev/null
sacctmgr -i add account lab Description=ood-store-tests Organization=ood-store >/dev/null
sacctmgr -i add user root Account=lab DefaultAccount=lab >/dev/null
for name in accounting plain; do
    export SLURM_CONF=$ROOT/$name/etc/slurm.conf
    start "slurmctld-$name" slurmctld -D -i
    start "slurmd-$name" slurmd -D
done
for name in plain accounting; do
    export SLURM_CONF=$ROOT/$name/etc/slurm.conf
    wait_for "Slurm $name" 60 bash -c '[ "$(sinfo -h -o %t)" = idle ]'
done

wait_for "the Ray head" 180 grep -q "Ray runtime started" "$ROOT/logs/ray-head.log"

cat >"$ROOT/cluster.json" <<EOF
{
  "slurm": {"plain": "$ROOT/plain/etc/slurm.conf", "accounting": "$ROOT/accounting/etc/slurm.conf"},
  "ray": {"address": "127.0.0.1:6940", "token_path": "$ROOT/ray/auth_token"},
  "pids": "$ROOT/pids"
}
EOF
echo "Test cluster up in $(($(date +%s) - started)) s: Slurm 'plain' and 'accounting', a Ray head on 127.0.0.1:6940 ($ROOT/cluster.json)"
