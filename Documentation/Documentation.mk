# SPDX-License-Identifier: MIT
# Documentation/: the tools' man pages and the examples (included by the
# top Makefile, after the libraries' fragments).

# Man pages of the tools, from one source each: Documentation/man/*.rst.
MANPAGES := $(patsubst Documentation/man/%.rst,$(O)/man/%.1,$(wildcard Documentation/man/*.rst))
man: $(MANPAGES)
$(O)/man/%.1: Documentation/man/%.rst
	@mkdir -p $(@D)
	rst2man --strict $< $@

# The examples build as an application would: the public header and the
# library, nothing else. tests/selftests/run runs them.
EXAMPLES := $(patsubst Documentation/examples/%.c,$(O)/examples/%,$(wildcard Documentation/examples/*.c))
$(O)/examples/%: Documentation/examples/%.c $(LIBA)
	@mkdir -p $(@D)
	$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -Iuserspace/include $< $(LIBA) \
		$(LIB_DEPS) -lpthread -lm -o $@

install-man: $(MANPAGES)
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 $(MANPAGES) $(DESTDIR)$(PREFIX)/share/man/man1/

.PHONY: man install-man
