# SPDX-License-Identifier: BSD-3-Clause
# The voxelize -> optimize -> export pipeline shared by the workflows: each
# workflow's Makefile sets PROBLEM and SIZE or GEOMETRY (and may set any
# variable below), then includes this file.
#
# Each stage reruns when its input file, the problem file or its own settings
# change (the settings are kept in *.settings files).

# Where the programs are: the build tree's cli folder by default.
VOXFE_BIN ?= ../../build/cli
VOXELIZE = $(VOXFE_BIN)/voxfe-voxelize
OPTIMIZE = $(VOXFE_BIN)/voxfe-optimize
EXPORT = $(VOXFE_BIN)/voxfe-export

VOXEL_SIZE ?= 1
VOXELIZE_OPTIONS ?=
VOLUME_FRACTION ?= 0.3
ITERATIONS ?= 100
OPTIMIZE_OPTIONS ?=
THRESHOLD ?= 0.5

# The domain: a box of SIZE voxels unless the workflow gives another (a
# --mesh, which it then lists as a prerequisite of model.nc).
GEOMETRY ?= --box $(SIZE)
VOXELIZE_ARGS = $(GEOMETRY) --voxel-size $(VOXEL_SIZE) --problem $(PROBLEM) $(VOXELIZE_OPTIONS)
OPTIMIZE_ARGS = --volume-fraction $(VOLUME_FRACTION) --max-iterations $(ITERATIONS) $(OPTIMIZE_OPTIONS)
EXPORT_ARGS = --threshold $(THRESHOLD)

all: design.vti design.vtu

model.nc: $(PROBLEM) model.settings
	$(VOXELIZE) $(VOXELIZE_ARGS) -o $@

design.nc: model.nc $(PROBLEM) design.settings
	$(OPTIMIZE) model.nc $(OPTIMIZE_ARGS) -o $@

design.vti: design.nc $(PROBLEM)
	$(EXPORT) design.nc -o $@

design.vtu: design.nc $(PROBLEM) export.settings
	$(EXPORT) design.nc $(EXPORT_ARGS) -o $@

# Each stage's settings are kept in a file that is rewritten, as this
# Makefile is read, only when they differ: its date tells make when they
# last changed (and make -n / -q see it too).
settings = $(shell echo '$(2)' | cmp -s - $(1) || echo '$(2)' >$(1))
ifeq ($(filter clean,$(MAKECMDGOALS)),)
$(call settings,model.settings,$(VOXELIZE_ARGS))
$(call settings,design.settings,$(OPTIMIZE_ARGS))
$(call settings,export.settings,$(EXPORT_ARGS))
endif

clean:
	rm -f model.nc design.nc design.vti design.vtu model.settings design.settings export.settings

.PHONY: all clean
