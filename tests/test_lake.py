"""A store on DuckLake behaves as a store file does, and more: many writers, snapshots, time travel.

Each test that says ``kind`` runs on a store file and on a lake (tests/lake_support.py: a PostgreSQL
catalog in CI, `make test-lake`). Expected values come from the lm-eval JSON files themselves, or from the
same commands on a store file.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from lake_support import KINDS, new_catalog, new_lake, new_store, postgres

import ood_store
from conftest import INGEST_WORKER, PYTHIA_IN_DOMAIN, PYTHIA_OOD, REAL, benchmark, expected_pythia_rows, pythia_files
from ood_store._cli import main

CAMPAIGNS = REAL / "pythia-campaigns" / "pythia-410m-deduped"


def invoke(runner, db: str, *args: str):
    result = runner.invoke(main, ["--db", db, *args])
    assert "Traceback" not in result.output, result.output
    return result


def stored_scores(db: str) -> dict[tuple, tuple]:
    with ood_store.open(db, read_only=True) as store:
        rows = store.query("SELECT run, step, task, metric, value, stderr FROM scores_all WHERE filter = 'none'").rows()
    return {(run, step, task, metric): (value, stderr) for run, step, task, metric, value, stderr in rows}


# -- the store's behavior, on a file and on a lake ------------------------------------------------------------
@KINDS
def test_ingest_stores_every_score_of_the_files_once(kind, tmp_path):
    db = new_store(kind, tmp_path)
    files = pythia_files("160m")
    with ood_store.open(db) as store:
        first = store.ingest(files)
        again = store.ingest(files)
    assert len(first.ingested) == len(files) and not first.rejected
    assert len(again.present) == len(files) and not again.ingested
    expected = expected_pythia_rows(files)
    stored = stored_scores(db)
    assert stored.keys() == expected.keys()
    for key, (value, stderr) in expected.items():
        assert stored[key][0] == value
        assert stored[key][1] == (None if stderr in (None, "N/A") else stderr)


@KINDS
def test_a_copy_of_a_file_elsewhere_is_present_not_stored_again(kind, tmp_path):
    db = new_store(kind, tmp_path)
    source = pythia_files("160m")[0]
    copy = tmp_path / "copies" / source.name
    copy.parent.mkdir()
    copy.write_bytes(source.read_bytes())
    with ood_store.open(db) as store:
        report = store.ingest([source, copy])
        count = store.query("SELECT count(*) AS n FROM evaluations")["n"][0]
    assert len(report.ingested) == 1 and len(report.present) == 1
    assert count == 1


@KINDS
def test_a_bad_file_is_rejected_in_one_line_and_the_others_go_in(kind, tmp_path):
    db = new_store(kind, tmp_path)
    good = pythia_files("160m")[:3]
    bad = tmp_path / "bad" / "results.json"
    bad.parent.mkdir()
    doc = json.loads(good[0].read_text())
    doc["results"]["piqa"]["acc"] = "not a number"
    bad.write_text(json.dumps(doc))
    with ood_store.open(db) as store:
        report = store.ingest([*good, bad])
    assert len(report.ingested) == 3
    assert [Path(f.path).name for f in report.rejected] == ["results.json"]
    reason = report.rejected[0].reason
    assert "\n" not in reason and str(bad) in reason and "piqa" in reason


@pytest.mark.lake
def test_a_rejected_ingest_makes_no_snapshot(tmp_path):
    db = new_lake(tmp_path)
    bad = tmp_path / "results.json"
    bad.write_text("{not json")
    with ood_store.open(db) as store:
        before = store.snapshots().height
        report = store.ingest([bad])
        after = store.snapshots().height
    assert report.rejected and not report.ingested
    assert after == before


@KINDS
def test_campaigns_and_repeated_checkpoints_are_kept_apart(kind, tmp_path):
    db = new_store(kind, tmp_path)
    zero = sorted((CAMPAIGNS / "zero-shot").glob("*.json"))
    base = sorted((CAMPAIGNS / "baseline").glob("*.json"))
    with ood_store.open(db) as store:
        assert store.ingest([CAMPAIGNS / "zero-shot"]).ok
        assert store.ingest([CAMPAIGNS / "baseline"]).ok
        campaigns = dict(store.query("SELECT campaign, count(*) FROM evaluations GROUP BY ALL").rows())
        runs = store.runs()
    assert campaigns == {"zero-shot": len(zero), "baseline": len(base)}
    assert runs.height == 1


@KINDS
def test_hostile_sql_is_refused_and_changes_nothing(kind, tmp_path, runner):
    db = new_store(kind, tmp_path)
    with ood_store.open(db) as store:
        store.ingest(pythia_files("160m")[:3])
    before = stored_scores(db)
    secret = tmp_path / "elsewhere" / "sesame.csv"
    secret.parent.mkdir()
    secret.write_text("name,value\nood-store-secret-7d41,1\n")
    attempts = [
        "DELETE FROM evaluations",
        "INSERT INTO runs (run, attributes, created_at) VALUES ('x', '{}', now())",
        "DROP VIEW scores",
        "CREATE TABLE hacked AS SELECT 1",
        f"SELECT * FROM read_csv('{secret}')",
        f"COPY evaluations TO '{tmp_path / 'out.csv'}'",
        f"ATTACH '{tmp_path / 'o.db'}' AS other",
        "SET enable_external_access = true",
        "LOAD httpfs",
        "SELECT 1; DELETE FROM evaluations",
    ]
    if kind == "lake":
        attempts += [
            "CALL ducklake_expire_snapshots('store', older_than => now())",
            "CALL ducklake_delete_orphaned_files('store', cleanup_all => true)",
            "CALL store.set_commit_message('me', 'hacked')",
            "UPDATE lake_writes SET writes = 0",
            "CALL postgres_execute('__ducklake_metadata_store', 'DROP TABLE ducklake_snapshot')",
            "DELETE FROM __ducklake_metadata_store.ducklake_snapshot",
            f"ATTACH '{db}' AS again",
        ]
    # and every attempt of the hostile-SQL benchmark (issue 17's), as tests/test_sql_sandbox.py runs them on a file
    hostile_sql = benchmark("hostile_sql")
    hostile = tmp_path / "hostile"
    (hostile / "elsewhere").mkdir(parents=True)
    planted = hostile / "elsewhere" / f"{hostile_sql.NAME_MARK}.csv"
    planted.write_text(f"name,value\n{hostile_sql.SECRET},1\n")
    attempts += [
        attempt.sql.format(secret=planted, secret_dir=planted.parent, out=hostile / "out.csv",
                           outdir=hostile / "export", other=hostile / "o.db")
        for attempt in hostile_sql.ATTEMPTS
    ]  # fmt: skip
    listed = sorted(p.name for p in tmp_path.rglob("*"))
    for sql in attempts:
        result = invoke(runner, db, "query", sql, "-f", "csv")
        assert result.exit_code == 1, (sql, result.output)
        assert result.output.startswith("Error: ") and len(result.output.strip().splitlines()) == 1, result.output
        assert "ood-store-secret-7d41" not in result.output and hostile_sql.SECRET not in result.output, sql
        assert "root:" not in result.output, sql
    assert stored_scores(db) == before
    assert sorted(p.name for p in tmp_path.rglob("*")) == listed  # nothing written, in the lake's data path neither


@KINDS
def test_analyses_on_a_lake_equal_those_on_a_file(kind, tmp_path, runner):
    file_db = str(tmp_path / "reference.duckdb")
    db = new_store(kind, tmp_path)
    for target in {file_db, db}:
        with ood_store.open(target) as store:
            for size in ("160m", "410m", "1.4b"):
                assert store.ingest(pythia_files(size), attributes={"family": "pythia", "size": size}).ok
    args = ["analyze", "--in-domain", PYTHIA_IN_DOMAIN, "--ood", ",".join(PYTHIA_OOD), "-f", "csv"]
    reference = invoke(runner, file_db, *args)
    result = invoke(runner, db, *args, "--save", "pythia")
    assert result.exit_code == 0 and reference.exit_code == 0, result.output
    assert result.stdout == reference.stdout
    compared = invoke(runner, db, "compare", "--analysis", "pythia", "-f", "csv")
    expected = invoke(runner, file_db, "compare", "--in-domain", PYTHIA_IN_DOMAIN, "--ood", ",".join(PYTHIA_OOD),
                      "-f", "csv")  # fmt: skip
    assert compared.exit_code == 0, compared.output
    assert compared.stdout == expected.stdout


@pytest.mark.lake
def test_results_move_between_a_file_and_a_lake_both_ways(tmp_path, runner):
    files = [*pythia_files("160m"), *pythia_files("410m")]
    expected = expected_pythia_rows(files)
    origin = str(tmp_path / "origin.duckdb")
    with ood_store.open(origin) as store:
        assert store.ingest(files, attributes={"family": "pythia"}).ok
    # file -> lake, by merge
    lake = new_lake(tmp_path / "a")
    merged = invoke(runner, lake, "merge", origin)
    assert merged.exit_code == 0, merged.output
    assert stored_scores(lake).keys() == expected.keys()
    assert invoke(runner, lake, "merge", origin).exit_code == 0
    with ood_store.open(lake, read_only=True) as store:
        assert store.query("SELECT count(*) AS n FROM evaluations")["n"][0] == len(files)  # merged twice, held once
        assert set(store.runs()["family"].to_list()) == {"pythia"}
    # lake -> file, by dump and load, and by merge
    assert invoke(runner, lake, "dump", str(tmp_path / "lake-dump")).exit_code == 0
    loaded, merged_back = str(tmp_path / "loaded.duckdb"), str(tmp_path / "merged.duckdb")
    result = invoke(runner, loaded, "load", str(tmp_path / "lake-dump"))
    assert result.exit_code == 0, result.output
    result = invoke(runner, merged_back, "merge", lake)
    assert result.exit_code == 0, result.output
    # file -> lake, by dump and load
    assert invoke(runner, origin, "dump", str(tmp_path / "file-dump")).exit_code == 0
    other = new_lake(tmp_path / "b")
    result = invoke(runner, other, "load", str(tmp_path / "file-dump"))
    assert result.exit_code == 0, result.output
    for db in (loaded, merged_back, other):
        scores = stored_scores(db)
        assert scores.keys() == expected.keys(), db
        assert all(scores[key][0] == value for key, (value, _) in expected.items()), db
    # a lake into itself is refused in one line
    itself = invoke(runner, lake, "merge", lake)
    assert itself.exit_code != 0 and "is the store itself" in itself.output
    assert len(itself.output.strip().splitlines()) == 1


@pytest.mark.lake
def test_the_viewer_and_plots_read_a_lake(tmp_path, runner):
    from starlette.testclient import TestClient

    from ood_store._serve.app import Settings, create_app

    lake = new_lake(tmp_path)
    with ood_store.open(lake) as store:
        for size in ("160m", "410m", "1.4b"):
            assert store.ingest(pythia_files(size), attributes={"family": "pythia", "size": size}).ok
    client = TestClient(create_app(Settings(lake)), base_url="http://127.0.0.1:8000")
    runs = client.get("/runs.json")
    assert runs.status_code == 200
    with ood_store.open(lake, read_only=True) as store:
        stored_runs = sorted(store.runs()["run"].to_list())
    assert sorted(row["run"] for row in runs.json()["rows"]) == stored_runs
    answer = client.get("/sql.json", params={"sql": "SELECT count(*) AS n FROM evaluations"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["rows"] == [{"n": sum(len(pythia_files(size)) for size in ("160m", "410m", "1.4b"))}]
    refused = client.get("/sql.json", params={"sql": "DELETE FROM evaluations"})
    assert refused.status_code == 400
    # a new commit, by another writer, is seen at once: pages are kept per snapshot
    with ood_store.open(lake) as store:
        assert store.set_run_attributes(stored_runs[0], {"seed": "7"}) is not None
    page = client.get("/runs.json").json()
    assert {row["run"]: row.get("seed") for row in page["rows"]}[stored_runs[0]] == 7
    result = invoke(runner, lake, "analyze", "--in-domain", PYTHIA_IN_DOMAIN, "--ood", ",".join(PYTHIA_OOD),
                    "--save", "pythia")  # fmt: skip
    assert result.exit_code == 0, result.output
    figure = tmp_path / "forest.svg"
    result = invoke(runner, lake, "plot", "forest", "--analysis", "pythia", "-o", str(figure))
    assert result.exit_code == 0, result.output
    svg = figure.read_text()
    assert svg.lstrip().startswith(("<?xml", "<svg"))
    with ood_store.open(lake, read_only=True) as store:  # the figure records the snapshot the analysis read
        computed_at = json.loads(store.query("SELECT params FROM analyses WHERE name = 'pythia'")["params"][0])
    assert isinstance(computed_at["store_snapshot"], int)
    import html
    import re

    recorded = re.findall(r'"snapshot":\s*(\d+)', html.unescape(svg))  # the provenance's JSON, in <dc:description>
    assert recorded and {int(n) for n in recorded} == {computed_at["store_snapshot"]}


@pytest.mark.lake
def test_a_lake_keeps_its_data_on_s3(tmp_path, runner, monkeypatch):
    """The data path on S3 (moto's server on 127.0.0.1), the catalog in PostgreSQL: ingest, dedupe, analyze,
    time travel, vacuum, as on a folder; the Parquet files are in the bucket, the AWS_* variables the keys."""
    from lake_support import s3_server

    with s3_server(tmp_path, "lab-results") as (endpoint, client):
        for name, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                            "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint}.items():  # fmt: skip
            monkeypatch.setenv(name, value)
        url = new_catalog(tmp_path)
        made = invoke(runner, url, "init", "--data-path", "s3://lab-results/ood-store")
        assert made.exit_code == 0, made.output
        assert made.output == f"Created the lake {url} (schema version 6), its data in s3://lab-results/ood-store/.\n"
        files = [*pythia_files("160m"), *pythia_files("410m")]
        with ood_store.open(url) as store:
            assert store.ingest(files, attributes={"family": "pythia"}).ok
            assert len(store.ingest(files).present) == len(files)
            first = store.snapshots()["snapshot"].max()
        assert stored_scores(url).keys() == expected_pythia_rows(files).keys()
        keys = [o["Key"] for o in client.list_objects_v2(Bucket="lab-results").get("Contents", [])]
        assert keys and all(key.startswith("ood-store/") for key in keys)
        assert any(key.endswith(".parquet") for key in keys)
        with ood_store.open(url) as store:
            assert store.ingest(pythia_files("1.4b")).ok
        with ood_store.open(url, at=first) as store:
            assert store.query("SELECT count(*) AS n FROM evaluations")["n"][0] == len(files)
        swept = invoke(runner, url, "vacuum", "--older-than", "0")
        assert swept.exit_code == 0, swept.output
        assert stored_scores(url).keys() == expected_pythia_rows([*files, *pythia_files("1.4b")]).keys()
    # the server gone (moto checks no keys, so an unreachable S3 stands for a refused one): one line, naming the file
    lost = invoke(runner, url, "query", "SELECT sum(value) AS total FROM evaluation_scores")
    assert lost.exit_code == 1
    assert lost.output.startswith("Error: IO Error: Could not connect to server"), lost.output
    assert "/lab-results/ood-store/main/evaluation_scores/" in lost.output  # the data file it could not get
    assert len(lost.output.strip().splitlines()) == 1


@pytest.mark.lake
def test_the_lab_how_to_runs_as_written(tmp_path, runner):
    """docs/how-to/lab.md on the tests' PostgreSQL: its SQL as the superuser, then its shell lines in order
    (all but the S3 ones, which test_a_lake_keeps_its_data_on_s3 runs, serve, pip and rsync), under names of
    this test's own; what it says they do, they do."""
    import re
    import secrets

    from lake_support import conninfo

    spec = postgres()
    if spec is None:
        pytest.skip("the page sets up PostgreSQL")
    page = (Path(__file__).resolve().parents[1] / "docs" / "how-to" / "lab.md").read_text()
    fenced = re.findall(r"```(\w+)\n(.*?)```", page, flags=re.DOTALL)
    tag = secrets.token_hex(4)
    sql = "".join(body for lang, body in fenced if lang == "sql")
    sql = re.sub(r"\blab_(writer|reader)\b", rf"lab_\1_{tag}", sql)
    sql = re.sub(r"\b(DATABASE|connect) lab\b", rf"\1 lab_{tag}", sql)
    superuser = conninfo(spec, user="postgres", dbname="postgres")
    psql_path = shutil.which("psql") or "/usr/lib/postgresql/15/bin/psql"
    subprocess.run([psql_path, superuser, "-qX", "-v", "ON_ERROR_STOP=1"], input=sql, text=True, check=True,
                   capture_output=True, timeout=60)  # fmt: skip
    pairs = dict(re.findall(r"(\w+)=(\S+)", spec.removeprefix("postgres:")))
    shell = []
    for lang, body in fenced:
        for line in body.replace("\\\n", " ").splitlines():
            if lang != "sh" or "s3://" in line or line.startswith(("pip ", "rsync ", "export AWS")) or " serve" in line:
                continue
            line = re.sub(r"dbname=lab\b", f"dbname=lab_{tag}", line)
            line = re.sub(r"user=lab_(writer|reader)\b", rf"user=lab_\1_{tag}", line)
            line = line.replace("host=db.lab.example", f"host={pairs['host']} port={pairs['port']}")
            line = line.replace("/shared/lab/", f"{tmp_path}/shared/").replace("/backup/lab/", f"{tmp_path}/backup/")
            shell.append(line)
    assert any(line.startswith("ood-store ") for line in shell) and any("pg_dump" in line for line in shell)
    (tmp_path / "results").symlink_to(REAL / "pythia-v1")
    with ood_store.open(tmp_path / "old-study.duckdb") as store:
        assert store.ingest(pythia_files("1.4b")).ok
    bins = [str(Path(sys.executable).parent), str(Path(psql_path).parent), os.environ.get("PATH", "/usr/bin:/bin")]
    env = {**os.environ, "PATH": os.pathsep.join(bins)}
    env.pop("OOD_STORE_DB", None)
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", "\n".join(shell)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    # what the page says of snapshot 3: the tables made again are the tables made then, byte for byte
    assert (tmp_path / "table1-again.tex").read_bytes() == (tmp_path / "table1.tex").read_bytes()
    assert (tmp_path / "acc-again.csv").read_bytes() == (tmp_path / "acc.csv").read_bytes()
    assert "\n% snapshot: 3\n" in (tmp_path / "table1.tex").read_text()
    assert "\n# snapshot: 3\n" in (tmp_path / "acc.csv").read_text()
    lake = "ducklake:postgres:" + conninfo(spec, dbname=f"lab_{tag}", user=f"lab_writer_{tag}")
    with ood_store.open(lake, read_only=True) as store:
        held = store.query("SELECT count(*) AS n FROM evaluations")["n"][0]
        saved_at = store.query("SELECT params FROM analyses WHERE name = 'pythia'")["params"][0]
    expected = len(pythia_files("160m")) + len(pythia_files("410m")) + len(pythia_files("1.4b"))
    assert held == expected
    assert json.loads(saved_at)["store_snapshot"] == 3
    with ood_store.open(lake, read_only=True) as store:
        saved_r = store.analysis("pythia").table["r"].to_list()
    assert pl.read_csv(tmp_path / "remade.csv")["r"].to_list() == saved_r
    for copy in ("lab-copy.duckdb", "laptop.duckdb"):  # the lake, back into files
        assert stored_scores(str(tmp_path / copy)) == stored_scores(lake)
    assert (tmp_path / "lab-catalog.dump").stat().st_size > 0
    reader = "ducklake:postgres:" + conninfo(spec, dbname=f"lab_{tag}", user=f"lab_reader_{tag}")
    new_file = sorted((CAMPAIGNS / "baseline").glob("*.json"))[0]  # one the lake does not hold
    refused = runner.invoke(main, ["--db", reader, "ingest", str(new_file)])
    assert refused.exit_code == 1 and "this role may only read the lake" in refused.output


def test_without_the_extension_and_offline_a_lake_is_one_line(tmp_path, runner, monkeypatch, dead_address):
    """DuckDB without DuckLake's extension package (the default install), and its repository out of reach:
    the lake is refused in one line that names the extension and the extra that brings it."""
    from ood_store._store import lake

    monkeypatch.setattr(lake, "packaged_extension", lambda name: None)
    monkeypatch.setattr(lake, "_CONFIG", {**lake._CONFIG, "custom_extension_repository": f"http://{dead_address}",
                                          "extension_directory": str(tmp_path / "extensions")})  # fmt: skip
    url = f"ducklake:sqlite:{tmp_path / 'lab.sqlite'}"
    result = invoke(runner, url, "runs")
    assert result.exit_code == 1
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"Error: {url}: a lake needs DuckDB's ducklake extension, which DuckDB ")
    assert line.endswith('`pip install -e ".[lake]"` installs it for DuckDB 1.5.5, without a network connection')
    assert not (tmp_path / "lab.sqlite").exists()


@pytest.mark.lake
@pytest.mark.parametrize("catalog", ["sqlite", "duckdb"])
def test_a_lake_on_one_host_keeps_its_catalog_in_sqlite_or_duckdb(catalog, tmp_path, runner):
    """The catalogs for one host (CI's other lake tests use PostgreSQL): the same commands, the same results."""
    from lake_support import require_extension

    require_extension()
    url = (
        f"ducklake:sqlite:{tmp_path / 'lab.sqlite'}" if catalog == "sqlite" else f"ducklake:{tmp_path / 'lab.ducklake'}"
    )
    made = invoke(runner, url, "init", "--data-path", str(tmp_path / "data"))
    assert made.exit_code == 0, made.output
    files = pythia_files("160m")
    assert invoke(runner, url, "ingest", *map(str, files)).exit_code == 0
    assert invoke(runner, url, "ingest", str(pythia_files("410m")[0])).exit_code == 0
    listed = invoke(runner, url, "snapshots", "-f", "csv")
    assert listed.exit_code == 0, listed.output
    history = pl.read_csv(listed.stdout.encode())
    assert history["command"].to_list() == ["lake created", "init", "ingest", "ingest"]
    assert history["files"].to_list()[2:] == [len(files), 1]
    assert history["committed"].str.contains(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$").all()
    at = str(history["snapshot"][2])
    counted = invoke(runner, url, "query", "SELECT count(*) AS n FROM evaluations", "-f", "csv")
    then = invoke(runner, url, "export", "--sql", "SELECT count(*) AS n FROM evaluations", "--at", at, "-f", "csv")
    assert counted.stdout.strip().splitlines()[-1] == str(len(files) + 1)
    assert then.exit_code == 0, then.output
    assert then.stdout.strip().splitlines()[-1] == str(len(files))
    assert invoke(runner, url, "vacuum", "--older-than", "0").exit_code == 0
    assert stored_scores(url).keys() == expected_pythia_rows([*files, pythia_files("410m")[0]]).keys()


@pytest.mark.lake
def test_the_listing_and_attribute_commands_say_the_same_on_a_lake_and_a_file(tmp_path, runner):
    file_db, lake = str(tmp_path / "reference.duckdb"), new_lake(tmp_path)
    files = [*pythia_files("160m"), *pythia_files("410m")]
    outputs = {}
    for db in (file_db, lake):
        assert invoke(runner, db, "ingest", *map(str, files)).exit_code == 0
        changed = invoke(runner, db, "runs", "set", "--match", "*160m*", "family=pythia", "size=160m")
        assert changed.exit_code == 0, changed.output
        analyzed = invoke(runner, db, "analyze", "--in-domain", PYTHIA_IN_DOMAIN, "--ood", ",".join(PYTHIA_OOD),
                          "--save", "pythia")  # fmt: skip
        assert analyzed.exit_code == 0, analyzed.output
        eee = tmp_path / f"eee-{len(outputs)}"
        assert invoke(runner, db, "export-eee", str(eee)).exit_code == 0
        listed = invoke(runner, db, "analyses", "-f", "csv").stdout
        saved = pl.read_csv(listed.encode()).drop("created_at", "params").rows()  # when, and which snapshot: differ
        outputs[db] = [
            *(invoke(runner, db, *command, "-f", "csv").stdout
              for command in (["runs"], ["tasks"], ["runs", "--where", "family=pythia"])),
            saved,
            sorted(p.relative_to(eee).as_posix() for p in eee.rglob("*.json")),
        ]  # fmt: skip
    assert outputs[lake] == outputs[file_db]
    assert len(outputs[lake][-1]) == len(files)


# -- a lake's own: errors, history, time travel -------------------------------------------------------------
@pytest.mark.lake
def test_a_catalog_without_a_lake_is_refused_until_init(tmp_path, runner):
    url = new_catalog(tmp_path)
    result = invoke(runner, url, "runs")
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"Error: {url}: no lake here; create one with `ood-store init` and its --data-path (a folder, or an S3 URL)"
    )
    made = invoke(runner, url, "init", "--data-path", str(tmp_path / "data"))
    assert made.exit_code == 0, made.output
    assert made.output == f"Created the lake {url} (schema version 6), its data in {tmp_path / 'data'}/.\n"
    again = invoke(runner, url, "init")
    assert again.output == f"{url} is a lake at schema version 6, its data in {tmp_path / 'data'}/.\n"


@pytest.mark.lake
def test_a_data_path_that_cannot_be_written_is_named(tmp_path, runner):
    url = new_catalog(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = invoke(runner, url, "init", "--data-path", str(blocker / "data"))
    assert result.exit_code == 1
    assert (
        result.output.strip() == f"Error: {url}: the data path {blocker / 'data'} cannot be written (Not a directory)"
    )


@pytest.mark.lake
def test_an_unreachable_catalog_is_named(tmp_path, runner, dead_address):
    host, port = dead_address.rsplit(":", 1)
    url = f"ducklake:postgres:dbname=lab host={host} port={port} user=nobody connect_timeout=5"
    result = invoke(runner, url, "runs")
    assert result.exit_code == 1
    line = result.output.strip()
    assert line.startswith(f"Error: {url}: cannot reach the catalog's PostgreSQL server (")
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.lake
def test_a_wrong_password_is_named_and_never_shown(tmp_path, runner):
    spec = postgres()
    if spec is None:
        pytest.skip("a password needs a PostgreSQL catalog")
    from lake_support import conninfo

    url = new_catalog(tmp_path)  # made by the tests' role; the role with a password (tests/lake/start.sh) logs in
    user, password = "ood_pw", "pw-" + "7d41"
    wrong = f"ducklake:postgres:{conninfo(url.removeprefix('ducklake:postgres:'), user=user)} password=nope"
    result = invoke(runner, wrong, "runs")
    assert result.exit_code == 1
    assert "refused the login" in result.output and "nope" not in result.output, result.output
    right = f"ducklake:postgres:{conninfo(url.removeprefix('ducklake:postgres:'), user=user)} password={password}"
    made = invoke(runner, right, "init", "--data-path", str(tmp_path / "data"))
    assert made.exit_code == 0 and password not in made.output, made.output
    shown = invoke(runner, right, "query", "SELECT path FROM duckdb_databases() WHERE path IS NOT NULL", "-f", "csv")
    assert shown.exit_code == 0 and password not in shown.output, shown.output


@pytest.mark.lake
def test_a_read_only_role_reads_and_its_writes_are_refused_in_one_line(tmp_path, runner):
    spec = postgres()
    if spec is None:
        pytest.skip("roles need a PostgreSQL catalog")
    from lake_support import conninfo

    url = new_lake(tmp_path)
    with ood_store.open(url) as store:
        assert store.ingest(pythia_files("160m")).ok
        before = store.snapshots().height
    reader = "ducklake:postgres:" + conninfo(url.removeprefix("ducklake:postgres:"), user="ood_reader")
    runs = invoke(runner, reader, "runs", "-f", "csv")
    assert runs.exit_code == 0, runs.output
    assert len(runs.stdout.strip().splitlines()) == 2  # a header and the one run
    refused = invoke(runner, reader, "ingest", str(pythia_files("410m")[0]))
    assert refused.exit_code == 1
    assert refused.output.strip().splitlines() == [
        f"Error: {reader}: the catalog refused to write (cannot execute INSERT in a read-only transaction): "
        "this role may only read the lake"
    ]
    with ood_store.open(url, read_only=True) as store:
        assert store.snapshots().height == before
        assert store.query("SELECT count(*) AS n FROM evaluations")["n"][0] == len(pythia_files("160m"))


@pytest.mark.lake
def test_bad_catalogs_and_data_paths_are_named_in_one_line(tmp_path, runner):
    from lake_support import require_extension

    require_extension()
    missing = tmp_path / "no-such-folder" / "lab.sqlite"
    result = invoke(runner, f"ducklake:sqlite:{missing}", "init", "--data-path", str(tmp_path / "data"))
    assert result.exit_code == 1 and not missing.parent.exists()
    assert result.output == f"Error: ducklake:sqlite:{missing}: the catalog's folder {missing.parent} does not exist\n"
    garbled = "ducklake:postgres:dbname=lab bogus=1 password=hush-7d41"
    result = invoke(runner, garbled, "runs")
    assert result.exit_code == 1
    assert result.output == (
        "Error: ducklake:postgres:dbname=lab bogus=1 password=***: not a PostgreSQL connection string "
        '(libpq\'s key=value pairs): invalid connection option "bogus"\n'
    )
    url = new_lake(tmp_path)  # its data in tmp_path / "lake-data"
    before = invoke(runner, url, "snapshots", "-f", "csv").stdout
    moved = invoke(runner, url, "init", "--data-path", str(tmp_path / "elsewhere"))
    assert moved.exit_code == 1
    assert moved.output == (
        f"Error: {url}: the lake keeps its data in {tmp_path / 'lake-data'}/, not {tmp_path / 'elsewhere'}/: "
        "a lake's --data-path is set once, when it is created\n"
    )
    assert invoke(runner, url, "snapshots", "-f", "csv").stdout == before


@pytest.mark.lake
def test_a_lake_of_a_newer_ood_store_is_refused(tmp_path, runner):
    url = new_lake(tmp_path)
    with ood_store.open(url) as store:
        store.connection.execute("INSERT INTO schema_version VALUES (99, '0099_future.sql', now())")
    result = invoke(runner, url, "runs")
    assert result.exit_code == 1
    assert "schema version 99" in result.output and "upgrade ood-store" in result.output


@pytest.mark.lake
def test_snapshots_say_what_each_commit_added(tmp_path, runner):
    url = new_lake(tmp_path)
    first, second = pythia_files("160m")[:4], pythia_files("410m")[:3]
    with ood_store.open(url) as store:
        store.ingest(first)
        store.ingest(second)
    expected_rows = [len(expected_pythia_rows(files)) for files in (first, second)]
    result = invoke(runner, url, "snapshots", "-f", "json")
    rows = json.loads(result.output)
    ingests = [row for row in rows if row["command"] == "ingest"]
    assert [(row["files"], row["runs"], row["rows"]) for row in ingests] == [
        (4, 1, expected_rows[0]),
        (3, 1, expected_rows[1]),
    ]
    assert [row["snapshot"] for row in rows] == sorted(row["snapshot"] for row in rows)
    assert all(row["author"].endswith(")") for row in ingests)


@pytest.mark.lake
def test_export_at_a_snapshot_gives_the_same_bytes(tmp_path, runner):
    url = new_lake(tmp_path)
    with ood_store.open(url) as store:
        store.ingest(pythia_files("160m"))
    sql = "SELECT run, step, task, metric, value FROM scores ORDER BY ALL"
    first = tmp_path / "first.csv"
    assert invoke(runner, url, "export", "--sql", sql, "-o", str(first)).exit_code == 0
    saved = invoke(runner, url, "analyze", "--in-domain", PYTHIA_IN_DOMAIN, "--ood", ",".join(PYTHIA_OOD),
                   "--save", "early")  # fmt: skip
    assert saved.exit_code == 0, saved.output
    table = tmp_path / "table.tex"
    assert invoke(runner, url, "export", "--analysis", "early", "-o", str(table)).exit_code == 0
    snapshot = int(first.read_text().split("# snapshot: ")[1].split()[0])
    analysis_snapshot = int(table.read_text().split("% snapshot: ")[1].split()[0])
    with ood_store.open(url) as store:
        latest = store.snapshots()["snapshot"][-1]
        assert store.ingest(pythia_files("410m")).ok  # new runs arrive
    later = tmp_path / "later.csv"
    invoke(runner, url, "export", "--sql", sql, "-o", str(later))
    assert later.read_bytes() != first.read_bytes()
    again = tmp_path / "again.csv"
    result = invoke(runner, url, "export", "--sql", sql, "--at", str(snapshot), "-o", str(again))
    assert result.exit_code == 0, result.output
    assert again.read_bytes() == first.read_bytes()
    table_again = tmp_path / "table-again.tex"
    result = invoke(runner, url, "export", "--analysis", "early", "--at", str(latest), "-o", str(table_again))
    assert result.exit_code == 0, result.output
    assert table_again.read_bytes() == table.read_bytes()
    # the analysis itself remade from the snapshot it records
    remade = invoke(runner, url, "analyze", "--in-domain", PYTHIA_IN_DOMAIN, "--ood", ",".join(PYTHIA_OOD),
                    "--at", str(analysis_snapshot), "-f", "csv")  # fmt: skip
    with ood_store.open(url, read_only=True) as store:
        saved_rows = store.analysis("early").table
    assert pl.read_csv(remade.stdout.encode())["r"].to_list() == saved_rows["r"].to_list()


@pytest.mark.lake
def test_the_past_cannot_be_written_and_a_file_has_no_past(tmp_path, runner):
    url = new_lake(tmp_path)
    result = invoke(runner, url, "analyze", "--in-domain", "x", "--ood", "y,z", "--at", "1", "--save", "n")
    assert result.exit_code == 2 and "--at reads the lake as it was" in result.output
    file_db = str(tmp_path / "s.duckdb")
    ood_store.open(file_db).close()
    result = invoke(runner, file_db, "export", "--sql", "SELECT 1", "--at", "1", "-f", "csv")
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"Error: {file_db}: a store file keeps no snapshots to go back to; --at needs a lake (ducklake:...)"
    )
    result = invoke(runner, url, "export", "--sql", "SELECT 1", "--at", "999", "-f", "csv")
    assert result.exit_code == 1 and "no snapshot 999" in result.output, result.output


def test_a_file_store_records_its_content_as_its_snapshot(tmp_path, runner):
    db = str(tmp_path / "s.duckdb")
    with ood_store.open(db) as store:
        store.ingest(pythia_files("160m")[:2])
        first = store.snapshot_marker()
        assert store.snapshot_marker() == first  # reading changes nothing
        store.ingest(pythia_files("160m")[2:4])
        second = store.snapshot_marker()
    assert first.startswith("content:") and second != first
    out = tmp_path / "t.csv"
    invoke(runner, db, "export", "--sql", "SELECT count(*) FROM scores", "-o", str(out))
    assert f"# snapshot: {second}" in out.read_text()


# -- many writers ---------------------------------------------------------------------------------------------
def _real_files() -> list[Path]:
    return sorted([*pythia_files(), *CAMPAIGNS.rglob("*.json")])


def _workers(n: int) -> list[subprocess.Popen]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
    workers = [subprocess.Popen([sys.executable, "-c", INGEST_WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True, env=env) for _ in range(n)]  # fmt: skip
    for worker in workers:
        assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
    return workers


@pytest.mark.lake
def test_eight_writers_store_every_file_once(tmp_path):
    url = new_lake(tmp_path, need_postgres=True)
    files = _real_files()
    assert len(files) >= 100
    # 8 processes x 25 files, overlapping windows: most files are given to two processes at once
    shares = [[files[(i * 15 + j) % len(files)] for j in range(25)] for i in range(8)]
    workers = _workers(8)
    for worker, share in zip(workers, shares, strict=True):
        assert worker.stdin is not None
        worker.stdin.write(json.dumps({"db": url, "files": [str(f) for f in share]}) + "\n")
        worker.stdin.flush()
    answers = []
    for worker in workers:
        assert worker.stdout is not None and worker.stdin is not None
        answers.append(json.loads(worker.stdout.readline()))
        worker.stdin.close()
        assert worker.wait(timeout=120) == 0
    assert all("error" not in a and not a["rejected"] for a in answers), answers
    given = sorted({f for share in shares for f in share})
    with ood_store.open(url, read_only=True) as store:
        hashes = store.query("SELECT content_hash, count(*) AS n FROM evaluations GROUP BY ALL")
        per_file = dict(store.query(
            "SELECT source_path, count(*) FROM evaluations e JOIN evaluation_scores s USING (evaluation_id) "
            "GROUP BY ALL"
        ).rows())  # fmt: skip
    import hashlib

    expected_hashes = {hashlib.sha256(f.read_bytes()).hexdigest() for f in given}
    assert set(hashes["content_hash"]) == expected_hashes and set(hashes["n"]) == {1}
    assert sum(a["ingested"] for a in answers) == len(expected_hashes)
    for path in given:  # every score of every file: as many as the file holds
        counted = per_file.get(str(path.resolve()))
        if counted is not None:
            assert counted == _scores_in(path), path


def _scores_in(path: Path) -> int:
    doc = json.loads(path.read_text())
    return sum(
        1 for entry in doc["results"].values() for key in entry if not key.endswith("_stderr") and key != "alias"
    )


KILLER = """
import sys, ood_store
url, files = sys.argv[1], sys.argv[2:]
print("ready", flush=True)
with ood_store.open(url, lock_timeout=120) as store:
    for start in range(0, len(files), 3):
        store.ingest(files[start:start + 3])
"""


@pytest.mark.lake
def test_a_writer_killed_at_any_moment_leaves_each_file_absent_or_whole(tmp_path):
    url = new_lake(tmp_path)
    files = [str(f) for f in pythia_files("160m") + pythia_files("410m")]
    chooser = random.Random(20261206)
    for _ in range(6):
        writer = subprocess.Popen([sys.executable, "-c", KILLER, url, *files], stdout=subprocess.PIPE, text=True)
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        time.sleep(chooser.uniform(0.0, 2.5))
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
        _check_whole(url)
    with ood_store.open(url) as store:  # a last writer finishes what the killed ones left
        store.ingest(files)
    _check_whole(url)
    assert len(stored_scores(url)) == len(expected_pythia_rows([Path(f) for f in files]))
    data = tmp_path / "lake-data"
    with ood_store.open(url) as store:
        report = store.vacuum(0)
        listed = store.connection.execute("SELECT path FROM __ducklake_metadata_store.ducklake_data_file").fetchall()
        named = {Path(path).name for (path,) in listed}
    on_disk = {p.name for p in data.rglob("*.parquet")}
    assert on_disk == named, (report, sorted(on_disk - named))


def _check_whole(url: str) -> None:
    """Every evaluation stored holds every score of its file, once; the lake reads."""
    with ood_store.open(url, read_only=True) as store:
        rows = store.query(
            "SELECT e.source_path, count(s.task) AS n "
            "FROM evaluations e LEFT JOIN evaluation_scores s USING (evaluation_id) GROUP BY ALL"
        ).rows()  # fmt: skip
        twice = store.query("SELECT content_hash FROM evaluations GROUP BY ALL HAVING count(*) > 1").height
    assert twice == 0
    for path, n in rows:
        assert n == _scores_in(Path(path)), path


@pytest.mark.lake
def test_vacuum_keeps_the_snapshots_saved_analyses_name(tmp_path, runner):
    url = new_lake(tmp_path)
    with ood_store.open(url) as store:
        store.ingest(pythia_files("160m"))
    saved = invoke(runner, url, "analyze", "--in-domain", PYTHIA_IN_DOMAIN, "--ood", ",".join(PYTHIA_OOD),
                   "--save", "kept")  # fmt: skip
    assert saved.exit_code == 0
    with ood_store.open(url) as store:
        store.ingest(pythia_files("410m"))
        kept = store.analysis("kept").snapshot
        before = store.snapshots()["snapshot"].to_list()
        report = store.vacuum(0)
        after = store.snapshots()["snapshot"].to_list()
    assert kept in after and before[-1] in after
    assert sorted(set(before) - set(after)) == sorted(report.expired)
    result = invoke(runner, url, "analyze", "--in-domain", PYTHIA_IN_DOMAIN, "--ood", ",".join(PYTHIA_OOD),
                    "--at", str(kept), "-f", "csv")  # fmt: skip
    assert result.exit_code == 0, result.output
