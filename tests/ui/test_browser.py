"""The page in a real browser: headless Chromium driven by Selenium (Debian's chromium and
chromium-driver). One server and one browser for the whole module.

Screenshots go to ``$MLSYSIM_UI_SCREENSHOTS`` when set (the README's picture is made so),
else to a temporary folder.
"""

import json
import os
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.ui.chromium import headless_chromium
from tests.ui.conftest import CHROMEDRIVER, CHROMIUM, need, serving

need("starlette", "uvicorn", "plotly", "selenium", "chromium", "chromedriver")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.select import Select  # noqa: E402

from mlsysim import Q_, MlsysimError, Scenarios, Workload  # noqa: E402
from mlsysim.core.suggest import caller_syntax  # noqa: E402
from mlsysim.engine.io.overrides import apply_overrides  # noqa: E402
from mlsysim.engine.results import RESULT_NAMES  # noqa: E402
from mlsysim.ui.state import form_fields  # noqa: E402

ONE = "Gpt2DataParallelOneNode"
STATE = f"?scenario={ONE}&nodes=4&inter_bandwidth=10%20Gbps"


@pytest.fixture(scope="module")
def server():
    from mlsysim.ui.app import LOOPBACK_HOSTS, create_app

    with serving(create_app(allowed_hosts=LOOPBACK_HOSTS)) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def browser():
    driver = headless_chromium(CHROMIUM, CHROMEDRIVER, profile_prefix="mlsysim-ui-chromium-", logs=True)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    folder = os.environ.get("MLSYSIM_UI_SCREENSHOTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def open_page(driver, url):
    driver.get(url)
    wait(driver, lambda: driver.execute_script("return document.body.dataset.ready === 'true'"))
    settle(driver)
    wait_charts(driver)


def wait(driver, condition, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    logs = driver.get_log("browser")
    raise AssertionError(f"timed out; browser log: {logs}")


def wait_charts(driver):
    wait(
        driver,
        lambda: driver.execute_script(
            "return ['scaling','breakdown','timeline','plan'].every(n => {"
            "  const d = document.querySelector(`[data-plot=${n}]`);"
            "  return d && d.data && d.data.length > 0 && d.querySelector('.main-svg'); })"
        ),
    )


def settle(driver):
    """Wait until the page has no request in flight and no change waiting to be sent."""
    wait(driver, lambda: driver.execute_script("return document.body.dataset.busy === 'false'"))


def value_of(driver, field):
    return driver.find_element(By.CSS_SELECTOR, f'[data-field="{field}"]').get_attribute(
        "data-value"
    )


def library(*sets):
    return apply_overrides(Scenarios.get(ONE), list(sets))


def assert_page_shows(driver, result):
    """Every result figure on the page equals the library's, in the page's data-unit."""
    shown = driver.execute_script(
        "return [...document.querySelectorAll('[data-field]')].filter(e => e.closest('#revealable'))"
        ".map(e => [e.dataset.field, e.dataset.value, e.dataset.unit])"
    )
    names = [name for name, _, _ in shown]
    assert sorted(names) == sorted(f for f in RESULT_NAMES if f != "constraint_trace")
    for name, value, unit in shown:
        want = getattr(result, name)
        if want is None:
            assert value == "", name
        elif hasattr(want, "magnitude"):
            assert float(value) == pytest.approx(want.to(unit).magnitude, rel=1e-12), name
        elif name == "cost":
            assert unit == "USD" and float(value) == pytest.approx(want, rel=1e-12)
        elif isinstance(want, bool):
            assert value == str(want).lower(), name
        elif isinstance(want, (int, float)):
            assert float(value) == pytest.approx(want, rel=1e-12), name
        else:
            assert value == str(want), name


def type_into(driver, name, text):
    box = driver.find_element(By.CSS_SELECTOR, f'#form [name="{name}"]')
    box.click()
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(Keys.BACKSPACE)
    box.send_keys(text)
    settle(driver)
    return box


def test_a_url_with_state_shows_the_librarys_figures(server, browser, shots):
    open_page(browser, server + "/" + STATE)
    assert browser.find_element(By.NAME, "nodes").get_attribute("value") == "4"
    assert browser.find_element(By.NAME, "inter_bandwidth").get_attribute("value") == "10 Gbps"
    assert_page_shows(browser, library("nodes=4", "inter_bandwidth=10 Gbps").result)
    assert value_of(browser, "efficiency") == repr(0.27856590147020893)
    subs = browser.execute_script(
        "return [...document.querySelectorAll('#headline .figure-sub')].map(e => e.textContent)"
    )
    assert "32 devices" in subs and "4 nodes at 32 USD/h" in subs, subs
    page = browser.find_element(By.TAG_NAME, "body").text
    assert "(s)" not in page and "4.0 nodes" not in page
    assert "1 NIC per node" in browser.find_element(By.ID, "notes").text
    browser.save_screenshot(str(shots / "desktop-1400x1000.png"))


def test_counts_are_in_the_singular_for_one(server, browser):
    open_page(browser, server + f"/?scenario={ONE}&nodes=1")
    subs = browser.execute_script(
        "return [...document.querySelectorAll('#headline .figure-sub')].map(e => e.textContent)"
    )
    assert "8 devices" in subs and "1 node at 32 USD/h" in subs, subs
    open_page(browser, server + "/" + STATE)  # the state the next tests start from


def test_every_input_is_named_after_its_field_with_a_place_for_its_error(server, browser):
    names = browser.execute_script(
        "return [...document.querySelectorAll('#form input, #form select')].map(e => e.name)"
    )
    fields = sorted(f["name"] for f in form_fields())
    assert sorted(names) == fields  # one input per field, each named after it (grouped on the page)
    errors = browser.execute_script(
        "return [...document.querySelectorAll('#form [data-error-for]')].map(e => e.dataset.errorFor)"
    )
    assert sorted(errors) == fields
    page_controls = browser.execute_script(
        "return [...document.querySelectorAll('input[name], select[name]')].filter(e => !e.closest('#form')).map(e => e.name)"
    )
    assert sorted(page_controls) == [
        "budget",
        "deadline",
        "max_global_batch",
        "objective",
        "scenario",
        "teach",
    ]
    plots = browser.execute_script(
        "return [...document.querySelectorAll('[data-plot]')].map(e => e.dataset.plot)"
    )
    assert plots == ["scaling", "breakdown", "timeline", "plan"]


def test_the_timeline_chart_draws_the_apis_segments(server, browser):
    """One bar per segment of /api/timeline, a trace per kind: the data-parallel model's one row."""
    wait_charts(browser)
    traces = browser.execute_script(
        "return document.querySelector('[data-plot=timeline]').data.map(t => [t.name, t.x.length, t.y[0]])"
    )
    assert [name for name, _, _ in traces] == ["compute (forward and backward)", "data-parallel gradient reduction"]
    assert all(row == "device" for _, _, row in traces)


def test_typing_a_value_updates_the_figures_and_the_url(server, browser):
    type_into(browser, "nodes", "8")
    want = library("nodes=8", "inter_bandwidth=10 Gbps").result
    wait(browser, lambda: value_of(browser, "efficiency") == repr(want.efficiency))
    assert_page_shows(browser, want)
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(browser.current_url).query))
    assert query == {"scenario": ONE, "nodes": "8", "inter_bandwidth": "10 Gbps"}
    marker = browser.execute_script(
        "return document.querySelector('[data-plot=scaling]').data.find(t => t.name === 'this layout').x"
    )
    assert marker == [8]


def test_a_bad_value_shows_the_librarys_message_and_keeps_the_last_result(server, browser):
    before = value_of(browser, "efficiency")
    box = type_into(browser, "step_time", "3 furlongs")
    with caller_syntax("form"), pytest.raises(MlsysimError) as caught:
        library("nodes=8", "inter_bandwidth=10 Gbps", "step_time=3 furlongs")
    error = browser.find_element(By.CSS_SELECTOR, '[data-error-for="step_time"]')
    wait(browser, lambda: error.text == str(caught.value))
    assert box.get_attribute("aria-invalid") == "true"
    assert value_of(browser, "efficiency") == before
    assert "last valid inputs" in browser.find_element(By.ID, "status").text
    type_into(browser, "step_time", "1.8 s")
    wait(browser, lambda: error.text == "")


def test_downloads_toml_csv_and_chart_images(server, browser):
    toml_url = browser.find_element(By.ID, "download-toml").get_attribute("href")
    with urllib.request.urlopen(toml_url, timeout=10) as answer:
        text = answer.read().decode()
    assert "nodes = 8" in text and 'inter_bandwidth = "10 Gbps"' in text
    csv_url = browser.find_element(By.ID, "download-csv").get_attribute("href")
    with urllib.request.urlopen(csv_url, timeout=10) as answer:
        lines = answer.read().decode().splitlines()
    assert lines[0].startswith("nodes,n_devices") and len(lines) == 65
    for plot in ("scaling", "breakdown", "plan"):
        for fmt, prefix in (("png", "data:image/png;base64,"), ("svg", "data:image/svg+xml")):
            image = browser.execute_async_script(
                "const done = arguments[arguments.length - 1];"
                f"Plotly.toImage(document.querySelector('[data-plot={plot}]'), {{format: '{fmt}', width: 800, height: 500}})"
                ".then(done, e => done('error: ' + e));"
            )
            assert image.startswith(prefix), (plot, fmt, image[:80])


def test_the_plan_follows_the_deadline_and_budget(server, browser):
    deadline = browser.find_element(By.ID, "deadline")
    deadline.send_keys("1 hour")
    browser.find_element(By.ID, "budget").send_keys("400 USD")
    settle(browser)
    wait(browser, lambda: "training time ≤ 1 h" in browser.find_element(By.ID, "plan-summary").text)
    traces = browser.execute_script(
        "return document.querySelector('[data-plot=plan]').data.map(t => [t.name, t.x.length])"
    )
    names = dict(traces)
    assert names["Pareto front"] > 0 and "best (cost)" in names
    assert "deadline=1%20hour" in browser.current_url and "budget=400%20USD" in browser.current_url


def test_the_plan_shows_its_notes_and_takes_a_largest_global_batch(server, browser):
    open_page(browser, server + "/" + STATE + "&deadline=1%20hour")
    notes = browser.find_element(By.ID, "plan-notes")
    wait(browser, lambda: "add a largest global batch of 512" in notes.text)
    assert "convergence at this batch is unproven" in notes.text
    browser.find_element(By.ID, "max_global_batch").send_keys("512")
    settle(browser)
    wait(browser, lambda: "global batch ≤ 512" in browser.find_element(By.ID, "plan-summary").text)
    wait(browser, lambda: "unproven" not in notes.text)
    assert "max_global_batch=512" in browser.current_url
    open_page(browser, server + "/" + STATE)  # the state the next tests start from


def test_predict_first_hides_the_answer_until_the_guess(server, browser, shots):
    open_page(browser, server + "/" + STATE + "&teach=1")
    veiled = browser.find_element(By.ID, "revealable")
    assert "veiled" in veiled.get_attribute("class")
    assert browser.find_element(By.ID, "teach-panel").is_displayed()
    browser.find_element(By.ID, "guess").send_keys("90")
    browser.find_element(By.ID, "reveal").click()
    feedback = browser.find_element(By.ID, "teach-feedback")
    wait(browser, feedback.is_displayed)
    assert "veiled" not in veiled.get_attribute("class")
    assert "90 %" in feedback.text and "27.9 %" in feedback.text and "-62.1 pt" not in feedback.text
    explains = feedback.find_element(By.CSS_SELECTOR, "[data-explains]").get_attribute(
        "data-explains"
    )
    assert explains == "inter time"  # the gap is the inter-node AllReduce
    browser.save_screenshot(str(shots / "predict-first.png"))


def test_no_request_leaves_the_local_server(server, browser):
    browser.get_log("performance")  # forget what came before
    open_page(browser, server + "/" + STATE)
    type_into(browser, "nodes", "2")
    wait(browser, lambda: "nodes=2" in browser.current_url)
    time.sleep(0.5)
    urls = []
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    assert any(u.startswith(f"{server}/static/plotly.min.js") for u in urls)
    assert any(u.startswith(f"{server}/api/evaluate") for u in urls)
    outside = [
        u for u in urls if not u.startswith(server + "/") and not u.startswith(("data:", "blob:"))
    ]
    assert outside == []


def test_realistic_assumptions_show_the_80_percent_interval(server, browser, shots):
    open_page(browser, server + "/" + STATE + "&assumptions=realistic")
    result = library("nodes=4", "inter_bandwidth=10 Gbps", "assumptions=realistic").result
    for name in ("efficiency", "speedup", "update_time", "training_time", "cost"):
        shown = browser.find_element(By.CSS_SELECTOR, f'[data-field="{name}"]')
        low, high = result.interval(name, 0.8)
        unit = shown.get_attribute("data-unit")
        if hasattr(low, "magnitude"):
            low, high = low.to(unit).magnitude, high.to(unit).magnitude
        assert float(shown.get_attribute("data-low")) == pytest.approx(low, rel=1e-9), name
        assert float(shown.get_attribute("data-high")) == pytest.approx(high, rel=1e-9), name
        assert shown.get_attribute("data-level") == "0.8"
    low, high = result.interval("efficiency")
    card = browser.find_element(By.CSS_SELECTOR, '[data-field="efficiency"]').find_element(
        By.XPATH, ".."
    )
    assert f"80% interval: {low * 100:.1f}–{high * 100:.1f} %" in card.text
    band = browser.execute_script(
        "const t = document.querySelector('[data-plot=scaling]').data;"
        "return [t.find(x => x.name === '80% interval'), t.find(x => x.name === 'efficiency_low')]"
        ".map(x => x && x.y[3])"
    )
    assert band == [pytest.approx(high), pytest.approx(low)]  # at nodes = 4
    browser.save_screenshot(str(shots / "intervals-1400x1000.png"))


@pytest.mark.filterwarnings("ignore:step_time and training_time measured")
def test_a_custom_workload_by_its_parameter_count(server, browser, shots):
    def custom(parameters, name="custom"):
        workload = Workload(name=name, parameters=Q_(parameters, "param"))
        return library("nodes=4", "inter_bandwidth=10 Gbps").variant(workload=workload).result

    open_page(browser, server + "/" + STATE)
    assert browser.find_elements(By.CSS_SELECTOR, ".figure-interval") == []  # seed: no interval
    assert value_of(browser, "efficiency") == repr(0.27856590147020893)
    count = browser.find_element(By.NAME, "workload.parameters")
    assert not count.is_displayed()  # only for workload=custom
    Select(browser.find_element(By.NAME, "workload")).select_by_value("custom")
    settle(browser)
    assert count.is_displayed()
    gpt2 = Scenarios.get(ONE).workload.parameter_count()
    assert count.get_attribute("value") == f"{gpt2:.0f} param"  # starts from the last model's
    wait(browser, lambda: value_of(browser, "efficiency") == repr(custom(gpt2).efficiency))
    type_into(browser, "workload.parameters", "7e9")
    type_into(browser, "workload.name", "My 7B")
    want = custom(7e9, "My 7B")
    wait(browser, lambda: value_of(browser, "efficiency") == repr(want.efficiency))
    assert_page_shows(browser, want)
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(browser.current_url).query))
    assert query["workload"] == "custom" and query["workload.parameters"] == "7e9"
    assert query["workload.name"] == "My 7B"
    browser.save_screenshot(str(shots / "custom-workload.png"))
    type_into(browser, "workload.parameters", "seven")
    error = browser.find_element(By.CSS_SELECTOR, '[data-error-for="workload.parameters"]')
    wait(browser, lambda: "expected a parameter count (e.g. 7e9 param)" in error.text)
    assert value_of(browser, "efficiency") == repr(want.efficiency)  # the last good result stays
    Select(browser.find_element(By.NAME, "workload")).select_by_value("GPT2")
    settle(browser)
    wait(browser, lambda: "workload" not in browser.current_url)
    assert not count.is_displayed() and error.text == ""


def test_the_page_fits_a_phone(server, browser, shots):
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True},
    )
    try:
        open_page(browser, server + "/" + STATE + "&assumptions=realistic")
        width = browser.execute_script("return document.documentElement.scrollWidth")
        assert width <= 390  # nothing wider than the screen: no sideways scrolling
        assert_page_shows(
            browser, library("nodes=4", "inter_bandwidth=10 Gbps", "assumptions=realistic").result
        )
        browser.save_screenshot(str(shots / "phone-390x844.png"))
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert (shots / "phone-390x844.png").stat().st_size > 10_000


def test_a_parallel_layout_shows_t_p_d_and_its_breakdown(server, browser, shots):
    four = "Gpt2DataParallelFourNodes10GbE"
    sets = ["nodes=5", "accumulation_steps=4", "zero_stage=1", "tensor_parallel=5", "pipeline_parallel=2"]
    query = "&".join(sets)
    open_page(browser, f"{server}/?scenario={four}&{query}")
    result = apply_overrides(Scenarios.get(four), sets).result
    assert_page_shows(browser, result)
    card = browser.find_element(By.ID, "layout-card")
    assert card.find_element(By.CSS_SELECTOR, "[data-layout]").get_attribute("data-layout") == "t=5 p=2 d=4 ZeRO-1"
    breakdown = card.find_element(By.CSS_SELECTOR, "[data-breakdown]").get_attribute("data-breakdown")
    for term in ("compute", "tensor", "bubble", "stage transfers", "data sync"):
        assert term in breakdown
    # the bubble as a share of the update, as the library reports it (not (p-1)/m of the compute)
    assert f"bubble {100 * result.bubble_fraction:.1f}%" in card.text
    assert 0 < result.bubble_fraction < 1
    browser.save_screenshot(str(shots / "layout.png"))
    # one more stage of tensor parallelism: the page follows the library
    type_into(browser, "tensor_parallel", "1")
    wait(browser, lambda: browser.find_element(By.CSS_SELECTOR, "[data-layout]").get_attribute("data-layout")
         == "t=1 p=2 d=20 ZeRO-1")
    assert_page_shows(browser, apply_overrides(Scenarios.get(four), [*sets[:3], "tensor_parallel=1",
                                                                      "pipeline_parallel=2"]).result)


def test_the_whole_run_shows_goodput_energy_and_emissions(server, browser, shots):
    four = "Gpt2DataParallelFourNodes10GbE"
    sets = [
        "failure_rate=2e-4 failures/device/hour", "checkpoint_bandwidth=1 GB/s", "restart_time=10 min",
        "device_power=700 W", "pue=1.1", "carbon_intensity=400 g/kWh", "energy_price=0.08 USD/kWh",
    ]
    from urllib.parse import quote

    open_page(browser, f"{server}/?scenario={four}&" + "&".join(quote(s, safe="=") for s in sets))
    result = apply_overrides(Scenarios.get(four), sets).result
    assert_page_shows(browser, result)
    card = browser.find_element(By.ID, "whole-run-card")
    headline = card.find_element(By.CSS_SELECTOR, "[data-whole-run]").get_attribute("data-whole-run")
    assert headline == f"goodput {100 * result.goodput:.1f}%"
    detail = card.find_element(By.CSS_SELECTOR, "[data-whole-run-detail]").get_attribute(
        "data-whole-run-detail"
    )
    for words in ("wall clock", "MTBF", "checkpoint every", "energy", "emissions", "energy cost"):
        assert words in detail
    # the scaling chart follows the whole run: goodput and efficiency x goodput per node count
    wait(browser, lambda: "goodput (whole run)" in browser.execute_script(
        "return (document.querySelector('[data-plot=scaling]').data || []).map(t => t.name)"))
    nodes, goodput = browser.execute_script(
        "const t = document.querySelector('[data-plot=scaling]').data"
        ".find(t => t.name === 'goodput (whole run)'); return [t.x, t.y]"
    )
    scenario = apply_overrides(Scenarios.get(four), sets)
    for n, g in list(zip(nodes, goodput, strict=True))[::8]:
        assert g == pytest.approx(scenario.variant(nodes=int(n)).result.goodput, rel=1e-9)
    browser.save_screenshot(str(shots / "whole-run.png"))
