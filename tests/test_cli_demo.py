"""ood-store demo: offline, on the bundled real Pythia files."""

from __future__ import annotations

import json
import zipfile
from importlib import resources

import ood_store
from conftest import PYTHIA, pythia_files
from ood_store.cli import main


def test_bundled_files_are_the_fixture_files():
    archive = resources.files("ood_store.examples").joinpath("pythia-v1.zip")
    with resources.as_file(archive) as path, zipfile.ZipFile(path) as zf:
        names = sorted(n for n in zf.namelist() if n.endswith(".json"))
        assert names == sorted(str(p.relative_to(PYTHIA.parent)) for p in pythia_files())
        for name in names[:5]:
            assert zf.read(name) == (PYTHIA.parent / name).read_bytes()


def test_demo_prints_lambada_accuracy_per_checkpoint(runner, tmp_path):
    db = tmp_path / "demo.duckdb"
    result = runner.invoke(main, ["--db", str(db), "demo"])
    assert result.exit_code == 0, result.output
    assert f"Store {db}: ingested 81 files (13,932 scores), 0 already present." in result.output
    lines = result.output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split() == ["step", "160m", "410m", "1.4b"])
    table = [line.split() for line in lines[header + 2 : header + 2 + 27]]
    expected = {}
    for path in pythia_files():
        doc = json.loads(path.read_text())
        args = doc["config"]["model_args"]
        size = args.split("pythia-v1.1-")[1].split(",")[0]
        step = int(args.rsplit("revision=step", 1)[1])
        expected.setdefault(step, {})[size] = round(doc["results"]["lambada_openai"]["acc"], 3)
    assert [int(row[0]) for row in table] == sorted(expected)
    for row in table:
        step = int(row[0])
        assert [float(v) for v in row[1:]] == [expected[step][s] for s in ("160m", "410m", "1.4b")]

    again = runner.invoke(main, ["--db", str(db), "demo"])
    assert "ingested 0 files (0 scores), 81 already present." in again.output
    with ood_store.open(db, read_only=True) as store:
        runs = store.query("SELECT run, family, size FROM runs ORDER BY run").rows()
    assert runs == [
        ("EleutherAI/pythia-v1.1-1.4b", "pythia", "1.4b"),
        ("EleutherAI/pythia-v1.1-160m", "pythia", "160m"),
        ("EleutherAI/pythia-v1.1-410m", "pythia", "410m"),
    ]


def test_demo_defaults_to_its_own_store(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OOD_STORE_DB", raising=False)
    result = runner.invoke(main, ["demo"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "ood-store-demo.duckdb").exists()
    assert not (tmp_path / "ood_store.duckdb").exists()
