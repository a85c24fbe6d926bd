/* Names of the solver's and the backend's choices on the command line. */
#include "cli_solver_options.h"

#include <stdio.h>

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
    cli_error("%s: expected w or v, got '%s'", what, text);
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
    cli_error("%s: expected auto, dbd, nbn or ebe, got '%s'", what, text);
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
