"""How wide LaTeX sets the text of a table: Computer Modern at ``\\small`` of a 10 pt document (9 pt).

The widths are those of TeX Live's font metric files (cmr9, cmbx9 for bold,
cmr6 for sub- and superscripts, cmsy9 and cmmi9 for the minus, braces, ``<``,
``>`` and italic letters in math), in units of the design size, as
``tests/fixtures/tex-metrics/make.py`` reads them with ``tftopl``; a space
is the font's interword space. Kerning is left out: Computer Modern's kerns between the
characters of numbers and names are nil or negative, so the widths here are
never less than TeX's. Ligatures other than ``--`` (an en dash) are left out
too (``fi`` is narrower than ``f`` and ``i``), again erring wide.

:func:`width` reads the subset of LaTeX that :mod:`ood_store._export.tables`
writes: text with ``\\_ \\& \\% \\$ \\# \\{ \\}``, ``--``, ``$-$``, ``$<$``,
``\\textbf{...}``, ``\\rlap{...}`` (no width) and simple math such as
``$n_{\\mathrm{eff}}$`` (set as its letters: wide again).
"""

from __future__ import annotations

import re

SIZE = 9.0  # pt: \small in a 10 pt document
SCRIPT_SIZE = 6.0  # pt: sub- and superscripts of 9 pt math
SCRIPT_SPACE = (
    1.0  # pt: \scriptspace (0.5 pt) after each sub- or superscript, and about the italic correction before it
)
EM = 1.027771 * SIZE  # cmr9's quad: what 1em is in the table
TABCOLSEP = 6.0  # pt: LaTeX's default \tabcolsep
UNKNOWN = 0.6  # em: a character outside the table below (accented letters, symbols): about an "n" and a bit

TEXT = {
    "cmr9": (
        0.34259,
        0.285492,
        0.5138855,
        0.856476,
        0.5138855,
        0.856476,
        0.799377,
        0.285492,
        0.399689,
        0.399689,
        0.5138855,
        0.799377,
        0.285492,
        0.34259,
        0.285492,
        0.5138855,
        0.5138855,
        0.5138855,
        0.5138855,
        0.5138855,
        0.5138855,
        0.5138855,
        0.5138855,
        0.5138855,
        0.5138855,
        0.5138855,
        0.285492,
        0.285492,
        0.285492,
        0.799377,
        0.485336,
        0.485336,
        0.799377,
        0.770674,
        0.727927,
        0.742279,
        0.785026,
        0.699378,
        0.670829,
        0.806477,
        0.770674,
        0.370985,
        0.528083,
        0.799223,
        0.64228,
        0.941969,
        0.770674,
        0.799377,
        0.699378,
        0.799377,
        0.756476,
        0.570984,
        0.742279,
        0.770674,
        0.770674,
        1.056166,
        0.770674,
        0.770674,
        0.628082,
        0.285492,
        0.5138855,
        0.285492,
        0.5138855,
        0.285492,
        0.285492,
        0.5138855,
        0.570984,
        0.456787,
        0.570984,
        0.457173,
        0.314041,
        0.5138855,
        0.570984,
        0.285492,
        0.314041,
        0.542435,
        0.285492,
        0.856476,
        0.570984,
        0.5138855,
        0.570984,
        0.542435,
        0.402004,
        0.405399,
        0.399689,
        0.570984,
        0.542435,
        0.742279,
        0.542435,
        0.542435,
        0.456787,
        0.5138855,
        1.027771,
        0.5138855,
        0.5138855,
    ),
    "cmbx9": (
        0.39444,
        0.360182,
        0.617588,
        0.986099,
        0.59166,
        0.986099,
        0.92036,
        0.3287,
        0.460179,
        0.460179,
        0.59166,
        0.92036,
        0.3287,
        0.39444,
        0.3287,
        0.59166,
        0.59166,
        0.59166,
        0.59166,
        0.59166,
        0.59166,
        0.59166,
        0.59166,
        0.59166,
        0.59166,
        0.59166,
        0.3287,
        0.3287,
        0.360182,
        0.92036,
        0.55879,
        0.55879,
        0.92036,
        0.892892,
        0.840886,
        0.854619,
        0.906627,
        0.776533,
        0.743664,
        0.929928,
        0.924374,
        0.446294,
        0.610796,
        0.925762,
        0.7107935,
        1.121593,
        0.924374,
        0.888877,
        0.808016,
        0.888877,
        0.886721,
        0.657399,
        0.823137,
        0.908634,
        0.892892,
        1.221592,
        0.892892,
        0.892892,
        0.72314,
        0.3287,
        0.617588,
        0.3287,
        0.59166,
        0.3287,
        0.3287,
        0.575224,
        0.657399,
        0.52592,
        0.657399,
        0.5429735,
        0.36157,
        0.59166,
        0.657399,
        0.3287,
        0.36157,
        0.624531,
        0.3287,
        0.986099,
        0.657399,
        0.59166,
        0.657399,
        0.624529,
        0.488115,
        0.466755,
        0.460179,
        0.657399,
        0.624531,
        0.854619,
        0.624531,
        0.624531,
        0.52592,
        0.59166,
        1.183319,
        0.59166,
        0.59166,
    ),
}
SCRIPT = (
    0.416661,
    0.351848,
    0.611104,
    0.9999895,
    0.611104,
    0.9999895,
    0.935176,
    0.351848,
    0.481476,
    0.481476,
    0.611104,
    0.935176,
    0.351848,
    0.416661,
    0.351848,
    0.611104,
    0.611104,
    0.611104,
    0.611104,
    0.611104,
    0.611104,
    0.611104,
    0.611104,
    0.611104,
    0.611104,
    0.611104,
    0.351848,
    0.351848,
    0.351848,
    0.935176,
    0.578697,
    0.578697,
    0.935176,
    0.896286,
    0.850917,
    0.870361,
    0.91573,
    0.818509,
    0.786102,
    0.941658,
    0.896286,
    0.442586,
    0.624066,
    0.928693,
    0.7536955,
    1.090729,
    0.896286,
    0.935176,
    0.818509,
    0.935176,
    0.883324,
    0.675919,
    0.870361,
    0.896286,
    0.896286,
    1.220357,
    0.896286,
    0.896286,
    0.740733,
    0.351848,
    0.611104,
    0.351848,
    0.611104,
    0.351848,
    0.351848,
    0.611104,
    0.675919,
    0.54629,
    0.675919,
    0.546292,
    0.384254,
    0.611104,
    0.675919,
    0.351848,
    0.384254,
    0.643512,
    0.351848,
    0.9999895,
    0.675919,
    0.611104,
    0.675919,
    0.643512,
    0.481476,
    0.487958,
    0.481476,
    0.675919,
    0.643512,
    0.870361,
    0.643512,
    0.643512,
    0.54629,
    0.611104,
    1.222209,
    0.611104,
    0.611104,
)
MATH = {"minus": 0.799377, "lbrace": 0.5138855, "rbrace": 0.5138855, "less": 0.799377, "greater": 0.799377}
ITALIC = {
    "A": 0.770674,
    "B": 0.777715,
    "C": 0.733623,
    "D": 0.84751,
    "E": 0.756324,
    "F": 0.656246,
    "G": 0.804764,
    "H": 0.85015,
    "I": 0.449265,
    "J": 0.566279,
    "K": 0.870366,
    "L": 0.699378,
    "M": 0.992896,
    "N": 0.821601,
    "O": 0.782063,
    "P": 0.656208,
    "Q": 0.810612,
    "R": 0.777629,
    "S": 0.6278515,
    "T": 0.599572,
    "U": 0.699055,
    "V": 0.5993805,
    "W": 0.97052,
    "X": 0.848953,
    "Y": 0.596523,
    "Z": 0.699225,
    "a": 0.544479,
    "b": 0.44043,
    "c": 0.444942,
    "d": 0.53252,
    "e": 0.477814,
    "f": 0.49884,
    "g": 0.49008,
    "h": 0.592204,
    "i": 0.351688,
    "j": 0.420137,
    "k": 0.535106,
    "l": 0.306712,
    "m": 0.905474,
    "n": 0.619982,
    "o": 0.497528,
    "p": 0.515932,
    "q": 0.459217,
    "r": 0.463734,
    "s": 0.47878,
    "t": 0.37114,
    "u": 0.591433,
    "v": 0.499226,
    "w": 0.736589,
    "x": 0.582561,
    "y": 0.506169,
    "z": 0.478007,
}
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
            total += _math(match["math"].replace("^{***}", "").replace("^{**}", "").replace("^{*}", ""))
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
    if char in '<>{}|_\\"' or not 32 <= code < 127:  # not where OT1 has them, or not there at all
        return UNKNOWN * EM if char not in "{}" else MATH["lbrace"] * SIZE
    return TEXT["cmbx9" if bold else "cmr9"][code - 32] * SIZE


_MATH_TOKEN = re.compile(
    r"\\mathrm\{(?P<roman>[^{}]*)\}"
    r"|(?P<script>[_^])(?:\{(?P<group>(?:[^{}]|\{[^{}]*\})*)\}|(?P<single>.))"
    r"|(?P<char>.)"
)


def _math(text: str, size: float = SIZE) -> float:
    """Math as LaTeX sets it: italic letters, roman ``\\mathrm``, symbols, sub- and superscripts in 6 pt."""
    if text in _MATH_SYMBOLS:
        return MATH[_MATH_SYMBOLS[text]] * size
    script = size < SIZE
    total = 0.0
    for match in _MATH_TOKEN.finditer(text):
        if match["roman"] is not None:
            total += sum(_roman(c, script) for c in match["roman"])
        elif match["script"] is not None:
            total += _math(match["group"] if match["group"] is not None else match["single"], SCRIPT_SIZE)
            total += SCRIPT_SPACE
        elif match["char"] in ITALIC:
            total += ITALIC[match["char"]] * size * (1.1 if script else 1.0)  # small sizes are set wider
        elif match["char"] in _MATH_SYMBOLS:
            total += MATH[_MATH_SYMBOLS[match["char"]]] * size
        elif match["char"] is not None:
            total += _roman(match["char"], script)
    return total


def _roman(char: str, script: bool) -> float:
    if not script:
        return _char(char, False)
    code = ord(char)
    return SCRIPT[code - 32] * SCRIPT_SIZE if 32 <= code < 127 else UNKNOWN * SCRIPT_SIZE
