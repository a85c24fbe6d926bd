/* SPDX-License-Identifier: BSD-3-Clause */
/* The index of a word in a table of an enum's names (private): what the
 * engine's vox_*_parse functions look their words up in. */
#ifndef VOXFE_NAME_TABLE_H
#define VOXFE_NAME_TABLE_H

#include <string.h>

/* i where names[i] is text, or -1 (n names). */
static inline int vox_name_index(const char *text, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(text, names[i]) == 0) return i;
  return -1;
}

#endif
