/* SPDX-License-Identifier: BSD-3-Clause */
/* Minimal test assertions for the C test programs: each failed check prints
 * file:line and the expression, and the program exits non-zero at the end. */
#ifndef VOXFE_TESTS_CHECK_H
#define VOXFE_TESTS_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_failures = 0;

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
      check_failures++;                                                          \
    }                                                                            \
  } while (0)

/* |a - b| <= tol * max(1, |b|) */
#define CHECK_CLOSE(a, b, tol)                                                   \
  do {                                                                           \
    double check_a_ = (a), check_b_ = (b);                                       \
    double check_s_ = fabs(check_b_) > 1 ? fabs(check_b_) : 1;                   \
    if (!(fabs(check_a_ - check_b_) <= (tol) * check_s_)) {                      \
      fprintf(stderr, "%s:%d: %s = %.17g, expected %s = %.17g (tol %g)\n",       \
              __FILE__, __LINE__, #a, check_a_, #b, check_b_, (double)(tol));     \
      check_failures++;                                                          \
    }                                                                            \
  } while (0)

#define CHECK_OK(ctx, call)                                                      \
  do {                                                                           \
    vox_status check_s_ = (call);                                                \
    if (check_s_ != VOX_OK) {                                                    \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,       \
              vox_context_message(ctx));                                         \
      check_failures++;                                                          \
    }                                                                            \
  } while (0)

/* Whether a test program runs the part `name`: all parts without
 * arguments, else the parts named by them. */
static inline int check_wanted(int argc, char **argv, const char *name) {
  if (argc < 2) return 1;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], name) == 0) return 1;
  return 0;
}

#define CHECK_DONE()                                                             \
  do {                                                                           \
    if (check_failures) fprintf(stderr, "%d check(s) failed\n", check_failures); \
    return check_failures ? 1 : 0;                                               \
  } while (0)

#endif
