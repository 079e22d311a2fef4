#!/usr/bin/env bash
# Whether DuckLake keeps its data files on S3, offline: moto's S3 server on 127.0.0.1 (a free port), a bucket
# made with boto3, and DuckDB with the ducklake, sqlite_scanner, postgres_scanner and httpfs extensions LOADed
# from their PyPI packages (no INSTALL, no autoloading). On a SQLite catalog, and on the PostgreSQL of
# `make postgres` too where OOD_STORE_TEST_LAKE is set (build/lake/pg.env): a table of 100,000 rows, 2 more
# rows and a delete, all written as Parquet to s3://ood-store-lake/ (no inlining into the catalog), read back
# on a new connection; then the bucket's objects are listed. moto is stopped by its PID however the check
# ends. Exits 1 if any catalog fails. Not part of `make test-lake`.
#
# Usage: tests/lake/s3_check.sh PYTHON, a Python with the lake extra and moto's server:
#   python3 -m venv /tmp/s3check && /tmp/s3check/bin/pip install -e ".[lake]" "moto[server]" boto3
#   tests/lake/s3_check.sh /tmp/s3check/bin/python
set -euo pipefail
PYTHON=${1:?usage: s3_check.sh PYTHON (with the lake extra, moto[server] and boto3)}
"$PYTHON" -c 'import moto.server, boto3, duckdb_extension_httpfs' 2>/dev/null || {
    echo "s3_check.sh: $PYTHON lacks moto[server], boto3 or the lake extra" >&2
    exit 1
}
HERE=$(cd "$(dirname "$0")" && pwd)
ENV_FILE=$HERE/../../build/lake/pg.env
if [ -z "${OOD_STORE_TEST_LAKE:-}" ] && [ -f "$ENV_FILE" ]; then
    set -a
    . "$ENV_FILE"
    set +a
fi
WORK=$(mktemp -d /tmp/ood-store-s3-check.XXXXXX)
moto=
cleanup() {
    if [ -n "$moto" ]; then
        kill -TERM "$moto" 2>/dev/null && { wait "$moto" 2>/dev/null || true; }
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

port=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$PYTHON" -m moto.server -H 127.0.0.1 -p "$port" >"$WORK/moto.log" 2>&1 </dev/null &
moto=$!
for _ in $(seq 60); do
    "$PYTHON" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/moto-api/')" \
        >/dev/null 2>&1 && break
    kill -0 "$moto" 2>/dev/null || { echo "s3_check.sh: moto exited:" >&2; cat "$WORK/moto.log" >&2; exit 1; }
    sleep 0.5
done

"$PYTHON" - "$port" "$WORK" <<'EOF'
import importlib
import os
import pathlib
import sys

import boto3
import duckdb

port, work = int(sys.argv[1]), sys.argv[2]
endpoint = f"127.0.0.1:{port}"
s3 = boto3.client("s3", endpoint_url=f"http://{endpoint}", aws_access_key_id="test",
                  aws_secret_access_key="test", region_name="us-east-1")
s3.create_bucket(Bucket="ood-store-lake")


def connect():
    con = duckdb.connect(config={"allow_unsigned_extensions": True, "autoinstall_known_extensions": False,
                                 "autoload_known_extensions": False})
    for name in ("ducklake", "sqlite_scanner", "postgres_scanner", "httpfs"):
        package = pathlib.Path(importlib.import_module(f"duckdb_extension_{name}").__path__[0])
        con.execute(f"LOAD '{next(package.glob(f'extensions/v*/{name}.duckdb_extension'))}'")
    con.execute(f"""CREATE SECRET (TYPE s3, KEY_ID 'test', SECRET 'test', ENDPOINT '{endpoint}',
                    URL_STYLE 'path', USE_SSL false, REGION 'us-east-1')""")
    return con


catalogs = {"sqlite": f"sqlite:{work}/catalog.sqlite"}
if os.environ.get("OOD_STORE_TEST_LAKE"):
    catalogs["postgres"] = os.environ["OOD_STORE_TEST_LAKE"]
failed = False
for kind, catalog in catalogs.items():
    # No inlining: the two rows and the delete go to S3 as Parquet too, not into the catalog.
    attach = f"ATTACH 'ducklake:{catalog}' AS lake (DATA_PATH 's3://ood-store-lake/{kind}/', DATA_INLINING_ROW_LIMIT 0)"
    try:
        con = connect()
        con.execute(attach)
        con.execute("DROP TABLE IF EXISTS lake.t")
        con.execute("CREATE TABLE lake.t AS SELECT range AS i, 'row ' || range AS s FROM range(100000)")
        con.execute("INSERT INTO lake.t VALUES (100000, 'more'), (100001, 'more')")
        con.execute("DELETE FROM lake.t WHERE i < 10")
        con.close()
        con = connect()
        con.execute(attach)
        got = con.execute("SELECT count(*), sum(i), max(s) FROM lake.t").fetchone()
        listed = con.execute("SELECT data_file, delete_file FROM ducklake_list_files('lake', 't')").fetchall()
        files = [f for row in listed for f in row if f]
        con.close()
        want = (99992, sum(range(10, 100002)), "row 99999")
        # two data files (the 100,000 rows, the 2 more) and the first's delete file
        ok = got == want and len(files) == 3 and all(f.startswith(f"s3://ood-store-lake/{kind}/") for f in files)
        failed |= not ok
        print(f"{kind} catalog: {'ok' if ok else 'WRONG'}: read back {got} (expected {want}); data files {files}")
    except Exception as error:
        failed = True
        print(f"{kind} catalog: FAILED: {type(error).__name__}: {error}")
objects = s3.list_objects_v2(Bucket="ood-store-lake").get("Contents", [])
print("bucket ood-store-lake:", ", ".join(f"{o['Key']} ({o['Size']} B)" for o in objects) or "empty")
sys.exit(failed)
EOF
