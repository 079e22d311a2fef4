"""Writing a figure to PDF, PNG or SVG with its provenance in the file's metadata."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.figure import Figure

from ood_store._errors import OodStoreError
from ood_store._export import formats
from ood_store._export.provenance import Provenance

#: The formats :func:`save` writes, chosen by the file's extension.
FORMATS = formats.FIGURES
PNG_DPI = 300

#: Settings every figure is drawn and saved with: 8 pt text for two-column
#: papers, fonts embedded as TrueType (Type 42) rather than Type 3, which
#: many venues refuse, and SVG element ids that do not change from run to run.
STYLE: Any = {  # Any: matplotlib types rcParams keys as literals
    "font.size": 8.0,
    "axes.titlesize": 8.0,
    "axes.labelsize": 8.0,
    "xtick.labelsize": 7.0,
    "ytick.labelsize": 7.0,
    "legend.fontsize": 7.0,
    "figure.titlesize": 8.0,
    "axes.linewidth": 0.6,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "xtick.major.size": 2.5,
    "ytick.major.size": 2.5,
    "lines.linewidth": 1.0,
    "legend.frameon": False,
    "hatch.linewidth": 0.5,
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "svg.fonttype": "path",
    "svg.hashsalt": "ood-store",
    "savefig.dpi": PNG_DPI,
}


def file_format(path: str | Path) -> str:
    """The format of ``path`` by its extension: ``pdf``, ``png`` or ``svg``; anything else is an error."""
    return formats.from_extension(path, FORMATS)


def metadata(provenance: Provenance, fmt: str) -> dict[str, str | None]:
    """The metadata fields of a ``fmt`` file that carry ``provenance``.

    PDF: ``Title``, ``Subject`` (the provenance as JSON), ``Keywords``
    (analysis and version) and ``Creator``; no creation date. PNG: text chunks
    ``Title``, ``Software`` and ``Description`` (JSON). SVG: Dublin Core
    ``title``, ``description`` (JSON), ``creator`` and ``date``.
    """
    creator = f"ood-store {provenance.version}"
    title, description = provenance.title(), provenance.to_json()
    if fmt == "pdf":
        keywords = ", ".join(x for x in ("ood-store", provenance.analysis, provenance.version) if x)
        return {
            "Title": title,
            "Subject": description,
            "Keywords": keywords,
            "Creator": creator,
            "CreationDate": None,
        }
    if fmt == "png":
        return {"Title": title, "Software": creator, "Description": description}
    return {"Title": title, "Description": description, "Creator": creator, "Date": provenance.created}


def save(figure: Figure, path: str | Path, provenance: Provenance) -> Path:
    """Write ``figure`` to ``path`` in the format its extension names, with ``provenance`` in its metadata.

    Parameters
    ----------
    figure : matplotlib.figure.Figure
        A figure from :mod:`ood_store._export.figures`.
    path : str or Path
        Where to write: ``.pdf``, ``.png`` (300 dpi) or ``.svg``. Its folder must exist.
    provenance : Provenance
        Where the figure came from; see :func:`metadata` for where it goes.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    OodStoreError
        For another extension, or a path that cannot be written.
    """
    path = Path(path)
    fmt = file_format(path)
    try:
        with matplotlib.rc_context(STYLE):
            figure.savefig(path, format=fmt, dpi=PNG_DPI, metadata=metadata(provenance, fmt))
    except OSError as exc:
        raise OodStoreError(f"{path}: cannot write the figure: {exc.strerror or exc}") from None
    return path


#: The attribute of a figure holding its whole note where the figure shows only its first lines
#: (``ood_store._export.grids.add_note``).
CAPTION = "ood_store_caption"


def caption_path(path: str | Path) -> Path:
    """Where a figure's caption file goes: ``forest.png`` -> ``forest.caption.txt``, beside it."""
    path = Path(path)
    return path.with_name(f"{path.stem}.caption.txt")


@dataclass(frozen=True)
class PaperFigure:
    """A figure for a paper with the provenance its file will carry, and what it shows in words."""

    figure: Figure
    provenance: Provenance
    description: str

    @property
    def caption(self) -> str | None:
        """The figure's whole note where the figure shows only its first lines (it would have taken more than a
        third of the figure's height), else None; :meth:`save` writes it to :func:`caption_path`."""
        return getattr(self.figure, CAPTION, None)

    def save(self, path: str | Path) -> Path:
        """Write the figure to ``path`` (PDF, PNG or SVG by the extension) with its provenance; see :func:`save`.

        With a :attr:`caption`, also write it to :func:`caption_path` of ``path``, for the paper's caption.
        """
        written = save(self.figure, path, self.provenance)
        if self.caption is not None:
            try:
                caption_path(written).write_text(self.caption + "\n", encoding="utf-8")
            except OSError as exc:
                raise OodStoreError(
                    f"{caption_path(written)}: cannot write the caption: {exc.strerror or exc}"
                ) from None
        return written

    def to_png(self) -> bytes:
        """The figure as PNG bytes, drawn as :meth:`save` draws it (the paper's style and resolution)."""
        import io

        buffer = io.BytesIO()
        with matplotlib.rc_context(STYLE):
            self.figure.savefig(buffer, format="png", dpi=PNG_DPI, metadata=metadata(self.provenance, "png"))
        return buffer.getvalue()

    def _repr_png_(self) -> bytes:
        return self.to_png()

    def __repr__(self) -> str:
        return f"<PaperFigure: {self.description}>"
