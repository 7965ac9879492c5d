# dcpi - the two commands of the quick start, and a few helpers.
#   make demo   install what is missing, build, profile samples/work-demo, print dcpiprof
#   make test   install what is missing, build, run the whole test suite (ctest, in parallel),
#               then again under ASan+UBSan (build-asan), then print the ten slowest tests
#   make test-stress  the soak tests once (e2e_fuzz_regress, e2e_reliab_kill with 100 kills),
#               then the timing-sensitive tests STRESS_REPS times under a competing CPU load
#               (stress-ng) and at a second sampling rate, with a flake table (tests/stress.sh;
#               STRESS_SOAK=0 leaves the soak tests out)
#   make package  Debian packages dcpi and dcpi-dev in build/packages (man pages included)
#   make fuzz   libFuzzer harnesses (clang) for FUZZ_SECONDS each; make test-asan: suite under ASan+UBSan
BUILD   ?= build
JOBS    ?= $(shell nproc)
# ctest runs twice as many tests as there are CPUs: many e2e tests wait (daemons starting and
# flushing, servers, timeouts) more than they compute, and every statistical test guarantees its
# own sample count whatever the load (make test-stress proves it under a competing load)
TEST_JOBS ?= $(shell echo $$(( $$(nproc) * 2 )))
CMAKE_FLAGS ?=
# gold for make test's trees (CMakeLists.txt DCPI_FAST_LINK); what make builds to install is linked by ld.bfd
FAST_LINK ?= OFF
# Debian packages (tools/install-deps.sh installs the missing ones as root; as another user it
# prints the apt-get line, and stops only when a required one is missing):
#   BUILD_PKGS  what building needs: make, make demo, make install, make package, make fuzz
#               (libcurl4-openssl-dev: the fleet code, core/fleet, is always built;
#               libsystemd-dev: dcpid's sd_notify under dcpid.service)
#   OPT_PKGS    what building uses when present (cmake says what is off without them):
#               libbpf-dev + clang (the BPF program of the bp backend's memory values),
#               libdebuginfod-dev (the header's names; libdebuginfod.so.1 is dlopen'd when used)
#   MAN_PKGS    pandoc: man pages from docs/*.md at build time; optional for make install,
#               required by make package (the dcpi package ships them)
#   TEST_PKGS   what the tests add (make test, test-asan, test-stress): check (the Check
#               suites), the peers the tests compare with (linux-perf, google-perftools, golang-go's
#               pprof, binutils' gprof, debuginfod, chromium for the report), python3 (drives
#               chromium over its DevTools pipe), graphviz, libclang-rt-14-dev (libFuzzer),
#               xz-utils, man-db, clang-format (e2e_format),
#               clickhouse-server and -client (the fleet store; openssl makes the TLS test's
#               certificate), nodejs (e2e_jit_node: node's
#               perf map against perf), llvm (llvm-profdata: e2e_export_llvm reads dcpiexport's
#               LLVM sample profiles with it before clang takes them); all of the above required
BUILD_PKGS = build-essential cmake pkg-config libzydis-dev libelf-dev libdw-dev libffi-dev \
             protobuf-c-compiler libprotobuf-c-dev zlib1g-dev libcurl4-openssl-dev libsystemd-dev \
             libmicrohttpd-dev
OPT_PKGS   = libbpf-dev clang libdebuginfod-dev
MAN_PKGS   = pandoc
TEST_PKGS  = check linux-perf google-perftools binutils libclang-rt-14-dev golang-go \
             libdebuginfod1 debuginfod graphviz xz-utils chromium python3 man-db clang-format \
             clickhouse-server clickhouse-client openssl nodejs llvm

# what `deps` installs (REQUIRED -- OPTIONAL); targets that need more set their own, which their
# prerequisites (deps, build) inherit
DEPS = $(BUILD_PKGS) -- $(OPT_PKGS)
# tests are built when Check is installed (DCPI_BUILD_TESTS=AUTO); make test requires them
CMAKE_TESTS =

.PHONY: all deps build demo test test-deps test-asan asan-build asan-run test-stress fuzz install package clean format

all: build

deps:
	@sh tools/install-deps.sh $(DEPS)

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_TESTS) -DDCPI_FAST_LINK=$(FAST_LINK) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# quiet: the build's output goes to $(BUILD)/build.log (its error lines, else its end, shown on failure)
demo: deps
	@mkdir -p $(BUILD)
	@echo "dcpi: building in $(BUILD)/ (log: $(BUILD)/build.log)"
	@{ cmake -S . -B $(BUILD) $(CMAKE_FLAGS) && cmake --build $(BUILD) -j $(JOBS); } \
		>$(BUILD)/build.log 2>&1 || { grep -m 10 -A 3 -E ': error|CMake Error|Error [0-9]' \
		$(BUILD)/build.log || tail -20 $(BUILD)/build.log; \
		echo "dcpi: the build failed; its whole log: $(BUILD)/build.log" >&2; exit 1; }
	@sh samples/demo.sh $(BUILD)

# The whole suite twice: a normal build, then under AddressSanitizer + UndefinedBehaviorSanitizer
# (LeakSanitizer on). Tests labelled "once" run in the first pass only (see tests/CMakeLists.txt:
# what a sanitizer adds nothing to), "soak" ones only in make test-stress. The sanitizer pass is
# quick (DCPI_TEST_QUICK=1, tests/e2e/lib/stats.sh): the statistical tests ask a quarter of their
# sample counts there, with tolerances from the counts; the first pass checks them at full power.
# The sanitizer build is made while the first pass runs (niced: the first pass's tests wait on
# daemons and servers more than they compute, and every statistical test guarantees its own
# sample count under load). Both passes run even when the first fails; the slowest ten tests are
# printed at the end.
test: DEPS = $(BUILD_PKGS) $(OPT_PKGS) $(MAN_PKGS) $(TEST_PKGS)
test: CMAKE_TESTS = -DDCPI_BUILD_TESTS=ON
test: FAST_LINK = ON
test: build
	@rc=0; nice -n 10 $(MAKE) --no-print-directory asan-build & apid=$$!; \
	(cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS) -LE soak) || rc=1; \
	if wait $$apid; then $(MAKE) --no-print-directory asan-run || rc=1; else rc=1; fi; \
	sh tests/slowest.sh $(BUILD) $(BUILD)-asan; exit $$rc

test-deps: DEPS = $(BUILD_PKGS) $(OPT_PKGS) $(MAN_PKGS) $(TEST_PKGS)
test-deps: deps

test-asan: DEPS = $(BUILD_PKGS) $(OPT_PKGS) $(MAN_PKGS) $(TEST_PKGS)
test-asan: deps
	@$(MAKE) --no-print-directory asan-build
	@$(MAKE) --no-print-directory asan-run

# (the two halves of test-asan; they install nothing: make test and test-asan have done it)
# The sanitizer tree is built at -O1 with line tables only (-g1: enough for ASan's reports): 60
# CPU-s where RelWithDebInfo's -O2 -g took 90, and its tests ran no slower (bench/RESULTS.md)
ASAN_FLAGS = -DCMAKE_BUILD_TYPE=None -DCMAKE_C_FLAGS='-O1 -g1' -DCMAKE_CXX_FLAGS='-O1 -g1' -DDCPI_MAN=OFF
asan-build:
	@cmake -S . -B $(BUILD)-asan -DDCPI_SANITIZE=ON -DDCPI_BUILD_TESTS=ON -DDCPI_FAST_LINK=ON $(ASAN_FLAGS) >/dev/null
	@cmake --build $(BUILD)-asan -j $(JOBS) >$(BUILD)-asan.log 2>&1 || \
		{ tail -40 $(BUILD)-asan.log; echo "make test: the ASan build failed ($(BUILD)-asan.log)" >&2; exit 1; }
asan-run:
	@cd $(BUILD)-asan && DCPI_TEST_QUICK=1 ctest --output-on-failure -j $(TEST_JOBS) -LE 'once|soak'

STRESS_REPS ?= 20
test-stress: DEPS = $(BUILD_PKGS) $(OPT_PKGS) $(MAN_PKGS) $(TEST_PKGS) stress-ng
test-stress: CMAKE_TESTS = -DDCPI_BUILD_TESTS=ON
test-stress: FAST_LINK = ON
test-stress: build
	@bash tests/stress.sh $(BUILD) $(STRESS_REPS)

FUZZ_SECONDS ?= 60
FUZZ_TARGETS = $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
fuzz: DEPS = $(BUILD_PKGS) clang libclang-rt-14-dev -- $(OPT_PKGS)
fuzz: deps
	@cmake -S . -B $(BUILD)-fuzz -DDCPI_FUZZ=ON -DCMAKE_C_COMPILER=clang \
		-DCMAKE_CXX_COMPILER=clang++ -DDCPI_BUILD_TESTS=OFF >/dev/null
	@cmake --build $(BUILD)-fuzz -j $(JOBS) --target $(FUZZ_TARGETS)
	@tests/fuzz/run.sh $(BUILD)-fuzz $(FUZZ_SECONDS)

install: DEPS = $(BUILD_PKGS) -- $(OPT_PKGS) $(MAN_PKGS)
install: build
	@cmake --install $(BUILD)

# Debian packages dcpi and dcpi-dev (CPack, cmake/DcpiPackage.cmake) into $(BUILD)/packages
package: DEPS = $(BUILD_PKGS) $(MAN_PKGS) -- $(OPT_PKGS)
package: build
	@cd $(BUILD) && cpack >cpack.log 2>&1 || { tail -20 cpack.log; exit 1; }
	@ls $(BUILD)/packages/*.deb

format:
	@clang-format -i include/dcpi/*.h core/*/*.[ch] trace/*.[ch] tools/*.c vprofilers/*.c samples/*.c \
		tests/*.[ch] agent/*.c tests/plugins/*.[ch] tests/fuzz/*.[ch] bench/*.c web/*.[ch]

clean:
	@rm -rf $(BUILD) $(BUILD)-asan
