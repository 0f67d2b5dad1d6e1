# SPDX-License-Identifier: MIT
# userspace/onnx/: the ONNX importer, libnpuonnx (included by the top
# Makefile, after model.mk): the one library that links protobuf-c.

ONNX_SRCS := $(sort $(wildcard userspace/onnx/*.c))
# Models are read with protobuf-c, from C generated at build time out of
# Debian's onnx.proto (libonnx-dev), never kept in the tree.
ONNX_PROTO ?= /usr/include/onnx/onnx.proto
ONNX_GEN   := $(O)/gen/onnx.pb-c.c
LAYER_INC_onnx := -Iuserspace/onnx -I$(O)/gen $(PBC_CFLAGS) $(LAYER_INC_exec)

$(ONNX_GEN): $(ONNX_PROTO)
	@mkdir -p $(@D)
	cd $(dir $(ONNX_PROTO)) && protoc-c --c_out=$(abspath $(@D)) $(notdir $(ONNX_PROTO))

$(O)/obj/gen/onnx.pb-c.o: $(ONNX_GEN)
	@mkdir -p $(@D)
	$(CC) -std=c11 $(WARN) $(CFLAGS) -fPIC -fvisibility=hidden $(PBC_CFLAGS) -I$(O)/gen -c $< -o $@

$(call obj,$(ONNX_SRCS)): $(O)/obj/%.o: %.c | $(ONNX_GEN)
	@mkdir -p $(@D)
	$(US_COMPILE) $(LAYER_INC_onnx) -c $< -o $@

ONNX_OBJS := $(call obj,$(ONNX_SRCS)) $(O)/obj/gen/onnx.pb-c.o
ONNXSO    := $(O)/lib/libnpuonnx.so.$(NPUONNX_SOVER).$(SO_MINOR_PATCH)
ONNXA     := $(O)/lib/libnpuonnx.a
# What a program importing ONNX links statically before libnpurt: the
# importer and its parser (as LINK_ONNX, set per target); the tree's
# tests, the importer with its internals (see LIBA_ALL).
ONNXA_ALL := $(O)/obj/libnpuonnx-all.a
ONNX_LINK := $(ONNXA) $(PBC_LIBS)
ONNX_LINK_ALL := $(ONNXA_ALL) $(PBC_LIBS)

$(ONNXSO): $(ONNX_OBJS) userspace/libnpuonnx.map $(LIBSO)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libnpuonnx.so.$(NPUONNX_SOVER) \
		-Wl,--version-script=userspace/libnpuonnx.map -Wl,--no-undefined \
		$(filter %.o,$^) -L$(O)/lib -lnpurt $(PBC_LIBS) -lm -o $@
	ln -sf $(@F) $(O)/lib/libnpuonnx.so.$(NPUONNX_SOVER)
	ln -sf libnpuonnx.so.$(NPUONNX_SOVER) $(O)/lib/libnpuonnx.so

$(ONNXA_ALL): $(ONNX_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

# As libnpurt.a: only npurt_* global (the parser's onnx__* are local too).
$(ONNXA): $(ONNX_OBJS) userspace/onnx/onnx.mk
	@mkdir -p $(@D) $(O)/obj/dist
	rm -f $@
	$(CC) -r -nostdlib -fno-lto -o $(O)/obj/dist/libnpuonnx.o $(filter %.o,$^)
	$(OBJCOPY) -w --keep-global-symbol='npurt_*' $(O)/obj/dist/libnpuonnx.o
	$(AR) rcs $@ $(O)/obj/dist/libnpuonnx.o

install-libnpuonnx: $(ONNXSO) $(ONNXA)
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 644 userspace/include/npuonnx.h $(DESTDIR)$(PREFIX)/include/
	install -m 755 $(ONNXSO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(ONNXSO)) $(DESTDIR)$(LIBDIR)/libnpuonnx.so.$(NPUONNX_SOVER)
	ln -sf libnpuonnx.so.$(NPUONNX_SOVER) $(DESTDIR)$(LIBDIR)/libnpuonnx.so
	install -m 644 $(ONNXA) $(DESTDIR)$(LIBDIR)/
	$(call install_pc,userspace/npuonnx.pc.in,npuonnx.pc)

.PHONY: install-libnpuonnx
