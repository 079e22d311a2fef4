"""The viewer in a real browser: headless Chromium from Debian's packages, driven by Selenium through the
chromedriver built with it (`make browser` installs both; CI runs it).

Each main page loads with no console error (a Content-Security-Policy violation is one) and no request to
any address but the viewer's; its charts are drawn; the grid's 672 cells are drawn and clicking one opens
that pair's page; names that are markup stay text. A screenshot of each page goes to the test's temporary
folder; with OOD_STORE_WRITE_SCREENSHOTS=1 they are also written, shrunk, to docs/ for the viewer's page
(docs/how-to/viewer.md shows them), and otherwise the committed ones are checked to be of this page set and size.

Without Chromium, chromedriver or Selenium the tests skip and say why; under CI=true they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from conftest import HOSTILE_ANALYSIS, HOSTILE_RUNS, HOSTILE_TASKS, PLANTED_ANALYSIS

pytestmark = pytest.mark.xdist_group("serve")
ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: Chromium's flags on a closed network: no first-run, sync, component updates, background requests or QUIC;
#: no sandbox (CI runs as root) and no GPU; a window the screenshots share; an empty profile (added below).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--window-size=1280,900",
    "--force-device-scale-factor=1",
    "--hide-scrollbars",
    "--lang=en-US",
)
RUN = "ood-lab/nli-ft-opt-350m-seed1"
#: The main pages, as docs/how-to/viewer.md shows them: (file name under docs/, path).
PAGES = (
    ("viewer-overview", "/"),
    ("viewer-runs", "/runs?spark=mnli"),
    ("viewer-run", "/runs/" + RUN + "?in_domain=mnli"),
    ("viewer-tasks", "/tasks"),
    ("viewer-compare-step", "/compare-step?task=hans&by=family"),
    ("viewer-grid", f"/analyses/{PLANTED_ANALYSIS}?rows=family&cols=size"),
    ("viewer-pair", f"/analyses/{PLANTED_ANALYSIS}/pair/rte/hans"),
    ("viewer-signs", f"/analyses/{PLANTED_ANALYSIS}/signs?by=family"),
    ("viewer-sql", "/sql?sql=" + quote("SELECT family, size, count(*) AS runs FROM runs GROUP BY ALL ORDER BY ALL")),
)
SCREENSHOT_WIDTH = 900  # pixels of the docs' copies (the browser's window is 1280 wide)


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI installs Chromium and chromedriver with `make browser`")
    pytest.skip(f"{reason} (make browser installs chromium and chromium-driver)")


def _version(program: str) -> str:
    out = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=60).stdout
    found = re.search(r"\b(\d+\.\d+\.\d+\.\d+)\b", out)
    return found[1] if found else out.strip()


@pytest.fixture(scope="module")
def tools() -> tuple[str, str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        _missing("Chromium or chromedriver is not installed")
    try:
        import selenium  # noqa: F401
    except ImportError:
        _missing("Selenium (the test extra) is not installed")
    pytest.importorskip("uvicorn", reason="the serve extra is not installed")
    assert chromium is not None and driver is not None
    # Debian's chromium-driver is built with chromium and depends on that very version.
    assert _version(chromium) == _version(driver), "chromedriver is not the one built with this Chromium"
    return chromium, driver


class Server:
    """The viewer on uvicorn in a thread, on a port of its own at 127.0.0.1."""

    def __init__(self, db: Path):
        import uvicorn

        from ood_store._serve.app import Settings, create_app

        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.base = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        config = uvicorn.Config(create_app(Settings(db)), log_level="warning", access_log=False, lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.server.started

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def planted_server(tools, planted_db):
    server = Server(planted_db)
    yield server.base
    server.stop()


@pytest.fixture(scope="module")
def hostile_server(tools, hostile_db):
    server = Server(hostile_db)
    yield server.base
    server.stop()


@pytest.fixture(scope="module")
def browser(tools):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver_path = tools
    profile = tempfile.mkdtemp(prefix="ood-store-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def visit(driver, base: str, path: str) -> None:
    """Load ``path`` and wait until its charts are drawn; no console error, no request leaving the viewer."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get_log("browser")  # what came before belongs to another page
    driver.get_log("performance")
    driver.get(base + path)
    WebDriverWait(driver, 120).until(
        lambda d: d.execute_script(
            "return document.readyState === 'complete' && "
            "(!document.querySelector('div.vega') || document.body.dataset.charts === 'drawn')"
        )
    )
    failed = driver.execute_script(
        "return Array.from(document.querySelectorAll('div.vega'))"
        ".filter(e => e.dataset.drawn !== 'true').map(e => e.id)"
    )
    assert failed == [], (path, failed)
    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], (path, errors)
    requested = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] in ("Network.requestWillBeSent", "Network.webSocketCreated"):
            requested.append(message["params"].get("request", {}).get("url") or message["params"].get("url", ""))
    # chrome://, data: and blob: URLs are the browser's own (its new-tab page, Vega's images): no network.
    outside = [u for u in requested if re.match(r"(https?|wss?|ftp)://", u) and not u.startswith(base + "/")]
    assert outside == [], (path, outside)
    assert requested, path


def shrink(source: Path, target: Path) -> None:
    """A small copy of a screenshot for the docs: 900 pixels wide, 128 colors."""
    from PIL import Image

    with Image.open(source) as image:
        height = round(image.height * SCREENSHOT_WIDTH / image.width)
        small = image.convert("RGB").resize((SCREENSHOT_WIDTH, height), Image.Resampling.LANCZOS)
        small.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(target, optimize=True)


def test_every_main_page_loads_draws_its_charts_and_asks_nothing_of_other_addresses(browser, planted_server, tmp_path):
    from PIL import Image

    write = os.environ.get("OOD_STORE_WRITE_SCREENSHOTS") == "1"
    for name, path in PAGES:
        visit(browser, planted_server, path)
        shot = tmp_path / f"{name}.png"
        assert browser.save_screenshot(str(shot))
        small = tmp_path / f"{name}-small.png"
        shrink(shot, small)
        if write:
            shutil.copyfile(small, DOCS / f"{name}.png")
        committed = DOCS / f"{name}.png"
        assert committed.exists(), f"{committed} is missing: run this test with OOD_STORE_WRITE_SCREENSHOTS=1"
        with Image.open(committed) as shown, Image.open(small) as made:
            assert shown.size == made.size, name
        assert committed.stat().st_size < 200_000, name


def test_the_grids_cells_are_drawn_and_a_click_opens_the_pair(browser, planted_server):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    visit(browser, planted_server, f"/analyses/{PLANTED_ANALYSIS}")
    cells = browser.find_elements(By.CSS_SELECTOR, "#chart-grid g.cells_marks path")
    assert len(cells) == 24 * 28
    sizes = {(c.rect["width"], c.rect["height"]) for c in cells[:50]}
    assert all(w > 5 and h > 5 for w, h in sizes)
    ActionChains(browser).move_to_element(cells[0]).click().perform()
    WebDriverWait(browser, 60).until(lambda d: "/pair/" in d.current_url)
    path = browser.current_url.removeprefix(planted_server)
    visit(browser, planted_server, path)
    heading = browser.find_element(By.TAG_NAME, "h1").text
    assert re.fullmatch(rf"\S+ and \S+ in analysis {PLANTED_ANALYSIS}", heading), heading
    intervals = browser.find_elements(By.CSS_SELECTOR, "#chart-forest g.intervals_marks line")
    pooled = browser.find_elements(By.CSS_SELECTOR, "#chart-forest g.pooled_interval_marks line")
    assert len(intervals) == 24 and len(pooled) == 1


def test_names_that_are_markup_stay_text_in_the_browser(browser, hostile_server):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    for path in (
        "/runs/" + "/".join(quote(p, safe="") for p in HOSTILE_RUNS[0].split("/")),
        "/analyses/" + quote(HOSTILE_ANALYSIS, safe="") + "?rows=family",
        "/analyses/"
        + "/".join(quote(p, safe="") for p in (HOSTILE_ANALYSIS, "pair", HOSTILE_TASKS[1], HOSTILE_TASKS[2])),
        "/tasks",
        "/runs",
    ):
        visit(browser, hostile_server, path)
        with pytest.raises(NoAlertPresentException):
            browser.switch_to.alert.text  # noqa: B018 - no script of the names ran
        injected = browser.execute_script(
            "return document.querySelectorAll('main script:not([type]), main i, main b').length"
        )
        assert injected == 0, path
    visit(browser, hostile_server, "/runs/" + "/".join(quote(p, safe="") for p in HOSTILE_RUNS[0].split("/")))
    assert browser.find_element(By.TAG_NAME, "h1").text == HOSTILE_RUNS[0]
    labels = browser.execute_script(
        "return Array.from(document.querySelectorAll('#chart-curves text')).map(t => t.textContent)"
    )
    assert labels, "the chart has text"
