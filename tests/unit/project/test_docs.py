"""The documentation: the mkdocs site builds in strict mode (every link, anchor and page in the nav), every
repository path the README and docs/ mention exists, the README's links resolve, and the README's test command
is what CI runs."""
from __future__ import annotations

import glob
import itertools
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
# Markdown files whose path mentions are checked: the front door, the site, the changelog, the benchmarks' notes.
CHECKED = [README, ROOT / "CHANGELOG.md", ROOT / "tests/benchmarks/README.md", *sorted(DOCS.glob("*.md"))]

# A project path: one of the top-level directories, then path characters; <placeholder> and {a,b} allowed.
# Not preceded by a path character, so /dags/<dag_id> (a URL) or dist/airflow_paimon-*.whl are not taken.
PROJECT_PATH = re.compile(r"(?<![\w./-])(?:airflow_paimon|dags|tests|spark_jobs|docs)/(?:[\w.<>*=-]|/|\{[^}\s]*\})*")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _expand_braces(path: str) -> list[str]:
    """``a.{md,json}`` → ``a.md``, ``a.json`` (as a shell would)."""
    parts = re.split(r"\{([^}]*)\}", path)
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(combo) for combo in itertools.product(*choices)]


def _mentioned_paths(text: str) -> set[str]:
    return {m.group(0).rstrip(".") for m in PROJECT_PATH.finditer(text)}


def _exists(mention: str) -> bool:
    """The path exists; a ``<placeholder>`` stands for any name, so the glob must match something."""
    return all(glob.glob(str(ROOT / re.sub(r"<[^>]*>", "*", p))) for p in _expand_braces(mention))


def _anchors(markdown_file: Path) -> set[str]:
    """The heading ids mkdocs gives a page (Python-Markdown's toc slugify, as mkdocs.yml leaves it)."""
    anchors, fenced = set(), False
    for line in markdown_file.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"#{1,6}\s+(.*?)\s*#*$", line)):
            anchors.add(slugify(heading.group(1), "-"))
    return anchors


def _nav_pages(nav) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in _nav_pages(value)]
    return [page for item in nav for page in _nav_pages(item)]


def test_site_builds_strict(tmp_path):
    """mkdocs (strict: a warning fails) — broken links and anchors, pages missing from the nav."""
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                            str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    pages = {page.relative_to(tmp_path / "site").as_posix(): page.read_text()
             for page in (tmp_path / "site").rglob("index.html")}
    assert "index.html" in pages
    # A fenced block Python-Markdown did not recognise (e.g. indented inside a list) renders as inline code.
    broken_fences = sorted(name for name, html in pages.items() if re.search(r"<code>(bash|python|json)\n", html))
    assert not broken_fences, f"code blocks rendered as text in {broken_fences}"


def test_every_page_is_in_the_nav():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["strict"] is True
    nav = _nav_pages(config["nav"])
    assert sorted(nav) == sorted(p.name for p in DOCS.glob("*.md"))
    assert len(nav) == len(set(nav)), "a page is listed twice"


@pytest.mark.parametrize("doc", CHECKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_mentioned_paths_exist(doc):
    missing = sorted(m for m in _mentioned_paths(doc.read_text()) if not _exists(m))
    assert not missing, f"{doc.relative_to(ROOT)} mentions paths that do not exist: {missing}"


@pytest.mark.parametrize("doc", [README, ROOT / "CHANGELOG.md"], ids=lambda p: p.name)
def test_links_outside_the_site_resolve(doc):
    """mkdocs checks docs/; the README and the changelog are checked here (files and #anchors)."""
    broken = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists():
            broken.append(target)
        elif anchor and (file.suffix != ".md" or anchor not in _anchors(file)):
            broken.append(target)
    assert not broken, f"{doc.name}: broken links {broken}"


def test_readme_is_a_front_door():
    lines = README.read_text().splitlines()
    assert len(lines) <= 170, f"README.md has {len(lines)} lines: move detail into docs/"
    docs_linked = set(re.findall(r"\]\(docs/([\w-]+\.md)", README.read_text()))
    assert docs_linked == {p.name for p in DOCS.glob("*.md")}, "the README's table of pages lists every page"


def test_ci_runs_the_readme_test_command():
    """.ci/run's last line is the README's test command, character for character."""
    blocks = re.findall(r"```bash\n(.*?)\n```", README.read_text(), re.S)
    test_command = next(b for b in blocks if "pytest" in b)
    assert (ROOT / ".ci/run").read_text().rstrip("\n").splitlines()[-1] == test_command


def test_the_last_full_run_is_stated_once():
    """Test counts and durations drift: the last full run is stated in docs/testing.md only."""
    stated = {doc.relative_to(ROOT).as_posix() for doc in CHECKED if re.search(r"\d+ passed", doc.read_text())}
    assert stated == {"docs/testing.md"}


def test_path_check_catches_a_missing_file():
    """The checker itself: a wrong path is reported, placeholders and brace lists are understood."""
    text = ("`tests/unit/test_nope.py`, `spark_jobs/<job>.py`, `tests/benchmarks/results/long_life.{md,json}`, "
            "`/dags/<dag_id>/runs/<run_id>` and dist/airflow_paimon-0.1.0-py3-none-any.whl.")
    mentions = _mentioned_paths(text)
    assert mentions == {"tests/unit/test_nope.py", "spark_jobs/<job>.py",
                        "tests/benchmarks/results/long_life.{md,json}"}
    assert [m for m in sorted(mentions) if not _exists(m)] == ["tests/unit/test_nope.py"]


# docs/internals.md walks one assign-and-write and one commit, file by file (issue 58: at most 30 files)
WALK_TITLE = "## One assign-and-write and one commit, file by file"
DETAILS = "The call path also crosses these"
WALK_STEP = re.compile(r"^\d+\. `([^`]+)`", re.M)


def walk_of(text: str) -> tuple[list[str], list[str]]:
    """(the walk's files in order, the details it names) of the section WALK_TITLE: each step a numbered line that
    opens with its file's path in backticks; the details, every ``*.py`` path in backticks after DETAILS."""
    section = text[text.index(WALK_TITLE):]
    end = section.find("\n## ")
    section = section if end == -1 else section[:end]
    steps, _, details = section.partition(DETAILS)
    return WALK_STEP.findall(steps), re.findall(r"`([\w/.]+\.py)`", details)


def walk_problems(steps: list[str], details: list[str], text: str) -> list[str]:
    repeated = sorted({s for s in steps if steps.count(s) > 1} | {d for d in details if details.count(d) > 1})
    return ([f"{path} does not exist" for path in steps + details if not (ROOT / path).is_file()]
            + [f"{path} is named twice" for path in repeated]
            + [f"{path} is a step and a detail" for path in sorted(set(steps) & set(details))]
            + ([f"the walk is {len(steps)} files, more than 30"] if len(steps) > 30 else [])
            + ([] if f"{len(steps)} files." in text else [f"the page does not say the walk is {len(steps)} files"])
            + ([] if f"{len(steps)} + {len(details)} = {len(steps) + len(details)} files" in text
               else [f"the page does not count {len(steps)} + {len(details)} files"]))


def test_the_walk_of_one_write_and_one_commit_is_at_most_30_files():
    text = (DOCS / "internals.md").read_text()
    steps, details = walk_of(text)
    assert steps[0] == "airflow_paimon/operators/write.py" and "spark_jobs/commit.py" in steps, steps
    assert not walk_problems(steps, details, text), "\n".join(walk_problems(steps, details, text))


def test_the_walk_check_catches_a_repeat_a_missing_file_and_a_long_walk():
    text = (f"{WALK_TITLE}\n\n1. `airflow_paimon/handoff.py` — x\n2. `airflow_paimon/nowhere.py` — y\n"
            f"3. `airflow_paimon/handoff.py` — z\n\n3 files. {DETAILS}: `airflow_paimon/handoff.py`.\n\n## Next\n")
    steps, details = walk_of(text)
    assert steps == ["airflow_paimon/handoff.py", "airflow_paimon/nowhere.py", "airflow_paimon/handoff.py"]
    assert details == ["airflow_paimon/handoff.py"]
    assert walk_problems(steps, details, text) == [
        "airflow_paimon/nowhere.py does not exist", "airflow_paimon/handoff.py is named twice",
        "airflow_paimon/handoff.py is a step and a detail", "the page does not count 3 + 1 files"]
    long_walk = [f"airflow_paimon/handoff.py{i}" for i in range(31)]
    assert "the walk is 31 files, more than 30" in walk_problems(long_walk, [], "")
