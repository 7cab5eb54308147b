# memtamer: build and install (docs/install.md).
#
#   make                      release build of the binary and the C libraries
#   make install PREFIX=/usr/local DESTDIR=/tmp/root
#   make deb                  dist/memtamer_VERSION_ARCH.deb (scripts/build-deb)
#
# Layout under $(DESTDIR)$(PREFIX):
#   bin/memtamer
#   lib/libmemtamer.so.0 (+ libmemtamer.so link, libmemtamer.a), libmemtamer_ribbon.so,
#   lib/libmemtamer_tx.so, lib/memtamer/libmemtamer_pmem_shim.so (LD_PRELOAD only),
#   lib/pkgconfig/memtamer.pc, include/memtamer*.h, share/doc/memtamer/,
#   share/memtamer/examples/memtamer.toml, lib/systemd/system/memtamer.service,
#   share/man/man1/memtamer*.1, share/bash-completion/completions/memtamer,
#   share/zsh/vendor-completions/_memtamer, share/fish/vendor_completions.d/memtamer.fish
#   (man pages and completions generated from the clap definitions)

PREFIX   ?= /usr/local
DESTDIR  ?=
BINDIR   ?= $(PREFIX)/bin
LIBDIR   ?= $(PREFIX)/lib
INCDIR   ?= $(PREFIX)/include
DATADIR  ?= $(PREFIX)/share
UNITDIR  ?= $(PREFIX)/lib/systemd/system
MANDIR   ?= $(DATADIR)/man
CARGO    ?= cargo
TARGET   ?= target/release
VERSION  := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
INSTALL  ?= install

CRATES = -p memtamer-cli -p memtamer-capi -p memtamer-pmem-shim -p memtamer-ribbon -p memtamer-tx

.PHONY: all build install uninstall deb
all: build

build:
	MEMTAMER_LIBDIR=$(LIBDIR) $(CARGO) build --release $(CRATES)

install: build
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/memtamer $(DESTDIR)$(LIBDIR)/pkgconfig \
	  $(DESTDIR)$(INCDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(DATADIR)/doc/memtamer \
	  $(DESTDIR)$(DATADIR)/memtamer/examples
	$(INSTALL) -m 0755 -s $(TARGET)/memtamer $(DESTDIR)$(BINDIR)/memtamer
	$(INSTALL) -m 0755 -s $(TARGET)/libmemtamer.so $(DESTDIR)$(LIBDIR)/libmemtamer.so.0
	ln -sf libmemtamer.so.0 $(DESTDIR)$(LIBDIR)/libmemtamer.so
	$(INSTALL) -m 0644 $(TARGET)/libmemtamer.a $(DESTDIR)$(LIBDIR)/libmemtamer.a
	$(INSTALL) -m 0755 -s $(TARGET)/libmemtamer_ribbon.so $(DESTDIR)$(LIBDIR)/libmemtamer_ribbon.so
	$(INSTALL) -m 0755 -s $(TARGET)/libmemtamer_tx.so $(DESTDIR)$(LIBDIR)/libmemtamer_tx.so
	$(INSTALL) -m 0755 -s $(TARGET)/libmemtamer_pmem_shim.so $(DESTDIR)$(LIBDIR)/memtamer/libmemtamer_pmem_shim.so
	$(INSTALL) -m 0644 crates/*/include/*.h $(DESTDIR)$(INCDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCDIR@|$(INCDIR)|' \
	  -e 's|@VERSION@|$(VERSION)|' dist/memtamer.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/memtamer.pc
	sed -e 's|/usr/local/bin/memtamer|$(BINDIR)/memtamer|g' dist/memtamer.service \
	  > $(DESTDIR)$(UNITDIR)/memtamer.service
	$(INSTALL) -m 0644 dist/memtamer.toml $(DESTDIR)$(DATADIR)/memtamer/examples/memtamer.toml
	$(INSTALL) -m 0644 crates/memtamer-control/testdata/example.toml \
	  $(DESTDIR)$(DATADIR)/memtamer/examples/memtamer-reference.toml
	$(INSTALL) -m 0644 LICENSE README.md docs/*.md $(DESTDIR)$(DATADIR)/doc/memtamer/
	rm -rf $(TARGET)/assets
	$(TARGET)/memtamer generate-assets --out $(TARGET)/assets
	$(INSTALL) -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DATADIR)/bash-completion/completions \
	  $(DESTDIR)$(DATADIR)/zsh/vendor-completions $(DESTDIR)$(DATADIR)/fish/vendor_completions.d
	$(INSTALL) -m 0644 $(TARGET)/assets/man1/*.1 $(DESTDIR)$(MANDIR)/man1/
	$(INSTALL) -m 0644 $(TARGET)/assets/completions/memtamer.bash \
	  $(DESTDIR)$(DATADIR)/bash-completion/completions/memtamer
	$(INSTALL) -m 0644 $(TARGET)/assets/completions/_memtamer $(DESTDIR)$(DATADIR)/zsh/vendor-completions/
	$(INSTALL) -m 0644 $(TARGET)/assets/completions/memtamer.fish $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/memtamer $(DESTDIR)$(LIBDIR)/libmemtamer.so* $(DESTDIR)$(LIBDIR)/libmemtamer.a \
	  $(DESTDIR)$(LIBDIR)/libmemtamer_ribbon.so $(DESTDIR)$(LIBDIR)/libmemtamer_tx.so \
	  $(DESTDIR)$(LIBDIR)/pkgconfig/memtamer.pc $(DESTDIR)$(UNITDIR)/memtamer.service
	rm -rf $(DESTDIR)$(LIBDIR)/memtamer $(DESTDIR)$(DATADIR)/doc/memtamer $(DESTDIR)$(DATADIR)/memtamer
	rm -f $(DESTDIR)$(MANDIR)/man1/memtamer*.1 $(DESTDIR)$(DATADIR)/bash-completion/completions/memtamer \
	  $(DESTDIR)$(DATADIR)/zsh/vendor-completions/_memtamer $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/memtamer.fish
	cd crates && for h in */include/*.h; do rm -f $(DESTDIR)$(INCDIR)/$$(basename $$h); done

deb:
	./scripts/build-deb
