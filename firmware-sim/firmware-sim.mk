# SPDX-License-Identifier: MIT
# firmware-sim/: the emulated device, npu-fwsim (included by the top Makefile).
#
# The core (scheduler, engines, DMA, MMU, op library) is apart from the
# main program and its QEMU transport, so unit tests and host benchmarks
# link the same core.

FWSIM_CORE := $(addprefix firmware-sim/,npu_dev.c npu_engine.c npu_dma.c npu_mmu.c npu_ops.c npu_elementwise.c \
	npu_matmul.c npu_window.c npu_gemm.c npu_gemm_bf16.c npu_gemm_int8.c npu_conv_int8.c npu_cores.c npu_list.c npu_prof.c npu_inplace.c npu_tlb.c \
	npu_vmath.c npu_widen.c ivshmem_server.c)
FWSIM_SRCS := $(FWSIM_CORE) firmware-sim/fwsim.c firmware-sim/main.c
# libmvec (glibc's vector math, in libc6) before libm: npu_vmath.c.
FWSIM_LIBS := -lpthread -lmvec -lm
# The op library's published interface (firmware-sim/oplib/README.rst): the
# one part of the device userspace reads.
OPLIB_INC  := -Ifirmware-sim/oplib

# The op library is the device's compute: it gets the vectoriser whatever
# CFLAGS say (-O3 keeps IEEE semantics; -std=c11 keeps FP contraction off,
# so results do not depend on it).
FWSIM_OPT_npu_ops := -O3
FWSIM_OPT_npu_elementwise := -O3
FWSIM_OPT_npu_gemm := -O3
FWSIM_OPT_npu_gemm_bf16 := -O3
FWSIM_OPT_npu_gemm_int8 := -O3
FWSIM_OPT_npu_conv_int8 := -O3
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
