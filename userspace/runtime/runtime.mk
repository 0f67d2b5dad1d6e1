# SPDX-License-Identifier: MIT
# userspace/runtime/: the lower half of libnpurt (included by the top Makefile).

RUNTIME_SRCS := $(sort $(wildcard userspace/runtime/*.c))
# A layer's objects see its own headers and the layers' below, nothing above.
LAYER_INC_runtime := -Iuserspace/runtime

$(call obj,$(RUNTIME_SRCS)): $(O)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(US_COMPILE) $(LAYER_INC_runtime) -c $< -o $@
