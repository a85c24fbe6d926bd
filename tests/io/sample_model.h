/* SPDX-License-Identifier: BSD-3-Clause */
/* Models the io tests write and read: one with every field set, one bare. */
#ifndef VOXFE_TESTS_IO_SAMPLE_MODEL_H
#define VOXFE_TESTS_IO_SAMPLE_MODEL_H

#include "voxfe/model.h"

/* 5x4x3 voxels of anisotropic size, three materials (one per role), labels
 * with empty voxels, constraints, loads in two named load cases, density,
 * displacement, three history rows (one with NaN), history text and title. */
vox_status sample_full_model(vox_context *ctx, vox_model *model);

/* A grid with labels only: no materials, lists, outputs or text. */
vox_status sample_bare_model(vox_context *ctx, vox_model *model);

#endif
