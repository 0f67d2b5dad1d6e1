# SPDX-License-Identifier: MIT
# userspace/model/: models, the middle of libnpurt (included by the top
# Makefile, after runtime.mk).

MODEL_SRCS := $(sort $(wildcard userspace/model/*.c))
LAYER_INC_model := -Iuserspace/model $(LAYER_INC_runtime)

$(call obj,$(MODEL_SRCS)): $(O)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(US_COMPILE) $(LAYER_INC_model) -c $< -o $@
