/* SPDX-License-Identifier: BSD-3-Clause */
/* The FP16 check of bench_cell (cell_fp16.c): C^H and the bulk modulus's
 * sensitivities of the cell `model` (density = the physical design) from its
 * six fields solved in double, against the same from the fields rounded to
 * half precision. Prints one line; 0 on success. */
#ifndef VOXFE_BENCH_CELL_FP16_H
#define VOXFE_BENCH_CELL_FP16_H

#include "voxfe/voxfe.h"

int cell_fp16_check(vox_context *ctx, vox_backend *be, const vox_model *model, double penalty,
                    double emin);

#endif
