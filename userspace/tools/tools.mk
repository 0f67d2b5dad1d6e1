# SPDX-License-Identifier: MIT
# userspace/tools/: npu-smi, npurun, npu-onnx, npu-mkmodel (included by
# the top Makefile, after the libraries' fragments).

TOOLS := $(patsubst userspace/tools/%.c,$(O)/bin/%,$(wildcard userspace/tools/*.c))

# Tools may make raw ioctls on npurt_device_fd(), as applications may.
$(O)/obj/userspace/tools/%.o: userspace/tools/%.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(DEPFLAGS) $(CFLAGS) -Iuserspace/include -Iuapi \
		$(TOOL_CFLAGS) $(DRM_CFLAGS) -c $< -o $@

# A tool grown past one file keeps the rest in a directory of its name.
$(O)/bin/npu-smi: $(call obj,$(wildcard userspace/tools/npu-smi/*.c))
$(O)/bin/npu-prof: $(call obj,$(wildcard userspace/tools/npu-prof/*.c))
# npurun's host reference reads model files with the library's own reader.
$(O)/bin/npurun: $(call obj,$(wildcard userspace/tools/npurun/*.c))
$(O)/obj/userspace/tools/npurun/%.o: TOOL_CFLAGS := -Iuserspace/model -Iuserspace/runtime $(OPLIB_INC)
$(O)/obj/userspace/tools/npurun.o: TOOL_CFLAGS := -Iuserspace/tools/npurun

# Tools link the libraries statically: they run from the build tree
# unchanged. They are the tree's own: npurun's host reference reads model
# files with the model layer's internals, so they link every object.
$(O)/bin/npu-onnx $(O)/bin/npurun: $(ONNXA_ALL)
$(O)/bin/npu-onnx $(O)/bin/npurun: LINK_ONNX = $(ONNX_LINK_ALL)
$(O)/bin/%: $(O)/obj/userspace/tools/%.o $(LIBA_ALL)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) $(LINK_ONNX) $(LIBA_ALL) $(LIB_DEPS) -lm -o $@

install-tools: $(TOOLS) $(O)/bin/npu-fwsim
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(TOOLS) $(O)/bin/npu-fwsim $(DESTDIR)$(PREFIX)/bin/

.PHONY: install-tools
