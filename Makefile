# Two commands do all set-up on a fresh Debian machine:
#   make demo   a walkthrough of the local store, in a temporary directory
#   make test   build, then run every test
# Each installs what is missing first (libsqlite3-dev, pkg-config, sqlite3 via apt-get).

SHELL := /bin/bash
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
APT_PACKAGES := libsqlite3-dev pkg-config sqlite3

.PHONY: demo test build deps tsan bench clean

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

build: deps
	@mkdir -p .build
	$(SWIFT) build --build-tests 2>&1 | tee .build/build-output.log; exit $${PIPESTATUS[0]}
	@! grep -E "^/.*/(Sources|Tests|Plugins)/.*: warning:" .build/build-output.log || { echo "Warnings in the project's code (above): fix them"; exit 1; }

test: build
	$(SWIFT) test --skip-build --disable-swift-testing

demo: deps
	$(SWIFT) build --product flagship
	@./Scripts/demo.sh "$$($(SWIFT) build --show-bin-path)/flagship"

# The suite under the thread sanitizer (slower; not part of `make test`).
tsan: deps
	$(SWIFT) test --sanitize=thread --scratch-path .build-tsan --disable-swift-testing

# The package-benchmark suite (its own package under Benchmarks/).
bench: deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark

clean:
	rm -rf .build .build-tsan .build-snippets Benchmarks/.build
