"""The viewer as a Starlette application: routes, the ``.json``/``.pdf``/``.svg`` twins of pages, one-line errors.

Every route is a GET (HEAD too): none changes anything. Each page is computed
by :mod:`~ood_store._serve.pages` on the store opened read-only for that
computation (:class:`~ood_store._serve.reading.Reader`), then rendered as HTML
(Jinja2, autoescaped) or as its JSON twin. Errors are one line: a busy store
(another process writing it) a 503 whose page tries again by itself, an
unknown name a 404, a bad parameter a 400. :mod:`~ood_store._serve.security`
wraps the whole application.
"""

from __future__ import annotations

import logging
import tempfile
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import orjson
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ood_store import __version__
from ood_store._errors import AnalysisError, OodStoreError, QueryError, StoreLockedError, first_line
from ood_store._serve import pages, sqlbox
from ood_store._serve.model import BadRequest, NotFound, Page, Query, Table, url
from ood_store._serve.reading import CACHE_SIZE, LOCK_TIMEOUT, Reader
from ood_store._serve.security import Guard

log = logging.getLogger("ood_store.serve")

#: Seconds after which a page that found the store busy loads itself again.
RETRY_S = 2
#: Seconds between two loads of an evaluation's status page.
STATUS_REFRESH_S = 5
NAVIGATION = (
    ("Overview", "/"),
    ("Runs", "/runs"),
    ("Tasks", "/tasks"),
    ("Compare at a step", "/compare-step"),
    ("Analyses", "/analyses"),
    ("SQL", "/sql"),
)
_SUFFIXES = (".json", ".pdf", ".svg")


@dataclass(frozen=True)
class Settings:
    """What ``ood-store serve`` was started with."""

    db: Path | str  # a store file, or a lake's URL (ducklake:...)
    token: str | None = None
    #: Host names a request may name (DNS rebinding): the loopback names when bound to loopback; None: any.
    hosts: frozenset[str] | None = frozenset({"127.0.0.1", "localhost", "::1"})
    work_dirs: tuple[Path, ...] = ()
    sql: sqlbox.Limits = field(default_factory=sqlbox.Limits)
    lock_timeout: float = LOCK_TIMEOUT
    #: Pages kept for the store file's current state (0: every request computes its page).
    cache_size: int = CACHE_SIZE


class Viewer:
    """The routes' shared state: the settings, the store's reader, the templates."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.reader = Reader(settings.db, lock_timeout=settings.lock_timeout, cache_size=settings.cache_size)
        self.templates = Environment(
            loader=PackageLoader("ood_store._serve", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            undefined=StrictUndefined,
        )
        # JSON in pages (chart specs in <script type="application/json">): orjson (NaN as null), then Jinja's
        # escaping of <, >, & and ' so that no string can end the script element.
        self.templates.policies["json.dumps_function"] = lambda obj, **_: orjson.dumps(obj).decode()
        self.templates.policies["json.dumps_kwargs"] = {}
        self.templates.filters["cell"] = cell
        self.templates.globals["zip"] = zip
        self.status_dirs = _named_dirs(settings.work_dirs)
        # matplotlib's rc_context (the paper figures' style) changes global settings: one figure at a time.
        self._drawing = threading.Lock()

    # -- responses ---------------------------------------------------------------------------------------------
    def render(self, request: Request, page: Page, kind: str, status: int = 200) -> Response:
        """``page`` as HTML or JSON; the bytes are kept with the page, for its next request with this URL."""
        key = (kind, str(request.url))
        body = page.rendered.get(key)
        if body is None:
            body = self._rendered(request, page, kind)
            if status == 200:
                page.rendered[key] = body
        if kind == "json":
            return Response(body, status_code=status, media_type="application/json")
        return HTMLResponse(body, status_code=status)

    def _rendered(self, request: Request, page: Page, kind: str) -> bytes:
        here = request.url.path
        if kind == "json":
            return orjson.dumps(page.json(str(request.url.replace(query=_without_token(request)))))
        twin = url(_json_path(here), Query(request.query_params.multi_items()).pairs)
        html = self.templates.get_template(f"{page.name}.html").render(
            page=page, here=here, json_url=twin, navigation=NAVIGATION, store=self.reader.shown,
            version=__version__, statuses=bool(self.status_dirs), tables=page.tables,
        )  # fmt: skip
        return html.encode("utf-8")

    def message(self, request: Request, kind: str, status: int, error: str, text: str, retry: int | None = None):
        """A one-line answer: a busy store, an unknown name, a bad parameter."""
        if kind == "json":
            body = {"error": error, "message": text, **({"retry_after": retry} if retry else {})}
            headers = {"Retry-After": str(retry)} if retry else None
            return JSONResponse(body, status_code=status, headers=headers)
        page = Page("message", error, data={"message": text}, refresh=retry, context={"message": text})
        response = self.render(request, page, "html", status)
        if retry:
            response.headers["Retry-After"] = str(retry)
        return response

    def answer(self, request: Request, kind: str, key: Hashable, build: Callable[[Any], Page]) -> Response:
        """The page ``build`` computes on the store (kept while the store file is unchanged), or a one-line error."""
        return self.guarded(request, kind, lambda: self.render(request, self.reader.cached(key, build), kind))

    def guarded(self, request: Request, kind: str, respond: Callable[[], Response]) -> Response:
        try:
            return respond()
        except StoreLockedError as exc:
            text = f"The store is busy: {exc.message}. This page tries again every {RETRY_S} seconds."
            return self.message(request, kind, 503, "busy", text, retry=RETRY_S)
        except NotFound as exc:
            return self.message(request, kind, 404, "not found", str(exc))
        except (BadRequest, AnalysisError, QueryError) as exc:
            return self.message(request, kind, 400, "bad request", first_line(exc))
        except OodStoreError as exc:
            return self.message(request, kind, 500, "cannot read the store", first_line(exc))
        except Exception as exc:  # a bug: one line here, the traceback in the server's log
            log.exception("internal error on %s", request.url.path)
            return self.message(request, kind, 500, "internal error", f"{type(exc).__name__}: {first_line(exc)}")

    def figure(self, request: Request, key: Hashable, ext: str, draw: Callable[[Any], Any]) -> Response:
        """The paper figure of a chart (export's matplotlib code), as PDF or SVG."""

        def build(store: Any) -> bytes:
            with self._drawing, tempfile.TemporaryDirectory(prefix="ood-store-serve-") as folder:
                paper = draw(store)
                path = Path(folder) / f"figure.{ext}"
                paper.save(path)
                return path.read_bytes()

        def respond() -> Response:
            body = self.reader.cached(("figure", ext, key), build)
            media = "application/pdf" if ext == "pdf" else "image/svg+xml"
            return Response(body, media_type=media, headers={"Content-Disposition": f'inline; filename="figure.{ext}"'})

        return self.guarded(request, "html", respond)

    # -- routes ------------------------------------------------------------------------------------------------
    def simple(self, name: str, builder: Callable[[Any, Query], Page]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            kind = "json" if request.url.path.endswith(".json") else "html"
            q = Query(request.query_params.multi_items())
            return self.answer(request, kind, (name, q.key()), lambda store: builder(store, q))

        return endpoint

    def run(self, request: Request) -> Response:
        q = Query(request.query_params.multi_items())
        name, kind = _suffixed(request.path_params["name"])
        if kind in ("pdf", "svg"):
            from ood_store._export.figures import curves_of_run

            def draw(store: Any) -> Any:
                page = pages.run_page(store, q, name)
                series = (
                    [k for k in page.tables[0].rows[0] if k not in ("step", "campaign")] if page.tables[0].rows else []
                )
                in_domain = page.data["in_domain"]
                tasks = [s for s in series if s != in_domain] or series
                return curves_of_run(
                    store, name, tasks=tasks, in_domain=in_domain if in_domain in series else None,
                    metric=page.data["metric"], filter=page.data["filter"], x_scale=pages.x_scale_of(q),
                )  # fmt: skip

            return self.figure(request, ("run", name, q.key()), kind, draw)

        return self.answer(request, kind, ("run", name, q.key()), lambda store: pages.run_page(store, q, name))

    def analyses(self, request: Request) -> Response:
        """``/analyses/NAME``, ``/analyses/NAME/signs``, ``/analyses/NAME/pair/X/Y``, each with its twins.

        Read from the raw path, each segment %-decoded: names may hold ``/``.
        """
        q = Query(request.query_params.multi_items())
        raw = request.scope.get("raw_path") or request.url.path.encode()
        parts = [unquote(p) for p in raw.decode("ascii", "replace").split("?")[0].split("/")[2:]]
        if not parts or not parts[0]:
            return self.simple("analyses", pages.analyses_page)(request)
        parts[-1], kind = _suffixed(parts[-1])
        name = parts[0]
        if len(parts) == 1:
            if kind in ("pdf", "svg"):
                return self.figure(request, ("grid", name, q.key()), kind, lambda store: _grid_figure(store, name, q))
            return self.answer(request, kind, ("analysis", name, q.key()), lambda s: pages.analysis_page(s, q, name))
        if len(parts) == 2 and parts[1] == "signs":
            if kind in ("pdf", "svg"):
                return self.figure(request, ("signs", name, q.key()), kind, lambda store: _signs_figure(store, name, q))
            return self.answer(request, kind, ("signs", name, q.key()), lambda s: pages.signs_page(s, q, name))
        if len(parts) == 4 and parts[1] == "pair":
            x, y = parts[2], parts[3]
            if kind in ("pdf", "svg"):
                draw = lambda store: _forest_figure(store, name, x, y, q)  # noqa: E731
                return self.figure(request, ("forest", name, x, y, q.key()), kind, draw)
            key = ("pair", name, x, y, q.key())
            return self.answer(request, kind, key, lambda s: pages.pair_page(s, q, name, x, y))
        return self.message(request, kind, 404, "not found", f"no such page: {request.url.path}")

    def sql(self, request: Request) -> Response:
        kind = "json" if request.url.path.endswith(".json") else "html"
        q = Query(request.query_params.multi_items())
        sql, fmt = q.get("sql"), q.get("format")
        limits = self.settings.sql

        def respond() -> Response:
            answer, error = None, None
            if sql and sql.strip():
                try:
                    answer = sqlbox.run(self.settings.db, sql, limits, lock_timeout=self.settings.lock_timeout)
                except QueryError as exc:
                    error = first_line(exc)
            if fmt is not None:
                if fmt not in sqlbox.FORMATS:
                    raise BadRequest(f"format: must be one of {', '.join(sqlbox.FORMATS)}, not {fmt!r}")
                if error is not None or answer is None:
                    raise BadRequest(error or "no SQL given")
                extension = {"table": "txt", "markdown": "md", "latex": "tex"}.get(fmt, fmt)
                disposition = f'attachment; filename="query.{extension}"'
                return Response(
                    sqlbox.download(answer.frame, fmt), media_type=sqlbox.MEDIA_TYPES[fmt],
                    headers={"Content-Disposition": disposition},
                )  # fmt: skip
            tables = []
            if answer is not None:
                shown = f"first {limits.rows} rows" if answer.truncated else f"{answer.frame.height} rows"
                tables.append(Table.of("rows", f"{shown} in {answer.seconds:.2f} s", answer.frame))
            downloads = [(f, url("/sql", {"sql": sql, "format": f})) for f in sqlbox.FORMATS] if answer else []
            page = Page(
                "sql", "SQL",
                data={"sql": sql, "error": error, "truncated": bool(answer and answer.truncated),
                      "row_limit": limits.rows, "time_limit_s": limits.seconds},
                tables=tables,
                context={"sql": sql or "", "error": error, "downloads": downloads, "limits": limits,
                         "truncated": bool(answer and answer.truncated)},
            )  # fmt: skip
            return self.render(request, page, kind, 400 if error else 200)

        return self.guarded(request, kind, respond)

    def status(self, request: Request) -> Response:
        """An evaluation's work folder (``--work-dir``), as ``ood-store status`` shows it, loading itself again."""
        from ood_store._evaluate.workdir import WorkDir, status_table

        raw = request.path_params.get("name")
        name, kind = _suffixed(raw) if raw else ("", "json" if request.url.path.endswith(".json") else "html")

        def respond() -> Response:
            if not name:
                listing = [{"name": n, "work_dir": str(p)} for n, p in self.status_dirs.items()]
                links = {"name": lambda r: "/status/" + quote(r["name"], safe="")}
                folders = Table.of("rows", "Work folders (--work-dir)", _frame(listing), links=links)
                return self.render(request, Page("status", "Evaluations", tables=[folders]), kind)
            if name not in self.status_dirs:
                raise NotFound(f"no work folder {name!r} (the viewer shows those given with --work-dir)")
            work = WorkDir(self.status_dirs[name]).require()
            statuses = work.status()
            frame = status_table(statuses)
            counts = frame["state"].value_counts().sort("state")
            page = Page(
                "status", f"Evaluation {name}",
                data={"work_dir": str(work.path), "states": dict(counts.iter_rows())},
                tables=[Table.of("rows", f"{frame.height} units", frame)],
                refresh=STATUS_REFRESH_S, context={"states": dict(counts.iter_rows())},
            )  # fmt: skip
            return self.render(request, page, kind)

        return self.guarded(request, kind, respond)


def _grid_figure(store: Any, name: str, q: Query) -> Any:
    from ood_store._export.figures import from_analysis

    alpha, inference = pages._test(q)
    return from_analysis(store, name, "grid", rows=q.get("rows"), cols=q.get("cols"), seeds=q.get("seeds") or "pool",
                         alpha=alpha, inference=inference)  # fmt: skip


def _signs_figure(store: Any, name: str, q: Query) -> Any:
    from ood_store._export.figures import from_analysis

    alpha, inference = pages._test(q)
    by = q.get("by")
    return from_analysis(store, name, "signs", by=[by] if by else None, alpha=alpha, inference=inference)


def _forest_figure(store: Any, name: str, x: str, y: str, q: Query) -> Any:
    from ood_store._export.figures import from_analysis

    alpha, inference = pages._test(q)
    return from_analysis(store, name, "forest", tasks=[x, y], alpha=alpha, inference=inference, color_by=q.get("color"))


def _frame(rows: list[dict[str, Any]]) -> Any:
    import polars as pl

    return pl.DataFrame(rows, schema={"name": pl.String, "work_dir": pl.String})


def _named_dirs(dirs: tuple[Path, ...]) -> dict[str, Path]:
    """Each work folder by its name (``-2``, ``-3`` after a name already taken): the only paths /status reads."""
    out: dict[str, Path] = {}
    for folder in dirs:
        base = folder.resolve().name or "work"
        name, k = base, 2
        while name in out:
            name, k = f"{base}-{k}", k + 1
        out[name] = folder.resolve()
    return out


def _suffixed(name: str) -> tuple[str, str]:
    """``name`` less a ``.json``, ``.pdf`` or ``.svg`` suffix, and what it asks for (``html`` without one)."""
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], suffix[1:]
    return name, "html"


def _json_path(path: str) -> str:
    if path == "/":
        return "/index.json"
    return path.rstrip("/") + ".json"


def _without_token(request: Request) -> str:
    return "&".join(f"{k}={v}" for k, v in request.query_params.multi_items() if k != "token")


def cell(value: Any) -> str:
    """A table cell as text: numbers to 4 significant digits, lists joined, nothing for null."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        return ", ".join(cell(v) for v in value)
    if isinstance(value, dict):
        return orjson.dumps(value).decode()
    return str(value)


def create_app(settings: Settings) -> Any:
    """The viewer's ASGI application for ``settings``: the Starlette app inside
    :class:`~ood_store._serve.security.Guard`."""
    viewer = Viewer(settings)
    routes = [
        Route("/", viewer.simple("overview", pages.overview)),
        Route("/index.json", viewer.simple("overview", pages.overview)),
        Route("/runs", viewer.simple("runs", pages.runs_page)),
        Route("/runs.json", viewer.simple("runs", pages.runs_page)),
        Route("/runs/{name:path}", viewer.run),
        Route("/tasks", viewer.simple("tasks", pages.tasks_page)),
        Route("/tasks.json", viewer.simple("tasks", pages.tasks_page)),
        Route("/compare-step", viewer.simple("compare-step", pages.compare_step)),
        Route("/compare-step.json", viewer.simple("compare-step", pages.compare_step)),
        Route("/analyses", viewer.simple("analyses", pages.analyses_page)),
        Route("/analyses.json", viewer.simple("analyses", pages.analyses_page)),
        Route("/analyses/{rest:path}", viewer.analyses),
        Route("/sql", viewer.sql),
        Route("/sql.json", viewer.sql),
        Route("/status", viewer.status),
        Route("/status.json", viewer.status),
        Route("/status/{name}", viewer.status),
        Mount("/static", StaticFiles(packages=[("ood_store._serve", "static")]), name="static"),
    ]
    app = Starlette(routes=routes)

    async def not_found(request: Request, exc: Exception) -> Response:
        kind = "json" if request.url.path.endswith(".json") else "html"
        return viewer.message(request, kind, 404, "not found", f"no such page: {request.url.path}")

    app.add_exception_handler(404, not_found)
    return Guard(app, token=settings.token, hosts=settings.hosts)
