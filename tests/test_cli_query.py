"""ood-store query: read-only SQL with table, csv, json, jsonl, markdown, latex and parquet output."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import ood_store
from conftest import pythia_files, table_dump
from ood_store._cli import main

SQL = "SELECT step, value FROM scores WHERE task = 'arc_easy' AND metric = 'acc' ORDER BY step"


@pytest.fixture(scope="module")
def store_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("query") / "store.duckdb"
    with ood_store.open(db) as store:
        assert store.ingest(pythia_files("160m")).ok
    return db


@pytest.fixture(scope="module")
def arc_easy():
    """(step, acc) of arc_easy for Pythia 160m, read from the files."""
    rows = []
    for path in pythia_files("160m"):
        doc = json.loads(path.read_text())
        step = int(doc["config"]["model_args"].rsplit("revision=step", 1)[1])
        rows.append((step, doc["results"]["arc_easy"]["acc"]))
    return sorted(rows)


def invoke(runner, db, *args, **kwargs):
    result = runner.invoke(main, ["--db", str(db), "query", *args], **kwargs)
    assert "Traceback" not in result.output
    return result


def test_csv(runner, store_db, arc_easy):
    result = invoke(runner, store_db, SQL, "--format", "csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.output)))
    assert rows[0] == ["step", "value"]
    assert [(int(s), float(v)) for s, v in rows[1:]] == arc_easy


def test_json_and_jsonl(runner, store_db, arc_easy):
    result = invoke(runner, store_db, SQL, "-f", "json")
    assert json.loads(result.output) == [{"step": s, "value": v} for s, v in arc_easy]
    result = invoke(runner, store_db, SQL, "-f", "jsonl")
    assert [json.loads(line) for line in result.output.splitlines()] == [{"step": s, "value": v} for s, v in arc_easy]


def test_table_is_the_default(runner, store_db, arc_easy):
    result = invoke(runner, store_db, SQL)
    lines = result.output.splitlines()
    assert lines[0].split() == ["step", "value"]
    assert set(lines[1]) <= {"-", " "}
    assert len(lines) == 2 + len(arc_easy)
    step, value = lines[2 + 10].split()
    assert (int(step), float(value)) == pytest.approx(arc_easy[10], rel=1e-5)


def test_markdown(runner, store_db, arc_easy):
    result = invoke(runner, store_db, SQL, "--format", "markdown")
    lines = result.output.splitlines()
    assert lines[0].replace(" ", "") == "|step|value|"
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    assert [int(s) for s, _ in cells] == [s for s, _ in arc_easy]
    assert [float(v) for _, v in cells] == pytest.approx([v for _, v in arc_easy], rel=1e-5)


def test_latex(runner, store_db):
    result = invoke(
        runner, store_db, "SELECT DISTINCT task FROM scores WHERE task LIKE 'arc%' ORDER BY task", "-f", "latex"
    )
    text = result.output
    assert "\\toprule" in text and "\\midrule" in text and "\\bottomrule" in text
    assert "arc\\_challenge" in text and "arc\\_easy" in text  # underscores escaped
    assert text.index("\\begin{tabular}") < text.index("\\end{tabular}")


def test_parquet_needs_an_output_file(runner, store_db, tmp_path, arc_easy):
    result = invoke(runner, store_db, SQL, "--format", "parquet")
    assert result.exit_code == 2
    assert "--format parquet writes a binary file: give it one with -o FILE" in result.output
    out = tmp_path / "arc.parquet"
    result = invoke(runner, store_db, SQL, "--format", "parquet", "-o", str(out))
    assert result.exit_code == 0
    assert pl.read_parquet(out).rows() == arc_easy
    # as export and plot do, it says what it wrote (on standard error: standard output stays the data's)
    assert result.stderr == f"Wrote {len(arc_easy)} rows as parquet to {out}.\n" and result.stdout == ""


def test_one_row_written_is_said_so(runner, store_db, tmp_path):
    out = tmp_path / "one.csv"
    result = invoke(runner, store_db, "SELECT 1 AS a", "-o", str(out))
    assert (result.exit_code, result.stderr) == (0, f"Wrote 1 row as csv to {out}.\n")
    assert out.read_text() == "a\n1\n"


def test_output_file_for_text_formats(runner, store_db, tmp_path, arc_easy):
    out = tmp_path / "arc.csv"
    assert invoke(runner, store_db, SQL, "-f", "csv", "-o", str(out)).exit_code == 0
    assert pl.read_csv(out).rows() == arc_easy


def test_named_parameters(runner, store_db, arc_easy):
    result = invoke(
        runner,
        store_db,
        "SELECT value FROM scores WHERE task = $task AND metric = 'acc' AND step = $step",
        "-p",
        "task",
        "arc_easy",
        "-p",
        "step",
        str(arc_easy[3][0]),
        "-f",
        "json",
    )
    assert json.loads(result.output) == [{"value": arc_easy[3][1]}]


def test_sql_from_stdin(runner, store_db, arc_easy):
    result = invoke(runner, store_db, "-", "-f", "csv", input=SQL)
    assert result.exit_code == 0 and len(result.output.splitlines()) == 1 + len(arc_easy)


def test_pivot_is_allowed(runner, store_db):
    result = invoke(
        runner,
        store_db,
        "PIVOT (SELECT step, task, value FROM scores WHERE metric = 'acc' AND task IN ('arc_easy', 'piqa')) "
        "ON task USING first(value) ORDER BY step",
        "-f",
        "json",
    )
    rows = json.loads(result.output)
    assert len(rows) == 27 and set(rows[0]) == {"step", "arc_easy", "piqa"}


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        ("INSERT INTO runs (run, attributes, created_at) VALUES ('x', '{}', now())", "INSERT"),
        ("UPDATE evaluation_scores SET value = 0", "UPDATE"),
        ("DELETE FROM evaluations", "DELETE"),
        ("CREATE TABLE t AS SELECT 1", "CREATE"),
        ("DROP VIEW scores", "DROP"),
        ("COPY (SELECT 1) TO 'x.csv'", "COPY"),
        ("ATTACH 'other.duckdb'", "ATTACH"),
        ("CHECKPOINT", "CALL"),
        ("SET threads = 1", "SET"),
    ],
)
def test_writes_are_refused(runner, store_db, sql, kind):
    before = table_dump(store_db)
    result = invoke(runner, store_db, sql)
    assert result.exit_code == 1
    assert result.output == (
        f"Error: queries are read-only: {kind} statements are not allowed (add data with `ood-store ingest`)\n"
    )
    assert table_dump(store_db) == before


@pytest.mark.parametrize("sql", ["", "  ;  ", "/* only a comment */"])
def test_no_statement(runner, store_db, sql):
    result = invoke(runner, store_db, sql)
    assert (result.exit_code, result.output) == (1, "Error: no SQL statement given\n")


@pytest.mark.parametrize("comment", ["/* why */", "-- why\n"])
def test_explain_analyze_with_a_comment_runs(runner, store_db, comment):
    result = invoke(runner, store_db, f"EXPLAIN ANALYZE {comment} SELECT 1", "-f", "csv")
    assert result.exit_code == 0 and result.output.startswith("explain_key,explain_value\nanalyzed_plan,")
    refused = invoke(runner, store_db, f"EXPLAIN ANALYZE {comment} DELETE FROM runs")
    assert refused.exit_code == 1 and "EXPLAIN of DELETE statements is not allowed" in refused.output


def test_one_statement_at_a_time(runner, store_db):
    result = invoke(runner, store_db, "SELECT 1; DROP TABLE runs")
    assert result.exit_code == 1 and result.output == "Error: expected one SQL statement, got 2\n"


def test_sql_errors_are_reported_without_traceback(runner, store_db):
    result = invoke(runner, store_db, "SELEC 1")  # one line, DuckDB's LINE 1 in brackets, its ^^^ line left out
    assert (result.exit_code, result.output) == (
        1,
        'Error: Parser Error: syntax error at or near "SELEC" (LINE 1: SELEC 1)\n',
    )
    result = invoke(runner, store_db, "SELECT * FROM nope")
    assert result.exit_code == 1 and result.output.startswith(
        "Error: Catalog Error: Table with name nope does not exist"
    )
    result = invoke(runner, store_db, "SELECT $missing")
    assert result.exit_code == 1 and "missing" in result.output


def test_missing_store(runner, tmp_path):
    db = tmp_path / "none.duckdb"
    result = invoke(runner, db, "SELECT 1")
    assert result.exit_code == 1
    assert result.output == f"Error: {db}: no store here; create one with `ood-store init` or `ood-store ingest`\n"
    assert not db.exists()


def test_not_a_duckdb_file(runner, tmp_path):
    db = tmp_path / "results.json"
    db.write_text('{"results": {}}' * 10)
    result = invoke(runner, db, "SELECT 1")
    assert result.exit_code == 1 and result.output == f"Error: {db}: not a DuckDB database file\n"


@pytest.mark.parametrize("command", [["query", "SELECT 1"], ["ingest", str(pythia_files("160m")[0])]])
@pytest.mark.parametrize("which", ["fifo", "device"])
def test_a_store_path_that_is_not_a_regular_file(tmp_path, command, which):
    """A FIFO given as the store would make DuckDB wait for a writer forever; /dev/null is not an empty store."""
    if which == "fifo":
        db, what = tmp_path / "store.duckdb", "a FIFO"
        os.mkfifo(db)
    else:
        db, what = Path(os.devnull), "a character device"
    ood_store_command = Path(sys.executable).parent / "ood-store"
    result = subprocess.run(
        [ood_store_command, "--db", str(db), *command], capture_output=True, text=True, timeout=120, check=False
    )
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"Error: {db}: not a regular file ({what}), so not a store file\n"


def test_db_from_environment(runner, store_db, arc_easy):
    result = runner.invoke(main, ["query", SQL, "-f", "csv"], env={"OOD_STORE_DB": str(store_db)})
    assert result.exit_code == 0 and len(result.output.splitlines()) == 1 + len(arc_easy)


def test_python_api_refuses_writes_too(store_db):
    with ood_store.open(store_db) as store:
        with pytest.raises(ood_store.QueryError, match="DELETE statements are not allowed"):
            store.query("DELETE FROM runs")
        assert store.query("SELECT count(*) AS n FROM runs")["n"][0] == 1


def test_output_into_a_missing_folder(runner, store_db, tmp_path):
    out = tmp_path / "no" / "such" / "x.csv"
    result = invoke(runner, store_db, SQL, "-f", "csv", "-o", str(out))
    assert (result.exit_code, result.output) == (1, f"Error: {out}: cannot write: No such file or directory\n")


def test_types_polars_cannot_hold_come_back_as_duckdb_text(runner, store_db):
    """e.g. date - lag(date) is an INTERVAL; BLOB prints as hex in text formats."""
    sql = (
        "SELECT INTERVAL 1 DAY AS i, [INTERVAL 2 HOUR] AS li, union_value(k := 1) AS u, "
        "'12:00:00+01'::TIMETZ AS t, '1010'::BIT AS bit, 'ab'::BLOB AS b, 3 AS \"odd \"\"name\"\"\""
    )
    result = invoke(runner, store_db, sql, "-f", "json")
    assert result.exit_code == 0, result.output
    import duckdb

    con = duckdb.connect()
    i, li, u, t, bit = con.execute(
        "SELECT (INTERVAL 1 DAY)::VARCHAR, ([INTERVAL 2 HOUR])::VARCHAR, (union_value(k := 1))::VARCHAR, "
        "('12:00:00+01'::TIMETZ)::VARCHAR, ('1010'::BIT)::VARCHAR"
    ).fetchall()[0]
    assert json.loads(result.output) == [
        {"i": i, "li": li, "u": u, "t": t, "bit": bit, "b": b"ab".hex(), 'odd "name"': 3}
    ]
    assert bit == "1010" and i == "1 day"
    for fmt in ("table", "csv", "markdown", "latex"):
        assert invoke(runner, store_db, sql, "-f", fmt).exit_code == 0


def test_csv_holds_lists_and_structs_as_json(runner, store_db, tmp_path):
    # score_conflicts has list columns (evaluation_ids, value_list, source_paths): CSV cannot hold them raw.
    result = invoke(runner, store_db, "SELECT 1 AS a, [1, 2] AS l, {'x': 2, 'y': ['b', NULL]} AS s", "-f", "csv")
    assert result.exit_code == 0, result.output
    [row] = list(csv.DictReader(io.StringIO(result.output)))
    assert row == {"a": "1", "l": "[1,2]", "s": '{"x":2,"y":["b",null]}'}
    assert json.loads(row["s"]) == {"x": 2, "y": ["b", None]}
    result = invoke(runner, store_db, "SELECT * FROM score_conflicts", "-f", "csv")
    assert result.exit_code == 0 and result.output.startswith("run,step,task,")


def test_the_format_follows_the_output_extension(runner, store_db, tmp_path, arc_easy):
    for name, read in (
        ("a.csv", lambda p: pl.read_csv(p)),
        ("a.parquet", pl.read_parquet),
        ("a.jsonl", pl.read_ndjson),
    ):
        out = tmp_path / name
        assert invoke(runner, store_db, SQL, "-o", str(out)).exit_code == 0
        assert read(out).rows() == arc_easy, name
    result = invoke(runner, store_db, SQL, "-o", str(tmp_path / "a.docx"))
    assert result.exit_code == 1 and "a.docx: cannot tell the format from the extension" in result.output


def test_query_latex_is_the_export_table(runner, store_db):
    sql = "SELECT step, round(value, 4) AS value FROM scores WHERE task = 'arc_easy' AND metric = 'acc' AND step = 1000"
    printed = invoke(runner, store_db, sql, "-f", "latex").output
    exported = runner.invoke(main, ["--db", str(store_db), "export", "--sql", sql]).output
    assert printed == "\n".join(line for line in exported.splitlines() if not line.startswith("%")) + "\n"
