# The two commands of the README's quickstart, and the checks CI runs.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PYTHON ?= python3

.PHONY: install run-install lock upgrade test-sdk-range up demo clean-state test test-cluster lint typecheck unit bench-tools browser-tools tls-tools console-vendor image image-offline clean

# The locks (requirements/*.txt, written by `make lock`): every package with its hashes, so that a
# fresh machine installs exactly the set the tests ran against. pip installs them as they are
# (--require-hashes, nothing else) into a new venv, so nothing a former lock pinned stays behind; then
# Ladder and its SDK editable, built by the locked setuptools.
LOCKS := requirements/dev.txt requirements/runtime.txt requirements/build.txt
$(STAMP): pyproject.toml sdk/pyproject.toml $(LOCKS)
	rm -rf $(VENV) && $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --require-hashes -r requirements/dev.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e ./sdk -e .
	touch $(STAMP)

# The compiled modules (setup.py: the book store's C and the hot path mypyc compiles) are built in
# place by the editable install, where they shadow their sources: again whenever one changes.
COMPILED_SOURCES := setup.py ingest_nodes/core/_levels.c $(shell sed -n 's/^    "\(.*\.py\)",$$/\1/p' setup.py)
COMPILED_STAMP := $(VENV)/.compiled-stamp
$(COMPILED_STAMP): $(STAMP) $(COMPILED_SOURCES)
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $@

install: $(STAMP) $(COMPILED_STAMP)

# What running needs and no more: `make up` and `make demo` install the runtime lock (Ladder's own
# dependencies: none of the test, lint, bench or browser tools) and Ladder, unless the development
# install above is there and current, which holds all of that already.
RUN_STAMP := $(VENV)/.runtime-stamp
$(RUN_STAMP): pyproject.toml requirements/runtime.txt requirements/build.txt
	if [ -f $(STAMP) ] && [ -z "$$(find pyproject.toml sdk/pyproject.toml $(LOCKS) -newer $(STAMP))" ]; \
		then touch $@; exit 0; fi; \
	rm -rf $(VENV) && $(PYTHON) -m venv $(VENV) && \
	$(PY) -m pip install -q --require-hashes -r requirements/runtime.txt -r requirements/build.txt && \
	$(PY) -m pip install -q --no-deps --no-build-isolation -e . && \
	touch $@

run-install: $(RUN_STAMP)

## make lock: resolve pyproject.toml again into the locks, keeping every pin that still fits
## (a dependency added or changed in pyproject.toml); make upgrade: move every pin to the newest
## release its range admits (PACKAGE=name moves that one only). Both need the package index.
UV_COMPILE = $(VENV)/bin/uv pip compile --quiet --universal --python-version 3.11 --generate-hashes \
	--custom-compile-command "make lock"
lock: install
	$(UV_COMPILE) $(UPGRADE) pyproject.toml sdk/pyproject.toml requirements/build.in --extra dev --extra bench \
		-o requirements/dev.txt
	$(UV_COMPILE) pyproject.toml -c requirements/dev.txt -o requirements/runtime.txt
	$(UV_COMPILE) requirements/build.in -c requirements/dev.txt -o requirements/build.txt
	$(MAKE) install

upgrade:
	$(MAKE) lock UPGRADE="$(if $(PACKAGE),--upgrade-package $(PACKAGE),--upgrade)"

## make test-sdk-range: the SDK's tests in two fresh environments, one with the lowest versions of
## its dependencies that sdk/pyproject.toml admits, one with the newest the index serves (customers
## install the SDK as a library, with no lock); the test tools stay at the lock's versions
SDK_TEST_TOOLS := pytest pytest-asyncio pytest-timeout trustme aiohttp
SDK_TOOL_PINS = $(foreach t,$(SDK_TEST_TOOLS),$(t)==$(shell sed -n 's/^$(t)==\([^ ;]*\).*/\1/p' requirements/dev.txt))
test-sdk-range: install
	for resolution in lowest-direct highest; do \
		env=.venv-sdk-$$resolution && rm -rf $$env && $(VENV)/bin/uv venv -q --python $(PY) $$env && \
		$(VENV)/bin/uv pip install -q --python $$env/bin/python --resolution $$resolution \
			'./sdk[tracing]' opentelemetry-sdk $(SDK_TOOL_PINS) && \
		$(VENV)/bin/uv pip list -q --python $$env/bin/python | grep -E '^(httpx|websockets|opentelemetry-api) ' && \
		$$env/bin/python -m pytest -q -p no:cacheprovider sdk/tests || exit 1; \
	done

## make up: the whole stack against live Binance (needs internet)
up: run-install
	$(VENV)/bin/ladder up $(ARGS)

## make demo: the whole stack against the built-in fake venue
demo: run-install
	$(VENV)/bin/ladder up --venue fake $(ARGS)

## make clean-state: delete what `make up` and `make demo` keep between runs (.ladder/live and
## .ladder/demo: tenants, API key hashes, subscriptions); refused while a stack runs with them
clean-state: run-install
	$(VENV)/bin/ladder reset --venue binance --yes
	$(VENV)/bin/ladder reset --venue fake --yes

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install
	$(VENV)/bin/mypy book_store ladder_process ladder_cli ingest_nodes control_plane read_functions fake_venue sdk/ladder_sdk bench tests sdk/tests

## make test: lint, type-check, then the whole suite in parallel against real servers
test: lint typecheck browser-tools tls-tools
	$(VENV)/bin/python -m pytest -n auto -q $(PYTEST_ARGS)

## make test-cluster: every test that uses the store again, each store a real 3-primary Valkey
## Cluster (LADDER_TEST_STORE=cluster, tests/stores.py); tests that cannot apply skip and say why
test-cluster: install browser-tools tls-tools
	LADDER_TEST_STORE=cluster $(VENV)/bin/python -m pytest -n auto -q $(PYTEST_ARGS)

## make bench-tools: wrk, the read bench's load generator (Debian's package; without it the bench
## falls back to a built-in aiohttp client that takes much of the CPU it measures)
bench-tools: install
	command -v wrk >/dev/null || { apt-get update -q && apt-get install -y -q wrk; } \
		|| { sudo apt-get update -q && sudo apt-get install -y -q wrk; }

## make browser-tools: headless Chromium and its WebDriver (Debian's packages) for the console's
## browser test; without them that one test skips and says why
browser-tools:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null \
		|| { apt-get update -q && apt-get install -y -q chromium chromium-driver; } \
		|| { sudo apt-get update -q && sudo apt-get install -y -q chromium chromium-driver; } \
		|| echo "browser-tools: could not install chromium and chromium-driver (the console's browser test will skip)"

## make tls-tools: a Redis server built with TLS (Debian's redis-server; the embedded Valkey has no
## TLS) for the tests that run Ladder over rediss://; without it those tests skip and say why
tls-tools:
	@command -v redis-server >/dev/null \
		|| { apt-get update -q && apt-get install -y -q redis-server; } \
		|| { sudo apt-get update -q && sudo apt-get install -y -q redis-server; } \
		|| echo "tls-tools: could not install redis-server (the TLS store tests will skip)"

## make console-vendor: rebuild the console's vendored chart library from the npm registry
## (uPlot, minified by terser; the licence beside it). Needed only to change its version.
UPLOT_VERSION ?= 1.6.32
TERSER_VERSION ?= 5.36.0
CONSOLE_VENDOR := read_functions/console/vendor
console-vendor:
	rm -rf $(CONSOLE_VENDOR).tmp && mkdir -p $(CONSOLE_VENDOR).tmp
	cd $(CONSOLE_VENDOR).tmp && npm pack -q uplot@$(UPLOT_VERSION) >/dev/null && tar xzf uplot-$(UPLOT_VERSION).tgz
	npx -y terser@$(TERSER_VERSION) $(CONSOLE_VENDOR).tmp/package/dist/uPlot.esm.js --module --compress \
		--mangle --comments '/Copyright|MIT Licensed/' -o $(CONSOLE_VENDOR).tmp/uPlot.esm.min.js
	mkdir -p $(CONSOLE_VENDOR)
	cp $(CONSOLE_VENDOR).tmp/uPlot.esm.min.js $(CONSOLE_VENDOR)/uPlot.esm.min.js
	cp $(CONSOLE_VENDOR).tmp/package/dist/uPlot.min.css $(CONSOLE_VENDOR)/uPlot.min.css
	cp $(CONSOLE_VENDOR).tmp/package/LICENSE $(CONSOLE_VENDOR)/uPlot-LICENSE.txt
	echo "uPlot $(UPLOT_VERSION) from the npm registry, minified by terser $(TERSER_VERSION) (make console-vendor)" \
		> $(CONSOLE_VENDOR)/VERSION.txt
	rm -rf $(CONSOLE_VENDOR).tmp

## make image: the container image of the Dockerfile, built by buildah (no daemon; chroot isolation,
## so it builds where containers cannot run). IMAGE names it; BUILD_ARGS adds --build-arg options.
IMAGE ?= ladder:$(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
BUILDAH ?= buildah --storage-driver vfs
BUILD_ARGS ?=
image:
	command -v buildah >/dev/null || { apt-get update -q && apt-get install -y -q buildah; }
	$(BUILDAH) bud --isolation chroot --layers -t $(IMAGE) $(BUILD_ARGS) .

## make image-offline: the same with no registry and no index: the base is Debian's python3 in a root
## file system made by debootstrap, and pip installs from a wheelhouse in dist/wheels
OFFLINE_BASE := localhost/ladder-base:bookworm
OFFLINE_ROOT := build/rootfs-bookworm
WHEEL_PLATFORMS := $(foreach v,2_36 2_35 2_34 2_31 2_28 2_27 2_24 2_17 2_12 2_5,--platform manylinux_$(v)_x86_64) \
	--platform manylinux2014_x86_64
image-offline: install
	command -v debootstrap >/dev/null || { apt-get update -q && apt-get install -y -q debootstrap buildah; }
	test -x $(OFFLINE_ROOT)/usr/bin/python3 || debootstrap --variant=minbase \
		--include=python3,python3-venv,python3-pip bookworm $(OFFLINE_ROOT) http://deb.debian.org/debian
	$(BUILDAH) inspect $(OFFLINE_BASE) >/dev/null 2>&1 || { c=$$($(BUILDAH) from scratch) && \
		$(BUILDAH) copy $$c $(OFFLINE_ROOT) / >/dev/null && $(BUILDAH) commit -q $$c $(OFFLINE_BASE) && \
		$(BUILDAH) rm $$c; }
	rm -rf dist/wheels && mkdir -p dist/wheels
	$(PY) -m pip wheel -q --no-deps --no-build-isolation --wheel-dir dist/wheels .
	# bookworm's python3 is 3.11.2: keep the pins the lock marks for Pythons before 3.11.3
	sed -e "s/ ; python_full_version < '3.11.3'//" requirements/runtime.txt > dist/wheels/runtime-bookworm.txt
	$(PY) -m pip download -q --only-binary=:all: --dest dist/wheels --implementation cp --python-version 3.11 \
		$(WHEEL_PLATFORMS) --require-hashes -r dist/wheels/runtime-bookworm.txt -r requirements/build.txt
	$(MAKE) image BUILD_ARGS="--build-arg PYTHON_IMAGE=$(OFFLINE_BASE) \
		--build-arg 'PIP_ARGS=--no-index --find-links /src/dist/wheels'"

clean:
	rm -rf $(VENV) .venv-sdk-* .pytest_cache .mypy_cache .ruff_cache
