"""The admin UI in a real browser: headless Chromium against the real server (issue 7).

The real thing runs on 127.0.0.1: a ``PipelineRunner`` over the paced demo
camera with the real processor, ``ControlCore`` with its preview sink, and
the Flask app served over HTTPS with the device's own certificate as
``mirror run`` serves it, all with their files in a temporary data
directory (Chromium trusts that one certificate by its key's fingerprint).
Chromium, driven by Selenium through Debian's chromedriver at a phone's window
size, logs in with the generated password, is made to change it, logs in
again, changes settings, uploads an identity and makes it active, uploads a
blurred photo and is shown the check's hint and the preview on both demo
faces, and watches the live preview. Screenshots go to ``test-output/browser/``.

Skips, saying why, where Chromium, chromedriver or Selenium is missing
(``make test`` installs them when it can).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import cv2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from appliance.config import Settings, load_settings, save_settings
from appliance.control.core import ControlCore
from appliance.device.certificate import DeviceCertificate, ensure_certificate
from appliance.media.demo_source import DemoSource
from appliance.paths import DATA_DIR_ENV, data_dir, web_dir
from appliance.pipeline.adaptive import AdaptiveController
from appliance.pipeline.factory import build_processor
from appliance.pipeline.runner import PipelineRunner
from appliance.pipeline.telemetry import Telemetry
from appliance.updates.queue import UpdateStatus, incoming_dir, updates_dir, write_status
from tests.conftest import REPO
from tests.test_web_support import model_store, photo
from tests.waiting import wait_for
from web_ui.app import create_app
from web_ui.config import WebConfig
from web_ui.server import serve

try:
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement
    from selenium.webdriver.support.ui import Select, WebDriverWait
except ImportError as exc:  # the test skips and says why
    SELENIUM_MISSING: str | None = f"selenium is not installed (pip install -e '.[dev]'): {exc}"
else:
    SELENIUM_MISSING = None

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
PHONE = (412, 915)  # a common phone's CSS viewport: the UI must fit it without side-scrolling
CHROME_ARGS = (
    "--headless=new",
    "--no-sandbox",  # CI runs as root in a container
    "--disable-gpu",
    "--disable-dev-shm-usage",
    f"--window-size={PHONE[0]},{PHONE[1]}",
)
SHOTS = REPO / "test-output" / "browser"  # ignored by git; CI may keep it as an artifact
WAIT_S = 30.0  # generous: two cores share the pipeline, the server and Chromium
FRAME_SIZE = (640, 480)
NEW_PASSWORD = "mirror staff 2024"
LABEL_TEXT = "AI合成"
IDENTITY = "Grace Hopper"


def _missing() -> str | None:
    """Why the browser test cannot run here, or None."""
    if SELENIUM_MISSING:
        return SELENIUM_MISSING
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not path.exists():
            return f"{path} is absent: apt-get install {package} (make test does when it can)"
    return None


# ---- the real mirror and server -----------------------------------------------------------


@dataclass
class Served:
    url: str
    control: ControlCore
    telemetry: Telemetry
    base: Path
    passwords: list[str]
    spki: str  # the base64 SHA-256 of the certificate's public key, which Chromium trusts

    @property
    def settings_path(self) -> Path:
        return self.base / "config.yaml"


def _spki_sha256(cert: DeviceCertificate) -> str:
    loaded = x509.load_pem_x509_certificate(cert.cert_path.read_bytes())
    spki = loaded.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return base64.b64encode(hashlib.sha256(spki).digest()).decode("ascii")


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    reason = _missing()
    if reason:
        pytest.skip(reason)
    store = model_store()  # resolved from the real data dir before it is pointed elsewhere
    base = tmp_path / "data"
    monkeypatch.setenv(DATA_DIR_ENV, str(base))
    assert data_dir() == base.resolve()
    settings = Settings()
    save_settings(base / "config.yaml", settings)
    processor = build_processor(settings, store, "grace_hopper")
    telemetry = Telemetry()
    passwords: list[str] = []
    with contextlib.ExitStack() as stack:
        # the app's defaults: <data dir>/identities, <data dir>/web (account, key, state)
        control = stack.enter_context(
            ControlCore.build(processor, telemetry, settings, base / "config.yaml", store)
        )
        control.restore_state()
        source = DemoSource(photo("astronaut"), size=FRAME_SIZE, fps=30.0)
        runner = PipelineRunner(
            source,
            control.processor,
            [control.preview_sink],
            telemetry,
            settings.pipeline.latency_budget_ms,
            controller=AdaptiveController(control.processor, telemetry, settings.pipeline),
        )
        runner.start()
        stack.callback(runner.stop)
        config = WebConfig(port=0)
        app = create_app(control, config=config, announce=passwords.append)
        cert = ensure_certificate(web_dir(), [config.host])
        server = serve(app, config.host, config.port, config.threads, tls=cert.server_context())
        stack.callback(server.stop)
        assert len(passwords) == 1, "the first start announces the generated password"
        yield Served(server.url, control, telemetry, base, passwords, _spki_sha256(cert))


@pytest.fixture
def browser(served: Served) -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in CHROME_ARGS:
        options.add_argument(arg)
    options.add_argument(f"--ignore-certificate-errors-spki-list={served.spki}")
    # headless windows are at least 500 px wide: emulate the phone's viewport as well
    width, height = PHONE
    metrics = {"width": width, "height": height, "pixelRatio": 1.0, "mobile": True, "touch": True}
    options.add_experimental_option("mobileEmulation", {"deviceMetrics": metrics})
    try:
        driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    except WebDriverException as exc:
        pytest.fail(f"{CHROMIUM} did not start under {CHROMEDRIVER}: {exc.msg}")
    driver.set_page_load_timeout(WAIT_S)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def shots() -> Path:
    """The screenshot folder, emptied first."""
    shutil.rmtree(SHOTS, ignore_errors=True)
    SHOTS.mkdir(parents=True)
    return SHOTS


# ---- browser helpers ----------------------------------------------------------------------


def _wait(driver: WebDriver) -> WebDriverWait[WebDriver]:
    return WebDriverWait(driver, WAIT_S)


def _css(driver: WebDriver, selector: str) -> WebElement:
    return driver.find_element(By.CSS_SELECTOR, selector)


def _submit(driver: WebDriver, button: WebElement) -> None:
    """Click a form's button and wait until the page it leads to has loaded.

    The old page is marked first: the new one is the document without the mark
    (chromedriver may answer anything while the pages change, hence the retries).
    """
    driver.execute_script("window.leavingThisPage = true")
    button.click()
    wait = WebDriverWait(driver, WAIT_S, ignored_exceptions=(WebDriverException,))
    wait.until(
        lambda d: d.execute_script(
            "return !window.leavingThisPage && document.readyState === 'complete'"
        ),
        f"no new page loaded within {WAIT_S:g} s of submitting the form",
    )


def _open(driver: WebDriver, url: str) -> None:
    driver.get(url)
    assert driver.execute_script("return document.readyState") == "complete"


def _text(driver: WebDriver, selector: str) -> str:
    return _css(driver, selector).text


def _flash(driver: WebDriver) -> str:
    return " ".join(el.text for el in driver.find_elements(By.CSS_SELECTOR, ".flash"))


def _fill(element: WebElement, value: str) -> None:
    element.clear()
    element.send_keys(value)


def _fits_the_phone(driver: WebDriver, page: str) -> None:
    width = driver.execute_script("return window.innerWidth")
    content = driver.execute_script("return document.documentElement.scrollWidth")
    assert width <= PHONE[0], f"the window is not phone-sized: {width}"
    assert content <= width, f"{page} scrolls sideways on a phone: {content} px > {width} px"


def _shot(driver: WebDriver, folder: Path, name: str) -> None:
    driver.save_screenshot(str(folder / f"{name}.png"))
    assert (folder / f"{name}.png").stat().st_size > 0


def _image_loaded(driver: WebDriver, img: WebElement) -> bool:
    return bool(
        driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", img)
    )


@contextlib.contextmanager
def _screenshot_on_failure(driver: WebDriver, folder: Path) -> Iterator[None]:
    """Leaves ``failure.png`` (what the browser showed) when the block fails."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(Exception):
            driver.save_screenshot(str(folder / "failure.png"))
        raise


def _log_in(driver: WebDriver, url: str, password: str) -> None:
    _open(driver, url + "login")
    _fill(_css(driver, "#username"), "admin")
    _fill(_css(driver, "#password"), password)
    _submit(driver, _css(driver, "form button[type=submit]"))


def _log_out(driver: WebDriver) -> None:
    _submit(driver, _css(driver, "header nav form button"))


# ---- the steps ----------------------------------------------------------------------------


def _first_login_forces_a_new_password(driver: WebDriver, served: Served, shots: Path) -> None:
    url = served.url
    _open(driver, url)
    assert driver.current_url == url + "login", "an anonymous visitor is sent to the login"
    _fits_the_phone(driver, "the login page")
    _shot(driver, shots, "01-login")
    _log_in(driver, url, served.passwords[0])
    assert driver.current_url == url + "password"
    assert _text(driver, "h1") == "Choose your own password"
    cookie = driver.get_cookie("mirror_session")
    assert cookie is not None and cookie["httpOnly"] and cookie["sameSite"] == "Lax"
    _open(driver, url + "settings")
    assert driver.current_url == url + "password", "nothing else is reachable before the change"
    _fill(_css(driver, "#current"), served.passwords[0])
    _fill(_css(driver, "#new"), NEW_PASSWORD)
    _fill(_css(driver, "#confirm"), NEW_PASSWORD)
    _shot(driver, shots, "02-password")
    _submit(driver, _css(driver, "main form button[type=submit]"))
    assert driver.current_url == url
    assert "Password changed." in _flash(driver)


def _new_password_is_the_only_one(driver: WebDriver, served: Served) -> None:
    url = served.url
    _log_out(driver)
    assert driver.current_url == url + "login" and "Logged out." in _flash(driver)
    _log_in(driver, url, served.passwords[0])
    assert "Wrong user name or password." in _text(driver, ".error")
    _log_in(driver, url, NEW_PASSWORD)
    assert driver.current_url == url, "the new password logs in without a detour"


def _dashboard_shows_the_running_mirror(driver: WebDriver, served: Served, shots: Path) -> None:
    _open(driver, served.url)
    frames = '[data-key="telemetry.frames_out"]'
    first = _text(driver, frames)
    # dashboard.js refreshes the figures from /api/status (under the page's strict CSP)
    _wait(driver).until(lambda d: _text(d, frames) not in (first, "0", "–"))
    _wait(driver).until(lambda d: _text(d, '[data-key="health"]') == "ok")
    assert _text(driver, '[data-key="telemetry.running"]') == "yes"
    assert _text(driver, '[data-key="telemetry.camera.connected"]') == "connected"
    assert _text(driver, '[data-key="identity"]') == "grace_hopper"
    _fits_the_phone(driver, "the dashboard")
    _shot(driver, shots, "03-dashboard")


def _settings_change_is_saved_and_shown(driver: WebDriver, served: Served, shots: Path) -> None:
    url = served.url
    _open(driver, url + "settings")
    _fits_the_phone(driver, "the settings page")
    _fill(_css(driver, '[name="label.text"]'), LABEL_TEXT)
    Select(_css(driver, '[name="label.position"]')).select_by_value("top-left")
    swapping = _css(driver, 'input[type=checkbox][name="swapping"]')
    assert swapping.is_selected()
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", swapping)
    swapping.click()
    _submit(driver, _css(driver, "form.settings > button[type=submit]"))
    assert driver.current_url == url + "settings"
    assert "Saved and applied." in _flash(driver)
    assert _css(driver, '[name="label.text"]').get_attribute("value") == LABEL_TEXT
    position = _css(driver, '[name="label.position"] option:checked')
    assert position.get_attribute("value") == "top-left"
    assert not _css(driver, 'input[type=checkbox][name="swapping"]').is_selected()
    _shot(driver, shots, "04-settings")
    saved = load_settings(served.settings_path)
    assert saved.label.text == LABEL_TEXT and saved.label.position == "top-left"
    assert served.control.settings() == saved
    # the dashboard shows the switch, and turns it back on
    _open(driver, url)
    assert _text(driver, '[data-key="swapping"]') == "no"
    _submit(driver, _css(driver, "main form.inline button"))
    assert "Swapping is on." in _flash(driver)
    assert _text(driver, '[data-key="swapping"]') == "yes"
    assert served.control.swapping_enabled


def _uploaded_identity_is_listed_and_made_active(
    driver: WebDriver, served: Served, shots: Path, tmp_path: Path
) -> None:
    url = served.url
    upload = tmp_path / "grace hopper.jpg"
    shutil.copyfile(model_store().path("grace_hopper"), upload)
    _open(driver, url + "identities")
    _fits_the_phone(driver, "the identities page")
    _fill(_css(driver, "#name"), IDENTITY)
    _css(driver, "#photo").send_keys(str(upload))
    _submit(driver, _css(driver, "main form[enctype] button[type=submit]"))
    assert driver.current_url.endswith("#added"), _text(driver, "main")
    assert f"Added {IDENTITY}" in _flash(driver)
    result = _css(driver, "#added img.result")
    _wait(driver).until(lambda d: _image_loaded(d, result))
    cards = driver.find_elements(By.CSS_SELECTOR, "article.identity")
    assert [c.find_element(By.TAG_NAME, "h3").text for c in cards] == [IDENTITY]
    listed = cards[0].find_element(By.TAG_NAME, "img")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", listed)
    _wait(driver).until(lambda d: _image_loaded(d, listed))
    _submit(driver, cards[0].find_element(By.CSS_SELECTOR, "form button"))
    assert f"{IDENTITY} is now the active identity." in _flash(driver)
    card = _css(driver, "article.identity.active")
    assert card.find_element(By.TAG_NAME, "h3").text == f"{IDENTITY} active"
    active = card.find_element(By.TAG_NAME, "img")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", active)
    _wait(driver).until(lambda d: _image_loaded(d, active))
    _fits_the_phone(driver, "the identities page with an identity")
    _shot(driver, shots, "05-identities")
    assert served.control.active_identity() == IDENTITY
    assert (served.base / "identities").is_dir()
    _open(driver, url)
    assert _text(driver, '[data-key="identity"]') == IDENTITY


def _upload_shows_the_checks_hints(
    driver: WebDriver, served: Served, shots: Path, tmp_path: Path
) -> None:
    upload = tmp_path / "blurred.jpg"
    blurred = cv2.GaussianBlur(cv2.imread(str(model_store().path("grace_hopper"))), (0, 0), 6)
    cv2.imwrite(str(upload), blurred)
    _open(driver, served.url + "identities")
    _fill(_css(driver, "#name"), "Blurred")
    _css(driver, "#photo").send_keys(str(upload))
    _submit(driver, _css(driver, "main form[enctype] button[type=submit]"))
    assert driver.current_url.endswith("#added"), _text(driver, "main")
    assert "Added Blurred: usable" in _flash(driver)
    hints = [el.text for el in driver.find_elements(By.CSS_SELECTOR, "#added .hint")]
    assert len(hints) == 1 and hints[0].startswith("The face looks blurred"), hints
    result = _css(driver, "#added img.result")
    _wait(driver).until(lambda d: _image_loaded(d, result))
    width, height = driver.execute_script(
        "return [arguments[0].naturalWidth, arguments[0].naturalHeight]", result
    )
    # a row per demo photo (astronaut, Grace Hopper): frontal, then turned both ways
    assert width > 1.3 * height
    assert driver.execute_script(  # the hint is in view beside the preview
        "const r = arguments[0].getBoundingClientRect();"
        "return r.top >= 0 && r.bottom <= innerHeight",
        _css(driver, "#added .hint"),
    )
    _fits_the_phone(driver, "the identities page with hints")
    _shot(driver, shots, "05b-identity-hints")


def _live_preview_shows_new_frames(driver: WebDriver, served: Served, shots: Path) -> None:
    _open(driver, served.url + "preview")
    img = _css(driver, ".preview img")
    _wait(driver).until(lambda d: _image_loaded(d, img))
    size = driver.execute_script(
        "return [arguments[0].naturalWidth, arguments[0].naturalHeight]", img
    )
    assert tuple(size) == FRAME_SIZE
    _fits_the_phone(driver, "the preview page")
    before = img.screenshot_as_png
    # the demo camera moves all the time: a new frame looks different
    assert wait_for(lambda: img.screenshot_as_png != before, WAIT_S, 0.2), "no new frame arrived"
    _shot(driver, shots, "06-preview")
    assert served.telemetry.snapshot().frames_out > 0


def test_staff_manage_the_mirror_from_a_phone_browser(
    browser: WebDriver, served: Served, shots: Path, tmp_path: Path
) -> None:
    started = time.monotonic()
    with _screenshot_on_failure(browser, shots):
        _first_login_forces_a_new_password(browser, served, shots)
        _new_password_is_the_only_one(browser, served)
        _dashboard_shows_the_running_mirror(browser, served, shots)
        _settings_change_is_saved_and_shown(browser, served, shots)
        _uploaded_identity_is_listed_and_made_active(browser, served, shots, tmp_path)
        _upload_shows_the_checks_hints(browser, served, shots, tmp_path)
        _live_preview_shows_new_frames(browser, served, shots)
    # everything the UI wrote is in the temporary data directory
    web = served.base / "web"
    assert {p.name for p in web.iterdir()} >= {"auth.json", "secret_key", "state.json"}
    print(f"browser flow took {time.monotonic() - started:.1f} s; screenshots in {shots}")


def test_staff_upload_an_update_bundle_in_slices_from_a_phone_browser(
    browser: WebDriver, served: Served, shots: Path, tmp_path: Path
) -> None:
    """static/updates.js sends a bundle bigger than one request may be, slice by slice,
    and then shows the installer's progress from /updates/status."""
    bundle = tmp_path / "mirror 1.5.0.raucb"  # the space is not a bundle name's: "_" instead
    data = bytes(range(256)) * (11 * 2**20 // 256) + b"end"
    bundle.write_bytes(data)
    with _screenshot_on_failure(browser, shots):
        _first_login_forces_a_new_password(browser, served, shots)
        _open(browser, served.url + "updates")
        _fits_the_phone(browser, "the update page")
        assert "installed without the A/B image" in _text(browser, "#slots")  # no RAUC here
        _css(browser, "#bundle").send_keys(str(bundle))
        _css(browser, "#upload-start").click()
        _wait(browser).until(lambda d: "uploaded" in _text(d, "#upload-message"))
        said = _text(browser, "#upload-message")
        assert said.startswith("mirror_1.5.0.raucb uploaded: the mirror checks"), said
        _shot(browser, shots, "07-update-uploaded")
        landed = incoming_dir(served.base) / "mirror_1.5.0.raucb"
        assert landed.read_bytes() == data
        request = json.loads((updates_dir(served.base) / "request.json").read_text())
        assert request["source"] == str(landed.resolve())
        # the root-run installer says how far it is; the page follows
        write_status(
            served.base, UpdateStatus("installing", "42% Copying image", 42, at=time.time())
        )
        _wait(browser).until(lambda d: _text(d, '[data-update="percent"]') == "42%")
        assert _text(browser, '[data-update="message"]') == "42% Copying image"
        _shot(browser, shots, "08-update-progress")
