"""The HTML report as a reader meets it: opened in headless Chromium (Debian's package,
driven by Playwright; never a downloaded browser), no console errors, every image loaded,
every section present, the headline figure above the findings' sentences and no internal
metric name in the text a reader sees; a screenshot is kept in test-artifacts/ for a person
to look at."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from iotsecbench.analysis.metrics import METRICS
from iotsecbench.report.build import BuiltReport
from iotsecbench.report.html import SECTIONS
from tests.conftest import REPO, DefaultRun

# What a reader must never see: a metric's key or column (snake_case; "runs" and "lost" are
# words) — the registry's names say them instead.
INTERNAL_NAMES = sorted(name for name in METRICS.names if "_" in name)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = REPO / "test-artifacts"

pytestmark = pytest.mark.integration
# The runs are real lab runs, each its own interpreter (run_cli); the commands on what they
# stored (report, attach) fork from the worker's CLI server (run_cli_forked,
# tests/cli_server.py): the same answers, without importing pandas and matplotlib again.


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
    # The figures section's figures (the headline figure opens the findings: `headline`).
    figures = page.eval_on_selector_all(
        "#figures figure",
        """els => els.map(e => ({
            svg: !!e.querySelector('.plot svg'),
            label: (e.querySelector('.plot') || e.querySelector('img') || {}).ariaLabel
                   || (e.querySelector('img') || {}).alt || '',
            width: e.getBoundingClientRect().width}))""",
    )
    sections = page.eval_on_selector_all("section", "els => els.map(e => e.id)")
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    # Where the headline figure sits: inside the findings, above their first sentence.
    headline = page.evaluate(
        """() => {
            const figure = document.querySelector('#findings figure.headline');
            const sentences = document.querySelector('#findings ul.findings');
            if (!figure || !sentences) return null;
            return {above: figure.getBoundingClientRect().bottom
                           <= sentences.getBoundingClientRect().top,
                    svg: !!figure.querySelector('.plot svg'),
                    label: (figure.querySelector('.plot') || {}).ariaLabel || ''};
        }"""
    )
    # Every folded detail open: what a reader can see, all of it.
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    text = page.evaluate("document.body.innerText")
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
        "headline": headline,
        "internal_names": [name for name in INTERNAL_NAMES if name in text],
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


def test_golden_report_in_chromium(browser, golden_report: BuiltReport) -> None:
    built = golden_report
    for width in (1280, 390):
        seen = check_page(browser, built.html, ARTIFACTS / f"report-golden-{width}.png", width)
        assert seen["errors"] == []
        assert seen["external"] == []  # self-contained: nothing fetched from anywhere
        assert seen["scroll_width"] == width, "the page scrolls sideways"
        assert len(seen["figures"]) == 12
        assert all(f["svg"] and f["label"] for f in seen["figures"]), seen["figures"]
        assert all(f["width"] <= width for f in seen["figures"])
        assert seen["sections"] == list(SECTIONS) and SECTIONS[0] == "findings"
        # The answer seen before it is read, said in names a reader knows.
        assert seen["headline"]["above"] and seen["headline"]["svg"]
        assert "against plain MQTT" in seen["headline"]["label"]
        assert seen["internal_names"] == []
    shown, expected, hidden, gone = hover_and_toggle(browser, built.html)
    assert shown == expected and hidden and gone


def test_report_of_a_real_run_in_chromium(browser, default_run: DefaultRun, tmp_path: Path) -> None:
    """The default experiment, short (the suite's one real default run: tests/conftest.py):
    its findings agree with analysis.json, the terminal ends with the same sentences, and the
    report, copied alone into an empty directory, renders with every request outside the
    file refused."""
    out, result = default_run.out, default_run.result
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
        assert seen["headline"] and seen["headline"]["above"] and seen["headline"]["svg"]
        assert seen["internal_names"] == []
    shown, expected, hidden, gone = hover_and_toggle(browser, report)
    assert shown == expected and hidden and gone
    # attach writes into the store: a copy, so the shared run stays as it was measured
    attach_a_meter_to_a_real_run(browser, Path(shutil.copytree(out, tmp_path / "run")), tmp_path)


def attach_a_meter_to_a_real_run(browser, out: Path, tmp_path: Path) -> None:
    """A PPK2 trace of what the device of a real tls1.2 run drew (its modelled current,
    20 % higher, noisy; D0 toggled at the first handshake and the last publish): placed to
    one meter sample, each handshake phase within 1 % and the meter's noise, shown in the
    report."""
    from tests.conftest import query, run_cli_forked
    from tests.meter_traces import (
        METER_HZ,
        OFFSET_S,
        charge_tolerance_uc,
        expected_charge_uc,
        run_facts,
        write_ppk2,
    )

    (run_id,) = query(out, "select run_id from runs where configuration = 'tls1.2' limit 1")[0]
    facts = run_facts(out, run_id)
    trace = write_ppk2(tmp_path / "ppk2.csv", facts)
    result = run_cli_forked(
        "attach", str(out / "runs" / run_id), str(trace), "--voltage", "3.3", timeout=300
    )
    assert result.returncode == 0, result.stderr
    ((offset,),) = query(out, "select offset_s from meter_traces")
    assert abs(offset - OFFSET_S) <= 1 / METER_HZ
    stored = dict(query(out, "select phase, charge_uc from meter_phases where phase != 'message'"))
    assert set(facts["phases"]) >= {"tcp_connect", "tls_handshake", "mqtt_connect"}
    for phase, (start, end) in facts["phases"].items():
        truth = expected_charge_uc(facts, start, end)
        tolerance = 0.01 * truth + charge_tolerance_uc(start, end)
        assert stored[phase] == pytest.approx(truth, abs=tolerance), phase
    assert run_cli_forked("report", str(out), timeout=300).returncode == 0
    seen = check_page(browser, out / "report" / "report.html", ARTIFACTS / "report-meter.png", 1280)
    assert seen["errors"] == [] and seen["scroll_width"] == 1280
    assert any("Measured with ppk2" in f["label"] for f in seen["figures"])


def test_two_real_experiments_side_by_side(
    browser, mosquitto: str, golden_results: Path, tmp_path: Path
) -> None:
    """Two real runs, the second with a device profile whose associated idle current is
    12 mA lower (the injected truth): `report A B` finds plain MQTT's modelled current about
    12 mA lower, names the device as what differs, and renders; a rate that differs (the
    golden experiment publishes at 5 Hz) is refused in one line unless allowed."""
    from importlib import resources

    from tests.conftest import run_cli, run_cli_forked

    profile = resources.files("iotsecbench.energy.profiles").joinpath("esp32-wroom-32.toml")
    text = profile.read_text(encoding="utf-8")
    start = text.index("[parameters.idle_associated_current]")
    assert "value = 32.0" in text[start : start + 80]
    lower = tmp_path / "esp32-idle-20ma.toml"
    edited = text[start:].replace("value = 32.0", "value = 20.0", 1)
    # its stated range moves with it (a guess's range must hold the value, and be wide)
    edited = edited.replace("range = [27.0, 45.0]", "range = [15.0, 30.0]", 1)
    lower.write_text(text[:start] + edited)
    runs = {"esp32": (), "idle-20ma": ("--device", str(lower))}
    for name, extra in runs.items():
        result = run_cli(
            "run", "--configs", "plain,tls1.2", "--duration", "2", "--reps", "2",
            "--out", str(tmp_path / name), "--quiet", "--no-report", *extra,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    a, b = tmp_path / "esp32", tmp_path / "idle-20ma"
    result = run_cli_forked("report", str(a), str(b), timeout=300)
    assert result.returncode == 0, result.stderr
    out = a / "compared-with-idle-20ma"
    document = json.loads((out / "comparison.json").read_text())
    assert document["reference"] == "esp32"
    assert {d["setting"] for d in document["differences"]} == {"device"}
    plain = next(
        c for c in document["contrasts"]
        if (c["kind_of_contrast"], c["configuration"], c["metric"], c["role"])
        == ("value", "plain", "current_ma", "emitter")
    )  # fmt: skip
    assert plain["difference"] == pytest.approx(-12.0, abs=0.5)
    assert plain["significant"] and "lower on idle-20ma" in plain["sentence"]
    assert plain["kind"] == "modelled" and "Indicative: 2 runs" in plain["caveat"]
    html = out / "comparison.html"
    for width in (1280, 390):
        seen = check_page(browser, html, ARTIFACTS / f"comparison-{width}.png", width)
        assert seen["errors"] == [] and seen["external"] == []
        assert seen["scroll_width"] == width
        assert seen["sections"][0] == "findings"
        assert len(seen["figures"]) == 2 and all(f["svg"] for f in seen["figures"])
    shown, expected, hidden, gone = hover_and_toggle(browser, html)
    assert shown == expected and hidden and gone

    refused = run_cli_forked("report", str(a), str(golden_results), timeout=300)
    assert refused.returncode == 2
    assert "rate 5 Hz against 10 Hz" in refused.stderr and len(refused.stderr.splitlines()) == 1
    allowed = run_cli_forked(
        "report", str(a), str(golden_results), "--allow-different", "rate", "--format", "csv",
        timeout=300,
    )  # fmt: skip
    assert allowed.returncode == 0, allowed.stderr
    assert (a / "compared-with-golden" / "tables" / "side-by-side.csv").exists()
