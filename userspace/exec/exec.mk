# SPDX-License-Identifier: MIT
# userspace/exec/: execution graphs, the top of libnpurt, and libnpurt
# itself (included by the top Makefile, after model.mk).

EXEC_SRCS := $(sort $(wildcard userspace/exec/*.c))
LAYER_INC_exec := -Iuserspace/exec $(LAYER_INC_model)

$(call obj,$(EXEC_SRCS)): $(O)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(US_COMPILE) $(LAYER_INC_exec) -c $< -o $@

# libnpurt: the runtime, models and execution graphs. One set of PIC objects serves both the
# shared and the static library. The version script says what the shared
# one exports, and under which version (tests/install-check holds the
# built library to it).
LIB_OBJS := $(call obj,$(RUNTIME_SRCS) $(MODEL_SRCS) $(EXEC_SRCS))
# What a program linking libnpurt statically links besides.
LIB_DEPS := $(DRM_LIBS) $(URING_LIBS)
LIBSO    := $(O)/lib/libnpurt.so.$(NPURT_SOVER).$(SO_MINOR_PATCH)
LIBA     := $(O)/lib/libnpurt.a

$(LIBSO): $(LIB_OBJS) userspace/libnpurt.map
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libnpurt.so.$(NPURT_SOVER) \
		-Wl,--version-script=userspace/libnpurt.map -Wl,--no-undefined \
		$(filter %.o,$^) $(LIB_DEPS) -lpthread -lm -o $@
	ln -sf $(@F) $(O)/lib/libnpurt.so.$(NPURT_SOVER)
	ln -sf libnpurt.so.$(NPURT_SOVER) $(O)/lib/libnpurt.so

# The installed archive is one relocatable object whose only global
# symbols are npurt_*: the layers' internal names (mf_*, mc_*, graph_*...)
# are local to it, so they cannot meet an application's. The tools and
# tests of the tree link every object as it is (LIBA_ALL): unit tests
# call internals.
LIBA_ALL := $(O)/obj/libnpurt-all.a

$(LIBA_ALL): $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(LIBA): $(LIB_OBJS) userspace/exec/exec.mk
	@mkdir -p $(@D) $(O)/obj/dist
	rm -f $@
	$(CC) -r -nostdlib -fno-lto -o $(O)/obj/dist/libnpurt.o $(filter %.o,$^)
	$(OBJCOPY) -w --keep-global-symbol='npurt_*' $(O)/obj/dist/libnpurt.o
	$(AR) rcs $@ $(O)/obj/dist/libnpurt.o

install-libnpurt: $(LIBSO) $(LIBA)
	install -d $(DESTDIR)$(PREFIX)/include/drm $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 644 userspace/include/npurt.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 uapi/drm/npu_accel.h $(DESTDIR)$(PREFIX)/include/drm/
	install -m 755 $(LIBSO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIBSO)) $(DESTDIR)$(LIBDIR)/libnpurt.so.$(NPURT_SOVER)
	ln -sf libnpurt.so.$(NPURT_SOVER) $(DESTDIR)$(LIBDIR)/libnpurt.so
	install -m 644 $(LIBA) $(DESTDIR)$(LIBDIR)/
	$(call install_pc,userspace/npurt.pc.in,npurt.pc)

.PHONY: install-libnpurt
