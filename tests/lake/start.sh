#!/usr/bin/env bash
# Start the PostgreSQL that the lake tests (pytest -m lake) keep their DuckLake catalogs in: a cluster of
# its own, made afresh in build/lake/pg/ (initdb, trust authentication), listening on 127.0.0.1 only, on a
# free port, its Unix socket in that folder. Its superuser is postgres; the tests log in as
#   - ood: LOGIN CREATEDB, and CREATE on the schema public of the database postgres;
#   - ood_reader: LOGIN, SELECT on what ood makes (default privileges), every transaction read-only;
#   - ood_pw: LOGIN with the password pw-7d41 (scram-sha-256, the only role that must give one), CREATE on
#     the schema public of the databases ood makes: the tests of a wrong password log in as it.
# The server runs in the foreground of a process of its own (as the postgres user when run as root:
# PostgreSQL refuses to run as root), its PID in build/lake/pg.pid; tests/lake/stop.sh stops it by that
# PID. When it answers, build/lake/pg.env holds the connection strings, in shell syntax:
#   OOD_STORE_TEST_LAKE='postgres:dbname=postgres host=127.0.0.1 port=PORT user=ood'
#   OOD_STORE_TEST_LAKE_READER='postgres:dbname=postgres host=127.0.0.1 port=PORT user=ood_reader'
#
# Usage (PostgreSQL's server installed: Debian's postgresql, which `make postgres` installs and then runs
# this): tests/lake/start.sh. Quiet on success; run again, it stops the old server and starts a new one.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)/build/lake

# Debian keeps the server's programs out of PATH, in /usr/lib/postgresql/VERSION/bin: the newest there.
if command -v initdb >/dev/null; then
    PGBIN=$(dirname "$(readlink -f "$(command -v initdb)")")
else
    PGBIN=$( (ls -d /usr/lib/postgresql/*/bin 2>/dev/null || true) | sort -V | tail -n 1)
fi
for tool in initdb postgres pg_ctl pg_isready psql; do
    [ -x "$PGBIN/$tool" ] || { echo "start.sh: no PostgreSQL $tool in '$PGBIN' (make postgres installs it)" >&2; exit 1; }
done

"$HERE/stop.sh" >/dev/null 2>&1 || true  # a server an earlier run left behind
mkdir -p "$ROOT"
DATA=$ROOT/pg
# As root the server runs as postgres, which must reach the folder; a checkout under a folder closed to
# others (/root) gets one under /tmp instead, and stop.sh finds it through build/lake/pg.dir.
AS=()
if [ "$(id -u)" = 0 ]; then
    id -u postgres >/dev/null 2>&1 || { echo "start.sh: no postgres user to run PostgreSQL as (make postgres installs it)" >&2; exit 1; }
    AS=(setpriv --reuid=postgres --regid=postgres --init-groups)
    "${AS[@]}" test -x "$ROOT" || DATA=$(mktemp -d /tmp/ood-store-lake.XXXXXX)
fi
# A Unix socket's path has at most 107 bytes.
[ ${#DATA} -le 80 ] || DATA=$(mktemp -d /tmp/ood-store-lake.XXXXXX)
rm -rf "$ROOT/pg"
mkdir -p "$DATA"
echo "$DATA" >"$ROOT/pg.dir"
if [ "$(id -u)" = 0 ]; then chown postgres: "$DATA"; fi
chmod 700 "$DATA"

if ! "${AS[@]}" "$PGBIN/initdb" --pgdata="$DATA/data" --username=postgres --auth=trust --encoding=UTF8 \
    --locale=C >"$DATA/initdb.log" 2>&1; then
    echo "start.sh: initdb failed:" >&2
    tail -n 20 "$DATA/initdb.log" >&2
    exit 1
fi

# ood_pw logs in with a password, everyone else as initdb's trust allows: pg_hba.conf's first match wins.
hba=$DATA/data/pg_hba.conf
"${AS[@]}" sh -c "{ echo 'host all ood_pw 127.0.0.1/32 scram-sha-256'; cat '$hba'; } >'$hba.new' && mv '$hba.new' '$hba'"

# A free port: one the kernel hands out, given up just before the server takes it; tried again if taken.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
for attempt in 1 2 3; do
    port=$(free_port)
    setsid "${AS[@]}" "$PGBIN/postgres" -D "$DATA/data" -p "$port" -c listen_addresses=127.0.0.1 \
        -c unix_socket_directories="$DATA" -c fsync=off -c full_page_writes=off \
        >"$DATA/postgres.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$ROOT/pg.pid"
    for _ in $(seq 60); do
        "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$port" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$port" && break
    kill -0 "$pid" 2>/dev/null && { kill -KILL "$pid"; wait "$pid" 2>/dev/null || true; }
    rm -f "$ROOT/pg.pid"
    if [ "$attempt" = 3 ]; then
        echo "start.sh: PostgreSQL did not come up; its log, $DATA/postgres.log:" >&2
        tail -n 20 "$DATA/postgres.log" >&2
        exit 1
    fi
done

# The roles. Default privileges live in each database: set in template1 too, they reach the databases
# that ood creates (whose schema public it owns, as their owner).
psql_as_postgres() {
    "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres "$@" >/dev/null
}
psql_as_postgres -d postgres -c "CREATE ROLE ood LOGIN CREATEDB" \
    -c "CREATE ROLE ood_reader LOGIN" \
    -c "SET password_encryption = 'scram-sha-256'" -c "CREATE ROLE ood_pw LOGIN PASSWORD 'pw-7d41'" \
    -c "ALTER ROLE ood_reader SET default_transaction_read_only = on"
for db in postgres template1; do
    psql_as_postgres -d "$db" -c "GRANT CREATE ON SCHEMA public TO ood" \
        -c "GRANT USAGE, CREATE ON SCHEMA public TO ood_pw" \
        -c "ALTER DEFAULT PRIVILEGES FOR ROLE ood GRANT USAGE ON SCHEMAS TO ood_reader" \
        -c "ALTER DEFAULT PRIVILEGES FOR ROLE ood GRANT SELECT ON TABLES TO ood_reader"
done

catalog="dbname=postgres host=127.0.0.1 port=$port"
cat >"$ROOT/pg.env.tmp" <<EOF
OOD_STORE_TEST_LAKE='postgres:$catalog user=ood'
OOD_STORE_TEST_LAKE_READER='postgres:$catalog user=ood_reader'
EOF
mv "$ROOT/pg.env.tmp" "$ROOT/pg.env"
