"""The Paimon page in a real headless Chromium, logged in as an Airflow user: inside the Airflow UI (nav
entry, iframe) and on its own, with a screenshot for docs/ui.md."""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from airflow_paimon.engine import layout
from airflow_paimon.engine.index.layout import published_snapshots, read_manifest
from airflow_paimon.engine.table import get_table
from ui.test_paimon_page import PAGE
import processes

pytestmark = pytest.mark.ui
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "ui-paimon-page.png"


@pytest.fixture(scope="module")
def browser(api_server):
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if missing:
        pytest.skip(f"browser test needs {' and '.join(missing)} (Debian: apt-get install -y chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="browser test needs the selenium package (dev group)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,1000", "--hide-scrollbars"):
        options.add_argument(arg)
    # An explicit driver: Selenium Manager never runs (it would try to download one).
    service = Service(CHROMEDRIVER, popen_kw=processes.dying_options())  # chromedriver and its chromium
    driver = webdriver.Chrome(service=service, options=options)
    processes.own(service.process)
    try:
        driver.get(api_server.url + "/api/v2/monitor/health")  # the cookie's origin
        driver.add_cookie({"name": "_token", "value": api_server.token, "path": "/"})
        yield driver
    finally:
        driver.quit()


def test_paimon_page_in_chromium(browser, api_server, written, tmp_path):
    from selenium.webdriver.common.by import By

    start = time.perf_counter()
    browser.get(api_server.url + PAGE)
    loaded = time.perf_counter() - start
    assert browser.find_element(By.TAG_NAME, "h1").text == written.table
    table = get_table({"warehouse": written.warehouse}, written.table)
    ids = [s.id for s in table.snapshot_manager().list_snapshots()]
    shown = [r.find_element(By.TAG_NAME, "td").text for r in
             browser.find_elements(By.CSS_SELECTOR, "#snapshots tr")[1:]]
    assert shown == [str(i) for i in reversed(ids)]
    made_by = written.run_of_snapshot()
    assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#snapshots a")] == [
        f"{written.dag_id} / {made_by[i]}" for i in reversed(ids)]
    index_uri = layout.index_dir(layout.default_root(written.warehouse, "index"), written.table)
    keys = read_manifest(index_uri, published_snapshots(index_uri)[-1]).keys
    assert f"{keys:,}" in browser.find_element(By.ID, "index").text
    assert browser.find_element(By.TAG_NAME, "svg").is_displayed()
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, height + 160)  # + the window's frame
    shot = tmp_path / "ui-paimon-page.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    if os.environ.get("UPDATE_SCREENSHOT"):  # docs/ui.md's picture: refreshed on demand, never by a plain test run
        shutil.copy(shot, SCREENSHOT)
    print(f"page loaded in Chromium in {loaded * 1000:.0f} ms; screenshot {shot}")


def test_paimon_entry_in_the_airflow_ui(browser, api_server, written):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    browser.set_window_size(1280, 1000)
    browser.get(api_server.url + "/plugin/paimon")
    wait = WebDriverWait(browser, 60)
    frame = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "iframe[src*='/paimon/']")))
    assert wait.until(lambda d: d.find_elements(By.XPATH, "//nav//*[normalize-space(text())='Paimon']") or
                      d.find_elements(By.CSS_SELECTOR, "a[href*='/plugin/paimon']"))
    browser.switch_to.frame(frame)
    link = wait.until(ec.presence_of_element_located((By.LINK_TEXT, written.table)))
    assert link.get_attribute("href").endswith(PAGE)
    browser.switch_to.default_content()


def test_a_tasks_extra_link_opens_its_table_inside_the_airflow_ui(browser, api_server, written):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    from airflow_paimon.links import ui_table_link

    browser.get(api_server.url + ui_table_link("paimon_default", written.table))
    wait = WebDriverWait(browser, 60)
    frame = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "iframe[src*='/paimon/']")))
    assert wait.until(lambda d: d.find_elements(By.XPATH, "//nav//*[normalize-space(text())='Paimon']") or
                      d.find_elements(By.CSS_SELECTOR, "a[href*='/plugin/paimon']"))
    browser.switch_to.frame(frame)
    assert wait.until(ec.presence_of_element_located((By.TAG_NAME, "h1"))).text == written.table
    browser.switch_to.default_content()
