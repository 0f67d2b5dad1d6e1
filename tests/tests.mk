# SPDX-License-Identifier: MIT
# tests/: unit tests, kselftests, fuzzers, benchmarks, and the runs of
# check-debug, mutate and bench (included last by the top Makefile; the
# suites themselves run from tests/check, Documentation/testing.rst).

UNIT       := $(patsubst tests/unit/%.c,$(O)/tests/unit/%,$(wildcard tests/unit/*.c))
SELFTESTS  := $(patsubst tests/selftests/%.c,$(O)/tests/selftests/%,$(wildcard tests/selftests/*.c))
BENCH      := $(patsubst tests/bench/%.c,$(O)/tests/bench/%,$(wildcard tests/bench/*.c))
HOST_BENCH := $(patsubst tests/bench/host/%.c,$(O)/tests/bench-host/%,$(wildcard tests/bench/host/*.c))
FUZZ_SRCS  := $(sort $(filter-out tests/fuzz/model_fuzz.c tests/fuzz/onnx_fuzz.c,$(wildcard tests/fuzz/*.c)))
# The model file reader under libFuzzer (clang, with ASan and UBSan).
MODEL_FUZZ := $(if $(shell command -v clang 2>/dev/null),$(O)/tests/fuzz/model_fuzz $(O)/tests/fuzz/onnx_fuzz)
FUZZ       := $(if $(FUZZ_SRCS),$(O)/tests/fuzz/npu-fuzz)
# The GEMM benchmark compares against OpenBLAS (Debian: libopenblas-dev).
BLAS_CFLAGS := $(shell pkg-config --cflags openblas 2>/dev/null)
BLAS_LIBS   := $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas)
KSFT        := $(O)/kselftest
# The libraries' internal headers, for the tests that drive their logic.
US_INC      := -Iuserspace/runtime -Iuserspace/model -Iuserspace/exec -Iuserspace/onnx

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

$(O)/tests/unit/%: $(O)/obj/tests/unit/%.o $(call obj,$(FWSIM_CORE)) $(LIBA_ALL)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LIB_DEPS) $(FWSIM_LIBS) -o $@

# The caching allocator's and the range table's tests drive their logic
# through the library's internal headers, and run once more under ASan
# and UBSan.
$(O)/obj/tests/unit/npurt_cache_test.o $(O)/obj/tests/unit/npurt_ranges_test.o \
$(O)/obj/tests/unit/npurt_model_file_test.o $(O)/obj/tests/unit/npurt_exec_test.o \
$(O)/obj/tests/unit/npurt_handle_test.o: \
	TEST_CFLAGS += $(US_INC)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
UNIT_SAN  := $(O)/tests/unit-san/npurt_cache_test $(O)/tests/unit-san/npurt_ranges_test \
	$(O)/tests/unit-san/npurt_model_file_test $(O)/tests/unit-san/npurt_exec_test \
	$(O)/tests/unit-san/npurt_handle_test

$(O)/tests/unit-san/npurt_handle_test: tests/unit/npurt_handle_test.c userspace/runtime/handle.c \
		userspace/runtime/error.c userspace/runtime/log.c userspace/runtime/handle.h \
		$(KSFT)/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(filter-out $(DEPFLAGS),$(TEST_CFLAGS)) $(US_INC) $(SAN_FLAGS) \
		$(filter %.c,$^) -lpthread -o $@

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

$(O)/tests/unit-san/npurt_exec_test: tests/unit/npurt_exec_test.c userspace/exec/exec.c \
		userspace/runtime/handle.c userspace/runtime/error.c userspace/runtime/log.c \
		$(KSFT)/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(filter-out $(DEPFLAGS),$(TEST_CFLAGS)) $(US_INC) $(SAN_FLAGS) \
		$(filter %.c,$^) -lpthread -o $@

# A session's stages (userspace/onnx/onnx_stages.c) through the importer's
# internal header: the importer's archive goes before libnpurt's.
$(O)/obj/tests/unit/npurt_stages_test.o: TEST_CFLAGS += $(US_INC) -I$(O)/gen $(PBC_CFLAGS)
$(O)/obj/tests/unit/npurt_stages_test.o: | $(ONNX_GEN)
$(O)/tests/unit/npurt_stages_test: $(O)/obj/tests/unit/npurt_stages_test.o $(ONNXA_ALL) $(LIBA_ALL)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(PBC_LIBS) $(LIB_DEPS) -lm -o $@

# The model file's reader, planner and builder: no device, so all of it.
MODEL_FILE_SRCS := userspace/model/model_file.c userspace/model/plan.c userspace/model/graph.c \
	userspace/model/graph_pack.c userspace/runtime/handle.c \
	userspace/runtime/error.c userspace/runtime/log.c userspace/runtime/oplib.c
$(O)/tests/unit-san/npurt_model_file_test: tests/unit/npurt_model_file_test.c $(MODEL_FILE_SRCS) \
		userspace/model/model_file.h userspace/model/model_format.h $(KSFT)/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(filter-out $(DEPFLAGS),$(TEST_CFLAGS)) $(US_INC) $(SAN_FLAGS) \
		$(filter %.c,$^) -lpthread -o $@

$(O)/tests/selftests/npurt_onnx_test $(O)/tests/selftests/npurt_onnx_session_test: $(ONNXA_ALL)
$(O)/tests/selftests/npurt_onnx_test $(O)/tests/selftests/npurt_onnx_session_test: \
	LINK_ONNX = $(ONNX_LINK_ALL)
# The profiler's test reads traces with npu-prof's reader.
$(O)/obj/tests/selftests/npurt_profile_test.o: TEST_CFLAGS += -Iuserspace/tools
$(O)/tests/selftests/npurt_profile_test: $(O)/obj/userspace/tools/npu-prof/trace.o
# The handles' misuse test runs the whole library under ASan and UBSan in
# the VM: a freed handle the library read instead of refusing is a report.
LIB_SAN_OBJS := $(patsubst %.c,$(O)/obj-san/%.o,$(RUNTIME_SRCS) $(MODEL_SRCS) $(EXEC_SRCS))
$(O)/obj-san/userspace/%.o: userspace/%.c
	@mkdir -p $(@D)
	$(US_COMPILE) $(SAN_FLAGS) $(LAYER_INC_exec) -c $< -o $@
$(O)/obj/tests/selftests/npurt_handle_test.o: TEST_CFLAGS += $(SAN_FLAGS)
$(O)/tests/selftests/npurt_handle_test: $(O)/obj/tests/selftests/npurt_handle_test.o $(LIB_SAN_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(SAN_FLAGS) $^ $(LIB_DEPS) -lpthread -lm -o $@
-include $(LIB_SAN_OBJS:.o=.d)

# The dump's test reads .npy files with npu-prof's reader.
$(O)/obj/tests/selftests/npurt_dump_test.o: TEST_CFLAGS += -Iuserspace/tools
$(O)/tests/selftests/npurt_dump_test: $(O)/obj/userspace/tools/npu-prof/dump.o
$(O)/tests/selftests/%: $(O)/obj/tests/selftests/%.o $(LIBA_ALL)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) $(LINK_ONNX) $(LIBA_ALL) $(LIB_DEPS) -lpthread -lm -o $@

# Sessions are libnpuonnx's.
$(O)/tests/bench/session_bench: $(O)/obj/tests/bench/session_bench.o $(ONNXA_ALL) $(LIBA_ALL)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(PBC_LIBS) $(LIB_DEPS) -lpthread -lm -o $@

$(O)/tests/bench/%: $(O)/obj/tests/bench/%.o $(LIBA_ALL)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LIB_DEPS) $(BLAS_LIBS) -lpthread -lm -o $@

# Benchmarks of the device core alone, run on the host.
# Execution graphs are the library's, on the host.
$(O)/tests/bench-host/exec_bench: $(O)/obj/tests/bench/host/exec_bench.o $(LIBA_ALL)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LIB_DEPS) -lpthread -lm -o $@

# The device core without the profiling hooks: fwsim_prof_bench's baseline.
FWSIM_NOPROF := $(patsubst $(O)/obj/%,$(O)/obj-noprof/%,$(call obj,$(FWSIM_CORE)))
$(O)/obj-noprof/firmware-sim/%.o: firmware-sim/%.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE -DNPU_PROF_OFF $(WARN) $(DEPFLAGS) $(CFLAGS) $(FWSIM_OPT_$*) \
		-Ikernel -Iuapi $(OPLIB_INC) $(DRM_CFLAGS) -c $< -o $@
$(O)/tests/bench-host/fwsim_prof_bench_off: $(O)/obj/tests/bench/host/fwsim_prof_bench.o \
		$(FWSIM_NOPROF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(FWSIM_LIBS) -o $@
$(O)/tests/bench-host/fwsim_prof_bench: | $(O)/tests/bench-host/fwsim_prof_bench_off

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

# The ONNX importer with what it needs of the library: no device code (so
# no sessions, which load models).
ONNX_FUZZ_SRCS := $(filter-out userspace/onnx/onnx_session.c userspace/onnx/onnx_plans.c,$(wildcard userspace/onnx/onnx_*.c)) \
	$(MODEL_FILE_SRCS)
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
$(ONNX_CONF): tests/onnx/conformance.c $(ONNXA_ALL) $(LIBA_ALL) $(ONNX_GEN)
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -Iuserspace/include $(OPLIB_INC) -I$(O)/gen \
		$(PBC_CFLAGS) $< $(ONNX_LINK_ALL) $(LIBA_ALL) $(LIB_DEPS) -lpthread -lm -o $@

# The model zoo on the device against onnxruntime (tests/zoo/models).
ONNX_ZOO := $(O)/tests/selftests/onnx_zoo
$(ONNX_ZOO): tests/onnx/zoo.c $(ONNXA_ALL) $(LIBA_ALL)
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -Iuserspace/include $< $(ONNX_LINK_ALL) $(LIBA_ALL) \
		$(LIB_DEPS) -lm -o $@

# Real models as ONNX files (Debian's python3-onnx; the system python3).
ONNX_MODELS := $(O)/onnx-models/mlp.onnx
$(ONNX_MODELS): tests/onnx/make_models.py
	/usr/bin/python3 $< $(@D)

tests: $(UNIT) $(UNIT_SAN) $(SELFTESTS) $(BENCH) $(HOST_BENCH) $(FUZZ) $(MODEL_FUZZ) $(EXAMPLES) \
	$(ONNX_CONF) $(ONNX_ZOO) $(ONNX_MODELS)

# The VM suite on a debug kernel (KASAN, lockdep, kmemleak...), built once
# into $(O)/debug-kernel from Debian's linux-source (see tests/vm/check-debug).
check-debug: setup
	$(MAKE) userspace tests
	O=$(O) tests/vm/check-debug

# Mutation testing: the small bugs of tests/mutate/mutants, one at a time in
# a scratch copy of the tree (built there), each against the suites it
# names; prints the score and the survivors (Documentation/testing.rst).
# MUTATE_ARGS passes options, e.g. MUTATE_ARGS='--only kernel/npu_sync.c'.
mutate: setup $(KSFT)/kselftest_harness.h
	O=$(O) tests/mutate/run $(MUTATE_ARGS)

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
		for m in mlp resnet_mini resnet_mini_qdq transformer17; do \
			NODE_PATH=$(CURDIR)/$(O)/ort/node_modules node tests/bench/onnx/ort_bench.js \
				$(O)/onnx-models/$$m.onnx $(O)/onnx-models/$$m.in 100 \
				>>$(O)/vm/host-ort.txt || exit 1; \
		done; fi
	@: >$(O)/vm/host-zoo.txt; if [ -s $(O)/zoo/models ]; then \
		for m in $$(awk '{ print $$1 }' $(O)/zoo/models); do \
			NODE_PATH=$(CURDIR)/$(O)/zoo/ort/node_modules node tests/zoo/reference.js \
				$(O)/zoo $$m --time 50 >>$(O)/vm/host-zoo.txt || exit 1; \
		done; fi
	@rc=0; NPU_BENCH_HOST_BLAS=$(CURDIR)/$(O)/vm/host-blas.txt \
		NPU_BENCH_HOST_ORT=$(CURDIR)/$(O)/vm/host-ort.txt \
		NPU_BENCH_HOST_ZOO=$(CURDIR)/$(O)/vm/host-zoo.txt \
		tests/vm/run --quiet --cores 2 --module $(VM_KO) --out $(O)/vm/bench -- tests/bench/run $(O) || rc=$$?; \
		cat $(O)/vm/bench/output.log; [ $$rc = 0 ] || exit $$rc; \
		echo "== gemm_bench, both cores in one group"; \
		NPU_BENCH_HOST_BLAS=$(CURDIR)/$(O)/vm/host-blas.txt \
		tests/vm/run --quiet --cores 2 --core-groups 1 --module $(VM_KO) --out $(O)/vm/bench-gemm \
			-- env OPENBLAS_CORETYPE=Prescott $(O)/tests/bench/gemm_bench || rc=$$?; \
		cat $(O)/vm/bench-gemm/output.log; exit $$rc

.PHONY: tests check-debug mutate bench
