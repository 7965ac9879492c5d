# dcpi - the two commands of the quick start, and a few helpers.
#   make demo   install what is missing, build, profile samples/work-demo, print dcpiprof
#   make test   install what is missing, build, run the whole test suite (ctest, in parallel),
#               then again under ASan+UBSan (build-asan), then print the ten slowest tests
#   make test-stress  the timing-sensitive tests STRESS_REPS times under a competing CPU load
#               (stress-ng) and at a second sampling rate, with a flake table (tests/stress.sh)
#   make package  Debian packages dcpi and dcpi-dev in build/packages (man pages included)
#   make fuzz   libFuzzer harnesses (clang) for FUZZ_SECONDS each; make test-asan: suite under ASan+UBSan
BUILD   ?= build
JOBS    ?= $(shell nproc)
CMAKE_FLAGS ?=
DEB_PKGS = build-essential cmake pkg-config libzydis-dev libelf-dev libdw-dev check libffi-dev \
           linux-perf google-perftools binutils clang libclang-rt-14-dev \
           protobuf-c-compiler libprotobuf-c-dev zlib1g-dev golang-go libbpf-dev \
           libdebuginfod1 libdebuginfod-dev debuginfod graphviz xz-utils \
           chromium pandoc man-db libcurl4-openssl-dev clickhouse-server clickhouse-client

.PHONY: all deps build demo test test-asan test-stress fuzz install package clean format

all: build

deps:
	@sh tools/install-deps.sh $(DEB_PKGS)

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@sh samples/demo.sh $(BUILD)

# The whole suite twice: a normal build, then under AddressSanitizer + UndefinedBehaviorSanitizer
# (LeakSanitizer on). Tests labelled "once" run in the first pass only (e2e_fuzz_regress: its
# harnesses are ASan/UBSan builds already; e2e_reliab_kill: 100 SIGKILLs, nothing for ASan).
# Both passes run even when the first fails; the slowest ten tests are printed at the end.
test: build
	@rc=0; (cd $(BUILD) && ctest --output-on-failure -j $(JOBS)) || rc=1; \
	$(MAKE) --no-print-directory test-asan || rc=1; \
	sh tests/slowest.sh $(BUILD) $(BUILD)-asan; exit $$rc

test-asan: deps
	@cmake -S . -B $(BUILD)-asan -DDCPI_SANITIZE=ON >/dev/null
	@cmake --build $(BUILD)-asan -j $(JOBS) >$(BUILD)-asan.log 2>&1 || \
		{ tail -40 $(BUILD)-asan.log; exit 1; }
	@cd $(BUILD)-asan && ctest --output-on-failure -j $(JOBS) -LE once

STRESS_REPS ?= 20
test-stress: build
	@sh tools/install-deps.sh stress-ng
	@bash tests/stress.sh $(BUILD) $(STRESS_REPS)

FUZZ_SECONDS ?= 60
FUZZ_TARGETS = $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
fuzz: deps
	@cmake -S . -B $(BUILD)-fuzz -DDCPI_FUZZ=ON -DCMAKE_C_COMPILER=clang \
		-DCMAKE_CXX_COMPILER=clang++ -DDCPI_BUILD_TESTS=OFF >/dev/null
	@cmake --build $(BUILD)-fuzz -j $(JOBS) --target $(FUZZ_TARGETS)
	@tests/fuzz/run.sh $(BUILD)-fuzz $(FUZZ_SECONDS)

install: build
	@cmake --install $(BUILD)

# Debian packages dcpi and dcpi-dev (CPack, cmake/DcpiPackage.cmake) into $(BUILD)/packages
package: build
	@cd $(BUILD) && cpack >cpack.log 2>&1 || { tail -20 cpack.log; exit 1; }
	@ls $(BUILD)/packages/*.deb

format:
	@clang-format -i include/dcpi/*.h core/*/*.[ch] trace/*.[ch] tools/*.c vprofilers/*.c samples/*.c \
		tests/*.[ch] agent/*.c tests/plugins/*.[ch] tests/fuzz/*.[ch] bench/*.c

clean:
	@rm -rf $(BUILD) $(BUILD)-asan
