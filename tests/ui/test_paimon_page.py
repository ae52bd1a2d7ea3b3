"""The Paimon page through the real api-server: login required, names validated, content from the table; and in a
real headless Chromium, logged in as an Airflow user: inside the Airflow UI (nav entry, iframe) and on its own, with a
screenshot for docs/ui.md. One file, so one pytest worker runs the example DAG and starts the api-server for both."""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from html import unescape
from pathlib import Path
from urllib.parse import quote

import pytest

from airflow_paimon.engine.files import layout, storage
from airflow_paimon.engine.commit.properties import AS_OF
from airflow_paimon.engine.index.layout import published_snapshots, read_manifest
from airflow_paimon.engine.table.table import get_table
from held_store import held_endpoint
import processes

pytestmark = pytest.mark.ui
PAGE = "/paimon/tables/paimon_default/demo.orders"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "ui-paimon-page.png"


def test_page_refuses_a_request_without_an_airflow_login(api_server):
    for path in ("/paimon/", PAGE):
        status, body, _ = api_server.get(path)
        assert status in (401, 403, 302, 307), (path, status)
        assert "demo.orders" not in body or status != 200
    status, _, _ = api_server.get(PAGE, token="not-a-jwt")
    assert status in (401, 403)


@pytest.mark.parametrize("path", [
    "/paimon/tables/paimon_default/demo.nope",            # no such table
    "/paimon/tables/paimon_default/demo",                 # not database.table
    "/paimon/tables/paimon_default/..%2F..%2Fetc%2Fpasswd",
    "/paimon/tables/paimon_default/demo.orders%2F..%2F..",
    "/paimon/tables/paimon_default/..",
    "/paimon/tables/paimon_default/.airflow-paimon.index",  # a directory of the warehouse, not a table
    "/paimon/tables/paimon_default/demo/orders",
    "/paimon/tables/no_such_conn/demo.orders",
])
def test_only_existing_tables_are_opened(api_server, path):
    status, body, _ = api_server.get(path, api_server.token)
    assert status in (400, 404), (path, status, body[:200])
    assert "root:" not in body


def test_overview_lists_the_connection_and_its_table(api_server, written):
    status, body, _ = api_server.get("/paimon/", api_server.token)
    assert status == 200, body[:500]
    assert "paimon_default" in body and written.warehouse in body
    assert f"href='{PAGE}'" in body and "CROSS_PARTITION" in body


def test_table_page_shows_snapshots_runs_and_index_as_the_table_has_them(api_server, written):
    status, body, seconds = api_server.get(PAGE, api_server.token)
    assert status == 200, body[:500]
    text = unescape(re.sub(r"<[^>]+>", " ", body))
    table = get_table({"warehouse": written.warehouse}, written.table)
    snapshots = table.snapshot_manager().list_snapshots()
    made_by = written.run_of_snapshot()
    assert [s.id for s in snapshots] == sorted(made_by)
    rows = table.new_read_builder().new_read().to_arrow(table.new_read_builder().new_scan().plan().splits()).num_rows
    # every snapshot row, newest first, linked to the DAG run that wrote it in the Airflow UI
    snap_table = re.search(r"<table id='snapshots'>.*?</table>", body, re.S).group(0)
    shown = re.findall(r"<td class='n'>(\d+)</td><td><span class='tag'.*?href='([^']+)'", snap_table, re.S)
    assert [(int(i), href) for i, href in shown] == [
        (s.id, f"/dags/{written.dag_id}/runs/{quote(made_by[s.id], safe='')}") for s in reversed(snapshots)]
    assert len({href for _, href in shown}) == len(written.runs)  # each run's snapshot links to that run
    assert f"{rows:,}" in text and "CROSS_PARTITION" in text and "deduplicate" in text
    # each write's snapshot carries the instant its run's data is as of (the order of runs,
    # engine/commit/ordering.py), shown with where it came from
    dates = [int(s.properties[AS_OF]) for s in snapshots if s.commit_kind == "APPEND"]
    assert len(dates) == len(written.runs)
    for millis in dates:
        assert (f"as of {datetime.fromtimestamp(millis / 1000, timezone.utc):%Y-%m-%d %H:%M:%S} (data interval end)"
                in text)
    # the index of the committed snapshot: its key count is the table's row count (one row per key)
    index_uri = layout.index_dir(layout.default_root(written.warehouse, "index"), written.table)
    published = published_snapshots(index_uri)
    manifest = read_manifest(index_uri, published[-1])
    assert manifest.keys == rows
    index_table = re.search(r"<table id='index'>.*?</table>", body, re.S).group(0)
    assert f"<td class='n'>{manifest.keys:,}</td>" in index_table and manifest.origin in index_table
    # compaction debt: one row per bucket, none above Paimon's default trigger after the compact task
    assert "num-sorted-run.compaction-trigger" in text and "<svg" in body
    print(f"table page served in {seconds * 1000:.0f} ms")
    assert seconds < 5


def test_task_link_opens_the_table_page_inside_the_airflow_ui(api_server, written):
    path = (f"/api/v2/dags/{written.dag_id}/dagRuns/{quote(written.runs[-1][0], safe='')}"
            f"/taskInstances/commit/links")
    status, body, _ = api_server.get(path, api_server.token, cookie=False)
    assert status == 200, body[:500]
    link = json.loads(body)["extra_links"]["Paimon table"]
    # inside the Airflow UI: its plugin page, whose iframe (the app's overview) opens the task's table
    assert link == f"/plugin/paimon?conn_id=paimon_default&table={written.table}"
    assert api_server.redirect("/paimon/", api_server.token, {"Referer": api_server.url + link}) == (303, PAGE)
    # the overview itself: opened from the navigation, or from a page inside the frame
    other_page = api_server.url + link.replace("/plugin/paimon", "/plugin/other")
    for referer in (api_server.url + "/plugin/paimon", api_server.url + PAGE, other_page):
        assert api_server.redirect("/paimon/", api_server.token, {"Referer": referer}) == (200, None), referer
    # a named table the catalog does not list is the table page's 404, as ever
    status, location = api_server.redirect("/paimon/", api_server.token, {
        "Referer": api_server.url + "/plugin/paimon?conn_id=paimon_default&table=..%2F..%2Fetc"})
    assert status == 303 and api_server.get(location, api_server.token)[0] == 404


def test_staged_run_without_its_snapshot_is_listed(api_server, written):
    """Messages staged by assign-and-write whose commit never ran show up until committed (here: removed)."""
    from airflow_paimon.engine.commit.identity import CommitIdentity
    from airflow_paimon.engine.commit.staging import Staged, stage

    table = get_table({"warehouse": written.warehouse}, written.table)
    ident = CommitIdentity.for_run(written.dag_id, "manual__never-committed", written.table)
    staging = layout.staging_dir(layout.default_root(written.warehouse, "staging"), written.table, ident.commit_user)
    base = table.snapshot_manager().get_latest_snapshot().id
    stage(table, staging, Staged(written.table, base, ident.commit_user, ident.commit_identifier, []), [])
    try:
        status, body, _ = api_server.get(PAGE, api_server.token)
        staged = re.search(r"<table id='staged'>.*?</table>", body, re.S).group(0)
        assert ident.commit_user in staged and f"<td class='n'>{base}</td>" in staged
        committed_users = [s.commit_user for s in table.snapshot_manager().list_snapshots()]
        assert not any(u in staged for u in committed_users)
    finally:
        storage.delete_dir(staging)
    status, body, _ = api_server.get(PAGE, api_server.token)
    assert "<table id='staged'>" not in body and "Nothing staged." in body


def api_json(api_server, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    """(status, JSON answer) of a REST API call with the login as a bearer token."""
    req = urllib.request.Request(api_server.url + path, json.dumps(body).encode() if body else None, method=method,
                                 headers={"Authorization": f"Bearer {api_server.token}",
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, {"detail": e.read().decode(errors="replace")}


def test_an_unreachable_store_is_answered_in_words_within_the_timeouts(api_server):
    """A connection whose S3 endpoint never answers (before: the page took 22 s and a table page answered 500; the
    endpoint of held_store.py, not a closed port, which pyarrow's client would go on retrying in the api-server for
    85 s, holding its exit): the overview, the table page and the connection test, asked at once, each answer
    within its timeout ([paimon] ui_read_timeout, default 5 s; connection_test_timeout, 2 s here), naming the
    warehouse and the endpoint; never a 500."""
    with held_endpoint() as endpoint:
        extra = {"warehouse": "s3://lake/wh", "catalog_options": {
            "fs.s3.endpoint": endpoint, "fs.s3.accessKeyId": "key", "fs.s3.accessKeySecret": "secret",
            "fs.s3.region": "us-east-1"}}
        conn = {"connection_id": "paimon_unreachable", "conn_type": "paimon", "extra": json.dumps(extra)}
        status, answer = api_json(api_server, "POST", "/api/v2/connections", conn)
        assert status == 201, answer
        timed_out = ("reading warehouse s3://lake/wh of connection paimon_unreachable timed out after 5 s "
                     f"(is the endpoint {endpoint} reachable?)")
        try:
            started = time.monotonic()
            with ThreadPoolExecutor(3) as pool:
                overview = pool.submit(api_server.get, "/paimon/", api_server.token)
                table = pool.submit(api_server.get, "/paimon/tables/paimon_unreachable/db.t", api_server.token)
                tested = pool.submit(api_json, api_server, "POST", "/api/v2/connections/test", conn)
                (o_status, o_body, o_seconds), (t_status, t_body, t_seconds) = overview.result(), table.result()
                c_status, c_answer = tested.result()
            print(f"overview {o_seconds:.1f} s, table page {t_seconds:.1f} s, all {time.monotonic() - started:.1f} s")
            assert o_status == 200 and o_seconds < 5 + 4, (o_status, o_seconds)
            assert timed_out in unescape(o_body) and f"href='{PAGE}'" in o_body  # the other connection's table, as ever
            assert t_status == 504 and t_seconds < 5 + 4, (t_status, t_seconds, t_body[:300])
            assert timed_out in unescape(t_body)
            assert c_status == 200 and c_answer["status"] is False, c_answer
            assert c_answer["message"] == ("reading warehouse s3://lake/wh timed out after 2 s "
                                           f"(is the endpoint {endpoint} reachable?)")
        finally:
            assert api_json(api_server, "DELETE", "/api/v2/connections/paimon_unreachable")[0] == 204


def test_the_page_under_the_path_of_base_url(prefixed_api_server, written, monkeypatch):
    """Airflow served under a path (``[api] base_url = http://host/airflow``, e.g. behind a reverse proxy): the
    page answers at ``/airflow/paimon/`` and every link it renders, the navigation's frame and the task's extra
    link carry the path (before: all went to ``/paimon/...`` and ``/plugin/...``, which answer 404 there)."""
    from paimon_upsert_daily import dag
    from ui.conftest import PREFIX

    from airflow_paimon.links import PaimonTableLink

    server = prefixed_api_server
    host = server.url.removesuffix(PREFIX)
    status, overview, _ = server.get("/paimon/", server.token)
    assert status == 200, overview[:500]
    assert f"href='{PREFIX}{PAGE}'" in overview and "CROSS_PARTITION" in overview
    status, page, _ = server.get(PAGE, server.token)
    assert status == 200, page[:500]
    assert f"href='{PREFIX}/paimon/'" in page and f"href='{PREFIX}/dags/{written.dag_id}/runs/" in page
    # without the path: the plugin's mount (below the api-server's root path) does not answer
    assert dataclasses.replace(server, url=host).get("/paimon/", server.token)[0] == 404
    for body in (overview, page):
        hrefs = re.findall(r"href='([^']*)'", body)
        assert hrefs and all(h.startswith(PREFIX + "/") for h in hrefs), hrefs
    # the navigation entry's frame (an external view: the UI sets the iframe's src to its href as given)
    status, body, _ = server.get("/api/v2/plugins", server.token, cookie=False)
    assert status == 200, body[:500]
    views = [v for p in json.loads(body)["plugins"] if p["name"] == "paimon" for v in p["external_views"]]
    assert [v["href"] for v in views] == [f"{PREFIX}/paimon/"]
    # the extra link of a write task, as its worker (same [api] base_url) computes it, and where it leads
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", server.url)
    link = PaimonTableLink().get_link(dag.get_task("commit"), ti_key=None)
    assert link == f"{PREFIX}/plugin/paimon?conn_id=paimon_default&table={written.table}"
    assert server.redirect("/paimon/", server.token, {"Referer": host + link}) == (303, PREFIX + PAGE)


# In Chromium

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
