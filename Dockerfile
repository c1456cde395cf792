# One image for every Ladder process: its entrypoint is the `ladder` command, so the same image
# runs `ingest`, `control` and `read` (terraform's ECS tasks pass `["ingest"]` / `["control"]`).
#
#   docker build -t ladder:0.1.0 .                 # or: buildah bud --layers -t ladder:0.1.0 .
#   docker run --rm ladder:0.1.0 read --host 0.0.0.0 --port 8080
#
# Two stages: the first installs Ladder and its dependencies (binary wheels, and Ladder's compiled
# modules, setup.py: the book store's C and the hot path mypyc compiles, built there) into a virtual
# environment without pip; the second is the same slim base plus that environment, with no
# compiler, run as an unprivileged user. The base is pinned by digest; PYTHON_IMAGE replaces it (a
# mirror, or `make image`'s local base where no registry is reachable). PIP_ARGS adds pip options,
# e.g. `--no-index --find-links /src/dist/wheels` to build from a wheelhouse in the build context
# with no network.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:a36c24f9cbdf4fd0f52d67f0823eeac19c2028c637cecc392d97f980d4fec56b

FROM ${PYTHON_IMAGE} AS build
ARG PIP_ARGS=""
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
COPY . .
# Every third-party package comes from the runtime lock (requirements/runtime.txt, hashes required),
# the same pins the tests ran against and the Lambda zip carries; Ladder's own wheel is built by the
# locked setuptools and installed without dependencies, into an environment that has no pip of its
# own (the base's pip installs into it: pip --python).
# The compiled modules' compiler, and Python's headers where the base lacks them (Debian's python3 does).
RUN apt-get update -q && apt-get install -y -q --no-install-recommends gcc libc6-dev \
        $(python3 -c 'import sysconfig, os; print("" if os.path.exists(sysconfig.get_paths()["include"] + "/Python.h") else "python3-dev")') \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m pip install --no-compile ${PIP_ARGS} --require-hashes -r requirements/build.txt \
 && python3 -m pip wheel --no-deps --no-build-isolation --wheel-dir /tmp/wheels ${PIP_ARGS} . \
 && python3 -m venv --without-pip /opt/ladder \
 && python3 -m pip --python /opt/ladder/bin/python install --no-compile --only-binary=:all: \
        ${PIP_ARGS} --require-hashes -r requirements/runtime.txt \
 && python3 -m pip --python /opt/ladder/bin/python install --no-compile --no-deps ${PIP_ARGS} \
        /tmp/wheels/ladder-*.whl \
 && /opt/ladder/bin/python -m compileall -q /opt/ladder/lib \
 && /opt/ladder/bin/ladder --help > /dev/null \
 && /opt/ladder/bin/python -c 'from ingest_nodes.core import native; assert native.describe() == "compiled"'

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="ladder" \
      org.opencontainers.image.description="Live crypto order books kept in sync once, replicated, and served to many tenants." \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --system --gid 10001 ladder \
 && useradd --system --uid 10001 --gid ladder --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin ladder
COPY --from=build /opt/ladder /opt/ladder
ENV PATH=/opt/ladder/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
USER 10001:10001
WORKDIR /tmp
# the read API (ladder read --port 8080); ingest and control serve /metrics, /livez and /readyz on
# LADDER_METRICS_PORT if set
EXPOSE 8080
ENTRYPOINT ["/opt/ladder/bin/ladder"]
CMD ["--help"]
