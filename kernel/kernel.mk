# SPDX-License-Identifier: MIT
# kernel/: npu.ko, built by kernel/Makefile and Kbuild against KDIR, and
# its DKMS packaging (included by the top Makefile).

module:
	$(MAKE) -C kernel KDIR=$(KDIR)

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

.PHONY: module modules_install dkms-src dkms-install dkms-uninstall
