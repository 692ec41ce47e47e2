"""A real client on the live notebooks: JupyterLab with jupyterlab-myst, driven by Chromium.

Starts JupyterLab on 127.0.0.1 with a random token on a copy of chapter 1 (in a temporary
directory, so the notebook also has to run outside the repository, and the repository's copy
is never autosaved), opens it in headless Debian Chromium through Playwright, runs all cells,
checks that an exercise's solution is collapsed until its dropdown is clicked, moves a slider
and checks that the figure it drives was redrawn, and stops the server.

Chromium: ``ATTNBOOK_CHROMIUM`` or ``/usr/bin/chromium`` (Playwright's own browser download
does not work offline); the test is skipped when neither exists.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import stop_process

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("ATTNBOOK_CHROMIUM", "/usr/bin/chromium")
CHAPTER = "ch01_model.ipynb"
RUN_ALL_TIMEOUT_MS = 240_000

pytestmark = [pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason=f"no Chromium at {CHROMIUM} (set ATTNBOOK_CHROMIUM)")]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory):
    """A JupyterLab server on a copy of chapter 1; yields (base URL, token); stops it after."""
    work = tmp_path_factory.mktemp("lab")
    shutil.copy(ROOT / "notebooks" / CHAPTER, work / CHAPTER)
    settings = work / ".settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    # Render every cell (no virtual scrolling), so the test can find cells far down the page.
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    token, port = secrets.token_hex(16), _free_port()
    env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(work / ".settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(work / ".workspaces"),
           "JUPYTER_RUNTIME_DIR": str(work / ".runtime")}
    log = (work / "server.log").open("w")
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("jupyter")), "lab", "--no-browser",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
         "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         *(["--allow-root"] if os.geteuid() == 0 else [])],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("JupyterLab did not start:\n"
                                       + (work / "server.log").read_text()[-3000:])
                time.sleep(0.5)
        yield base, token
    finally:
        stop_process(server, timeout=30)
        log.close()


def _figure_sources(page, output_area) -> list[str]:
    return output_area.locator("img").evaluate_all("imgs => imgs.map(i => i.src)")


def test_chapter1_live_in_jupyterlab(lab) -> None:
    from playwright.sync_api import expect, sync_playwright

    base, token = lab
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{base}/lab/tree/{CHAPTER}?token={token}")
        notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook")
        expect(notebook).to_be_visible(timeout=90_000)
        page.wait_for_function(
            "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
            " && window.jupyterapp.shell.currentWidget.sessionContext"
            " && window.jupyterapp.shell.currentWidget.sessionContext.session"
            " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
            " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status"
            " === 'idle'", timeout=90_000)

        # Solutions: jupyterlab-myst renders each {admonition} Solution with :class: dropdown
        # as a closed <details>; its body is hidden until the summary is clicked.
        solutions = notebook.locator("details", has=page.locator("summary", has_text="Solution"))
        expect(solutions.first).to_be_attached(timeout=60_000)
        n_solutions = solutions.count()
        assert n_solutions == 4, f"expected chapter 1's 4 solution dropdowns, found {n_solutions}"
        first = solutions.first
        assert first.evaluate("d => d.open") is False, "a solution is open before any click"
        body = first.locator("p").first
        expect(body).to_be_hidden()
        first.locator("summary").click()
        expect(body).to_be_visible()
        assert first.evaluate("d => d.open") is True
        # a selected markdown cell keeps its (hidden) editor in the page: count what is shown
        raw = notebook.get_by_text(":class: dropdown")
        assert not any(raw.nth(i).is_visible() for i in range(raw.count())), (
            "raw MyST directive text is shown: jupyterlab-myst did not render the markdown")

        # Run all cells through JupyterLab's own command and wait for the last cell to finish.
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_function(
            """() => {
                 const prompts = [...document.querySelectorAll(
                     '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt')];
                 return prompts.length > 0
                   && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
               }""", timeout=RUN_ALL_TIMEOUT_MS)
        errors = notebook.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
        tracebacks = [text for text in errors.all_inner_texts() if "Traceback" in text]
        assert not tracebacks, f"a cell raised: {tracebacks[0][:2000]}"

        # The slider of the weights explorer: move it and check that its figure changes.
        slider_cell = notebook.locator(".jp-CodeCell", has=page.locator(".widget-slider")).first
        expect(slider_cell).to_be_visible(timeout=60_000)
        output = slider_cell.locator(".jp-OutputArea")
        expect(output.locator("img").first).to_be_visible(timeout=60_000)
        before = _figure_sources(page, output)
        readout = slider_cell.locator(".widget-readout").first
        value_before = readout.inner_text()
        handle = slider_cell.locator(".noUi-handle").first
        handle.focus()
        for _ in range(4):
            handle.press("ArrowRight")
        expect(readout).not_to_have_text(value_before, timeout=30_000)
        page.wait_for_function(
            "([cell, old]) => { const imgs = [...cell.querySelectorAll('.jp-OutputArea img')];"
            " return imgs.length > 0 && imgs.map(i => i.src).join('|') !== old; }",
            arg=[slider_cell.element_handle(), "|".join(before)], timeout=60_000)
        after = _figure_sources(page, output)
        assert after and after != before, "moving the slider did not redraw the figure"
        browser.close()


@pytest.mark.parametrize("how", ["--dir", "--ServerApp.root_dir="])
def test_lab_sh_opens_the_folder_asked_for(how: str, tmp_path: Path) -> None:
    """scripts/lab.sh serves a folder given with --dir (a student bundle) or with Jupyter's
    own --ServerApp.root_dir (which once failed: "root_dir only accepts one value, got 2")."""
    folder = tmp_path / "bundle"
    folder.mkdir()
    shutil.copy(ROOT / "notebooks" / CHAPTER, folder / "student_copy.ipynb")
    token, port = secrets.token_hex(16), _free_port()
    where = [how, str(folder)] if how == "--dir" else [f"{how}{folder}"]
    log = (tmp_path / "lab.log").open("w")
    server = subprocess.Popen(
        ["bash", str(ROOT / "scripts" / "lab.sh"), *where, "--no-browser",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         f"--IdentityProvider.token={token}", "--LabApp.news_url=None"],
        env={**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / ".runtime")},
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents?token={token}",
                                            timeout=2) as answer:
                    listing = json.load(answer)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("lab.sh did not serve:\n"
                                         + (tmp_path / "lab.log").read_text()[-3000:])
                time.sleep(0.5)
        assert [item["name"] for item in listing["content"]] == ["student_copy.ipynb"]
    finally:
        stop_process(server, timeout=30)
        log.close()
