# Tandem: an RTOS and Linux side by side on one multicore Arm, under our own
# EL3 monitor. `make run` boots it on QEMU; `make test` checks everything.
#
# Everything builds under build/ (and cargo's target/); nothing outside the
# repository is touched except by `make setup` (apt packages, the Rust
# toolchain, .venv).

SHELL := /bin/bash
# rustup's tools, also when set-up has just installed rustup.
export PATH := $(or $(CARGO_HOME),$(HOME)/.cargo)/bin:$(PATH)
.DEFAULT_GOAL := help

ROOT        := $(CURDIR)
BUILD       := $(ROOT)/build
CROSS       := aarch64-linux-gnu-
FW_TARGET   := aarch64-unknown-none-softfloat
JOBS        ?= $(shell nproc)

KSRC_TAR    := /usr/src/linux-source-6.1.tar.xz
KSRC        := $(BUILD)/linux-source-6.1
KOUT        := $(BUILD)/linux
KMAKE       := $(MAKE) -C $(KSRC) O=$(KOUT) ARCH=arm64 CROSS_COMPILE=$(CROSS)
# Linux's banner names the build's time, user, host and count, and Linux
# mixes the banner into its random pool at boot: unpinned, two builds of one
# commit (two clones, two machines) boot into different runs. Pinned for
# every kernel built here (docs/linux.md, "A reproducible kernel").
export KBUILD_BUILD_TIMESTAMP := Thu Jan 1 00:00:00 UTC 1970
export KBUILD_BUILD_USER := tandem
export KBUILD_BUILD_HOST := tandem
export KBUILD_BUILD_VERSION := 1
PATCHES     := $(wildcard linux/patches/*.patch) linux/patches/series

MONITOR_BIN := $(BUILD)/firmware/tandem-monitor.bin
RTOS_BIN    := $(BUILD)/firmware/tandem-rtos.bin
HYP_BIN     := $(BUILD)/firmware/tandem-hyp.bin
FIRMWARE    := $(BUILD)/firmware/tandem-firmware.bin
IMAGE       := $(KOUT)/arch/arm64/boot/Image
ABI_HEADER  := $(BUILD)/include/tandem_abi.h
MODULE      := $(BUILD)/driver/tandem.ko
# A test module that attacks the secure side as a compromised kernel would
# (linux/hostile; loaded only by the hostile tests).
HOSTILE     := $(BUILD)/hostile/tandem_hostile.ko
TOOLS       := $(BUILD)/tools/tandem-smc $(BUILD)/tools/tandem-top $(BUILD)/tools/tandem-lat \
               $(BUILD)/tools/tandem-trace $(BUILD)/tools/tandem-spin $(BUILD)/tools/tandem-rpc \
               $(BUILD)/tools/tandem-probe $(BUILD)/tools/tandem-rpmsg $(BUILD)/tools/tandem-membench \
               $(BUILD)/tools/threadtest
# Linux's own RPMsg client sample (samples/rpmsg, Debian's source
# unchanged), a third-party client of the RTOS's rpmsg-client-sample
# service; built as a module like the tandem driver, loaded by a test.
RPMSG_SAMPLE := $(BUILD)/rpmsg-sample/rpmsg_client_sample.ko
INITRAMFS   := $(BUILD)/rootfs/initramfs.cpio
# QEMU plugin counting each vCPU's own instructions (qemu/plugins/pathcount).
PATHCOUNT   := $(BUILD)/qemu/libtandem_pathcount.so
# QEMU plugin running the memory model (qemu/plugins/memplugin, harness/memmodel),
# and its profiles' values and hashes for the harness (tandem-memprofile).
MEMPLUGIN   := $(BUILD)/qemu/libtandem_memplugin.so
MEMPROFILE  := $(BUILD)/qemu/tandem-memprofile
# Tandem's QEMU: Debian's source and qemu/patches, built into a cache
# outside the clone (scripts/build-qemu.sh); build/qemu/install links there.
QEMU        := $(BUILD)/qemu/install/bin/qemu-system-aarch64
# Every other board's firmware (boards/NAME.toml; the harness's --board
# NAME), and the trees from the kernel source of boards whose Linux gets one
# ([linux] dtb; the harness adds Tandem's nodes at boot). Defined before
# `artifacts`, whose prerequisites make expands as it reads the rule.
OTHER_BOARDS := $(filter-out qemu-virt Cargo,$(basename $(notdir $(wildcard boards/*.toml))))
BOARD_FIRMWARE := $(foreach b,$(OTHER_BOARDS),$(BUILD)/boards/$(b)/tandem-firmware.bin)
BOARD_DTBS  := $(addprefix $(KOUT)/arch/arm64/boot/dts/,$(shell sed -n 's/^dtb = "\(.*\)"$$/\1/p' boards/*.toml))

.PHONY: help setup build run test lint host-test qemu-test bench fresh-test clean distclean abi FORCE \
	trace-kernel psci-kernel rootfs-lock

help:
	@echo "make run     set up, build and boot Tandem on QEMU (Linux console here)"
	@echo "make test    set up, build, lint, host unit tests and QEMU tests"
	@echo "make build   build firmware, kernel, driver, tools and initramfs"
	@echo "make bench   boot-time benchmark (./tandem bench boot)"
	@echo "make trace-kernel  a Linux with latency tracers (build/linux-trace; ./tandem exp kernel-trace)"
	@echo "make psci-kernel   a Linux running its PSCI checker at boot (build/linux-psci; make test builds it)"
	@echo "make setup   install what the build needs (Debian bookworm, root)"
	@echo "make rootfs-lock  lock the initramfs's Debian packages at the versions served now"
	@echo "make fresh-test  make test and a boot in a throwaway Debian root (slow; root)"
	@echo "make clean   remove build outputs (keeps downloaded packages)"

setup:
	@scripts/setup.sh

build: setup
	@$(MAKE) --no-print-directory artifacts

artifacts: $(QEMU) $(FIRMWARE) $(BOARD_FIRMWARE) $(IMAGE) $(BOARD_DTBS) $(MODULE) $(HOSTILE) $(RPMSG_SAMPLE) $(TOOLS) \
	$(INITRAMFS) $(PATHCOUNT) $(MEMPLUGIN) $(MEMPROFILE)

run: build
	./tandem run

# Ends with one line saying whether everything passed (make fresh-test
# prints the same).
test:
	@start=$$(date +%s); \
	if $(MAKE) --no-print-directory build && $(MAKE) --no-print-directory psci-kernel && \
		$(MAKE) --no-print-directory lint host-test qemu-test; then result=PASSED; else result=FAILED; fi; \
	t=$$(($$(date +%s) - start)); \
	echo "== make test: $$result in $$((t / 60)) min $$((t % 60)) s"; \
	[ $$result = PASSED ]

# The README's commands in a throwaway Debian bookworm root: run it after any
# change to set-up, the Makefile's install steps or QEMU's command line.
fresh-test:
	@scripts/fresh-test.sh

# After changing rootfs/packages.txt, or when the build says Debian no longer
# serves a locked version: commit the new rootfs/packages.lock.
rootfs-lock: setup
	@rootfs/lock.sh

bench: build
	./tandem bench boot

# --- firmware (cargo decides what to rebuild) --------------------------------

$(BUILD)/firmware/%.bin: FORCE
	@cargo build -q --release -p $* --target $(FW_TARGET)
	@mkdir -p $(@D)
	@$(CROSS)objcopy -O binary target/$(FW_TARGET)/release/$* $@.tmp
	@if cmp -s $@.tmp $@; then rm $@.tmp; else mv $@.tmp $@; fi
	@# The ELF beside it: its symbols place E3's path markers (pathcount.py).
	@cp target/$(FW_TARGET)/release/$* $(@D)/$*.elf

# Secure flash: the monitor at its start, the RTOS and the normal world's
# EL2 layer where the board says.
$(FIRMWARE): $(MONITOR_BIN) $(RTOS_BIN) $(HYP_BIN) boards/qemu-virt.toml scripts/pack-firmware.py
	@scripts/pack-firmware.py boards/qemu-virt.toml $(MONITOR_BIN) $(RTOS_BIN) $(HYP_BIN) $@

# Every other board's firmware (BOARD_FIRMWARE, above): the same crates
# built with TANDEM_BOARD=NAME in a cargo target directory of their own, so
# neither board's build undoes the other's.
$(BUILD)/boards/%/tandem-firmware.bin: FORCE
	@mkdir -p $(@D)
	@TANDEM_BOARD=$* CARGO_TARGET_DIR=target/boards/$* cargo build -q --release \
		-p tandem-monitor -p tandem-rtos -p tandem-hyp --target $(FW_TARGET)
	@for p in tandem-monitor tandem-rtos tandem-hyp; do \
		$(CROSS)objcopy -O binary target/boards/$*/$(FW_TARGET)/release/$$p $(@D)/$$p.bin && \
		cp target/boards/$*/$(FW_TARGET)/release/$$p $(@D)/$$p.elf || exit 1; done
	@scripts/pack-firmware.py boards/$*.toml $(@D)/tandem-monitor.bin $(@D)/tandem-rtos.bin \
		$(@D)/tandem-hyp.bin $@.tmp
	@if cmp -s $@.tmp $@; then rm $@.tmp; else mv $@.tmp $@; fi

# Quick when the cache has this source, these patches and options.
$(QEMU): FORCE
	@scripts/build-qemu.sh $(BUILD)/qemu/install

$(PATHCOUNT): FORCE
	@cargo build -q --release -p tandem-pathcount
	@mkdir -p $(@D)
	@if ! cmp -s target/release/libtandem_pathcount.so $@; then \
		cp target/release/libtandem_pathcount.so $@; fi

# One cargo build makes both; each is copied only when it changed.
$(MEMPLUGIN) $(MEMPROFILE) &: FORCE
	@cargo build -q --release -p tandem-memplugin
	@mkdir -p $(@D)
	@for f in libtandem_memplugin.so tandem-memprofile; do \
		if ! cmp -s target/release/$$f $(BUILD)/qemu/$$f; then cp target/release/$$f $(BUILD)/qemu/$$f; fi; \
	done

# The harness's view of the ABI is committed (its host tests need no build);
# `cargo test` says when it is stale, and this refreshes it.
abi:
	@cargo run -q -p tandem-abi-gen -- python > harness/tandem/platform/abi_generated.py.tmp
	@mv harness/tandem/platform/abi_generated.py.tmp harness/tandem/platform/abi_generated.py
	@echo "  GEN     harness/tandem/platform/abi_generated.py"

$(ABI_HEADER): $(wildcard abi/src/*.rs tools/abi-gen/src/*.rs monitor/core/src/*.rs) abi/Cargo.toml
	@mkdir -p $(@D)
	@cargo run -q -p tandem-abi-gen -- c > $@.tmp && mv $@.tmp $@
	@echo "  GEN     $@"

# --- Linux: Debian's source, our patches, our config --------------------------

# The tree is deleted and unpacked again: only ever one inside $(BUILD)
# (a KSRC= naming another checkout's tree would lose that tree).
$(BUILD)/.ksrc-stamp: $(KSRC_TAR) $(PATCHES)
	@case "$(abspath $(KSRC))/" in "$(abspath $(BUILD))"/*) ;; \
		*) echo "make: KSRC=$(KSRC) is not inside $(BUILD); not deleting it" >&2; exit 1;; esac
	@echo "  UNPACK  $(KSRC_TAR)"
	@rm -rf $(KSRC) && mkdir -p $(BUILD) && tar -C $(BUILD) -xf $(KSRC_TAR)
	@while read -r p; do \
		case "$$p" in ''|\#*) continue;; esac; \
		echo "  PATCH   $$p"; \
		patch -d $(KSRC) -p1 -s --no-backup-if-mismatch < linux/patches/$$p || exit 1; \
	done < linux/patches/series
	@touch $@

# One kernel for every board: Tandem's fragment plus each board's
# (linux/boards/*.config: the SoC's clocks, pins, UART).
BOARD_KCONFIGS := $(sort $(wildcard linux/boards/*.config))
$(KOUT)/.config: linux/tandem.config $(BOARD_KCONFIGS) $(BUILD)/.ksrc-stamp scripts/check-kconfig.sh
	@mkdir -p $(KOUT)
	@cat linux/tandem.config $(BOARD_KCONFIGS) > $(KOUT)/tandem-all.config
	@KCONFIG_ALLCONFIG=$(KOUT)/tandem-all.config $(KMAKE) -s allnoconfig
	@for f in linux/tandem.config $(BOARD_KCONFIGS); do scripts/check-kconfig.sh $$f $@ || exit 1; done
	@# Kconfig leaves an unchanged .config alone; the stamp must still be
	@# newer than the sources, or patched sources would not rebuild Linux.
	@touch $@
	@echo "  CONFIG  $@"

# Boards' trees from the kernel source (BOARD_DTBS, above).
$(KOUT)/arch/arm64/boot/dts/%.dtb: $(KOUT)/.config
	@$(KMAKE) -s $*.dtb
	@echo "  DTB     $@"

$(IMAGE): $(KOUT)/.config
	@echo "  KERNEL  (incremental build, a few minutes from scratch)"
	@$(KMAKE) -s -j$(JOBS) Image modules
	@touch $@

# A diagnosis kernel, not Tandem's: tandem.config plus Linux's latency
# tracers (linux/latency-trace.config), for `./tandem exec --kernel`. Not
# part of `make build` (docs/linux.md).
TRACE_KOUT  := $(BUILD)/linux-trace
trace-kernel: $(BUILD)/.ksrc-stamp
	@mkdir -p $(TRACE_KOUT)
	@cat linux/tandem.config linux/latency-trace.config > $(TRACE_KOUT)/tandem-trace.config
	@KCONFIG_ALLCONFIG=$(TRACE_KOUT)/tandem-trace.config \
		$(MAKE) -C $(KSRC) O=$(TRACE_KOUT) ARCH=arm64 CROSS_COMPILE=$(CROSS) -s allnoconfig
	@scripts/check-kconfig.sh $(TRACE_KOUT)/tandem-trace.config $(TRACE_KOUT)/.config
	@echo "  KERNEL  $(TRACE_KOUT) (latency tracers; a few minutes from scratch)"
	@$(MAKE) -C $(KSRC) O=$(TRACE_KOUT) ARCH=arm64 CROSS_COMPILE=$(CROSS) -s -j$(JOBS) Image

# Another diagnosis kernel: tandem.config plus Linux's PSCI checker
# (linux/psci-checker.config), which tests CPU_OFF / CPU_ON and CPU_SUSPEND
# at every boot. Not part of `make build`; `make test` builds it for its
# QEMU test (harness/tests/test_idle.py). It starts from a copy of Tandem's
# kernel's objects and takes Tandem's kernel's fragments (the boards' too),
# so its .config differs by the checker's option alone and only what that
# option touches is compiled (without the boards' fragments some thirty
# options differed and nearly every object was compiled again).
PSCI_KOUT   := $(BUILD)/linux-psci
PSCI_IMAGE  := $(PSCI_KOUT)/arch/arm64/boot/Image
psci-kernel: $(PSCI_IMAGE)

$(PSCI_IMAGE): $(IMAGE) linux/tandem.config $(BOARD_KCONFIGS) linux/psci-checker.config scripts/check-kconfig.sh
	@mkdir -p $(PSCI_KOUT)
	@rsync -a --delete --exclude=/tandem-psci.config $(KOUT)/ $(PSCI_KOUT)/
	@cat linux/tandem.config $(BOARD_KCONFIGS) linux/psci-checker.config > $(PSCI_KOUT)/tandem-psci.config
	@KCONFIG_ALLCONFIG=$(PSCI_KOUT)/tandem-psci.config \
		$(MAKE) -C $(KSRC) O=$(PSCI_KOUT) ARCH=arm64 CROSS_COMPILE=$(CROSS) -s allnoconfig
	@scripts/check-kconfig.sh $(PSCI_KOUT)/tandem-psci.config $(PSCI_KOUT)/.config
	@echo "  KERNEL  $(PSCI_KOUT) (Linux's PSCI checker)"
	@$(MAKE) -C $(KSRC) O=$(PSCI_KOUT) ARCH=arm64 CROSS_COMPILE=$(CROSS) -s -j$(JOBS) Image
	@touch $@

$(MODULE): $(wildcard linux/driver/*.c linux/driver/*.h linux/driver/Kbuild) $(ABI_HEADER) $(IMAGE)
	@mkdir -p $(BUILD)/driver/include
	@cp linux/driver/*.c linux/driver/*.h linux/driver/Kbuild $(BUILD)/driver/
	@cp $(ABI_HEADER) $(BUILD)/driver/include/
	@$(KMAKE) -s M=$(BUILD)/driver modules
	@echo "  MODULE  $@"

$(HOSTILE): $(wildcard linux/hostile/*) $(IMAGE)
	@mkdir -p $(@D)
	@cp linux/hostile/*.c linux/hostile/*.h linux/hostile/*.S linux/hostile/Kbuild $(@D)/
	@$(KMAKE) -s M=$(@D) modules
	@echo "  MODULE  $@"

$(RPMSG_SAMPLE): $(IMAGE)
	@mkdir -p $(@D)
	@cp $(KSRC)/samples/rpmsg/rpmsg_client_sample.c $(@D)/
	@echo 'obj-m += rpmsg_client_sample.o' > $(@D)/Kbuild
	@$(KMAKE) -s M=$(@D) modules
	@echo "  MODULE  $@"

# Tools see the generated ABI header and the driver's ioctl interface
# (linux/driver/*_uapi.h) and the RPC user library (linux/tools/*.h).
$(BUILD)/tools/%: linux/tools/%.c $(ABI_HEADER) $(wildcard linux/driver/*_uapi.h linux/tools/*.h)
	@mkdir -p $(@D)
	@$(CROSS)gcc -static -O2 -Wall -Wextra -Werror -I$(BUILD)/include -Ilinux/driver -o $@ $<
	@echo "  TOOL    $@"

# Linux's own kselftest of CLOCK_MONOTONIC across CPUs (threads taking a
# mutex and reading the clock into one list), from Debian's kernel source:
# the QEMU test of causal per-core clocks (qemu/patches/0007, 0010).
SELFTESTS   := $(KSRC)/tools/testing/selftests
$(BUILD)/tools/threadtest: $(BUILD)/.ksrc-stamp
	@mkdir -p $(@D)
	@$(CROSS)gcc -static -O2 -pthread -I$(SELFTESTS) -o $@ $(SELFTESTS)/timers/threadtest.c
	@echo "  TOOL    $@ (kselftest timers/threadtest)"

$(INITRAMFS): $(wildcard rootfs/*) $(MODULE) $(HOSTILE) $(RPMSG_SAMPLE) $(TOOLS)
	@rootfs/build.sh $(BUILD)/rootfs $(BUILD)/tools $(MODULE) $(HOSTILE) $(RPMSG_SAMPLE)

# --- checks -------------------------------------------------------------------

lint:
	@echo "== lint"
	cargo fmt --all --check
	cargo clippy -q --workspace --exclude tandem-monitor --exclude tandem-rtos --exclude tandem-rtos-firmware --exclude tandem-hyp --all-targets -- -D warnings
	cargo clippy -q -p tandem-monitor -p tandem-rtos -p tandem-rtos-firmware -p tandem-hyp -p tandem-runtime --target $(FW_TARGET) -- -D warnings
	scripts/check-no-fp.sh target/$(FW_TARGET)/release/tandem-monitor
	scripts/check-no-fp.sh target/$(FW_TARGET)/release/tandem-rtos
	scripts/check-no-fp.sh target/$(FW_TARGET)/release/tandem-hyp
	scripts/check-rust-headers.sh
	@# The RTOS's mechanism never names an application (the image crate,
	@# tandem_rtos) and its modules import in one direction only.
	scripts/check-module-cycles.py rtos/firmware/src --forbid tandem_rtos
	scripts/check-module-cycles.py monitor/firmware/src
	scripts/check-module-cycles.py hyp/firmware/src
	scripts/check-module-cycles.py hyp/core/src
	@# The ABI's modules too (issue 34: the region's layout is one module,
	@# abi/src/layout.rs, which shm.rs and rpc.rs both take it from).
	scripts/check-module-cycles.py abi/src
	@# Between the harness's modules and between the workspace's crates: no
	@# cycle, and no import up the layers (the script's PYTHON_LAYERS and
	@# RUST_LAYERS: instruments/ never imports exp/, a generator that reads
	@# several crates lives in tools/ above them).
	scripts/check-module-cycles.py --python harness/tandem
	scripts/check-module-cycles.py --workspace .
	$(KSRC)/scripts/checkpatch.pl --no-tree --quiet --terse -f linux/driver/*.c linux/driver/*.h linux/hostile/*.c linux/hostile/*.h linux/tools/*.c linux/tools/*.h --ignore SPDX_LICENSE_TAG,PREFER_DEFINED_ATTRIBUTE_MACRO,EMBEDDED_FILENAME
	@# patches as patches (on stdin: given a tracked file name, checkpatch
	@# checks it as source and misreads the diff's context lines)
	@for p in linux/patches/*.patch; do \
		echo "checkpatch $$p"; $(KSRC)/scripts/checkpatch.pl --no-tree --strict --quiet --terse - < $$p || exit 1; \
	done
	@# results/ keeps only what the prose cites, raw data in one archive per run
	@# (results/README.md, "What is kept").
	scripts/check-results.py
	.venv/bin/ruff check harness
	.venv/bin/ruff format --check harness
	cd harness && ../.venv/bin/mypy --strict tandem tests
	@# The tandem node's binding (linux/Documentation/devicetree/bindings)
	@# and every configuration's generated device trees against it and
	@# Linux's PSCI and idle-state bindings (dt-validate).
	./tandem check-dt

host-test:
	@echo "== host unit tests"
	cargo test -q --workspace
	.venv/bin/pytest -q -m "not qemu" harness/tests

# QEMU tests side by side, one worker per host core: a per-core or virtual
# timing boot is one QEMU thread, and its numbers do not depend on the
# host's load. A test file stays on one worker (--dist loadfile): its
# module fixtures boot once. QEMU_TEST_WORKERS=1 runs them one at a time.
QEMU_TEST_WORKERS ?= $(shell nproc)

qemu-test:
	@echo "== QEMU tests ($(QEMU_TEST_WORKERS) side by side)"
	.venv/bin/pytest -q --durations=25 -n $(QEMU_TEST_WORKERS) --dist loadfile -m qemu harness/tests

clean:
	rm -rf $(KOUT) $(BUILD)/linux-trace $(BUILD)/linux-psci $(BUILD)/firmware $(BUILD)/qemu $(BUILD)/driver $(BUILD)/hostile $(BUILD)/rpmsg-sample $(BUILD)/tools $(BUILD)/include \
		$(BUILD)/rootfs/stage $(BUILD)/rootfs/pkgroot $(BUILD)/rootfs/initramfs.cpio $(BUILD)/dtb
	cargo clean

distclean:
	rm -rf build target .venv
