"""The HTML report as a reader meets it: opened in headless Chromium (Debian's package,
driven by Playwright; never a downloaded browser), no console errors, every image loaded,
every section present; a screenshot is kept in test-artifacts/ for a person to look at."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from iotsecbench.report.build import build_report
from iotsecbench.report.html import SECTIONS
from tests.conftest import REPO

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = REPO / "test-artifacts"

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("Chromium not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    with sync_api.sync_playwright() as playwright:
        # Flags as on a closed network: no background connections, no sandbox as root.
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


def check_page(browser, html: Path, screenshot: Path) -> dict:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on(
        "console", lambda message: errors.append(message.text) if message.type == "error" else None
    )
    page.on("pageerror", lambda error: errors.append(str(error)))
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(html.as_uri())
    page.wait_for_load_state("load")
    images = page.eval_on_selector_all(
        "img", "els => els.map(e => ({alt: e.alt, ok: e.complete && e.naturalWidth > 0}))"
    )
    sections = page.eval_on_selector_all("section", "els => els.map(e => e.id)")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(screenshot), full_page=True)
    page.close()
    return {
        "errors": errors,
        "images": images,
        "sections": sections,
        "external": [u for u in requests if not u.startswith(("file:", "data:"))],
    }


def test_golden_report_in_chromium(browser, golden_results: Path, tmp_path: Path) -> None:
    built = build_report(golden_results, tmp_path / "report", ["html"])
    seen = check_page(browser, built.html, ARTIFACTS / "report-golden.png")
    assert seen["errors"] == []
    assert seen["external"] == []  # self-contained: nothing fetched from anywhere
    assert len(seen["images"]) == 12
    assert all(image["ok"] for image in seen["images"]), seen["images"]
    assert seen["sections"] == list(SECTIONS)


def test_report_of_a_real_run_in_chromium(browser, mosquitto: str, tmp_path: Path) -> None:
    from tests.conftest import run_cli

    out = tmp_path / "run"
    result = run_cli(
        "run",
        "--configs",
        "plain,tls1.2",
        "--duration",
        "12",
        "--reps",
        "2",
        "--out",
        str(out),
        "--quiet",
    )
    assert result.returncode == 0, result.stderr
    assert f"report: {out}/report/report.html" in result.stdout.replace("\n", "")
    seen = check_page(browser, out / "report" / "report.html", ARTIFACTS / "report-run.png")
    assert seen["errors"] == [] and seen["external"] == []
    assert seen["images"] and all(image["ok"] for image in seen["images"])
    assert seen["sections"] == list(SECTIONS)
