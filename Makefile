# make demo: generate CDC events, land them, dbt run + dbt test, print a summary.
# make cluster-up / cluster-down / cluster-status: a Spark standalone cluster on this machine for the
#   `cluster` profile target (cdc-cluster, python_jobs/cluster/); make cluster-demo: the demo on one.
# make test: pytest (Spark, Iceberg, dbt) and sqlfluff lint.
# make wheel: dist/cdc_merge-<version>-py3-none-any.whl, jars included, for your own project (docs/your_project.md).
# Both create .venv first from pyproject.toml.

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export CDC_MERGE_WAREHOUSE ?= $(CURDIR)/warehouse
export DBT_PROFILES_DIR ?= $(CURDIR)/profiles

# The landing job's JVM parsers (docs/landing.md, "The JVM fast path"), and the apply's deletes by position
# (BENCHMARKS.md), compiled against the Iceberg runtime jar; javac comes with the JDK.
PARSERS_JAR := python_jobs/jars/cdc-merge-parsers.jar
JAVA_SOURCES := $(wildcard jvm/src/cdc_merge/*.java)
ICEBERG_JVM_JAR := python_jobs/jars/cdc-merge-iceberg.jar
ICEBERG_JAVA_SOURCES := $(wildcard jvm/iceberg/cdc_merge/iceberg/*.java)
# A local file system that forks no process per file created (python_jobs/landing/io/session.py).
LOCAL_FS_JAR := python_jobs/jars/cdc-merge-local-fs.jar
LOCAL_FS_JAVA_SOURCES := $(wildcard jvm/hadoop/cdc_merge/hadoop/*.java)
JDK_PACKAGE := openjdk-17-jdk-headless
SPARK_JARS = $$($(BIN)/python -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')/*

# Real source databases for the capture tests (PostgreSQL logical decoding, MariaDB binlog), the
# PostgreSQL JDBC driver of the cluster's Iceberg catalog (python_jobs/cluster/), and the browser the
# status page is tested in (headless).
DEBIAN_TEST_PACKAGES := postgresql-15 postgresql-15-wal2json mariadb-server libpostgresql-jdbc-java chromium

# Logs, pids, chosen ports, the catalog database and the warehouse of `make cluster-up`.
CLUSTER_DIR ?= $(CURDIR)/cluster

.PHONY: demo test lint pytest venv jvm wheel javac check-java test-dbs clean reliability cluster-up cluster-down cluster-status cluster-demo

venv: $(STAMP) $(PARSERS_JAR) $(ICEBERG_JVM_JAR) $(LOCAL_FS_JAR)

jvm: $(PARSERS_JAR) $(ICEBERG_JVM_JAR) $(LOCAL_FS_JAR)

wheel: venv
	rm -rf dist && $(BIN)/pip wheel --quiet --no-deps --no-build-isolation -w dist .
	@ls dist/*.whl

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found (Python 3.11 is required)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Compiled against the Spark jars of the venv's pyspark, for Java 8+ like Spark 3.5.
$(PARSERS_JAR): $(JAVA_SOURCES) $(STAMP) | javac
	rm -rf build/jvm-classes && mkdir -p build/jvm-classes $(dir $@)
	javac --release 8 -Xlint:-options -d build/jvm-classes -cp "$(SPARK_JARS)" $(JAVA_SOURCES)
	jar --create --file $@ -C build/jvm-classes .

# ... and the Iceberg runtime jar the project uses (python_jobs/landing/io/session.py iceberg_jar).
$(ICEBERG_JVM_JAR): $(ICEBERG_JAVA_SOURCES) $(STAMP) | javac
	rm -rf build/jvm-iceberg-classes && mkdir -p build/jvm-iceberg-classes $(dir $@)
	javac --release 8 -Xlint:-options -d build/jvm-iceberg-classes \
		-cp "$(SPARK_JARS):$$($(BIN)/python -c 'from python_jobs.landing.io import iceberg_jar; print(iceberg_jar())')" \
		$(ICEBERG_JAVA_SOURCES)
	jar --create --file $@ -C build/jvm-iceberg-classes .

$(LOCAL_FS_JAR): $(LOCAL_FS_JAVA_SOURCES) $(STAMP) | javac
	rm -rf build/jvm-local-fs-classes && mkdir -p build/jvm-local-fs-classes $(dir $@)
	javac --release 8 -Xlint:-options -d build/jvm-local-fs-classes -cp "$(SPARK_JARS)" $(LOCAL_FS_JAVA_SOURCES)
	jar --create --file $@ -C build/jvm-local-fs-classes .

javac:
	@command -v javac >/dev/null || { \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		echo "installing $(JDK_PACKAGE) for javac"; \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $(JDK_PACKAGE) >/dev/null \
			|| { echo "error: javac not found and $(JDK_PACKAGE) could not be installed (needs root or sudo)"; exit 1; }; }

check-java:
	@java -version >/dev/null 2>&1 || { echo "error: Java 17+ is required for Spark (apt-get install openjdk-17-jre-headless)"; exit 1; }
	@java -version 2>&1 | head -1 | grep -Eq '"(1[7-9]|[2-9][0-9])[."]' || { echo "error: Java 17+ is required, found: $$(java -version 2>&1 | head -1)"; exit 1; }

demo: venv check-java
	$(BIN)/python -m python_jobs.demo.run_demo

cluster-up: venv check-java test-dbs
	$(BIN)/cdc-cluster up --folder $(CLUSTER_DIR)
	@echo "then: source $(CLUSTER_DIR)/cluster.env && $(BIN)/dbt run --target cluster"

cluster-down:
	$(BIN)/cdc-cluster down --folder $(CLUSTER_DIR)

cluster-status:
	$(BIN)/cdc-cluster status --folder $(CLUSTER_DIR)

cluster-demo: venv check-java test-dbs
	$(BIN)/python -m python_jobs.demo.cluster_demo

test-dbs:
	@missing=$$(for p in $(DEBIAN_TEST_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		echo "installing Debian packages for the capture tests:" $$missing; \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing >/dev/null \
			|| { echo "error: could not install $$missing (needs root or sudo)"; exit 1; }; \
	fi

# Tests use free ports and their own temp folders, so workers do not collide; PYTEST_WORKERS=0 runs them
# in this process (for a debugger).
PYTEST_WORKERS ?= 2

# Every test's time goes to build/pytest-results.xml (junit), where the suite's time is looked for.
pytest: venv check-java test-dbs
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup --durations=15 --junitxml=build/pytest-results.xml

# The full reliability suite behind RELIABILITY.md (about 1.75 hours on 2 cores): crash points and random
# kills, the service killed beside a live PostgreSQL, the run locks under overlapping runs, commits from two
# processes at once, hostile input. make test runs a bounded part of each.
reliability: venv check-java test-dbs
	$(BIN)/python -m reliability.crashes
	$(BIN)/python -m reliability.service_kills
	$(BIN)/pytest -n 0 tests/test_concurrent_runs.py
	$(BIN)/python -m reliability.catalog_commits
	$(BIN)/python -m reliability.hostile_input

lint: venv
	$(BIN)/sqlfluff lint models

test: pytest lint

clean:
	rm -rf build dist warehouse data target logs dbt_packages .pytest_cache
