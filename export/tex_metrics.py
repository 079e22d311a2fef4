"""How wide LaTeX sets the text of a table: Computer Modern at ``\\small`` of a 10 pt document (9 pt).

The widths are those of TeX Live's font metric files (cmr9, cmbx9 for bold,
cmsy9 and cmmi9 for the minus, braces, ``<`` and ``>``), in units of the
design size, as ``tests/fixtures/tex-metrics/make.py`` reads them with
``tftopl``. Kerning is left out: Computer Modern's kerns between the
characters of numbers and names are nil or negative, so the widths here are
never less than TeX's. Ligatures other than ``--`` (an en dash) are left out
too (``fi`` is narrower than ``f`` and ``i``), again erring wide.

:func:`width` reads the subset of LaTeX that :mod:`ood_store.export.tables`
writes: text with ``\\_ \\& \\% \\$ \\# \\{ \\}``, ``--``, ``$-$``, ``$<$``,
``\\textbf{...}``, ``\\rlap{...}`` (no width) and simple math such as
``$n_{\\mathrm{eff}}$`` (set as its letters: wide again).
"""

from __future__ import annotations

import re

SIZE = 9.0  # pt: \small in a 10 pt document
EM = 1.027771 * SIZE  # cmr9's quad: what 1em is in the table
TABCOLSEP = 6.0  # pt: LaTeX's default \tabcolsep
UNKNOWN = 0.6  # em: a character outside the table below (accented letters, symbols): about an "n" and a bit

TEXT = {
    'cmr9': (
        0.285492, 0.285492, 0.5138855, 0.856476, 0.5138855, 0.856476, 0.799377, 0.285492,
        0.399689, 0.399689, 0.5138855, 0.799377, 0.285492, 0.34259, 0.285492, 0.5138855,
        0.5138855, 0.5138855, 0.5138855, 0.5138855, 0.5138855, 0.5138855, 0.5138855, 0.5138855,
        0.5138855, 0.5138855, 0.285492, 0.285492, 0.285492, 0.799377, 0.485336, 0.485336,
        0.799377, 0.770674, 0.727927, 0.742279, 0.785026, 0.699378, 0.670829, 0.806477,
        0.770674, 0.370985, 0.528083, 0.799223, 0.64228, 0.941969, 0.770674, 0.799377,
        0.699378, 0.799377, 0.756476, 0.570984, 0.742279, 0.770674, 0.770674, 1.056166,
        0.770674, 0.770674, 0.628082, 0.285492, 0.5138855, 0.285492, 0.5138855, 0.285492,
        0.285492, 0.5138855, 0.570984, 0.456787, 0.570984, 0.457173, 0.314041, 0.5138855,
        0.570984, 0.285492, 0.314041, 0.542435, 0.285492, 0.856476, 0.570984, 0.5138855,
        0.570984, 0.542435, 0.402004, 0.405399, 0.399689, 0.570984, 0.542435, 0.742279,
        0.542435, 0.542435, 0.456787, 0.5138855, 1.027771, 0.5138855, 0.5138855,
    ),
    'cmbx9': (
        0.3287, 0.360182, 0.617588, 0.986099, 0.59166, 0.986099, 0.92036, 0.3287,
        0.460179, 0.460179, 0.59166, 0.92036, 0.3287, 0.39444, 0.3287, 0.59166,
        0.59166, 0.59166, 0.59166, 0.59166, 0.59166, 0.59166, 0.59166, 0.59166,
        0.59166, 0.59166, 0.3287, 0.3287, 0.360182, 0.92036, 0.55879, 0.55879,
        0.92036, 0.892892, 0.840886, 0.854619, 0.906627, 0.776533, 0.743664, 0.929928,
        0.924374, 0.446294, 0.610796, 0.925762, 0.7107935, 1.121593, 0.924374, 0.888877,
        0.808016, 0.888877, 0.886721, 0.657399, 0.823137, 0.908634, 0.892892, 1.221592,
        0.892892, 0.892892, 0.72314, 0.3287, 0.617588, 0.3287, 0.59166, 0.3287,
        0.3287, 0.575224, 0.657399, 0.52592, 0.657399, 0.5429735, 0.36157, 0.59166,
        0.657399, 0.3287, 0.36157, 0.624531, 0.3287, 0.986099, 0.657399, 0.59166,
        0.657399, 0.624529, 0.488115, 0.466755, 0.460179, 0.657399, 0.624531, 0.854619,
        0.624531, 0.624531, 0.52592, 0.59166, 1.183319, 0.59166, 0.59166,
    ),
}
MATH = {"minus": 0.799377, "lbrace": 0.5138855, "rbrace": 0.5138855, "less": 0.799377, "greater": 0.799377}
UNDERSCORE = 0.36  # em: LaTeX's \textunderscore, a kern of .06em and a rule of .3em

_TOKEN = re.compile(
    r"\\rlap\{(?:[^{}]|\{[^{}]*\})*\}"  # no width of its own
    r"|\\textbf\{(?P<bold>(?:[^{}]|\{[^{}]*\})*)\}"
    r"|\$(?P<math>[^$]*)\$"
    r"|\\(?P<command>[A-Za-z]+)(?:\{\})?"
    r"|\\(?P<escaped>.)"
    r"|(?P<dash>--)"
    r"|(?P<char>.)",
    re.DOTALL,
)
_MATH_SYMBOLS = {"-": "minus", "<": "less", ">": "greater", "\\{": "lbrace", "\\}": "rbrace"}
_COMMANDS = {"textbackslash": "\\", "textasciitilde": "~", "textasciicircum": "^"}


def width(latex: str, *, bold: bool = False) -> float:
    """The width in points of ``latex`` (one table cell) set in a 9 pt table."""
    total = 0.0
    for match in _TOKEN.finditer(latex):
        if match["bold"] is not None:
            total += width(match["bold"], bold=True)
        elif match["math"] is not None:
            total += _math(match["math"])
        elif match["command"] is not None:
            total += _char(_COMMANDS.get(match["command"], "n"), bold)
        elif match["escaped"] is not None:
            total += UNDERSCORE * EM if match["escaped"] == "_" else _char(match["escaped"], bold)
        elif match["dash"] is not None:
            total += _char("{", bold)  # OT1 puts the en dash where ASCII has "{"
        elif match["char"] is not None:
            total += _char(match["char"], bold)
    return total


def _char(char: str, bold: bool) -> float:
    code = ord(char)
    if char in "<>{}|_\\\"" or not 32 <= code < 127:  # not where OT1 has them, or not there at all
        return UNKNOWN * EM if char not in "{}" else MATH["lbrace"] * SIZE
    return TEXT["cmbx9" if bold else "cmr9"][code - 32] * SIZE


def _math(text: str) -> float:
    """Math as LaTeX sets it, roughly: symbols by their widths, sub- and superscripts as letters."""
    if text in _MATH_SYMBOLS:
        return MATH[_MATH_SYMBOLS[text]] * SIZE
    if text.startswith("^"):  # a superscript (the stars of a caption)
        return 0.7 * width(text.strip("^{}"))
    letters = re.sub(r"\\mathrm|[{}_^]", "", text)
    return width(letters)
