/* SPDX-License-Identifier: BSD-3-Clause */
/* The temporary files under way (voxfe/temp_files.h): a
 * fixed table of names, so that a signal handler can walk it without
 * allocating or locking. A slot is claimed by compare-and-swap, filled,
 * then published; the handler reads only published slots. */

#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "voxfe/temp_files.h"

/* Writers under way at once: one per thread of a program (voxfe-analyze's
 * result and n88model files beside the solve), with room to spare. */
enum { SLOTS = 32, NAME_MAX_BYTES = 4096 };
enum { FREE = 0, FILLING = 1, LISTED = 2 };

static char names[SLOTS][NAME_MAX_BYTES];
static atomic_int slot_state[SLOTS];

void vox_temp_register(const char *tmp) {
  const size_t n = strlen(tmp);
  if (n >= NAME_MAX_BYTES) return;
  for (int i = 0; i < SLOTS; i++) {
    int expected = FREE;
    if (atomic_compare_exchange_strong(&slot_state[i], &expected, FILLING)) {
      memcpy(names[i], tmp, n + 1);
      atomic_store(&slot_state[i], LISTED);
      return;
    }
  }
}

void vox_temp_unregister(const char *tmp) {
  for (int i = 0; i < SLOTS; i++)
    if (atomic_load(&slot_state[i]) == LISTED && strcmp(names[i], tmp) == 0) {
      atomic_store(&slot_state[i], FREE);
      return;
    }
}

void vox_temp_files_remove(void) {
  for (int i = 0; i < SLOTS; i++)
    if (atomic_load(&slot_state[i]) == LISTED) unlink(names[i]);
}
