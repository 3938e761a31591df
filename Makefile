# mmaqm — multimedia-aware AQM on P4.  `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV        := .venv
PY          := $(VENV)/bin/python
BUILD       := build
P4_MAIN     := p4src/v1model/main.p4
P4_SOURCES  := $(wildcard p4src/shared/*.p4 p4src/v1model/*.p4)
BMV2_JSON   := $(BUILD)/main.json
P4INFO      := $(BUILD)/main.p4info.txtpb
P4INFO_GOLDEN := p4src/v1model/main.p4info.txtpb
# The controller's P4 constants, generated from the P4 sources (tools/gen_p4constants.py).
P4_CONSTANTS  := control-plane/mmaqm/p4generated.py
export PATH := $(if $(P4_TOOLCHAIN_PREFIX),$(P4_TOOLCHAIN_PREFIX)/bin:,)$(PATH)

# Debian/Ubuntu packages `make deps` needs on a fresh Debian 12 (the P4 toolchain
# itself is a prerequisite: see docs/install.md).  python3-dev, gcc and libc6-dev:
# pip compiles netifaces 0.11.0 (ptf's; PyPI has no wheel of it) from source;
# ca-certificates: pip reaches PyPI over HTTPS.
DEB_PACKAGES := python3 python3-venv python3-dev gcc libc6-dev make ca-certificates \
                iproute2 ethtool iptables iperf3 tcpdump procps \
                libnetfilter-queue-dev libmnl-dev

.PHONY: help deps deps-apt deps-venv lock check-toolchain build test test-unit test-ptf clean \
        ns3-deps

help:
	@echo "make deps         install Debian packages + .venv, verify the P4 toolchain"
	@echo "make lock         regenerate requirements.txt (hashed lock) from requirements.in"
	@echo "                  (upgrade one: make lock LOCK_ARGS='--upgrade-package numpy')"
	@echo "make build        compile $(P4_MAIN) -> $(BMV2_JSON), $(P4INFO)"
	@echo "make build PROFILE=RED  one algorithm's BMv2 profile -> build/red/main.json (names:"
	@echo "                  $(PROFILES)); make build-profiles: all"
	@echo "make build-tna    compile p4src/tna/main.p4 for Tofino, one program per algorithm,"
	@echo "                  + resource table build/tna/resources.md (needs the Tofino compiler)"
	@echo "make check-tna    type-check every TNA variant with p4test (no Tofino compiler needed)"
	@echo "make golden-p4info  accept a changed P4Info ($(P4INFO_GOLDEN)); regenerates $(P4_CONSTANTS)"
	@echo "                  (a profile's: make golden-p4info PROFILE=RED, or PROFILE=all)"
	@echo "make gen-constants  regenerate $(P4_CONSTANTS) from defines.p4, the golden P4Info"
	@echo "                  and the TNA constants (make build checks it is current)"
	@echo "make config-reference  regenerate docs/configuration.md from the controller's code"
	@echo "make test         unit tests + PTF conformance suite on BMv2 (needs root)"
	@echo "make test-unit    unit tests only (no switch)"
	@echo "make test-ptf     PTF suite only; one test: make test-ptf PTF_TEST=test_red.RedForcedDropTest"
	@echo "make run          the D-CBT paper experiment under every algorithm (needs root)"
	@echo "                  (options: make run RUN_ARGS='--algorithms RED,DCBT --duration 15')"
	@echo "                  (named experiments: make run RUN_ARGS='--experiment cbt-fig4'; mmaqm-exp --help)"
	@echo "make bench        BMv2 packet rate: AQM program (all-in-one, and each algorithm's profile)"
	@echo "                  vs minimal IPv4 forwarder (needs root; BENCH_ARGS='--reps 1 --no-profiles')"
	@echo "make check-results  recompute the documented result and paper-comparison tables from docs/results (also in make test)"
	@echo "make fuzz         100 000 malformed/random frames through BMv2, all accounted for (needs root)"
	@echo "                  (options: make fuzz FUZZ_COUNT=5000 FUZZ_SEED=7 FUZZ_ARGS='--rate-pps 3000')"
	@echo "make soak         10 min of mixed traffic, policy changes every 30 s; queues end empty (needs root)"
	@echo "                  (options: make soak SOAK_ARGS='--duration-s 60 --policy-interval-s 10 --restart-switch')"
	@echo "make ns3-deps     install the ns3 wheel (requirements-ns3.txt, ~70 MB) into .venv"
	@echo "make ns3-PAPER    one paper's scenario in ns-3 (PAPER: feng, dcbt, cbt, mcdt, upta; queues x TCP models x seeds):"
	@echo "                  docs/ns3/PAPER.json + the table in docs/ns3/PAPER.md (docs/ns3.md; NS3_ARGS='--seeds 3')"
	@echo "make mutants      mutation testing (tools/mutants.yaml; needs root, ~1 min a mutant)"
	@echo "make clean        remove build/ and results/"

deps: deps-apt deps-venv check-toolchain

deps-apt:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	    | grep -q 'install ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "ok: Debian packages present"; \
	elif [ "$$(id -u)" != 0 ]; then echo "mmaqm: run 'make deps' as root to install: $$missing" >&2; exit 1; \
	else DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	     DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; fi

# requirements.txt is the lock: every package, pip included, pinned with its hashes
# (generated from requirements.in by `make lock`; tests/packaging checks they agree).
# Re-installs only when requirements.txt or a package's pyproject.toml changes.
# oracle/ is the test oracle (mmaqm_oracle), which only the tests and tools import.
deps-venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt control-plane/pyproject.toml oracle/pyproject.toml \
    $(wildcard topologies/pyproject.toml)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --require-hashes -r requirements.txt
	$(PY) -m pip install -q --no-deps -e control-plane
	$(PY) -m pip install -q --no-deps -e oracle
	if [ -f topologies/pyproject.toml ]; then $(PY) -m pip install -q --no-deps -e topologies; fi
	touch $@

check-toolchain: deps-venv
	@MMAQM_PYTHON=$(PY) tools/check-toolchain.sh

# ns-3 (docs/ns3.md): its wheel's C++ headers and libraries, for the independent
# simulator reference; not in requirements.txt (large). --no-deps: the Python
# bindings (cppyy) are not used.
ns3-deps: $(VENV)/.ns3-installed
$(VENV)/.ns3-installed: requirements-ns3.txt | $(VENV)/.installed
	$(PY) -m pip install -q --no-deps --require-hashes -r requirements-ns3.txt
	touch $@

# One paper's scenario in ns-3: tools/ns3_<paper>.py run (docs/ns3/<paper>.md).
ns3-%: ns3-deps
	$(PY) tools/ns3_$*.py run $(NS3_ARGS)

# The lock: pip-compile (pip-tools, its version pinned here) resolves requirements.in
# and writes requirements.txt with every transitive package pinned and hashed. Pins
# already in requirements.txt are kept; LOCK_ARGS='--upgrade-package NAME' moves one,
# LOCK_ARGS=--upgrade all. pip-tools lives in its own venv, never in .venv.
PIP_TOOLS_VERSION := 7.6.2
LOCK_PIP_VERSION  := $(shell sed -n 's/^pip==\([0-9.]*\).*/\1/p' requirements.in)
LOCK_VENV         := $(BUILD)/lock-venv
lock:
	test -x $(LOCK_VENV)/bin/python || python3 -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install -q pip==$(LOCK_PIP_VERSION) pip-tools==$(PIP_TOOLS_VERSION)
	CUSTOM_COMPILE_COMMAND="make lock" $(LOCK_VENV)/bin/pip-compile --quiet \
	    --generate-hashes --allow-unsafe --strip-extras \
	    --no-emit-index-url --no-emit-find-links --no-emit-trusted-host \
	    $(LOCK_ARGS) --output-file requirements.txt requirements.in

NFQ_DELAY   := topologies/delay/nfq_delay

# PROFILE=<NAME>: build one per-algorithm profile instead (build-profile below).
ifeq ($(PROFILE),)
build: $(BMV2_JSON) $(NFQ_DELAY) check-constants
else
build: build-profile
endif
$(NFQ_DELAY): topologies/delay/nfq_delay.c topologies/delay/Makefile
	$(MAKE) -C topologies/delay
$(BMV2_JSON) $(P4INFO) &: $(P4_SOURCES) $(P4INFO_GOLDEN) | $(VENV)/.installed
	@mkdir -p $(BUILD)
	@p4c-bm2-ss --arch v1model --std p4-16 -o $(BMV2_JSON) \
	    --p4runtime-files $(P4INFO) $(P4_MAIN) 2> $(BUILD)/p4c.log; \
	  rc=$$?; cat $(BUILD)/p4c.log >&2; \
	  if [ $$rc != 0 ]; then rm -f $(BMV2_JSON); exit $$rc; fi; \
	  if grep -qi 'warning' $(BUILD)/p4c.log; then \
	    echo "mmaqm: p4c emitted warnings; the build must be warning-free" >&2; \
	    rm -f $(BMV2_JSON); exit 1; fi; \
	  if ! cmp -s $(P4INFO) $(P4INFO_GOLDEN); then \
	    diff -u $(P4INFO_GOLDEN) $(P4INFO) | head -40 >&2; \
	    echo "mmaqm: the P4Info differs from the committed $(P4INFO_GOLDEN) (the controller" >&2; \
	    echo "  reads its enums there). Review the diff, then run 'make golden-p4info'." >&2; \
	    rm -f $(BMV2_JSON); exit 1; fi
	@$(PY) -m mmaqm_exp.pipeline_stats $(BMV2_JSON)

# Per-algorithm BMv2 profiles (p4src/v1model/profile.p4): main.p4 with
# -DMMAQM_PROFILE_<NAME>, the Tofino build's names. Each -> build/<name>/main.json
# and main.p4info.txtpb, checked against p4src/v1model/profiles/<name>.p4info.txtpb.
# Not part of `make build` (tests/tools/test_profiles.py compiles them all).
PROFILES := DROP_TAIL RED CBT_RED_ALL CBT_RED_TCP_ONLY DCBT DCBT_CHIPS MCDT FRED UPTA
.PHONY: build-profile build-profiles
build-profile: | $(VENV)/.installed
	@$(PY) tools/build_profiles.py --profile $(PROFILE)
build-profiles: | $(VENV)/.installed
	@$(PY) tools/build_profiles.py

# Tofino (TNA): optional, never a dependency of deps/build/test (docs/tofino.md).
# build-tna exits non-zero, saying what is missing, without the Tofino compiler.
.PHONY: build-tna check-tna
build-tna:
	@tools/build-tna.sh
check-tna:
	@tools/build-tna.sh --frontend

# Accept a changed P4Info: copy the compiler's output over the committed golden copy,
# then regenerate the controller's constants (its enums come from the P4Info).
# With PROFILE=<NAME> (or PROFILE=all): the profile's golden P4Info instead.
.PHONY: golden-p4info
golden-p4info: | $(VENV)/.installed
ifneq ($(PROFILE),)
	$(PY) tools/build_profiles.py --accept $(if $(filter all,$(PROFILE)),,--profile $(PROFILE))
else
	@mkdir -p $(BUILD)
	p4c-bm2-ss --arch v1model --std p4-16 -o $(BUILD)/golden.json \
	    --p4runtime-files $(P4INFO_GOLDEN) $(P4_MAIN)
	rm -f $(BUILD)/golden.json
	$(PY) tools/gen_p4constants.py
endif

# The controller reads no P4 file at import: tools/gen_p4constants.py writes what it
# needs (defines.p4's constants and enums, the golden P4Info's enums, red_tna.p4's and
# tna_types.p4's constants) into $(P4_CONSTANTS), committed. gen-constants rewrites it;
# check-constants (part of make build, and a unit test) fails when it is stale.
.PHONY: gen-constants check-constants
gen-constants: | $(VENV)/.installed
	$(PY) tools/gen_p4constants.py
check-constants: | $(VENV)/.installed
	@$(PY) tools/gen_p4constants.py --check

# docs/configuration.md is generated from the controller's code (mmaqm.config's FIELDS
# and the algorithm plug-ins' parameters); tests/tools/test_config_reference.py fails
# when it is stale (tools/gen_config_reference.py --check).
.PHONY: config-reference
config-reference: | $(VENV)/.installed
	$(PY) tools/gen_config_reference.py

test: build deps-venv
	$(PY) tools/run_tests.py

test-unit: deps-venv
	$(PY) tools/run_tests.py --unit-only

test-ptf: build deps-venv
	$(PY) tools/run_tests.py --ptf-only $(if $(PTF_TEST),--ptf-test $(PTF_TEST))

# make run first measures this machine's BMv2 (a short bench of every algorithm) and warns
# when the paper-scale scenario leaves it too little margin; every run then checks that
# the switches kept up. CAPACITY_CHECK=0 skips the measurement.
CAPACITY_CHECK ?= 1
CAPACITY_DIR := $(BUILD)/capacity
.PHONY: run
run: build deps-venv
ifeq ($(CAPACITY_CHECK),1)
	$(PY) bench/run_bench.py --family ipv4 --reps 1 --duration 3 --warmup 1 --offered-pps 60000 \
	    --quiet-wait 20 --no-profiles --out-dir $(CAPACITY_DIR)
	$(PY) -m mmaqm_exp.experiment --capacity-json $(CAPACITY_DIR)/latest.json $(RUN_ARGS)
else
	$(PY) -m mmaqm_exp.experiment $(RUN_ARGS)
endif

.PHONY: bench
bench: build deps-venv
	$(PY) bench/run_bench.py $(BENCH_ARGS)

# The controller's flow-report capacity with real BMv2 (bench/digest_capacity.py; root).
.PHONY: digest-capacity
digest-capacity: build deps-venv
	$(PY) bench/digest_capacity.py $(DIGEST_ARGS)

# The documented result tables (docs/experiments) against the run data committed under docs/results.
.PHONY: check-results
check-results: deps-venv
	$(PY) tools/check_results.py
	$(PY) tools/paper_compare.py

# Fuzzing: malformed and random frames through a real BMv2, every frame
# accounted for (tools/fuzz.py; a 5 000-frame run is part of make test).
FUZZ_COUNT ?= 100000
FUZZ_SEED  ?= 1
.PHONY: fuzz
fuzz: build deps-venv
	$(PY) tools/fuzz.py --count $(FUZZ_COUNT) --seed $(FUZZ_SEED) $(FUZZ_ARGS)

# Soak: 10 minutes of TCP + tagged/untagged UDP on the dumbbell, a policy
# change every 30 s, then every queue must be empty and nothing left (tools/soak.py).
# SOAK_ARGS='--restart-switch' adds one kill -9 and restart of r1 in the middle.
.PHONY: soak
soak: build deps-venv
	$(PY) tools/soak.py $(SOAK_ARGS)

# Mutation testing: each mutant of tools/mutants.yaml must make one of its tests fail.
.PHONY: mutants
mutants: build deps-venv
	$(PY) tools/mutants.py $(MUTANTS_ARGS)

clean:
	rm -rf $(BUILD) results
