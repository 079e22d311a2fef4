"""ood-store demo: the toy finetune-and-evaluate run, and --pythia on the bundled real Pythia files; offline."""

from __future__ import annotations

import json
import zipfile
from importlib import resources

import pandas as pd
import pingouin as pg
import pytest

import ood_store
from conftest import PYTHIA, pythia_files
from ood_store._cli import main


def test_bundled_files_are_the_fixture_files():
    archive = resources.files("ood_store._examples").joinpath("pythia-v1.zip")
    with resources.as_file(archive) as path, zipfile.ZipFile(path) as zf:
        names = sorted(n for n in zf.namelist() if n.endswith(".json"))
        assert names == sorted(str(p.relative_to(PYTHIA.parent)) for p in pythia_files())
        for name in names[:5]:
            assert zf.read(name) == (PYTHIA.parent / name).read_bytes()


def test_demo_prints_lambada_accuracy_per_checkpoint(runner, tmp_path):
    db = tmp_path / "demo.duckdb"
    result = runner.invoke(main, ["--db", str(db), "demo", "--pythia"])
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

    again = runner.invoke(main, ["--db", str(db), "demo", "--pythia"])
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
    result = runner.invoke(main, ["demo", "--pythia"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "ood-store-demo.duckdb").exists()
    assert not (tmp_path / "ood_store.duckdb").exists()


def test_toy_demo_finetunes_evaluates_and_shows_the_scores(runner, tmp_path):
    db, workdir = tmp_path / "demo.duckdb", tmp_path / "work"
    result = runner.invoke(main, ["--db", str(db), "demo", "--workdir", str(workdir)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("A TOY run, to show the workflow, not to measure anything")
    assert "evaluated 9 of 9 checkpoints" in result.output
    assert "ood-store finetune --base-model facebook/opt-125m --in-domain mnli --pattern minimal" in result.output
    assert "ood-store evaluate --study runs/study.toml" in result.output
    # The checkpoints are ood-store finetune's, listed in the study file it wrote for evaluate.
    import tomllib

    written = tomllib.loads((workdir / "runs" / "study.toml").read_text())
    [run] = written["runs"]
    assert run["run"] == "toy-gpt2-nli-s0"
    assert run["checkpoints"] == [f"toy-gpt2-nli-s0/checkpoint-{s}" for s in range(0, 49, 6)]
    # The printed table against lm-eval's own results files of each checkpoint.
    lines = result.output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["step", "toy_nli"])
    tasks = lines[header].split()[1:]
    assert tasks == ["toy_nli", "toy_ood_long", "toy_ood_never", "toy_ood_reported"]
    table = {int(row.split()[0]): [float(v) for v in row.split()[1:]] for row in lines[header + 2 : header + 11]}
    expected, exact = {}, {}
    for path in (workdir / "lm-eval-results").glob("*/step-*/*/*/results_*.json"):  # RUN/step-N/UNIT/MODEL/
        step = int(path.parents[2].name.removeprefix("step-"))
        results = json.loads(path.read_text())["results"]
        expected[step] = [round(results[t]["acc,none"], 3) for t in tasks]
        exact[step] = [results[t]["acc,none"] for t in tasks]
    assert table == expected
    assert sorted(expected) == [0, 6, 12, 18, 24, 30, 36, 42, 48]
    # The partial-correlation table against pingouin on lm-eval's own numbers.
    start = next(i for i, line in enumerate(lines) if line.split()[:3] == ["run", "task_x", "task_y"])
    printed = {tuple(row.split()[1:3]): float(row.split()[4]) for row in lines[start + 2 : start + 5]}
    frame = pd.DataFrame.from_dict(exact, orient="index", columns=tasks)
    for (x, y), r in printed.items():
        reference = pg.partial_corr(frame, x=x, y=y, covar="toy_nli")["r"].iloc[0]
        assert r == pytest.approx(float(f"{reference:.3g}"), abs=1e-12), (x, y)
    assert len(printed) == 3
    assert len((workdir / "tasks" / "toy_nli.jsonl").read_text().splitlines()) == 100

    again = runner.invoke(main, ["--db", str(db), "demo", "--workdir", str(workdir)])
    assert "Reused the toy checkpoints" in again.output
    assert "evaluated 0 of 9 checkpoints" in again.output
    with ood_store.open(db, read_only=True) as store:
        assert store.query("SELECT run, family, in_domain_task FROM runs").rows() == [
            ("toy-gpt2-nli-s0", "toy-gpt2", "toy_nli")
        ]
        assert store.query("SELECT count(*) FROM evaluations").rows() == [(9,)]
    # The figure at the end of the study: the demo's own next steps, as it prints them, draw it from this store.
    figure = tmp_path / "toy-curves.png"
    steps = [line.split(maxsplit=1)[1] for line in result.output.splitlines() if "--analysis toy" in line
             or "--save toy" in line]  # fmt: skip
    assert [s.split()[2:4] for s in steps] == [["analyze", "--in-domain"], ["plot", "curves"], ["export", "--analysis"]]
    for step in steps[:2]:
        args = step.split()
        if args[2] == "plot":
            args[args.index("-o") + 1] = str(figure)
        drawn = runner.invoke(main, args)
        assert drawn.exit_code == 0, drawn.output
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
