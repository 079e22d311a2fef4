"""Prompt variants of the ood_nli suite: how they are written, named and rendered, and the display names."""

from __future__ import annotations

import pytest

from ood_store._cli import main
from ood_store._errors import InputError
from ood_store._evaluate.suite.variant import PATTERNS, Variant, parse_verbalizers


def test_the_default_variant_keeps_the_suites_names():
    assert Variant().task_name("ood_nli_snli") == "ood_nli_snli"
    assert Variant.of("ood-nli").key == ""
    assert Variant.of("{premise} Question: {hypothesis} Yes or No?", " Yes,No").key == ""  # the same, written out


def test_keys_name_what_differs_from_the_default():
    assert Variant.of("minimal").key == "minimal"
    assert Variant.of("{premise} {hypothesis} ?").key == "minimal"  # the text of a shipped pattern is that pattern
    assert Variant.of("eval-harness").verbalizers == (" True", " False")
    assert Variant.of("eval-harness", " Yes,No").key == "eval-harness__v-Yes-No"
    assert Variant.of("minimal", neutral="no").task_name("ood_nli_mnli") == "ood_nli_mnli__minimal__neutral-no"
    assert Variant.of(neutral="no").key == "neutral-no"
    custom = Variant.of("Q: {hypothesis}? Given: {premise}", ["\nyes", "\nno"])
    assert custom.key.startswith("p") and len(custom.key.split("__")) == 2
    assert custom.key.split("__")[1].startswith("v") and not custom.key.split("__")[1].startswith("v-")


def test_different_variants_never_share_a_key():
    variants = [
        Variant.of(p, v, n)
        for p in (*PATTERNS, "{premise} / {hypothesis}", "{premise} // {hypothesis}")
        for v in (None, " Yes,No", " True,False", " neutral,no", ["Yes", "No"], [" yes", " no"])
        for n in ("drop", "no")
    ]
    distinct = {(v.pattern, v.verbalizers, v.neutral) for v in variants}
    assert len({v.key for v in variants}) == len(distinct)


def test_verbalizers_are_written_with_their_leading_space():
    assert parse_verbalizers(" Yes,No") == (" Yes", " No")
    assert parse_verbalizers(" Yes, No") == (" Yes", " No")
    assert parse_verbalizers("Yes,No") == ("Yes", "No")
    assert parse_verbalizers([" Yes", "\nNo"]) == (" Yes", "\nNo")
    assert Variant.of("minimal").delimiter_and_choices() == (" ", ["Yes", "No"])
    assert Variant.of("minimal", [" Yes", "\nNo"]).delimiter_and_choices() == ("", [" Yes", "\nNo"])
    with pytest.raises(InputError, match=r"^verbalizer: expected two verbalizers"):
        parse_verbalizers(" Yes,No,Maybe")
    with pytest.raises(InputError, match=r"^verbalizer: the two verbalizers are the same: ' Yes'$"):
        Variant.of("minimal", " Yes,Yes")


@pytest.mark.parametrize(
    "pattern",
    [
        "{premise} {hypothesis} ?",
        "{premise}\nQuestion: {hypothesis} True or False?\nAnswer:\n",
        "{{premise}} is {premise}; {{% raw %}} {hypothesis} {{#",
        "100% {premise} #1 {hypothesis} {{}}",
    ],
)
def test_lm_evals_jinja_renders_the_pattern_as_str_format_fills_it(pattern):
    from lm_eval.utils import apply_template

    doc = {"premise": "A {{b}} c %} d", "hypothesis": "E {% f %} g"}
    assert apply_template(Variant.of(pattern).jinja(), doc) == pattern.format(**doc)


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (
            "{premise} {answer}",
            "pattern: '{premise} {answer}': unknown field {answer}; a pattern has {premise} and {hypothesis}",
        ),
        ("{premise} {hypothesis!r}", "pattern: '{premise} {hypothesis!r}': {hypothesis} takes no conversion or format"),
        ("{premise} only", "pattern: '{premise} only' has no {hypothesis}"),
        ("{premise {hypothesis}", "pattern: '{premise {hypothesis}': "),
        ("nonsense", "pattern: 'nonsense' is neither a shipped pattern (ood-nli, minimal, gpt-3, eval-harness)"),
    ],
)
def test_bad_patterns_are_one_line(pattern, message):
    with pytest.raises(InputError) as info:
        Variant.of(pattern)
    assert str(info.value).startswith(message)


def test_bad_variant_options_on_the_command_line(runner, tmp_path):
    (tmp_path / "ckpt").mkdir()
    base = ["--db", str(tmp_path / "s.duckdb"), "evaluate", str(tmp_path / "ckpt"), "--run", "r"]
    result = runner.invoke(main, [*base, "--tasks", "ood_nli", "--pattern", "{premise} {x}"])
    assert result.exit_code == 1
    assert result.output.startswith("Error: --pattern: '{premise} {x}': unknown field {x}")
    result = runner.invoke(main, [*base, "--tasks", "ood_nli", "--verbalizer", "Yes"])
    assert result.output.startswith("Error: --verbalizer: expected two verbalizers, entailed first")


def test_shipped_display_names_cover_every_task_and_shipped_pattern(runner, db):
    from ood_store._export import display

    names = display.names()
    assert names["ood_nli_snli"] == "SNLI"
    assert names["ood_nli_anli_r2"] == "ANLI-R2"
    assert names["ood_nli_hans__minimal"] == "HANS (minimal)"
    assert names["ood_nli_mnli__gpt-3__neutral-no"] == "MNLI (gpt-3, neutral as No)"
    assert names["ood_nli_hans_lexical_overlap_non_entailed"] == "HANS lexical overlap (N)"
    assert len(set(names.values())) == len(names)  # one display name per task: columns never merge
    assert display.names(["ood_nli_snli=snli (test)"])["ood_nli_snli"] == "snli (test)"  # overridden
    assert "ood_nli_snli" not in display.names(shipped=False)
    # export uses them unless told otherwise
    sql = "SELECT 'ood_nli_hans__minimal' AS task_x, 'ood_nli_mnli' AS task_y"
    runner.invoke(main, ["--db", str(db), "init"])
    shown = runner.invoke(main, ["--db", str(db), "export", "--sql", sql, "--format", "csv"])
    assert shown.output.splitlines()[-1] == "HANS (minimal),MNLI"
    renamed = runner.invoke(
        main, ["--db", str(db), "export", "--sql", sql, "--format", "csv", "--rename", "ood_nli_mnli=MultiNLI"]
    )
    assert renamed.output.splitlines()[-1] == "HANS (minimal),MultiNLI"
