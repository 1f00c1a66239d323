# The two commands: `make run` and `make test`. Everything else is set-up they do.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# The data (models, config, admin account) go where `mirror` looks by default
# ($MIRROR_DATA_DIR, else ~/.local/share/face-mirror), so the README's `mirror ...`
# commands find what `make run` fetched.

.PHONY: run test models browser lint typecheck unit layers clean arm64-test

$(BIN)/.installed: pyproject.toml setup.py
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] >= (3, 10), "Python 3.10 or newer is required, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q --upgrade pip
	@# pygame and pygame-ce are both `import pygame`: the SDL screen needs pygame-ce
	$(BIN)/python -m pip uninstall --disable-pip-version-check -q -y pygame >/dev/null 2>&1 || true
	$(BIN)/python -m pip install --disable-pip-version-check -q -e '.[cpu,dev,eval,convert,display]'
	@touch $@

models: $(BIN)/.installed
	$(BIN)/mirror models fetch

run: models
	$(BIN)/mirror run --source demo --identity grace_hopper $(ARGS)

unit: models
	$(BIN)/python -m pytest -m "not arm64" $(PYTEST_ARGS)

# The install on a Pi's OS, emulated (tests/test_arm64_install.py): Debian 12 and 13
# arm64 roots (mmdebstrap, cached in ~/.cache/face-mirror/arm64) under qemu-user-static,
# each provisioned from an offline bundle. Installs its host tools when it may; skips
# with the reason where binfmt handlers cannot be registered or it is not root.
arm64-test: models
	$(BIN)/python -m tests.arm64 $(PYTEST_ARGS)

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(BIN)/.installed
	$(BIN)/mypy

# The import contracts in pyproject.toml's [tool.importlinter]: the layer order,
# no cycles between packages, appliance never imports web_ui, media never imports pipeline.
layers: $(BIN)/.installed
	$(BIN)/lint-imports

# The browser test (tests/test_web_browser.py) drives Debian's Chromium through its
# chromedriver. Installed here when missing and we may (root, or sudo without a
# password); otherwise this says why that test will skip, and the build goes on.
# (The paths are where the test looks.)
CHROMIUM := /usr/bin/chromium
CHROMEDRIVER := /usr/bin/chromedriver
BROWSER_PACKAGES := chromium chromium-driver
BROWSER_LOG := test-output/apt-chromium.log

browser:
	@if [ -x $(CHROMIUM) ] && [ -x $(CHROMEDRIVER) ]; then exit 0; fi; \
	skip="the browser test will skip (it needs: apt-get install $(BROWSER_PACKAGES))"; \
	if ! command -v apt-get >/dev/null 2>&1; then echo "browser: no apt-get here: $$skip"; exit 0; fi; \
	if [ "$$(id -u)" -eq 0 ]; then sudo=""; \
	elif sudo -n true >/dev/null 2>&1; then sudo="sudo -n"; \
	else echo "browser: not root, and no sudo without a password: $$skip"; exit 0; fi; \
	echo "browser: installing $(BROWSER_PACKAGES) with apt-get (log: $(BROWSER_LOG))"; \
	mkdir -p $(dir $(BROWSER_LOG)); \
	if { $$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q \
	  && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	       --no-install-recommends $(BROWSER_PACKAGES); } >$(BROWSER_LOG) 2>&1; then \
	  echo "browser: installed"; \
	else tail -n 5 $(BROWSER_LOG); echo "browser: apt-get failed: $$skip"; fi

test: browser unit lint typecheck layers arm64-test

clean:
	rm -rf $(VENV) .data .pytest_cache .mypy_cache .ruff_cache

# The image boot test (slow, not part of `make test`): builds a small rpi4-cpu image
# (Debian 12 arm64, mmdebstrap + genimage; the Debian root cached in
# ~/.cache/face-mirror/image) and boots copies of it in qemu-system-aarch64. Root only.
IMAGE_PACKAGES := mmdebstrap genimage dosfstools mtools e2fsprogs fdisk qemu-system-arm qemu-user-static binfmt-support
.PHONY: test-image
test-image: models
	@missing=""; for p in $(IMAGE_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ] && [ "$$(id -u)" -eq 0 ]; then \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; fi
	MIRROR_IMAGE_TEST=1 $(BIN)/python -m pytest tests/test_image_boot.py -q -x -s -p no:randomly $(PYTEST_ARGS)

# The GPU check (not part of `make test`; tests/gpu_check.py): on a machine with an NVIDIA
# GPU, a venv with the `gpu` extra (cached in ~/.cache/face-mirror/gpu-venv), the sessions'
# providers, `mirror doctor --json` and a short `mirror bench` on TensorRT and on CUDA,
# within 8 minutes; figures in test-output/gpu/. Without a GPU it says so and exits 0.
# GPU_ARGS="--profile x86-nvidia" picks another profile.
.PHONY: test-gpu
test-gpu: models
	$(BIN)/python -m tests.gpu_check $(GPU_ARGS)
