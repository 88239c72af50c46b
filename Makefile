# Two commands do all set-up on a fresh Debian machine:
#   make demo   a walkthrough of the local store, in a temporary directory
#   make test   build, then run every test
# Each installs what is missing first (libsqlite3-dev, pkg-config, sqlite3, postgresql... via apt-get).
#
# Two builds, each in its own directory so that neither recompiles the other's modules:
#   .build      the default build, no package trait: the `flagship` tool without PostgreSQL (no
#               SwiftNIO), as a plain `swift build --product flagship` builds it (`make demo`)
#   .build-all  every package trait on (PostgreSQL, service lifecycle, metrics, tracing,
#               configuration: Package.swift), every test: what `make test` builds and runs

SHELL := /bin/bash
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
# iproute2 and curl: the README's examples run offline in a network namespace of their own.
# postgresql: the server binaries the FlagshipPostgres tests start (never as a system service).
# python3: Scripts/example.sh reads the example's JSON answers, and `make docs` its symbol graphs;
# python3-venv: the official Python SDK's environment (`make python-sdk`).
APT_PACKAGES := libsqlite3-dev pkg-config sqlite3 iproute2 curl postgresql python3 python3-venv

.PHONY: demo test build tool deps tsan bench clean torture hostile example python-sdk

# The build with every trait, and its tests (every command that reads that build takes these).
ALL_TRAITS := --scratch-path .build-all --enable-all-traits
# SwiftPM 6.3 passes a package's traits to the compiler (-DPostgres -DMetrics...) in an order drawn
# afresh each time it plans a build (a changed manifest, a file added): every module of this
# package then recompiles (swiftlang/swift-package-manager#10525). A fixed hash seed for SwiftPM
# itself keeps the order. Only its builds get it: the tests keep Swift's random seeds.
# FLAGSHIP_EXAMPLE=1 adds Examples/HummingbirdServer's program to this build (Package.swift, at
# its end): every command on .build-all sets it, so that they all read the same manifest.
BUILD_ALL := FLAGSHIP_EXAMPLE=1 SWIFT_DETERMINISTIC_HASHING=1 $(SWIFT) build $(ALL_TRAITS)
TEST_ALL := FLAGSHIP_EXAMPLE=1 $(SWIFT) test $(ALL_TRAITS) --skip-build --disable-swift-testing

deps:
	@missing=""; \
	for package in $(APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$package 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "Installing:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
	@command -v $(SWIFT) >/dev/null || { echo "Swift 6.1 or later is needed: https://www.swift.org/install/linux/"; exit 1; }

# The `flagship` tool of the default build (no trait): `make demo`'s, the example's local
# server, and the one PostgresNotBuiltInTests runs. Checked for warnings, as the full build is:
# its sources are compiled without the traits' code.
tool: deps
	@mkdir -p .build
	$(SWIFT) build --product flagship 2>&1 | tee .build/tool-output.log; exit $${PIPESTATUS[0]}
	@! grep -E "^/.*/(Sources|Tests|Plugins)/.*: warning:" .build/tool-output.log || { echo "Warnings in the project's code (above): fix them"; exit 1; }

build: deps
	@mkdir -p .build-all
	$(BUILD_ALL) --build-tests 2>&1 | tee .build-all/build-output.log; exit $${PIPESTATUS[0]}
	@! grep -E "^/.*/(Sources|Tests|Plugins|Examples)/.*: warning:" .build-all/build-output.log || { echo "Warnings in the project's code (above): fix them"; exit 1; }

# Every test, each fuzz target for a few seconds (`make torture` runs them for minutes), the tool
# of the default build (`make tool`, its warnings checked) and Examples/HummingbirdServer as built
# above, run against it: jobs that run at once, the suite's output shown as it runs, the others'
# after it (Scripts/test.sh says why and how).
test: build python-sdk
	@bin="$$($(BUILD_ALL) --show-bin-path)"; \
	./Scripts/test.sh "$$bin/flagship-swift-linuxPackageTests.xctest" "$$bin/HummingbirdServer"

# The official Flagship Python SDK, pinned, in a virtual environment of its own (.build-python):
# OfficialPythonSDKTests drives it against the local server. Best effort: without the network the
# install fails with a warning and those tests say they were skipped.
PYTHON_SDK := flagship==3.0.1
python-sdk: deps
	@if ! .build-python/bin/python -c 'import flagship' 2>/dev/null; then \
		python3 -m venv .build-python && .build-python/bin/pip install -q --disable-pip-version-check '$(PYTHON_SDK)' \
		|| echo "warning: the official Flagship Python SDK ($(PYTHON_SDK)) could not be installed: OfficialPythonSDKTests are skipped"; \
	fi

# Examples/HummingbirdServer as a user builds it, its own package (which compiles SwiftNIO and the
# integrations again, a few minutes), run against `flagship serve` (the default build's tool): a
# request, the health and the metrics, SIGTERM. `make test` runs the same program built in
# .build-all; `make torture` runs this.
example: tool
	./Scripts/example.sh

# The hostile suite alone (part of `make test`): symlinks, refused and damaged files, locks, full
# disks, redirects, bad input, forged lines, and the README's examples run as written.
hostile: build
	$(TEST_ALL) --filter 'Hostile'

# The tool alone, without SwiftNIO: a few hundred build steps.
demo: deps
	$(SWIFT) build --product flagship
	@./Scripts/demo.sh "$$($(SWIFT) build --show-bin-path)/flagship"

# The DocC catalogs of the library products, each into .build/docs/<product>/ (swift-docc-plugin,
# a dependency only while FLAGSHIP_DOCS is set). Any warning of docc or of our code (a link that
# does not resolve, say) fails it; the dependencies' own warnings are theirs. Once the package
# declares traits, all are enabled, for the integrations' catalogs.
DOC_TARGETS := Flagship FlagshipLocalServer FlagshipTesting FlagshipServiceLifecycle FlagshipMetrics \
	FlagshipTracing FlagshipConfiguration FlagshipPostgres FlagshipAsyncHTTPClient
.PHONY: docs
docs: deps
	@# Every figure the documentation quotes agrees with Benchmarks/figures.json, its one place.
	python3 Scripts/figures.py check
	@mkdir -p .build/docs
	@traits=$$(grep -q '\.trait(' Package.swift && echo --enable-all-traits); warnings=0; \
	for target in $(DOC_TARGETS); do \
		FLAGSHIP_DOCS=1 SWIFT_DETERMINISTIC_HASHING=1 $(SWIFT) package --scratch-path .build-docs $$traits \
			--allow-writing-to-directory .build/docs \
			generate-documentation --target $$target --output-path .build/docs/$$target \
			> .build/docs/$$target.log 2>&1 || { cat .build/docs/$$target.log; exit 1; }; \
		grep "warning:" .build/docs/$$target.log | grep -v -e "which are unhandled" -e "/.build/checkouts/" > .build/docs/$$target.warnings; \
		count=$$(wc -l < .build/docs/$$target.warnings); cat .build/docs/$$target.warnings; \
		echo "$$target: $$count docc warning(s), .build/docs/$$target"; warnings=$$((warnings + count)); \
	done; \
	[ $$warnings -eq 0 ] || { echo "$$warnings docc warning(s) in all: fix them"; exit 1; }
	@# Every public symbol documented, as DocC sees it (the symbol graphs it just read).
	python3 Scripts/doc-coverage.py --symbol-graphs "$$(find .build-docs -maxdepth 2 -type d -name extracted-symbols | head -1)"
	@# The pages load their scripts from the site's root: a file:// open shows a blank page.
	@echo "To read it: python3 -m http.server --bind 127.0.0.1 --directory .build/docs/Flagship 8000, then open http://127.0.0.1:8000/documentation/flagship (each product: its folder in .build/docs, at /documentation/<product in lower case>)"

# The long torture runs (about half an hour on 2 cores): kill points, corruption seeds, simulated
# minutes of network faults, the stress test, then every fuzz target for minutes.
TORTURE_KILLS ?= 60
TORTURE_SEEDS ?= 1000
TORTURE_FAULT_MINUTES ?= 60
torture: build
	"$$($(BUILD_ALL) --show-bin-path)/flagship-torture" crash --kills $(TORTURE_KILLS)
	FLAGSHIP_TORTURE_SEEDS=$(TORTURE_SEEDS) FLAGSHIP_TORTURE_FAULT_MINUTES=$(TORTURE_FAULT_MINUTES) \
		$(TEST_ALL) --filter 'CorruptionTortureTests|NetworkFaultSoakTests|DiskFaultTests|StressTests'
	$(MAKE) fuzz-long
	$(MAKE) example

# The suite under the thread sanitizer (slower; not part of `make test`).
tsan: deps
	$(SWIFT) test --sanitize=thread --scratch-path .build-tsan --enable-all-traits --disable-swift-testing

# The soak (release build): the SDK under an open-loop flow of visitors against the local server,
# sampled to CSV and SVG. SOAK_ARGS="--find-steady" bisects for the highest steady rate instead.
SOAK_ARGS ?= --rate 1000 --duration 300 --csv soak.csv --svg soak.svg
.PHONY: soak
soak: deps
	$(SWIFT) build -c release --product flagship-soak
	"$$($(SWIFT) build -c release --show-bin-path)/flagship-soak" $(SOAK_ARGS)

# The scale measurements (issue 48): each figure on stores of growing size, with its growth from
# one size to the next. The stores are built once in /tmp/flagship-scale (SCALE_DIR) and kept;
# SCALE_SIZES="100000 1000000 10000000" adds the 8 GB store, SCALE_SOAK=1 a prune under the soak.
SCALE_SIZES ?= 100000 1000000
.PHONY: scale
scale: deps
	Scripts/scale.sh $(SCALE_SIZES)

# The package-benchmark suite (its own package under Benchmarks/).
bench: deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark

# The libFuzzer targets (their own package under Fuzz/), each on a copy of its seed corpus:
# seconds each for CI, minutes each for `make torture`. A crash fails the target, naming the input.
.PHONY: fuzz fuzz-long
FUZZ_SECONDS ?= 180
fuzz: deps
	SWIFT=$(SWIFT) ./Scripts/fuzz.sh 10

fuzz-long: deps
	SWIFT=$(SWIFT) ./Scripts/fuzz.sh $(FUZZ_SECONDS)

clean:
	rm -rf .build .build-all .build-without-traits .build-tsan .build-snippets .build-docs Benchmarks/.build Fuzz/.build
