/* SPDX-License-Identifier: BSD-3-Clause */
/* Names of the solver's and the backend's choices on the command line. */
#include "cli_solver_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "voxfe/voxfe.h"

int cli_parse_preconditioner(const char *what, const char *text, void *value) {
  if (vox_preconditioner_parse(text, value) != 0) {
    cli_error("%s: expected multigrid or jacobi, got '%s'", what, text);
    return -1;
  }
  return 0;
}

void cli_format_preconditioner(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_preconditioner_name(*(const vox_preconditioner *)value));
}

int cli_parse_smoother(const char *what, const char *text, void *value) {
  if (vox_smoother_parse(text, value) != 0) {
    cli_error("%s: expected chebyshev or jacobi, got '%s'", what, text);
    return -1;
  }
  return 0;
}

void cli_format_smoother(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_smoother_name(*(const vox_smoother *)value));
}

int cli_parse_mg_cycle(const char *what, const char *text, void *value) {
  if (vox_mg_cycle_parse(text, value) != 0) {
    cli_error("%s: expected w, v or auto, got '%s'", what, text);
    return -1;
  }
  return 0;
}

void cli_format_mg_cycle(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_mg_cycle_name(*(const vox_mg_cycle *)value));
}

int cli_parse_precision(const char *what, const char *text, void *value) {
  if (vox_precision_parse(text, value) != 0) {
    cli_error("%s: expected double or mixed, got '%s'", what, text);
    return -1;
  }
  return 0;
}

void cli_format_precision(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_precision_name(*(const vox_precision *)value));
}

int cli_parse_kernel(const char *what, const char *text, void *value) {
  if (vox_kernel_parse(text, value) != 0) {
    cli_error("%s: expected auto, dbd, nbn, ebe or modes, got '%s'", what, text);
    return -1;
  }
  return 0;
}

void cli_format_kernel(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_kernel_name(*(const vox_kernel *)value));
}

int cli_parse_fp16_levels(const char *what, const char *text, void *value) {
  if (vox_fp16_levels_parse(text, value) != 0) {
    cli_error("%s: expected auto, on or off, got '%s'", what, text);
    return -1;
  }
  return 0;
}

void cli_format_fp16_levels(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_fp16_levels_name(*(const vox_fp16_levels *)value));
}

int cli_parse_stencil_kernel(const char *what, const char *text, void *value) {
  if (vox_stencil_kernel_parse(text, value) != 0) {
    cli_error("%s: expected auto, row or warp, got '%s'", what, text);
    return -1;
  }
  return 0;
}

void cli_format_stencil_kernel(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_stencil_kernel_name(*(const vox_stencil_kernel *)value));
}

int cli_parse_device(const char *what, const char *text, void *value) {
  if (vox_device_parse(text, value) != 0) {
    cli_error("%s: expected cpu, cuda or auto, got '%s'", what, text);
    return -1;
  }
  return 0;
}

void cli_format_device(const void *value, char *buf, size_t size) {
  vox_device d = *(const vox_device *)value;
  snprintf(buf, size, "%s", d == VOX_DEVICE_CPU ? "cpu" : d == VOX_DEVICE_CUDA ? "cuda" : "auto");
}

int cli_parse_sparse_coarse(const char *what, const char *text, void *value) {
  if (vox_sparse_coarse_parse(text, value) != 0) {
    cli_error("%s: expected split, box or sa, got '%s'", what, text);
    return -1;
  }
  return 0;
}

void cli_format_sparse_coarse(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_sparse_coarse_name(*(const vox_sparse_coarse *)value));
}

int cli_parse_sa_fine_transfer(const char *what, const char *text, void *value) {
  if (vox_sa_fine_transfer_parse(text, value) != 0) {
    cli_error("%s: expected implicit or explicit, got '%s'", what, text);
    return -1;
  }
  return 0;
}

void cli_format_sa_fine_transfer(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_sa_fine_transfer_name(*(const vox_sa_fine_transfer *)value));
}

/* "D0,D1,...": up to VOX_SPARSE_MAX_DEGREES degrees of 0 to 63 (0: as the
 * level before). */
int cli_parse_sparse_degrees(const char *what, const char *text, void *value) {
  int *degree = value, n = 0;
  int parsed[VOX_SPARSE_MAX_DEGREES] = {0};
  const char *c = text;
  for (;;) {
    char *end;
    const long d = strtol(c, &end, 10);
    if (end == c || d < 0 || d > 63 || n == VOX_SPARSE_MAX_DEGREES || (*end && *end != ',')) {
      cli_error("%s: expected up to %d comma-separated degrees of 0 to 63, got '%s'", what,
                (int)VOX_SPARSE_MAX_DEGREES, text);
      return -1;
    }
    parsed[n++] = (int)d;
    if (!*end) break;
    c = end + 1;
  }
  memcpy(degree, parsed, sizeof parsed);
  return 0;
}

void cli_format_sparse_degrees(const void *value, char *buf, size_t size) {
  const int *degree = value;
  int last = 0;
  for (int l = 0; l < VOX_SPARSE_MAX_DEGREES; l++)
    if (degree[l] > 0) last = l;
  size_t used = 0;
  buf[0] = 0;
  for (int l = 0; l <= last && used < size; l++)
    used += (size_t)snprintf(buf + used, size - used, "%s%d", l ? "," : "", degree[l]);
}
