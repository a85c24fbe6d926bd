/* SPDX-License-Identifier: BSD-3-Clause */
/* Values of the periodic cell's options (cli_design_options.h). */
#include "cli_design_options.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "voxfe/voxfe.h"

int cli_parse_symmetry(const char *what, const char *text, void *value) {
  if (vox_symmetry_parse(text, value) != 0) {
    cli_error("%s: expected none, reflect3, reflect6 or rotate3, got '%s'", what, text);
    return -1;
  }
  return 0;
}

void cli_format_symmetry(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%s", vox_symmetry_name(*(const vox_symmetry *)value));
}

int cli_parse_initial(const char *what, const char *text, void *value) {
  if (strcmp(text, "auto") == 0) {
    *(vox_initial_kind *)value = CLI_INITIAL_AUTO;
    return 0;
  }
  if (vox_initial_parse(text, value) != 0) {
    cli_error("%s: expected uniform, random, trigonometric or auto, got '%s'", what, text);
    return -1;
  }
  return 0;
}

void cli_format_initial(const void *value, char *buf, size_t size) {
  const vox_initial_kind kind = *(const vox_initial_kind *)value;
  snprintf(buf, size, "%s", kind == CLI_INITIAL_AUTO ? "auto" : vox_initial_name(kind));
}

int cli_parse_seed(const char *what, const char *text, void *value) {
  char *end;
  errno = 0;
  const unsigned long long v = strtoull(text, &end, 10);
  /* strtoull takes a sign and wraps "-1" around: digits only */
  if (text[0] < '0' || text[0] > '9' || *end || errno == ERANGE) {
    cli_error("%s: expected an integer from 0 to %" PRIu64 ", got '%s'", what, UINT64_MAX, text);
    return -1;
  }
  *(uint64_t *)value = (uint64_t)v;
  return 0;
}

void cli_format_seed(const void *value, char *buf, size_t size) {
  snprintf(buf, size, "%" PRIu64, *(const uint64_t *)value);
}

int cli_parse_expression(const char *what, const char *text, void *value) {
  vox_context *ctx = cli_context();
  if (!ctx) return -1;
  vox_expression *e = NULL;
  const vox_status st = vox_expression_parse(ctx, text, &e);
  if (st != VOX_OK) cli_error("%s: %s", what, vox_context_message(ctx));
  vox_expression_free(e);
  vox_context_destroy(ctx);
  if (st != VOX_OK) return -1;
  *(const char **)value = text;
  return 0;
}

void cli_format_expression(const void *value, char *buf, size_t size) {
  const char *text = *(const char *const *)value;
  snprintf(buf, size, "%s", text ? text : "");
}
