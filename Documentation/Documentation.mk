# SPDX-License-Identifier: MIT
# Documentation/: the man pages (the tools', libnpurt's) and the examples (included by the
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

# libnpurt's section-3 pages, one per call or family of calls, from the
# comments of npurt.h, the contract (Documentation/man3/npurt-man3): a call
# without a comment fails the build, as a page rst2man refuses does.
MAN3 := $(O)/man3/.made
man: $(MAN3)
$(MAN3): userspace/include/npurt.h Documentation/man3/npurt-man3
	rm -rf $(@D) && mkdir -p $(@D)/rst
	Documentation/man3/npurt-man3 userspace/include/npurt.h $(@D)/rst
	for f in $(@D)/rst/*.rst; do \
		rst2man --strict "$$f" "$(@D)/$$(basename "$${f%.rst}").3" || exit 1; \
	done
	for f in $(@D)/rst/*.so; do cp "$$f" "$(@D)/$$(basename "$${f%.so}").3"; done
	touch $@

install-man: $(MANPAGES) $(MAN3)
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man3
	install -m 644 $(MANPAGES) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 $(O)/man3/*.3 $(DESTDIR)$(PREFIX)/share/man/man3/

.PHONY: man install-man
