"""The workbench in a real browser: JupyterLab serves the "inspect a run" tutorial, headless Chromium (Debian's
`chromium`, driven by Playwright; nothing is downloaded) runs all its cells, and the rendered page must show the
rollout inspector with a playable `<audio>` clip and a plotly chart, without error outputs.

The notebook is served from a copy in a temporary folder, so JupyterLab's autosave never touches the repository.
A screenshot of the inspector is saved to `.ci/logs/browser_inspect_a_run.png` (a CI artifact); when the test fails,
the page as it was goes to `.ci/logs/browser_failure.png` and its DOM to `browser_failure.html`. JupyterLab's log is
kept as `.ci/logs/browser_jupyterlab.log`."""
import json, os, shutil, socket, subprocess, sys, time, urllib.request
from pathlib import Path
import pytest
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT/'nbs'/'tutorials'/'inspect_a_run.ipynb'
LOGS = ROOT/'.ci'/'logs'
SHOT, FAILED, LAB_LOG = LOGS/'browser_inspect_a_run.png', LOGS/'browser_failure.png', LOGS/'browser_jupyterlab.log'
TOKEN = 'omni-gspo-browser-test'


def free_port()->int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0)); return s.getsockname()[1]


def chromium()->str:
    "Debian's chromium binary; the test fails (never skips) without it: tools/test.sh installs it."
    exe = shutil.which('chromium') or shutil.which('chromium-browser')
    if not exe: pytest.fail("no chromium on PATH: install Debian's 'chromium' package (tools/test.sh does, as root)")
    return exe


@pytest.fixture
def lab(tmp_path):
    "A JupyterLab server on a free port, serving a copy of the tutorial; yields its base URL."
    work = tmp_path/'work'; work.mkdir(); LOGS.mkdir(parents=True, exist_ok=True)
    shutil.copy(NOTEBOOK, work/NOTEBOOK.name)
    settings = tmp_path/'lab-settings'/'@jupyterlab'
    for ext, name, value in (
            ('apputils-extension', 'notification', {'fetchNews': 'false'}),    # no "get Jupyter news?" toast
            ('notebook-extension', 'tracker', {'windowingMode': 'none',        # every cell in the page
                                               'autoStartDefaultKernel': True})):  # never a "Select Kernel" dialog
        (settings/ext).mkdir(parents=True, exist_ok=True)
        (settings/ext/f'{name}.jupyterlab-settings').write_text(json.dumps(value))
    env = os.environ | {'JUPYTERLAB_SETTINGS_DIR': str(tmp_path/'lab-settings'),
                        'JUPYTERLAB_WORKSPACES_DIR': str(tmp_path/'workspaces')}
    port = free_port()
    log = open(tmp_path/'lab.log', 'w')
    p = subprocess.Popen([sys.executable, '-m', 'jupyterlab', '--no-browser', f'--port={port}', '--ip=127.0.0.1',
                          f'--ServerApp.token={TOKEN}', f'--ServerApp.root_dir={work}', '--allow-root',
                          '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate'],
                         cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f'http://127.0.0.1:{port}'
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f'{url}/api/status?token={TOKEN}', timeout=1); break
            except OSError:
                if p.poll() is not None:
                    pytest.fail(f"jupyter lab exited with {p.returncode}: {(tmp_path/'lab.log').read_text()[-2000:]}")
                time.sleep(0.5)
        else: pytest.fail(f"jupyter lab did not answer within 60 s: {(tmp_path/'lab.log').read_text()[-2000:]}")
        yield url
    finally:
        p.terminate()
        try: p.wait(20)
        except subprocess.TimeoutExpired: p.kill()
        log.close()
        shutil.copy(tmp_path/'lab.log', LAB_LOG)


def kernel_ready(url:str, timeout_s:float=60):
    """Wait until the server holds exactly one kernel, idle, with the page connected to it. A Run All given while the
    page is still starting its session can start a second kernel and lose the first one's cells."""
    t0 = time.time()
    while time.time() - t0 < timeout_s:
        with urllib.request.urlopen(urllib.request.Request(f'{url}/api/kernels',
                                                           headers={'Authorization': f'token {TOKEN}'}),
                                    timeout=5) as r:
            ks = json.loads(r.read())
        if len(ks) == 1 and ks[0]['execution_state'] == 'idle' and ks[0]['connections'] >= 1: return
        time.sleep(0.5)
    pytest.fail(f"the notebook's kernel was not ready within {timeout_s} s: {ks}")


ALL_RAN = r"""n => {   // every code cell shows [k]:, or one of them failed
  const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
  return (prompts.length === n && prompts.every(p => /^\[\d+\]:$/.test(p.textContent.trim())))
         || [...document.querySelectorAll('.jp-OutputArea-output')].some(o => o.textContent.includes('Traceback'));
}"""


def run_all_cells(page, n_code:int, timeout_s:float=150):
    """Run > Run All Cells, as a user does, until every code cell ran or one failed. JupyterLab drops a Run All given
    while the kernel is still connecting, so when no cell has run or waited for 5 s it is given again; while any cell
    is queued, running or done it is not, so nothing runs twice."""
    t0, quiet_since = time.time(), time.time() - 5
    while time.time() - t0 < timeout_s:
        if page.evaluate(ALL_RAN, n_code): return
        if any(p.strip() != '[ ]:' for p in page.locator('.jp-CodeCell .jp-InputPrompt').all_text_contents()):
            quiet_since = time.time()
        elif time.time() - quiet_since >= 5:
            page.click('.lm-MenuBar-item:has-text("Run")')
            page.click('.lm-Menu-item[data-command="runmenu:run-all"]')
            quiet_since = time.time()
        page.wait_for_timeout(500)
    pytest.fail(f"the notebook did not finish within {timeout_s} s")


def test_inspect_a_run_renders_in_chromium(lab):
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium(), args=['--no-sandbox', '--disable-dev-shm-usage'])
        page = browser.new_page(viewport={'width': 1400, 'height': 1300})
        try:
            errors = []
            page.on('pageerror', lambda e: errors.append(str(e)))
            page.goto(f'{lab}/lab/tree/{NOTEBOOK.name}?token={TOKEN}')
            page.wait_for_selector('.jp-NotebookPanel .jp-Cell', timeout=60_000)
            page.wait_for_selector('.jp-StatusBar-TextItem:has-text("| Idle")', timeout=60_000)   # the kernel is up
            kernel_ready(lab)
            run_all_cells(page, sum(c['cell_type'] == 'code' for c in json.loads(NOTEBOOK.read_text())['cells']))
            text = '\n'.join(page.locator('.jp-OutputArea-output').all_text_contents())
            assert 'Traceback' not in text, text[-3000:]
            # the inspector rendered
            page.wait_for_selector('.widget-html:has-text("tokens, coloured by rollout")', state='attached',
                                   timeout=30_000)
            text = '\n'.join(page.locator('.jp-OutputArea-output').all_text_contents())
            assert 'Error displaying widget' not in text and 'advantage' in text and 'sample 0' in text, text[-3000:]
            audio = page.locator('.jp-OutputArea-output audio').first
            audio.wait_for(state='attached', timeout=10_000)
            # a playable clip
            page.wait_for_function("a => a.readyState >= 1 && a.duration > 0.5", arg=audio.element_handle(),
                                   timeout=10_000)
            # the prompt's picture
            assert page.locator('.jp-OutputArea-output img').count() >= 1
            assert page.locator('.js-plotly-plot .main-svg').count() >= 1
            assert not errors, errors
            page.keyboard.press('Control+b')                                     # hide the file browser
            # the inspector's cell on top
            page.locator('.jp-CodeCell:has(audio)').first.evaluate("e => e.scrollIntoView({block: 'start'})")
            page.screenshot(path=str(SHOT))
        except BaseException:
            page.screenshot(path=str(FAILED)); FAILED.with_suffix('.html').write_text(page.content()); raise
        finally: browser.close()
