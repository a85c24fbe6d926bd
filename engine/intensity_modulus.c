/* SPDX-License-Identifier: BSD-3-Clause */
/* Young's modulus from calibrated CT intensity through a density-modulus
 * power law (voxfe/analysis.h): heterogeneous tissue moduli for a micro-FE
 * analysis whose labels alone would give every bone voxel one E. */
#include <math.h>
#include <stdlib.h>

#include "voxfe/analysis.h"

void vox_density_modulus_default(vox_density_modulus *law) {
  *law = (vox_density_modulus){.slope = 0.001, .intercept = 0, .a = 8920, .b = 1.83,
                               .min_modulus = 1};
}

vox_status vox_intensity_moduli(vox_context *ctx, const vox_model *model,
                                const vox_density_modulus *law, double *moduli, size_t *floored) {
  if (!model->intensity)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "the model has no intensity (voxfe-voxelize --keep-intensity keeps it)");
  if (!(law->a > 0) || !isfinite(law->a) || !isfinite(law->b) || !isfinite(law->slope) ||
      !isfinite(law->intercept) || !(law->min_modulus > 0) || !isfinite(law->min_modulus))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "density-modulus law: a (%g) and the minimum modulus (%g) must be positive, "
                     "b (%g) and the calibration (%g, %g) finite",
                     law->a, law->min_modulus, law->b, law->slope, law->intercept);
  const int64_t ne = vox_grid_elements(&model->grid);
  int64_t bad = -1;
  size_t low = 0;
#pragma omp parallel for schedule(static) reduction(+ : low) reduction(max : bad)
  for (int64_t e = 0; e < ne; e++) {
    moduli[e] = 0;
    if (!model->label[e]) continue;
    const double value = model->intensity[e];
    if (!isfinite(value)) {
      bad = e > bad ? e : bad;
      continue;
    }
    const double rho = law->slope * value + law->intercept;
    const double E = rho > 0 ? law->a * pow(rho, law->b) : 0;
    if (E < law->min_modulus) low++;
    moduli[e] = E < law->min_modulus ? law->min_modulus : E;
  }
  if (bad >= 0)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "element %lld: the intensity is not a number",
                     (long long)bad);
  if (floored) *floored = low;
  return VOX_OK;
}
