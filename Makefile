# SPDX-License-Identifier: MIT
#
# npu: kernel driver, emulated device and runtime.
#
#   make            build everything (module, npu-fwsim, libnpurt, tools, tests)
#   make setup      install missing Debian packages (idempotent)
#   make run        set up, build, boot the VM with the emulated NPU, run the demo
#   make check      every test, host and VM; ends with "N passed, N failed"
#   make bench      benchmarks, as ratios measured side by side
#   make install    libnpurt and libnpuonnx (headers, pkg-config files) and tools into PREFIX
#   make modules_install   npu.ko into /lib/modules of the KDIR kernel
#   make dkms-install      npu.ko under DKMS: rebuilt on every kernel upgrade
#
# Variables: KDIR (kernel build tree), O (build dir), CC, CFLAGS, PREFIX, LIBDIR,
# KERNEL (the VM's kernel series: 6.1, the host's, or 6.12, Debian 13's).

O      ?= build
KDIR   ?= $(shell KERNEL= KVER= tests/vm/find-kernel kdir 2>/dev/null)
CC     ?= cc
CFLAGS ?= -O2 -g
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib

# One source of truth: the header's NPURT_VERSION_MAJOR/MINOR/PATCH.
NPURT_VERSION := $(shell sed -n 's/^\#define NPURT_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' userspace/include/npurt.h | paste -sd.)
# A shared library's file is named for its soname, then the release's minor
# and patch (libnpurt.so.2.7.0); the soname changes when its ABI breaks.
NPURT_SOVER   := 2
NPUONNX_SOVER := 1
SO_MINOR_PATCH := $(subst $() ,.,$(wordlist 2,3,$(subst ., ,$(NPURT_VERSION))))

WARN       := -Wall -Wextra -Werror
DEPFLAGS   := -MMD -MP
DRM_CFLAGS := $(shell pkg-config --cflags libdrm 2>/dev/null || echo -I/usr/include/libdrm)
DRM_LIBS   := $(shell pkg-config --libs libdrm 2>/dev/null || echo -ldrm)
URING_CFLAGS := $(shell pkg-config --cflags liburing 2>/dev/null)
URING_LIBS   := $(shell pkg-config --libs liburing 2>/dev/null || echo -luring)
KSFT       := $(O)/kselftest
# The GEMM benchmark compares against OpenBLAS (Debian: libopenblas-dev).
BLAS_CFLAGS := $(shell pkg-config --cflags openblas 2>/dev/null)
BLAS_LIBS   := $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas)

obj = $(patsubst %.c,$(O)/obj/%.o,$(1))

FWSIM_CORE := firmware-sim/npu_dev.c firmware-sim/npu_engine.c firmware-sim/npu_dma.c firmware-sim/npu_mmu.c \
	firmware-sim/npu_ops.c firmware-sim/npu_matmul.c firmware-sim/npu_window.c firmware-sim/npu_gemm.c firmware-sim/npu_cores.c \
	firmware-sim/npu_list.c firmware-sim/npu_inplace.c firmware-sim/npu_tlb.c firmware-sim/npu_vmath.c firmware-sim/npu_widen.c \
	firmware-sim/ivshmem_server.c
# libmvec (glibc's vector math, in libc6) before libm: npu_vmath.c.
FWSIM_LIBS := -lpthread -lmvec -lm
FWSIM_SRCS := $(FWSIM_CORE) firmware-sim/fwsim.c firmware-sim/main.c
# The op library's published interface (firmware-sim/oplib/README.rst): the
# one part of the device userspace reads.
OPLIB_INC  := -Ifirmware-sim/oplib
# userspace/ by layer, each calling only the ones before it (userspace/README.rst):
# libnpurt holds the runtime and models, libnpuonnx the ONNX importer.
US_LAYERS  := runtime model onnx
LIB_SRCS   := $(sort $(foreach l,$(US_LAYERS),$(wildcard userspace/$(l)/*.c)))
NPURT_SRCS := $(sort $(wildcard userspace/runtime/*.c userspace/model/*.c))
ONNX_SRCS  := $(sort $(wildcard userspace/onnx/*.c))
US_INC     := $(foreach l,$(US_LAYERS),-Iuserspace/$(l))
# A layer's objects see its own headers and the layers' below, nothing above.
LAYER_INC_runtime := -Iuserspace/runtime
LAYER_INC_model   := -Iuserspace/model $(LAYER_INC_runtime)
LAYER_INC_onnx    := -Iuserspace/onnx -I$(O)/gen $(PBC_CFLAGS) $(LAYER_INC_model)
# The ONNX importer reads models with protobuf-c, from C generated at build
# time out of Debian's onnx.proto (libonnx-dev), never kept in the tree.
ONNX_PROTO ?= /usr/include/onnx/onnx.proto
ONNX_GEN   := $(O)/gen/onnx.pb-c.c
PBC_CFLAGS := $(shell pkg-config --cflags libprotobuf-c 2>/dev/null)
PBC_LIBS   := $(shell pkg-config --libs libprotobuf-c 2>/dev/null || echo -lprotobuf-c)
LIB_OBJS    = $(call obj,$(NPURT_SRCS))
ONNX_OBJS   = $(call obj,$(ONNX_SRCS)) $(O)/obj/gen/onnx.pb-c.o
# What a program linking libnpurt statically links besides.
LIB_DEPS    = $(DRM_LIBS) $(URING_LIBS)
TOOLS      := $(patsubst userspace/tools/%.c,$(O)/bin/%,$(wildcard userspace/tools/*.c))
EXAMPLES   := $(patsubst Documentation/examples/%.c,$(O)/examples/%,$(wildcard Documentation/examples/*.c))
UNIT       := $(patsubst tests/unit/%.c,$(O)/tests/unit/%,$(wildcard tests/unit/*.c))
SELFTESTS  := $(patsubst tests/selftests/%.c,$(O)/tests/selftests/%,$(wildcard tests/selftests/*.c))
BENCH      := $(patsubst tests/bench/%.c,$(O)/tests/bench/%,$(wildcard tests/bench/*.c))
HOST_BENCH := $(patsubst tests/bench/host/%.c,$(O)/tests/bench-host/%,$(wildcard tests/bench/host/*.c))
FUZZ_SRCS  := $(sort $(filter-out tests/fuzz/model_fuzz.c tests/fuzz/onnx_fuzz.c,$(wildcard tests/fuzz/*.c)))
# The model file reader under libFuzzer (clang, with ASan and UBSan).
MODEL_FUZZ := $(if $(shell command -v clang 2>/dev/null),$(O)/tests/fuzz/model_fuzz $(O)/tests/fuzz/onnx_fuzz)
FUZZ       := $(if $(FUZZ_SRCS),$(O)/tests/fuzz/npu-fuzz)

LIBSO      := $(O)/lib/libnpurt.so.$(NPURT_SOVER).$(SO_MINOR_PATCH)
LIBA       := $(O)/lib/libnpurt.a
ONNXSO     := $(O)/lib/libnpuonnx.so.$(NPUONNX_SOVER).$(SO_MINOR_PATCH)
ONNXA      := $(O)/lib/libnpuonnx.a
# What a program importing ONNX links statically before libnpurt: the
# importer and its parser (LINK_ONNX, set per target).
ONNX_LINK  := $(ONNXA) $(PBC_LIBS)

all: module userspace tests man

# Man pages of the tools, from one source each: Documentation/man/*.rst.
MANPAGES := $(patsubst Documentation/man/%.rst,$(O)/man/%.1,$(wildcard Documentation/man/*.rst))
man: $(MANPAGES)
$(O)/man/%.1: Documentation/man/%.rst
	@mkdir -p $(@D)
	rst2man --strict $< $@

# ---- kernel module ------------------------------------------------------
module:
	$(MAKE) -C kernel KDIR=$(KDIR)

# ---- firmware-sim, libnpurt, tools ---------------------------------------
userspace: $(O)/bin/npu-fwsim $(LIBSO) $(LIBA) $(ONNXSO) $(ONNXA) $(TOOLS)

# The op library is the device's compute: it gets the vectoriser whatever
# CFLAGS say (-O3 keeps IEEE semantics; -std=c11 keeps FP contraction off,
# so results do not depend on it).
FWSIM_OPT_npu_ops := -O3
FWSIM_OPT_npu_gemm := -O3
FWSIM_OPT_npu_window := -O3
FWSIM_OPT_npu_vmath := -O3
FWSIM_OPT_npu_widen := -O3

$(O)/obj/firmware-sim/%.o: firmware-sim/%.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(DEPFLAGS) $(CFLAGS) $(FWSIM_OPT_$*) -Ikernel -Iuapi $(OPLIB_INC) \
		$(DRM_CFLAGS) -c $< -o $@

$(O)/bin/npu-fwsim: $(call obj,$(FWSIM_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(FWSIM_LIBS) -o $@

$(ONNX_GEN): $(ONNX_PROTO)
	@mkdir -p $(@D)
	cd $(dir $(ONNX_PROTO)) && protoc-c --c_out=$(abspath $(@D)) $(notdir $(ONNX_PROTO))

$(O)/obj/gen/onnx.pb-c.o: $(ONNX_GEN)
	@mkdir -p $(@D)
	$(CC) -std=c11 $(WARN) $(CFLAGS) -fPIC -fvisibility=hidden $(PBC_CFLAGS) -I$(O)/gen -c $< -o $@

# One set of PIC objects serves both the shared and the static library.
$(call obj,$(LIB_SRCS)): $(O)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(DEPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden \
		-Iuserspace/include $(LAYER_INC_$(word 2,$(subst /, ,$<))) -Iuapi $(OPLIB_INC) \
		$(DRM_CFLAGS) $(URING_CFLAGS) -c $< -o $@
$(call obj,$(wildcard userspace/onnx/*.c)): | $(ONNX_GEN)

# The version scripts say what each library exports, and under which
# version (tests/install-check holds the built libraries to them).
$(LIBSO): $(LIB_OBJS) userspace/libnpurt.map
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libnpurt.so.$(NPURT_SOVER) \
		-Wl,--version-script=userspace/libnpurt.map -Wl,--no-undefined \
		$(filter %.o,$^) $(LIB_DEPS) -lm -o $@
	ln -sf $(@F) $(O)/lib/libnpurt.so.$(NPURT_SOVER)
	ln -sf libnpurt.so.$(NPURT_SOVER) $(O)/lib/libnpurt.so

$(ONNXSO): $(ONNX_OBJS) userspace/libnpuonnx.map $(LIBSO)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libnpuonnx.so.$(NPUONNX_SOVER) \
		-Wl,--version-script=userspace/libnpuonnx.map -Wl,--no-undefined \
		$(filter %.o,$^) -L$(O)/lib -lnpurt $(PBC_LIBS) -lm -o $@
	ln -sf $(@F) $(O)/lib/libnpuonnx.so.$(NPUONNX_SOVER)
	ln -sf libnpuonnx.so.$(NPUONNX_SOVER) $(O)/lib/libnpuonnx.so

$(LIBA): $(LIB_OBJS)
$(ONNXA): $(ONNX_OBJS)
$(LIBA) $(ONNXA):
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

# Tools may make raw ioctls on npurt_device_fd(), as applications may.
$(O)/obj/userspace/tools/%.o: userspace/tools/%.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(DEPFLAGS) $(CFLAGS) -Iuserspace/include -Iuapi \
		$(TOOL_CFLAGS) $(DRM_CFLAGS) -c $< -o $@

# A tool grown past one file keeps the rest in a directory of its name.
$(O)/bin/npu-smi: $(call obj,$(wildcard userspace/tools/npu-smi/*.c))
# npurun's host reference reads model files with the library's own reader.
$(O)/bin/npurun: $(call obj,$(wildcard userspace/tools/npurun/*.c))
$(O)/obj/userspace/tools/npurun/%.o: TOOL_CFLAGS := -Iuserspace/model -Iuserspace/runtime $(OPLIB_INC)
$(O)/obj/userspace/tools/npurun.o: TOOL_CFLAGS := -Iuserspace/tools/npurun

# Tools link the libraries statically: they run from the build tree unchanged.
$(O)/bin/npu-onnx $(O)/bin/npurun: $(ONNXA)
$(O)/bin/npu-onnx $(O)/bin/npurun: LINK_ONNX = $(ONNX_LINK)
$(O)/bin/%: $(O)/obj/userspace/tools/%.o $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) $(LINK_ONNX) $(LIBA) $(LIB_DEPS) -lm -o $@

# The documentation's examples build as an application would: the public
# header and the library, nothing else. tests/selftests/run runs them.
$(O)/examples/%: Documentation/examples/%.c $(LIBA)
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -Iuserspace/include $< $(LIBA) \
		$(LIB_DEPS) -lpthread -lm -o $@

# ---- tests ---------------------------------------------------------------
# kselftest_harness.h is extracted from Debian's linux-source, never copied in.
$(KSFT)/kselftest_harness.h:
	tests/setup kselftest $(KSFT)

# The kernel's harness header is not -Wextra clean (the kernel builds its
# selftests with -Wall): tests drop the warnings it trips.
TEST_CFLAGS := -std=gnu11 -D_GNU_SOURCE $(WARN) -Wno-unused-parameter -Wno-sign-compare -Wno-clobbered \
	$(DEPFLAGS) $(CFLAGS) -I$(KSFT) \
	-Ikernel -Ifirmware-sim $(OPLIB_INC) -Iuserspace/include -Iuapi -Itests/selftests $(DRM_CFLAGS) \
	$(BLAS_CFLAGS)

$(O)/obj/tests/%.o: tests/%.c $(KSFT)/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -c $< -o $@

$(O)/tests/unit/%: $(O)/obj/tests/unit/%.o $(call obj,$(FWSIM_CORE)) $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LIB_DEPS) $(FWSIM_LIBS) -o $@

# The caching allocator's and the range table's tests drive their logic
# through the library's internal headers, and run once more under ASan
# and UBSan.
$(O)/obj/tests/unit/npurt_cache_test.o $(O)/obj/tests/unit/npurt_ranges_test.o \
$(O)/obj/tests/unit/npurt_model_file_test.o: \
	TEST_CFLAGS += $(US_INC)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
UNIT_SAN  := $(O)/tests/unit-san/npurt_cache_test $(O)/tests/unit-san/npurt_ranges_test \
	$(O)/tests/unit-san/npurt_model_file_test

$(O)/tests/unit-san/npurt_cache_test: tests/unit/npurt_cache_test.c userspace/runtime/mem_cache.c \
		userspace/runtime/mem_cache.h $(KSFT)/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(filter-out $(DEPFLAGS),$(TEST_CFLAGS)) -Iuserspace/runtime $(SAN_FLAGS) \
		$(filter %.c,$^) -lpthread -o $@

$(O)/tests/unit-san/npurt_ranges_test: tests/unit/npurt_ranges_test.c userspace/runtime/mem_ranges.c \
		userspace/runtime/mem_ranges.h $(KSFT)/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(filter-out $(DEPFLAGS),$(TEST_CFLAGS)) -Iuserspace/runtime $(SAN_FLAGS) \
		$(filter %.c,$^) -lpthread -o $@

# The model file's reader, planner and builder: no device, so all of it.
MODEL_FILE_SRCS := userspace/model/model_file.c userspace/model/plan.c userspace/model/graph.c \
	userspace/runtime/error.c userspace/runtime/oplib.c
$(O)/tests/unit-san/npurt_model_file_test: tests/unit/npurt_model_file_test.c $(MODEL_FILE_SRCS) \
		userspace/model/model_file.h userspace/model/model_format.h $(KSFT)/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(filter-out $(DEPFLAGS),$(TEST_CFLAGS)) $(US_INC) $(SAN_FLAGS) \
		$(filter %.c,$^) -lpthread -o $@

$(O)/tests/selftests/npurt_onnx_test: $(ONNXA)
$(O)/tests/selftests/npurt_onnx_test: LINK_ONNX = $(ONNX_LINK)
$(O)/tests/selftests/%: $(O)/obj/tests/selftests/%.o $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) $(LINK_ONNX) $(LIBA) $(LIB_DEPS) -lpthread -lm -o $@

$(O)/tests/bench/%: $(O)/obj/tests/bench/%.o $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LIB_DEPS) $(BLAS_LIBS) -lpthread -lm -o $@

# Benchmarks of the device core alone, run on the host.
$(O)/tests/bench-host/%: $(O)/obj/tests/bench/host/%.o $(call obj,$(FWSIM_CORE))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(BLAS_LIBS) $(FWSIM_LIBS) -o $@

# The uapi fuzzer (run in the VM by tests/selftests/run): no harness, full warnings.
$(O)/obj/tests/fuzz/%.o: tests/fuzz/%.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) $(DEPFLAGS) $(CFLAGS) -Iuapi -Ifirmware-sim $(OPLIB_INC) $(DRM_CFLAGS) \
		$(URING_CFLAGS) -c $< -o $@

$(O)/tests/fuzz/model_fuzz: tests/fuzz/model_fuzz.c userspace/model/model_file.c userspace/model/plan.c \
		userspace/model/model_file.h userspace/model/model_format.h
	@mkdir -p $(@D)
	clang -std=gnu11 -D_GNU_SOURCE $(WARN) -O1 -g -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all $(US_INC) $(OPLIB_INC) -Iuapi \
		$(filter %.c,$^) -o $@

# The ONNX importer with what it needs of the library: no device code.
ONNX_FUZZ_SRCS := $(wildcard userspace/onnx/onnx_*.c) $(MODEL_FILE_SRCS)
$(O)/tests/fuzz/onnx_fuzz: tests/fuzz/onnx_fuzz.c $(ONNX_FUZZ_SRCS) $(ONNX_GEN) userspace/onnx/onnx.h
	@mkdir -p $(@D)
	clang -std=gnu11 -D_GNU_SOURCE $(WARN) -O1 -g -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -Iuserspace/include $(US_INC) $(OPLIB_INC) -Iuapi \
		-I$(O)/gen $(PBC_CFLAGS) $(DRM_CFLAGS) $(filter %.c,$^) $(LIB_DEPS) $(PBC_LIBS) -lm -o $@

$(O)/tests/fuzz/npu-fuzz: $(call obj,$(FUZZ_SRCS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(URING_LIBS) -o $@

# The ONNX backend node tests on the device: run in the VM with the selftests.
ONNX_CONF := $(O)/tests/selftests/onnx_conformance
$(ONNX_CONF): tests/onnx/conformance.c $(ONNXA) $(LIBA) $(ONNX_GEN)
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -Iuserspace/include $(OPLIB_INC) -I$(O)/gen \
		$(PBC_CFLAGS) $< $(ONNX_LINK) $(LIBA) $(LIB_DEPS) -lpthread -lm -o $@

# Real models as ONNX files (Debian's python3-onnx; the system python3).
ONNX_MODELS := $(O)/onnx-models/mlp.onnx
$(ONNX_MODELS): tests/onnx/make_models.py
	/usr/bin/python3 $< $(@D)

tests: $(UNIT) $(UNIT_SAN) $(SELFTESTS) $(BENCH) $(HOST_BENCH) $(FUZZ) $(MODEL_FUZZ) $(EXAMPLES) \
	$(ONNX_CONF) $(ONNX_MODELS)

# ---- entry points --------------------------------------------------------
setup:
	tests/setup packages

# Debian 13's kernel in a root of its own (tests/setup kernel-root), and a
# clean Debian 12 root the packages install into (package-root); a machine
# that cannot fetch them runs the rest, and check says what it skipped.
setup-kernels: setup
	tests/setup kernel-root || echo "setup: no Debian 13 kernel root: its VM suite is skipped"
	tests/setup package-root || echo "setup: no Debian 12 root: the package install test is skipped"

check: setup-kernels
	$(MAKE) all
	tests/check

# The VM suite on a debug kernel (KASAN, lockdep, kmemleak...), built once
# into $(O)/debug-kernel from Debian's linux-source (see tests/vm/check-debug).
check-debug: setup
	$(MAKE) userspace tests
	O=$(O) tests/vm/check-debug

.PHONY: check-debug

# Mutation testing: the small bugs of tests/mutate/mutants, one at a time in
# a scratch copy of the tree (built there), each against the suites it
# names; prints the score and the survivors (Documentation/testing.rst).
# MUTATE_ARGS passes options, e.g. MUTATE_ARGS='--only kernel/npu_sync.c'.
mutate: setup $(KSFT)/kselftest_harness.h
	O=$(O) tests/mutate/run $(MUTATE_ARGS)

.PHONY: mutate

# KERNEL=6.12 boots Debian 13's kernel instead of the host's (make run,
# make bench; make check runs both): npu.ko is built for it in its root.
VM_KO = $(if $(KERNEL),$(O)/kernel-$(KERNEL)/npu.ko,kernel/npu.ko)
vm-module: $(if $(KERNEL),setup-kernels)
	$(if $(KERNEL),KERNEL=$(KERNEL) tests/vm/build-module $(O)/kernel-$(KERNEL))

run: setup
	$(MAKE) all vm-module
	tests/vm/run --module $(VM_KO) -- tests/vm/demo

# OpenBLAS picks its kernels by CPU model, and 0.3.21 takes CPUs it does
# not know (a Zen 4 VM) for a Prescott (SSE3): the anchor gets the widest
# kernels the CPU's flags allow instead (unless OPENBLAS_CORETYPE is set).
BLAS_CORE := $(shell grep -qw avx512f /proc/cpuinfo && echo SkylakeX || \
	(grep -qw avx2 /proc/cpuinfo && echo Haswell))
BENCH_ENV := $(if $(BLAS_CORE),OPENBLAS_CORETYPE=$${OPENBLAS_CORETYPE:-$(BLAS_CORE)})

bench: setup
	$(MAKE) all vm-module
	@mkdir -p $(O)/vm
	@for b in $(HOST_BENCH); do echo "== $$(basename $$b) (host)"; $(BENCH_ENV) $$b || exit 1; done
	$(BENCH_ENV) $(O)/tests/bench/gemm_bench --blas-only 1 2 >$(O)/vm/host-blas.txt
	@: >$(O)/vm/host-ort.txt; if tests/setup ort $(O)/ort; then \
		for m in mlp resnet_mini transformer17; do \
			NODE_PATH=$(CURDIR)/$(O)/ort/node_modules node tests/bench/onnx/ort_bench.js \
				$(O)/onnx-models/$$m.onnx $(O)/onnx-models/$$m.in 100 \
				>>$(O)/vm/host-ort.txt || exit 1; \
		done; fi
	@rc=0; NPU_BENCH_HOST_BLAS=$(CURDIR)/$(O)/vm/host-blas.txt \
		NPU_BENCH_HOST_ORT=$(CURDIR)/$(O)/vm/host-ort.txt \
		tests/vm/run --quiet --cores 2 --module $(VM_KO) --out $(O)/vm/bench -- tests/bench/run $(O) || rc=$$?; \
		cat $(O)/vm/bench/output.log; [ $$rc = 0 ] || exit $$rc; \
		echo "== gemm_bench, both cores in one group"; \
		NPU_BENCH_HOST_BLAS=$(CURDIR)/$(O)/vm/host-blas.txt \
		tests/vm/run --quiet --cores 2 --core-groups 1 --module $(VM_KO) --out $(O)/vm/bench-gemm \
			-- env OPENBLAS_CORETYPE=Prescott $(O)/tests/bench/gemm_bench || rc=$$?; \
		cat $(O)/vm/bench-gemm/output.log; exit $$rc

install: userspace man
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 userspace/include/npurt.h userspace/include/npuonnx.h $(DESTDIR)$(PREFIX)/include/
	install -d $(DESTDIR)$(PREFIX)/include/drm
	install -m 644 uapi/drm/npu_accel.h $(DESTDIR)$(PREFIX)/include/drm/
	install -m 755 $(LIBSO) $(ONNXSO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIBSO)) $(DESTDIR)$(LIBDIR)/libnpurt.so.$(NPURT_SOVER)
	ln -sf libnpurt.so.$(NPURT_SOVER) $(DESTDIR)$(LIBDIR)/libnpurt.so
	ln -sf $(notdir $(ONNXSO)) $(DESTDIR)$(LIBDIR)/libnpuonnx.so.$(NPUONNX_SOVER)
	ln -sf libnpuonnx.so.$(NPUONNX_SOVER) $(DESTDIR)$(LIBDIR)/libnpuonnx.so
	install -m 644 $(LIBA) $(ONNXA) $(DESTDIR)$(LIBDIR)/
	for pc in npurt npuonnx; do \
		sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@VERSION@|$(NPURT_VERSION)|' \
			userspace/$$pc.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/$$pc.pc || exit 1; \
	done
	install -m 755 $(TOOLS) $(O)/bin/npu-fwsim $(DESTDIR)$(PREFIX)/bin/
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 $(MANPAGES) $(DESTDIR)$(PREFIX)/share/man/man1/

modules_install:
	$(MAKE) -C kernel modules_install KDIR=$(KDIR)

# The module's sources as DKMS wants them, in $(DESTDIR)/usr/src/npu-VERSION
# (the npu-dkms package ships this tree); dkms-install then has DKMS build
# and install npu.ko for KVER (default: every kernel with headers) and
# rebuild it on each kernel upgrade.
DKMS_SRC = $(DESTDIR)/usr/src/npu-$(NPURT_VERSION)
KERNEL_SRCS = $(filter-out kernel/npu.mod.c,$(wildcard kernel/npu_*.c)) \
	$(filter-out kernel/npu_config.h,$(wildcard kernel/npu_*.h))
dkms-src:
	install -d $(DKMS_SRC)/kernel/probes $(DKMS_SRC)/kernel/scripts $(DKMS_SRC)/uapi/drm
	install -m 644 $(KERNEL_SRCS) kernel/Kbuild kernel/Makefile $(DKMS_SRC)/kernel/
	install -m 644 kernel/probes/*.c $(DKMS_SRC)/kernel/probes/
	install -m 755 kernel/scripts/probe.sh $(DKMS_SRC)/kernel/scripts/
	install -m 644 uapi/drm/npu_accel.h $(DKMS_SRC)/uapi/drm/
	sed 's/@VERSION@/$(NPURT_VERSION)/' kernel/dkms.conf.in >$(DKMS_SRC)/dkms.conf

dkms-install: dkms-src
	dkms add -m npu -v $(NPURT_VERSION)
	dkms install -m npu -v $(NPURT_VERSION) $(if $(KVER),-k $(KVER),--all)

dkms-uninstall:
	dkms remove -m npu -v $(NPURT_VERSION) --all
	rm -rf $(DKMS_SRC)

clean:
	-$(MAKE) -C kernel clean KDIR=$(KDIR)
	rm -rf $(O)

.PHONY: all man module userspace tests setup setup-kernels vm-module check run bench install modules_install \
	dkms-src dkms-install dkms-uninstall clean
.SECONDARY:

-include $(shell find $(O)/obj -name '*.d' 2>/dev/null)
