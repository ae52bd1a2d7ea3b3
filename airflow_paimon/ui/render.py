"""HTML of the Paimon page: plain server-side markup and an inline SVG chart (no script, no CDN).

Every value shown is escaped (``_text``, ``_n``, ``_bytes``), whatever its type: names, options, snapshot
fields, index manifests and staged commits are files anyone with write access to the warehouse may have
written, and the page is served to every Airflow user."""
from __future__ import annotations

from datetime import datetime, timezone
from html import escape
from urllib.parse import quote

from airflow_paimon.engine.commit.properties import REBASED_OVER, REWRITES, RunClock
from airflow_paimon.ui.runs import dag_run_url, run_label
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # ui/tables.py reads with pypaimon: the job side's
    from airflow_paimon.ui.tables import SnapshotRow, TableView

KIND_COLOURS = {"APPEND": "#2f80c9", "COMPACT": "#8a94a6", "OVERWRITE": "#e08a2c"}
STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;padding:20px 28px;color:#1f2933;
     background:#f6f8fa;font-size:14px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:16px;margin:0 0 10px} .muted{color:#66727f}
a{color:#0b69c7;text-decoration:none} a:hover{text-decoration:underline}
.card{background:#fff;border:1px solid #dde3ea;border-radius:8px;padding:14px 18px;margin:14px 0}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:10px}
.stat{background:#fff;border:1px solid #dde3ea;border-radius:8px;padding:10px 14px}
.stat b{display:block;font-size:20px} .stat span{color:#66727f;font-size:12px}
.stat b.warn{color:#b3261e} .stat b.ok{color:#1e7f3c}
table{border-collapse:collapse;width:100%} th,td{text-align:left;padding:5px 10px;border-bottom:1px solid #edf0f3}
th{font-size:12px;color:#66727f;font-weight:600;background:#fafbfc} td.n,th.n{text-align:right}
.tag{display:inline-block;border-radius:10px;padding:1px 8px;font-size:12px;color:#fff}
.warn{color:#b3261e;font-weight:600} .ok{color:#1e7f3c} code{font-size:12px}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:14px} .cols .card{margin:0}
"""


def page(title: str, body: str) -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>{body}</body></html>")


def table_url(conn_id: str, identifier: str, root: str) -> str:
    return f"{root}/tables/{quote(conn_id, safe='')}/{quote(identifier, safe='.')}"


def overview(connections: list[dict], root: str) -> str:
    parts = ["<h1>Paimon</h1><p class='muted'>Tables of the <code>paimon</code> connections, read-only.</p>"]
    if not connections:
        parts.append("<div class='card'>No connection of type <code>paimon</code>.</div>")
    for c in connections:
        rows = "".join(
            f"<tr><td><a href='{escape(table_url(c['conn_id'], t['identifier'], root))}'>{_text(t['identifier'])}</a>"
            f"</td><td>{_text(t['bucket_mode'])}</td><td class='n'>{_n(t['snapshot_id'])}</td>"
            f"<td>{_kind(t['commit_kind'])}</td><td class='n'>{_n(t['records'])}</td></tr>" for t in c["tables"])
        error = f"<p class='warn'>{_text(c['error'])}</p>" if c.get("error") else ""
        parts.append(f"<div class='card'><h2>{_text(c['conn_id'])} <span class='muted'>{_text(c['warehouse'])}</span>"
                     f"</h2>{error}<table><tr><th>table</th><th>bucket mode</th><th class='n'>latest snapshot</th>"
                     f"<th>kind</th><th class='n'>records in data files</th></tr>{rows}</table></div>")
    return page("Paimon", "".join(parts))


def read_failed(conn_id: str, identifier: str, error: str, root: str) -> str:
    """The page of a table whose read failed or timed out: what happened, in words."""
    return page(f"Paimon · {identifier}",
                f"<p><a href='{escape(root)}/'>Paimon</a> / {_text(conn_id)}</p><h1>{_text(identifier)}</h1>"
                f"<div class='card'><p class='warn' id='read-error'>{_text(error)}</p></div>")


def table_page(v: TableView, root: str, airflow_root: str = "") -> str:
    """``root``: the app's path (its links); ``airflow_root``: the path Airflow is served under (DAG run links)."""
    latest = v.latest
    index = v.indexes[0] if v.indexes else None
    stats = [("latest snapshot", _n(latest.id if latest else None), ""),
             ("records in data files", _n(latest.total_records if latest else 0), ""),
             ("buckets / files", f"{_n(v.bucket_count)} / {_n(v.file_count)}", ""),
             ("buckets ≥ compaction trigger", _n(v.indebted), "warn" if v.indebted else "ok"),
             ("index keys", _n(index.keys) if index else "—", ""),
             ("staged, not committed", _n(len(v.staged)), "warn" if v.staged else "ok")]
    head = (f"<p><a href='{escape(root)}/'>Paimon</a> / {_text(v.conn_id)}</p><h1>{_text(v.identifier)}</h1>"
            f"<p class='muted'>{_text(v.bucket_mode)} · merge engine {_text(v.merge_engine)} · primary key "
            f"({_text(', '.join(map(str, v.primary_keys))) or '—'}) · partitioned by "
            f"({_text(', '.join(map(str, v.partition_keys))) or '—'})"
            "</p><div class='grid'>"
            + "".join(f"<div class='stat'><b class='{cls}'>{value}</b><span>{escape(name)}</span></div>"
                      for name, value, cls in stats)
            + "</div>")
    chart = ("<div class='card'><h2>Records over snapshots</h2><p class='muted'>Paimon's record counts: old versions "
             "and deletes count until compaction merges them; the index holds one key per live row.</p>"
             f"{records_chart(list(reversed(v.snapshots)))}</div>")
    return page(f"Paimon · {v.identifier}", head + chart + _snapshots(v, airflow_root) + "<div class='cols'>"
                + _schema(v) + _index(v) + "</div>" + "<div class='cols'>" + _schema_versions(v) + _tags(v) + "</div>"
                + _buckets(v) + _staged(v, airflow_root))


def records_chart(snaps: list[SnapshotRow], width: int = 900, height: int = 220) -> str:
    """Bars: records each snapshot added (colour = commit kind); line: total records after it."""
    if not snaps:
        return "<p class='muted'>No snapshot yet.</p>"
    left, right, top, bottom = 64, 64, 14, 34
    w, h = width - left - right, height - top - bottom
    top_delta = max(max((s.delta_records or 0) for s in snaps), 1)
    top_total = max(max((s.total_records or 0) for s in snaps), 1)
    step = w / len(snaps)
    bar = max(min(step * 0.6, 48), 2)
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='100%' viewBox='0 0 {width} {height}' role='img' "
           f"aria-label='records over snapshots' font-size='11' font-family='system-ui,sans-serif'>"]
    for frac in (0, 0.5, 1):
        y = top + h - frac * h
        out.append(f"<line x1='{left}' x2='{left + w}' y1='{y:.1f}' y2='{y:.1f}' stroke='#edf0f3'/>"
                   f"<text x='{left - 6}' y='{y + 4:.1f}' text-anchor='end' fill='#2f80c9'>"
                   f"{_short(frac * top_delta)}</text>"
                   f"<text x='{left + w + 6}' y='{y + 4:.1f}' fill='#1f2933'>{_short(frac * top_total)}</text>")
    points = []
    for i, s in enumerate(snaps):
        cx = left + step * (i + 0.5)
        bh = (s.delta_records or 0) / top_delta * h
        colour = _colour(s.commit_kind)
        out.append(f"<rect x='{cx - bar / 2:.1f}' y='{top + h - bh:.1f}' width='{bar:.1f}' height='{bh:.1f}' "
                   f"fill='{colour}' opacity='0.85'><title>snapshot {_n(s.id)} {_text(s.commit_kind)}: "
                   f"{_n(s.delta_records or 0)} records</title></rect>")
        if len(snaps) <= 30 or i % (len(snaps) // 15 + 1) == 0:
            out.append(f"<text x='{cx:.1f}' y='{top + h + 16}' text-anchor='middle' fill='#66727f'>{_n(s.id)}</text>")
        points.append(f"{cx:.1f},{top + h - (s.total_records or 0) / top_total * h:.1f}")
    out.append(f"<polyline points='{' '.join(points)}' fill='none' stroke='#1f2933' stroke-width='2'/>")
    out += [f"<circle cx='{p.split(',')[0]}' cy='{p.split(',')[1]}' r='3' fill='#1f2933'/>" for p in points]
    out.append(f"<text x='{left + w / 2}' y='{height - 2}' text-anchor='middle' fill='#66727f'>snapshot id · "
               "bars: records the snapshot added (left axis) · line: records in all data files (right axis)"
               "</text></svg>")
    legend = " ".join(f"<span class='tag' style='background:{c}'>{k}</span>" for k, c in KIND_COLOURS.items())
    return "".join(out) + f"<div>{legend}</div>"


def _run_link(dag_run: tuple, airflow_root: str) -> str:
    """The DAG run's page, labelled ``dag / run`` (and ``(clear N)`` when a cleared run wrote it)."""
    href = airflow_root + dag_run_url(dag_run[0], dag_run[1])
    return f"<a target='_top' href='{escape(href)}'>{_text(run_label(dag_run))}</a>"


def _how_committed(properties: dict) -> str:
    """What the snapshot's properties say of its run (engine/commit/ordering.py): the instant its rows were ordered
    by (as of, from what) or commit order, the snapshots it was rebased over, how often its batch was written again
    first."""
    notes = []
    clock = RunClock.of_properties(properties)
    if clock is not None:
        order = ("ordered by commit" if not clock.ordered
                 else f"as of {_time(clock.as_of_ms)} ({clock.as_of_from.replace('_', ' ')})")
        notes.append(f"{order}{f', {clock.run_type} run' if clock.run_type else ''}")
    if properties.get(REBASED_OVER):
        notes.append(f"rebased over {properties[REBASED_OVER].replace(',', ', ')}")
    if properties.get(REWRITES):
        notes.append(f"written again {properties[REWRITES]}×")
    return "".join(f"<br><span class='muted'>{_text(n)}</span>" for n in notes)


def _snapshots(v: TableView, airflow_root: str) -> str:
    rows = []
    for s in v.snapshots:
        run = "<span class='muted'>another writer</span>"
        if s.dag_run:
            run = _run_link(s.dag_run, airflow_root)
        rows.append(f"<tr><td class='n'>{_n(s.id)}</td><td>{_kind(s.commit_kind)}</td><td>{_time(s.time_millis)}</td>"
                    f"<td>{run}{_how_committed(s.properties)}<br><code class='muted'>{_text(s.commit_user)}</code></td>"
                    f"<td class='n'>{_n(s.delta_records)}</td><td class='n'>{_n(s.total_records)}</td></tr>")
    return ("<div class='card'><h2>Snapshots</h2><table id='snapshots'><tr><th class='n'>id</th><th>kind</th>"
            "<th>time (UTC)</th><th>written by</th><th class='n'>delta records</th>"
            "<th class='n'>total records</th></tr>"
            + "".join(rows) + "</table></div>")


def _schema(v: TableView) -> str:
    rows = "".join(f"<tr><td>{_text(n)}</td><td><code>{_text(t)}</code></td><td>"
                   f"{'PK ' if n in v.primary_keys else ''}{'partition' if n in v.partition_keys else ''}</td></tr>"
                   for n, t in v.columns)
    opts = ", ".join(f"<code>{_text(k)}={_text(val)}</code>" for k, val in sorted(v.options.items()))
    return (f"<div class='card'><h2>Schema</h2><table><tr><th>column</th><th>type</th><th>key</th></tr>{rows}</table>"
            f"<p class='muted'>options: {opts or '—'}</p></div>")


def _schema_versions(v: TableView) -> str:
    rows = "".join(f"<tr><td class='n'>{_n(s.id)}</td><td>{_time(s.time_millis)}</td>"
                   f"<td>{'<br>'.join(_text(c) for c in s.changes)}</td></tr>" for s in v.schemas)
    return ("<div class='card'><h2>Schema versions</h2><table id='schemas'><tr><th class='n'>id</th>"
            "<th>time (UTC)</th><th>what changed</th></tr>" + rows + "</table></div>")


def _tags(v: TableView) -> str:
    if not v.tags:
        return "<div class='card'><h2>Tags</h2><p class='muted'>No tags.</p></div>"
    rows = "".join(f"<tr><td><code>{_text(t.name)}</code></td><td class='n'>{_n(t.snapshot_id)}</td>"
                   f"<td>{_time(t.time_millis)}</td></tr>" for t in v.tags)
    return ("<div class='card'><h2>Tags</h2><table id='tags'><tr><th>tag</th><th class='n'>snapshot</th>"
            "<th>snapshot time (UTC)</th></tr>" + rows + "</table></div>")


def _index(v: TableView) -> str:
    if not v.indexes:
        return "<div class='card'><h2>Global key index</h2><p class='muted'>No published index.</p></div>"
    latest = v.latest.id if v.latest else None
    rows = "".join(f"<tr><td class='n'>{_n(i.snapshot_id)}</td><td>{_text(i.origin)}</td>"
                   f"<td class='n'>{_n(i.shards)}</td><td class='n'>{_n(i.keys)}</td><td class='n'>{_n(i.files)}</td>"
                   f"<td class='n'>{_bytes(i.size)}</td></tr>"
                   for i in v.indexes)
    newest = v.indexes[0].snapshot_id
    state = ("<span class='ok'>of the latest snapshot</span>" if newest == latest
             else f"<span class='muted'>newest is of snapshot {_n(newest)}, the table is at {_n(latest)}</span>")
    return (f"<div class='card'><h2>Global key index</h2><p>{state}</p><table id='index'><tr>"
            "<th class='n'>snapshot</th>"
            "<th>origin</th><th class='n'>shards</th><th class='n'>keys</th><th class='n'>files</th>"
            f"<th class='n'>size</th></tr>{rows}</table></div>")


def _buckets(v: TableView) -> str:
    rows = "".join(
        f"<tr><td>{_text(', '.join(map(str, b.partition)) or '—')}</td><td class='n'>{_n(b.bucket)}</td>"
        f"<td class='n'>{_n(b.files)}</td><td class='n {'warn' if b.sorted_runs >= v.compaction_trigger else ''}'>"
        f"{_n(b.sorted_runs)}</td><td class='n'>{_n(b.records)}</td><td class='n'>{_bytes(b.size)}</td></tr>"
        for b in v.buckets)
    more = (f"<p class='muted'>the {_n(len(v.buckets))} buckets with the most sorted runs of {_n(v.bucket_count)}</p>"
            if v.bucket_count > len(v.buckets) else "")
    return (f"<div class='card'><h2>Compaction debt</h2><p>{_n(v.indebted)} of {_n(v.bucket_count)} buckets have at "
            f"least <code>num-sorted-run.compaction-trigger</code> = {_n(v.compaction_trigger)} sorted runs.</p>{more}"
            "<table id='buckets'><tr><th>partition</th><th class='n'>bucket</th><th class='n'>files</th>"
            "<th class='n'>sorted runs</th><th class='n'>records</th><th class='n'>size</th></tr>" + rows
            + "</table></div>")


def _staged(v: TableView, airflow_root: str) -> str:
    if not v.staged:
        return "<div class='card'><h2>Staged, not committed</h2><p class='muted'>Nothing staged.</p></div>"
    rows = []
    for s in v.staged:
        run = _run_link(s.dag_run, airflow_root) if s.dag_run else "<span class='muted'>unknown run</span>"
        rows.append(f"<tr><td>{run}<br><code class='muted'>{_text(s.commit_user)}</code></td>"
                    f"<td class='n'>{_n(s.base_snapshot_id)}</td><td class='n'>{_n(s.messages)}</td></tr>")
    return ("<div class='card'><h2>Staged, not committed</h2><table id='staged'><tr><th>run</th>"
            "<th class='n'>base snapshot</th><th class='n'>commit messages</th></tr>" + "".join(rows)
            + "</table></div>")


def _text(value) -> str:
    """Any value as HTML text (or a quoted attribute's value): escaped, whatever its type."""
    return escape(str(value))


def _colour(kind) -> str:
    return KIND_COLOURS.get(kind, "#5b6b7b") if isinstance(kind, str) else "#5b6b7b"


def _kind(kind: str | None) -> str:
    if not kind:
        return "—"
    return f"<span class='tag' style='background:{_colour(kind)}'>{_text(kind)}</span>"


def _n(value) -> str:
    """A count with thousands separators; anything else a file held instead, escaped as text."""
    if value is None:
        return "—"
    return f"{value:,}" if isinstance(value, int) else _text(value)


def _short(x: float) -> str:
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= div:
            return f"{x / div:.3g}{unit}"
    return f"{x:.0f}"


def _bytes(n: int) -> str:
    if not isinstance(n, int):
        return _text(n)
    for div, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} B"


def _time(millis: int) -> str:
    return datetime.fromtimestamp(millis / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
