"""The HTML report as a reader meets it: opened in headless Chromium (Debian's package,
driven by Playwright; never a downloaded browser), no console errors, every image loaded,
every section present; a screenshot is kept in test-artifacts/ for a person to look at."""

from __future__ import annotations

import json
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


def check_page(browser, html: Path, screenshot: Path, width: int = 1280) -> dict:
    page = browser.new_page(viewport={"width": width, "height": 900})
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
    figures = page.eval_on_selector_all(
        "figure",
        """els => els.map(e => ({
            svg: !!e.querySelector('.plot svg'),
            label: (e.querySelector('.plot') || e.querySelector('img') || {}).ariaLabel
                   || (e.querySelector('img') || {}).alt || '',
            width: e.getBoundingClientRect().width}))""",
    )
    sections = page.eval_on_selector_all("section", "els => els.map(e => e.id)")
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(screenshot), full_page=True)
    page.close()
    return {
        "errors": errors,
        "images": images,
        "figures": figures,
        "sections": sections,
        "scroll_width": scroll_width,
        "external": [u for u in requests if not u.startswith(("file:", "data:"))],
    }


def hover_and_toggle(browser, html: Path) -> tuple[str, str, bool, bool]:
    """Point at the first data point of the first figure: the text shown and the one the
    data says; then hide that point's series with its button: hidden, and no longer shown."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(html.as_uri())
    figure = page.query_selector("figure.interactive")
    data = json.loads(figure.query_selector("script.hover-data").text_content())
    point = next(p for p in data["points"] if p[2] >= 0)
    svg = figure.query_selector(".plot svg")
    svg.scroll_into_view_if_needed()
    box = svg.bounding_box()
    x = box["x"] + point[0] / data["w"] * box["width"]
    y = box["y"] + point[1] / data["h"] * box["height"]
    page.mouse.move(x, y)
    tip = figure.query_selector(".tip")
    shown = tip.text_content() if tip.is_visible() else ""
    figure.query_selector(f'button.series[data-index="{point[2]}"]').click()
    prefix = data["series"][point[2]]["id"]
    hidden = page.evaluate(
        "prefix => [...document.querySelectorAll(`[id^='${prefix}']`)]"
        ".every(e => getComputedStyle(e).display === 'none')",
        prefix,
    )
    page.mouse.move(x + 1, y)
    page.mouse.move(x, y)
    gone = not tip.is_visible() or tip.text_content() != point[3]
    page.close()
    return shown, point[3], hidden, gone


def test_golden_report_in_chromium(browser, golden_results: Path, tmp_path: Path) -> None:
    built = build_report(golden_results, tmp_path / "report", ["html"])
    for width in (1280, 390):
        seen = check_page(browser, built.html, ARTIFACTS / f"report-golden-{width}.png", width)
        assert seen["errors"] == []
        assert seen["external"] == []  # self-contained: nothing fetched from anywhere
        assert seen["scroll_width"] == width, "the page scrolls sideways"
        assert len(seen["figures"]) == 12
        assert all(f["svg"] and f["label"] for f in seen["figures"]), seen["figures"]
        assert all(f["width"] <= width for f in seen["figures"])
        assert seen["sections"] == list(SECTIONS) and SECTIONS[0] == "findings"
    shown, expected, hidden, gone = hover_and_toggle(browser, built.html)
    assert shown == expected and hidden and gone


def test_report_of_a_real_run_in_chromium(browser, mosquitto: str, tmp_path: Path) -> None:
    """The default experiment, short: its findings agree with analysis.json, the terminal
    ends with the same sentences, and the report, copied alone into an empty directory,
    renders with every request outside the file refused."""
    from tests.conftest import run_cli

    out = tmp_path / "run"
    # 10 s: the statistics need ten 1 Hz values per run (analysis.pipeline).
    result = run_cli("run", "--duration", "10", "--reps", "2", "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr
    assert f"report: {out}/report/report.html" in result.stdout.replace("\n", "")
    report = out / "report" / "report.html"
    assert report.stat().st_size < 5 * 2**20
    findings = json.loads((out / "report" / "findings.json").read_text())
    analysis = json.loads((out / "analysis.json").read_text())
    comparisons = {(c["metric"], c["device"], c["a"], c["b"]): c for c in analysis["comparisons"]}
    assert {f["configuration"] for f in findings["findings"]} == {
        "tls1.2", "ecdh-p256-aes128-cbc", "ecdh-p256-aes128-gcm"
    }  # fmt: skip
    flat = " ".join(result.stdout.split())
    for finding in findings["findings"]:
        key = (finding["metric"], finding["role"], finding["configuration"], "plain")
        if key in comparisons:
            assert finding["difference"] == pytest.approx(comparisons[key]["difference"])
            assert finding["ci_low"] == pytest.approx(comparisons[key]["ci_low"])
        assert finding["caveat"]  # 2 runs: every finding says it is indicative at best
        assert " ".join(finding["sentence"].split()) in flat  # the terminal ends with them
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(report, alone / "report.html")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
        "file:") else route.abort())  # fmt: skip
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto((alone / "report.html").as_uri())
    first = page.eval_on_selector("section", "e => e.id")
    svgs = page.eval_on_selector_all(".plot svg", "els => els.length")
    page.close()
    assert errors == [] and first == "findings" and svgs > 0
    for width in (1280, 390):
        seen = check_page(browser, report, ARTIFACTS / f"report-run-{width}.png", width)
        assert seen["errors"] == [] and seen["external"] == []
        assert seen["scroll_width"] == width
        assert seen["figures"] and all(f["svg"] and f["label"] for f in seen["figures"])
        assert seen["sections"] == list(SECTIONS)
    shown, expected, hidden, gone = hover_and_toggle(browser, report)
    assert shown == expected and hidden and gone
