"""Prompt variants of the ood_nli suite: the pattern, the verbalizers and the neutral scheme of a run.

A checkpoint is evaluated with the pattern and verbalizers it was trained
with, and with the same treatment of the neutral class. A :class:`Variant`
holds those three; its :attr:`~Variant.key` is part of every task name it
evaluates (``ood_nli_snli__minimal``), so that two variants of one checkpoint
are two distinct scores, never a conflict, and the same variant always gets
the same names (evaluations resume). The default variant keeps the suite's
plain names (``ood_nli_snli``).

Patterns are written with ``{premise}`` and ``{hypothesis}`` (``{{`` and
``}}`` for literal braces). Verbalizers are the exact continuations scored
after the prompt, leading space included: ``(" Yes", " No")``, entailed first.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ood_store._errors import InputError
from ood_store._evaluate.suite.labels import NEUTRAL_SCHEMES
from ood_store._evaluate.suite.testsets import TESTSETS


@dataclass(frozen=True)
class Pattern:
    """A shipped pattern: its text, the verbalizers it goes with, and where it comes from."""

    text: str
    verbalizers: tuple[str, str]
    source: str


#: The shipped patterns, by name. The first is the default.
PATTERNS: dict[str, Pattern] = {
    "ood-nli": Pattern("{premise} Question: {hypothesis} Yes or No?", (" Yes", " No"), "the suite's own"),
    "minimal": Pattern("{premise} {hypothesis} ?", (" Yes", " No"), "Mosbach et al. 2023 (minimal)"),
    "gpt-3": Pattern(
        "{premise} question: {hypothesis} Yes or No? answer:",
        (" Yes", " No"),
        "Mosbach et al. 2023, after Brown et al. 2020 (GPT-3)",
    ),
    "eval-harness": Pattern(
        "{premise}\nQuestion: {hypothesis} True or False?\nAnswer:",
        (" True", " False"),
        "lm-eval's glue rte; Mosbach et al. 2023 (eval-harness)",
    ),
}
DEFAULT_PATTERN = "ood-nli"
FIELDS = ("premise", "hypothesis")
#: The keys of a ``[suite]`` table (run and study files): the variant's, and the run options that say how long a
#: prompt the model sees and which end of a longer one is cut (``max_length``, ``truncation``).
VARIANT_KEYS = ("pattern", "verbalizer", "neutral")
PROMPT_LENGTH_KEYS = ("max_length", "truncation")
SUITE_KEYS = (*VARIANT_KEYS, *PROMPT_LENGTH_KEYS)
_WORD = re.compile(r"^ [A-Za-z]+$")


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:8]


@dataclass(frozen=True)
class Variant:
    """One prompt variant: pattern, verbalizers (entailed first) and neutral scheme.

    Build it from user input with :meth:`of`; the fields are checked when it is made.
    """

    pattern: str = PATTERNS[DEFAULT_PATTERN].text
    verbalizers: tuple[str, str] = PATTERNS[DEFAULT_PATTERN].verbalizers
    neutral: str = "drop"

    def __post_init__(self) -> None:
        object.__setattr__(self, "verbalizers", tuple(self.verbalizers))
        _check_pattern(self.pattern)
        if len(self.verbalizers) != 2 or not all(isinstance(v, str) and v.strip() for v in self.verbalizers):
            raise InputError(
                None, None, f"expected two verbalizers (entailed, not entailed), got {self.verbalizers!r}",
                parameter="verbalizer",
            )  # fmt: skip
        if self.verbalizers[0] == self.verbalizers[1]:
            raise InputError(
                None, None, f"the two verbalizers are the same: {self.verbalizers[0]!r}", parameter="verbalizer"
            )
        if self.neutral not in NEUTRAL_SCHEMES:
            raise InputError(
                None, None, f"expected one of {', '.join(NEUTRAL_SCHEMES)}, got {self.neutral!r}", parameter="neutral"
            )

    @classmethod
    def of(
        cls,
        pattern: str | None = None,
        verbalizer: str | Sequence[str] | None = None,
        neutral: str | None = None,
    ) -> Variant:
        """A variant from user input; what is not given is the named pattern's (or the suite's) default.

        Parameters
        ----------
        pattern
            A shipped pattern's name (``minimal``, see :data:`PATTERNS`) or a
            pattern text with ``{premise}`` and ``{hypothesis}``.
        verbalizer
            Two verbalizers, entailed first: a pair such as ``[" Yes", " No"]``
            taken as written, or one text ``" Yes,No"`` whose leading
            whitespace goes before each (``"Yes,No"``: none).
        neutral
            ``drop`` (neutral rows of SNLI, MNLI and ANLI are left out) or
            ``no`` (they answer No, with contradictions).
        """
        text = PATTERNS[DEFAULT_PATTERN].text
        verbalizers = PATTERNS[DEFAULT_PATTERN].verbalizers
        if pattern is not None:
            if not isinstance(pattern, str) or not pattern.strip():
                raise InputError(None, None, "expected a pattern name or text", parameter="pattern")
            if pattern in PATTERNS:
                text, verbalizers = PATTERNS[pattern].text, PATTERNS[pattern].verbalizers
            elif "{" not in pattern:
                raise InputError(
                    None, None, f"{pattern!r} is neither a shipped pattern ({', '.join(PATTERNS)}) nor a pattern with "
                    "{premise} and {hypothesis}", parameter="pattern",
                )  # fmt: skip
            else:
                text = pattern
        if verbalizer is not None:
            verbalizers = parse_verbalizers(verbalizer)
        return cls(text, verbalizers, "drop" if neutral is None else neutral)

    @property
    def pattern_name(self) -> str | None:
        """The shipped pattern with this text, if any."""
        return next((name for name, p in PATTERNS.items() if p.text == self.pattern), None)

    @property
    def key(self) -> str:
        """What the variant adds to task names: ``""`` for the default, else e.g. ``minimal__neutral-no``.

        Made of the pattern's name (or ``p`` + a digest of a pattern of your
        own), the verbalizers when they are not the pattern's own (``v-True-False``,
        or ``v`` + a digest), and the neutral scheme when it is not ``drop``.
        """
        name = self.pattern_name
        parts = []
        if name != DEFAULT_PATTERN:
            parts.append(name or "p" + _digest(self.pattern))
        own = PATTERNS[name or DEFAULT_PATTERN].verbalizers
        if self.verbalizers != own:
            words = all(_WORD.match(v) for v in self.verbalizers)
            parts.append(
                "v-" + "-".join(v.strip() for v in self.verbalizers) if words else "v" + _digest(*self.verbalizers)
            )
        if self.neutral != "drop":
            parts.append(f"neutral-{self.neutral}")
        return "__".join(parts)

    def task_name(self, testset: str) -> str:
        """The lm-eval task name of ``testset`` (``ood_nli_snli``) under this variant."""
        return f"{testset}__{self.key}" if self.key else testset

    def label(self) -> str:
        """A short description for display names: ``minimal, neutral as No`` (empty for the default)."""
        name = self.pattern_name
        parts = [] if name == DEFAULT_PATTERN else [name or f"pattern {self.key.split('__')[0]}"]
        if self.verbalizers != PATTERNS[name or DEFAULT_PATTERN].verbalizers:
            parts.append("/".join(v.strip() for v in self.verbalizers))
        if self.neutral == "no":
            parts.append("neutral as No")
        return ", ".join(parts)

    def describe(self) -> str:
        """One line for people: ``minimal '{premise} {hypothesis} ?' -> ' Yes' / ' No', neutral rows dropped``."""
        name = self.pattern_name
        shown = f"{name} {self.pattern!r}" if name else repr(self.pattern)
        neutral = "neutral rows dropped" if self.neutral == "drop" else "neutral rows answer no"
        task = self.task_name("ood_nli_*")
        return f"{shown} -> {self.verbalizers[0]!r} / {self.verbalizers[1]!r}, {neutral} (tasks {task})"

    def delimiter_and_choices(self) -> tuple[str, list[str]]:
        """lm-eval's ``target_delimiter`` (the verbalizers' shared leading whitespace) and ``doc_to_choice``."""
        first, second = self.verbalizers
        width = 0
        while width < min(len(first), len(second)) and first[width] == second[width] and first[width].isspace():
            width += 1
        return first[:width], [first[width:], second[width:]]

    def jinja(self) -> str:
        """The pattern as an lm-eval ``doc_to_text`` (Jinja) template; literal text is kept verbatim."""
        out = []
        for literal, field, _, _ in string.Formatter().parse(self.pattern):
            if literal:
                out.append("{% raw %}" + literal + "{% endraw %}" if any(c in literal for c in "{}%#") else literal)
            if field is not None:
                out.append("{{" + field + "}}")
        return "".join(out)

    def fill(self, premise: str, hypothesis: str) -> str:
        """The prompt of one pair (what lm-eval renders from :meth:`jinja`)."""
        return self.pattern.format(premise=premise, hypothesis=hypothesis)

    def record(self) -> dict[str, Any]:
        """Everything that defines the variant, as recorded in lm-eval's results files and the store."""
        return {
            "key": self.key,
            "pattern": self.pattern,
            "pattern_name": self.pattern_name,
            "verbalizers": list(self.verbalizers),
            "neutral": self.neutral,
        }


def _check_pattern(pattern: str) -> None:
    if not isinstance(pattern, str) or not pattern.strip():
        raise InputError(None, None, "the pattern is empty", parameter="pattern")
    try:
        fields = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(pattern) if f is not None]
    except ValueError as exc:  # an unmatched brace
        raise InputError(
            None, None, f"{pattern!r}: {exc} (write literal braces as {{{{ and }}}})", parameter="pattern"
        ) from None
    for name, spec, conversion in fields:
        if name not in FIELDS:
            raise InputError(
                None, None, f"{pattern!r}: unknown field {{{name}}}; a pattern has {{premise}} and {{hypothesis}}",
                parameter="pattern",
            )  # fmt: skip
        if spec or conversion:
            raise InputError(None, None, f"{pattern!r}: {{{name}}} takes no conversion or format", parameter="pattern")
    if "hypothesis" not in {name for name, _, _ in fields}:
        raise InputError(None, None, f"{pattern!r} has no {{hypothesis}}", parameter="pattern")


def parse_verbalizers(value: str | Sequence[str]) -> tuple[str, str]:
    """``" Yes,No"`` -> ``(" Yes", " No")`` (the leading whitespace goes before each); a pair as written."""
    if isinstance(value, str):
        prefix = value[: len(value) - len(value.lstrip())]
        items = [prefix + item.strip() for item in value.split(",")]
    else:
        items = list(value)
    if len(items) != 2 or not all(isinstance(v, str) and v.strip() for v in items):
        raise InputError(
            None, None, f"expected two verbalizers, entailed first, such as ' Yes,No', got {value!r}",
            parameter="verbalizer",
        )  # fmt: skip
    return items[0], items[1]


def from_run_file(path: str | Path) -> dict[str, Any]:
    """The ``[suite]`` table of a run file: ``pattern``, ``verbalizer`` and ``neutral`` as given there, and the
    run options ``max_length`` and ``truncation`` (checked) where it gives them."""
    from ood_store._evaluate.options import check
    from ood_store._store.runs import load_run_file

    table = load_run_file(path).get("suite")
    if table is None:
        return {}
    if not isinstance(table, Mapping):
        raise InputError(str(path), "suite", f"expected a table: [suite] with {', '.join(SUITE_KEYS)}")
    unknown = sorted(set(table) - set(SUITE_KEYS))
    if unknown:
        raise InputError(str(path), f"suite.{unknown[0]}", f"unknown key (a [suite] table has {', '.join(SUITE_KEYS)})")
    try:
        Variant.of(**{k: v for k, v in table.items() if k in VARIANT_KEYS})
        for key in PROMPT_LENGTH_KEYS:
            check(key, table.get(key))
    except InputError as exc:
        raise InputError(str(path), f"suite.{exc.parameter}", exc.message) from None
    return dict(table)


def variant_of(*settings: Mapping[str, Any]) -> Variant | None:
    """The variant that ``pattern``/``verbalizer``/``neutral`` settings make, later ones winning (None: none given).

    For a run file's ``[suite]`` table (:func:`from_run_file`) overridden by
    options given for one evaluation; a setting given as None is not given.
    """
    merged = {k: v for table in settings for k, v in table.items() if v is not None}
    return Variant.of(**merged) if merged else None


def display_names() -> dict[str, str]:
    """Display names of the suite's tasks under the default and every shipped pattern, both neutral schemes.

    ``ood_nli_snli`` -> ``SNLI``, ``ood_nli_snli__minimal`` -> ``SNLI (minimal)``,
    ``ood_nli_snli__minimal__neutral-no`` -> ``SNLI (minimal, neutral as No)``.
    """
    names = {}
    for name in PATTERNS:
        for neutral in NEUTRAL_SCHEMES:
            variant = Variant.of(name, neutral=neutral)
            label = variant.label()
            for testset in TESTSETS.values():
                names[variant.task_name(testset.name)] = f"{testset.display} ({label})" if label else testset.display
    return names
