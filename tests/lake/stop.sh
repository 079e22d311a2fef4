#!/usr/bin/env bash
# Stop the PostgreSQL that start.sh started: pg_ctl stop -m fast (open sessions are ended), then SIGKILL to
# the PID in build/lake/pg.pid if it still runs after 20 s; its folder (build/lake/pg.dir says where) is
# removed, and with it the data. Quiet; exits 0 either way.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)/build/lake
[ -f "$ROOT/pg.dir" ] || [ -f "$ROOT/pg.pid" ] || exit 0
DATA=$(cat "$ROOT/pg.dir" 2>/dev/null)
DATA=${DATA:-$ROOT/pg}
pid=$(cat "$ROOT/pg.pid" 2>/dev/null)
# The PID is ours only while it is a postgres whose data folder is ours (a PID left from another boot may
# have been given to anything since).
ours() {
    [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = postgres ] \
        && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-D $DATA/data "
}
if ours; then
    PGCTL=$(dirname "$(readlink -f "/proc/$pid/exe")")/pg_ctl
    AS=()
    [ "$(id -u)" = 0 ] && AS=(setpriv --reuid=postgres --regid=postgres --init-groups)
    "${AS[@]}" "$PGCTL" stop -D "$DATA/data" -m fast -w -t 20 >/dev/null 2>&1
    for _ in $(seq 20); do
        ours || break
        sleep 0.5
    done
    ours && kill -KILL "$pid" 2>/dev/null
fi
case $DATA in
    "$ROOT/pg" | /tmp/ood-store-lake.*) rm -rf "$DATA" ;;
esac
rm -f "$ROOT/pg.dir" "$ROOT/pg.pid" "$ROOT/pg.env"
