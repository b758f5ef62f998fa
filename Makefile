# Two entry points: `make run` serves the embedded demo, `make test` runs every test.
# Both create .venv when it is missing and install what the project needs, system packages
# included (PostgreSQL client tools for the tests), so they work on a fresh Debian machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test test-fast test-latest fuzz conformance lock system-deps node-deps clean

# Exact versions from requirements.lock, so a fresh clone tests what CI tested; fedgate itself
# goes in editable, without resolving anything again (PIP_CONSTRAINT: the Cython that builds
# it is the locked one too). pip shows its progress: the first install downloads about
# 600 MB (PySpark is most of it). The compiled modules' sources are listed so that a changed
# one is built again (the editable install compiles them in place: Cython for each .py/.pxd
# pair).
COMPILED := pgwire/protocol/answer_walks.py gateway/relay/express/statement_bytes.py \
	gateway/relay/express/repeats_flight.py gateway/relay/express/repeats.py
C_SOURCES := $(COMPILED) $(COMPILED:.py=.pxd)
$(STAMP): requirements.lock pyproject.toml $(C_SOURCES)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check --progress-bar on -r requirements.lock
	PIP_CONSTRAINT=requirements.lock $(PY) -m pip install --disable-pip-version-check --no-deps -e .
	@for module in pgwire.protocol.answer_walks gateway.relay.express.statement_bytes \
	  gateway.relay.express.repeats_flight gateway.relay.express.repeats; do \
	  $(PY) -c "import sys, $$module as m; from pgwire.compiled import build_of; \
	  sys.exit(build_of(m) != 'compiled')" || echo "NOTE: $$module is not compiled (no C \
	  compiler or Python's headers?): it runs interpreted, at more CPU per statement and \
	  row. 'make system-deps', then 'rm $(STAMP)' and make again."; done
	touch $(STAMP)

# gcc and Python's headers build the compiled modules (the C that Cython writes);
# psql and pgbench drive the client tests, some tests compare answers with a real
# PostgreSQL 15 server, the Spark engine needs a Java runtime (and the JDBC drivers to read
# sources itself), the pgbench benchmark compares with PgBouncer, the status page's browser
# tests drive a headless Chromium; install what is missing.
PG_BIN := /usr/lib/postgresql/15/bin
system-deps:
	@missing=""; \
	command -v psql >/dev/null && command -v pgbench >/dev/null || missing="$$missing postgresql-client-15"; \
	test -x $(PG_BIN)/initdb || missing="$$missing postgresql-15"; \
	command -v mariadbd >/dev/null || test -x /usr/sbin/mariadbd || missing="$$missing mariadb-server"; \
	command -v java >/dev/null || missing="$$missing default-jre-headless"; \
	command -v javac >/dev/null || missing="$$missing default-jdk-headless"; \
	test -f /usr/share/java/postgresql.jar || missing="$$missing libpostgresql-jdbc-java"; \
	test -f /usr/share/java/mariadb-java-client.jar || missing="$$missing libmariadb-java"; \
	command -v pgbouncer >/dev/null || test -x /usr/sbin/pgbouncer || missing="$$missing pgbouncer"; \
	command -v node >/dev/null || missing="$$missing nodejs"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v gcc >/dev/null || missing="$$missing gcc"; \
	$(PYTHON) -c "import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" \
	  || missing="$$missing python3-dev"; \
	if [ -n "$$missing" ]; then \
	  $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q $$missing; fi

run: $(STAMP)
	$(VENV)/bin/fedgate serve $(ARGS)

# node-postgres and pg-cursor for tests/compat/test_catalog_node.py (versions in its lock file).
NODE_DIR := tests/compat/node
node-deps: system-deps
	test -d $(NODE_DIR)/node_modules/pg-cursor || (cd $(NODE_DIR) && npm ci --no-audit --no-fund)

# system-deps first: the C compiler it installs builds the compiled modules when .venv is made.
test: system-deps $(STAMP) node-deps
	$(PY) -m pytest $(PYTEST_ARGS)

# Leaves out what is slow to start or long to run: Spark (local and clusters), the headless
# browser and load tests. CI runs them all (`make test`).
test-fast: $(STAMP)
	$(PY) -m pytest -m "not spark and not cluster and not browser and not load" $(PYTEST_ARGS)

# The fuzz tests with far more cases than `make test` runs (FUZZ_EXAMPLES=100000: an hour or
# two): the protocol decoder and peek readers, garbage to the gateway over a socket, the
# express lane's C and C-less builds against each other on hostile streams to a PostgreSQL
# source, and generated literals and identifiers pushed to PostgreSQL, MariaDB and SQLite
# sources.
FUZZ_EXAMPLES ?= 100000
FUZZ_TESTS := tests/unit/pgwire/test_decoder_fuzz.py tests/integration/test_protocol_fuzz.py \
              tests/integration/test_express_fuzz.py tests/unit/pgwire/test_row_walk.py \
              tests/unit/gateway/test_express_builds.py \
              tests/sources/test_pushdown_fuzz.py
fuzz: $(STAMP) system-deps
	FEDGATE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest $(FUZZ_TESTS) $(PYTEST_ARGS)

# The newest versions pyproject.toml allows, in a venv of their own (requirements.lock untouched).
LATEST := .venv-latest
test-latest: system-deps node-deps
	test -x $(LATEST)/bin/python || $(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/python -m pip install --disable-pip-version-check --upgrade -e '.[test]'
	$(LATEST)/bin/python -m pytest $(PYTEST_ARGS)

# Write requirements.lock anew from the newest versions the ranges allow.
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/python -m pip install --disable-pip-version-check '.[test]'
	{ sed -n '1,3p' requirements.lock; .venv-lock/bin/python -m pip freeze --exclude-editable \
	  | grep -v '^fedgate'; } > requirements.lock.new && mv requirements.lock.new requirements.lock
	rm -rf .venv-lock

clean:
	rm -rf $(VENV) $(LATEST) build *.egg-info .pytest_cache

# Federated TPC-H at scale factor 1 against the local limit and two peers (tens of
# minutes; data cached under the OS temp dir; ARGS="--queries 1,3 --runs 1" for a taste).
.PHONY: bench-tpch
bench-tpch: $(STAMP) system-deps
	$(PY) tests/bench/bench_tpch.py $(ARGS)

# Every statement of the differential suite against PostgreSQL 15, on both routes (a few
# minutes); rewrites docs/compatibility.md and fails on a new difference, or on a known one
# that is gone (then drop it from tests/conformance/known_differences.json). `make test`
# runs a fixed sample of the same statements. Then the query generator for
# GENERATE_SECONDS over three seeds (tests/conformance/generate; `make test` runs one seed
# for a fixed number of statements), its counts written at the end of the report.
GENERATE_SECONDS ?= 900
conformance: $(STAMP) system-deps
	$(PY) -m tests.conformance.suite $(ARGS)
	$(PY) -m tests.conformance.generate --seed 1 --seed 2 --seed 3 --seconds $(GENERATE_SECONDS) --write
