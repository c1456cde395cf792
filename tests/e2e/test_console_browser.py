"""The web console in headless Chromium against a whole stack on the fake venue.

An operator signs in, creates a tenant and a key (shown once), raises one of its limits and
disables and enables it again (each in the tenant's audit trail); the tenant signs in with it, sees
no operator view, subscribes a book, watches its depth chart update with a rising update id (the
book kept from the multiplexed stream's diffs, each checksum-verified), sees it turn ``stale``
while the fake venue withholds the market's events, reads its usage chart, and signs out; the
operator then finds the stale replica in its books view with why and since when, and the last hour
charted in its history view. Any error the page logs (a script error, a refused resource, a
Content-Security-Policy violation) fails the test.
Screenshots of the main views go to ``LADDER_SCREENSHOT_DIR`` (the README's come from there) or
to the test's temporary folder.

Chromium and its WebDriver are Debian's ``chromium`` and ``chromium-driver`` (``make
browser-tools``, which ``make test`` runs first); Selenium drives that binary, never a browser
build of its own.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from read_functions.app.routing import Audience
from read_functions.routes import ROUTES
from tests.e2e.stack import ADMIN_KEY, Stack, start_stack

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("console")]

MARKET = "BNBBTC"
STALE_AFTER_MS = 1500
T = TypeVar("T")


def browser_binaries() -> tuple[str, str]:
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.skip(
            "headless Chromium is not installed and `make browser-tools` (run by `make test`) could "
            "not install Debian's chromium and chromium-driver here"
        )
    return chromium, driver


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    running = start_stack(
        extra_env={
            "LADDER_STALE_AFTER_MS": str(STALE_AFTER_MS),
            "LADDER_STATS_INTERVAL_S": "0.5",
            "LADDER_HISTORY_INTERVAL_S": "1",
        }
    )
    yield running
    running.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    chromium, driver_path = browser_binaries()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--window-size=1360,1000", "--no-first-run", "--disable-extensions", "--no-pings",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-domain-reliability", "--disable-client-side-phishing-detection"):  # fmt: skip
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_script_timeout(10)
    yield driver
    driver.quit()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("LADDER_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float = 20.0) -> T:
    """Poll ``probe`` until it answers something truthy; fail naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            found = probe()
        except Exception:  # the element is being re-rendered: try again
            found = None
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def test_operator_and_tenant_use_the_console(stack: Stack, browser: Any, shots: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    def one(css: str) -> Any:
        return browser.find_element(By.CSS_SELECTOR, css)

    def present(css: str) -> Any:
        found = browser.find_elements(By.CSS_SELECTOR, css)
        return found[0] if found and found[0].is_displayed() else None

    def click(css: str, what: str) -> None:
        """Click what ``css`` finds once it is shown (views re-render: a stale find is retried)."""

        def clicked() -> bool:
            found = present(css)
            if found is None:
                return False
            found.click()
            return True

        wait_for(what, clicked)

    def sign_in(key: str, role: str) -> None:
        wait_for("the sign-in form", lambda: present("#key"))
        one("#key").send_keys(key)
        one("#sign-in-form button").click()
        wait_for(f"signed in as {role}", lambda: present(f'#role[data-role="{role}"]'))

    def sign_out() -> None:
        one("#sign-out").click()
        wait_for("the sign-in form again", lambda: present("#sign-in"))
        assert browser.execute_script("return sessionStorage.length") == 0

    def fill_form(form: str, values: dict[str, str]) -> None:
        for name, value in values.items():
            field = one(f'{form} [name="{name}"]')
            field.clear()
            field.send_keys(value)

    browser.get(f"{stack.api}/console")
    sign_in(ADMIN_KEY, "operator")
    assert browser.execute_script("return location.search + location.hash") == ""  # no key in the URL
    # the cluster view: both nodes up, their CPU share once two readings are in, the weight budget
    wait_for("both nodes with a CPU share",
             lambda: all(present(f'#view-cluster tr[data-node="node-{i}"]') and "%" in present(
                 f'#view-cluster tr[data-node="node-{i}"]').text for i in (1, 2)))  # fmt: skip
    wait_for("a weight budget row", lambda: present("#view-cluster tr[data-pool] .meter"))

    click("#tab-tenants", "the tenants tab")
    wait_for("the tenant form, from the API's schema", lambda: present('#create-tenant [name="max_depth"]'))
    fill_form(
        "#create-tenant", {"name": "acme", "max_markets": "5", "max_replicas": "2", "rate_limit_rps": "50"}
    )
    one("#create-tenant button[type=submit]").click()
    wait_for("the new tenant's row", lambda: present('#tenants-table tr[data-tenant="acme"]'))
    click("#create-key", "the tenant's keys")
    key = wait_for("the new key, shown once", lambda: present("#new-key-value")).text
    assert key.startswith("ldr_") and len(key) > 30
    browser.save_screenshot(str(shots / "console-operator-tenants.png"))

    # the operator raises a limit (the form's fields come from the API's schema) ...
    tenant_row = '#tenants-table tr[data-tenant="acme"]'
    click(f"{tenant_row} .edit-tenant", "the tenant's limits button")
    wait_for("the limits form", lambda: present('#edit-tenant[data-tenant="acme"] [name="max_markets"]'))
    fill_form("#edit-tenant", {"max_markets": "7"})
    one("#edit-tenant button[type=submit]").click()
    wait_for("the change said", lambda: "max_markets 5 → 7" in one("#edit-result").text)
    wait_for("the raised limit in the list", lambda: "/ 7" in one(tenant_row).text)
    # ... and disables the tenant, whose key then reads nothing, then enables it again
    click(f"{tenant_row} .disable-tenant", "the disable button")
    wait_for("the tenant disabled", lambda: present(f'{tenant_row}[data-state="disabled"]'))
    assert stack.call(key, "GET", "/v1/subscriptions").status_code == 403
    click(f"{tenant_row} .enable-tenant", "the enable button")
    wait_for("the tenant enabled", lambda: present(f'{tenant_row}[data-state="active"]'))
    updates = '#tenant-audit tr[data-action="tenant.update"]'
    wait_for(
        "the three changes in the audit trail",
        lambda: len(browser.find_elements(By.CSS_SELECTOR, updates)) >= 3,
    )
    assert "disabled=true" in one("#tenant-audit").text and "max_markets=7" in one("#tenant-audit").text
    browser.save_screenshot(str(shots / "console-operator-tenant-limits.png"))
    sign_out()
    assert key not in browser.page_source  # shown once: gone with the session

    sign_in(key, "tenant")
    tabs = [t.get_attribute("id") for t in browser.find_elements(By.CSS_SELECTOR, "#tabs button")]
    assert tabs == ["tab-books", "tab-consolidated", "tab-usage"]  # no operator view for a tenant's key
    for route in (
        r for r in ROUTES if r.access is Audience.ADMIN and r.method == "GET" and "{" not in r.path
    ):
        assert stack.call(key, "GET", route.path).status_code == 403, route.path
    wait_for("the exchanges", lambda: present('#subscribe-exchange option[value="binance.com"]'))
    Select(one("#subscribe-exchange")).select_by_value("binance.com")
    fill_form("#subscribe", {"market": MARKET, "depth": "50"})
    one("#subscribe button[type=submit]").click()
    row = f'#subscriptions-table tr[data-book="binance.com/{MARKET}"]'
    wait_for("the subscription, synced", lambda: present(f'{row}[data-status="synced"]'), 30)
    click(f"{row} .view-book", "the book's view button")
    wait_for("the live book", lambda: present('#live-status[data-status="live"]'))
    wait_for("a drawn depth chart", lambda: present('#depth-chart[data-live="true"] canvas'))
    first = int(
        wait_for(
            "an update id", lambda: one("#live-update-id").text.isdigit() and one("#live-update-id").text
        )
    )
    later = wait_for("a rising update id", lambda: (n := int(one("#live-update-id").text)) > first and n)
    assert later > first and "bid" in one("#ladder").get_attribute("innerHTML")
    # the live book is kept from the multiplexed stream's diff mode, every message checksum-verified
    wait_for("diffs applied", lambda: int(one("#live-book").get_attribute("data-diffs")) >= 3)
    live_book = one("#live-book")
    assert live_book.get_attribute("data-mode") == "diff"
    assert int(live_book.get_attribute("data-snapshots")) >= 1
    assert live_book.get_attribute("data-mismatches") == "0"
    assert "checksum-verified" in one("#live-verified").text
    browser.save_screenshot(str(shots / "console-tenant-book.png"))

    # one pair on three venues, subscribed in one call and merged into one ladder in venue colours
    click("#tab-consolidated", "the consolidated tab")
    fill_form("#consolidated-form", {"pair": "btc-usdt", "venues": "binance.com, okx, bybit", "depth": "15"})
    click("#consolidated-subscribe", "subscribe on these venues")
    wait_for("three books merged, live",
             lambda: present('#consolidated-status[data-status="live"]')
             and len(browser.find_elements(By.CSS_SELECTOR, "#consolidated-books-table tr[data-book]")) == 3,
             30)  # fmt: skip
    books = [r.get_attribute("data-book") for r in browser.find_elements(
        By.CSS_SELECTOR, "#consolidated-books-table tr[data-book]")]  # fmt: skip
    assert books == ["binance.com:BTCUSDT", "okx:BTC-USDT", "bybit:BTCUSDT"]
    parts = browser.find_elements(By.CSS_SELECTOR, "#consolidated-ladder-table .venue-bar .part")
    colours = {p.get_attribute("data-book"): p.get_attribute("class") for p in parts}
    assert len(set(colours.values())) == len(colours) >= 2, colours  # one colour per venue
    rows = browser.find_elements(By.CSS_SELECTOR, "#consolidated-ladder-table tr[data-side]")
    sides = {r.get_attribute("data-side") for r in rows}
    assert sides == {"ask", "bid"}
    browser.save_screenshot(str(shots / "console-tenant-consolidated.png"))
    click("#tab-books", "back to the books")

    # the venue withholds the market's events while its book keeps changing: the node's stall
    # check marks the replica stale
    stack.fault(action="withhold", venue="spot", symbol=MARKET, seconds=20, resume="gap")
    wait_for("the book shown as stale", lambda: present('#live-status[data-status="stale"]'), 15)
    assert one("#depth-chart").get_attribute("data-live") == "false"
    assert "not live: stale" in one("#not-live-notice").text
    wait_for("the subscription listed as stale", lambda: present(f'{row}[data-status="stale"]'))
    browser.save_screenshot(str(shots / "console-tenant-stale.png"))

    click("#tab-usage", "the usage tab")
    usage = wait_for("usage against limits", lambda: present("#usage-table"))
    assert "4 / 7" in usage.text  # four markets of seven: one book, and one pair on three venues
    wait_for("the usage chart with its hour", lambda: present('#chart-usage[data-points="60"] canvas'))
    assert "requests" in one("#chart-usage").text and "errors" in one("#chart-usage").text
    browser.save_screenshot(str(shots / "console-tenant-usage.png"))
    sign_out()
    assert browser.get_cookies() == []

    # the operator, meanwhile, sees which replica is stale, on which node, and since when
    sign_in(ADMIN_KEY, "operator")
    click("#tab-books", "the books tab")
    stale = f'#books-table tr[data-book="binance.com/{MARKET}"][data-status="stale"]'
    assert "node-" in wait_for("the stale replica in the operator's books", lambda: present(stale)).text
    why = one(f"{stale} td.why").text
    assert why.startswith(("stalled", "silent")) and ", for " in why, why  # why, and since when
    summary = one("#view-books .summary").text
    assert re.fullmatch(r"\d+ books?, \d+ replicas?: .*", summary), summary  # counts that say what they count
    browser.save_screenshot(str(shots / "console-operator-books.png"))
    click("#tab-history", "the history tab")

    def charted(chart: str) -> bool:
        return (
            bool(present(f"#chart-{chart} canvas"))
            and int(one(f"#chart-{chart}").get_attribute("data-points")) >= 2
        )

    for chart in ("latency", "replicas", "resyncs", "requests"):
        wait_for(f"the {chart} chart with points", functools.partial(charted, chart))
    # (which statuses the nodes reported depends on the machine's load: "synced" is always among them)
    assert "acme requests" in one("#chart-requests").text and "synced" in one("#chart-replicas").text
    browser.save_screenshot(str(shots / "console-operator-history.png"))
    click("#tab-cluster", "the cluster tab")
    wait_for("publish latency of a node", lambda: "binance.com" in one("#view-cluster").text)
    browser.save_screenshot(str(shots / "console-operator-cluster.png"))
    sign_out()

    errors = [entry for entry in browser.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")]
    assert errors == [], errors
