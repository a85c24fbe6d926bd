/* SPDX-License-Identifier: BSD-3-Clause */
/* The periodic cell's options (cli/cli_design_options.h) through the option
 * parser, in a program of their own: values, defaults, the history text, and
 * one-line usage errors (exit status 2) for bad symmetries, kinds, seeds,
 * orders and formulas, the formula's naming the character. */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "cli_design_options.h"
#include "voxfe/voxfe.h"

typedef struct settings {
  vox_symmetry symmetry;
  vox_initial_design init;
  const char *expression;
} settings;

static const cli_option options[] = {
    CLI_DESIGN_OPTIONS(settings, symmetry, init, expression),
    {.kind = CLI_END},
};

static const cli_program program = {
    .name = "test-design-options", .args_doc = "", .doc = "test", .options = options};

static char err_path[] = "/tmp/voxfe-design-options-XXXXXX";

/* Parses the arguments after a program name into s (from the defaults);
 * returns the status and leaves stderr's text in `err`. */
static int parse(settings *s, char *err, size_t size, int argc, const char **args) {
  vox_initial_design_defaults(&s->init);
  s->symmetry = VOX_SYMMETRY_NONE, s->expression = NULL;
  char *argv[16] = {"test-design-options"};
  for (int i = 0; i < argc; i++) argv[i + 1] = (char *)args[i];
  fflush(stderr);
  FILE *f = freopen(err_path, "w+", stderr);
  const int status = cli_parse(&program, argc + 1, argv, s);
  fflush(stderr);
  err[0] = 0;
  if (f) {
    rewind(f);
    const size_t n = fread(err, 1, size - 1, f);
    err[n] = 0;
  }
  return status;
}

int main(void) {
  int fd = mkstemp(err_path);
  if (fd < 0) return 1;
  close(fd);
  settings s;
  char err[1024];
  const char *good[] = {"--symmetry", "reflect6", "--initial", "trig",
                        "--seed", "18446744073709551615", "--initial-order", "3",
                        "--expression", "-(C44 + C55 + C66)/3"};
  CHECK(parse(&s, err, sizeof err, 10, good) == 0);
  CHECK(s.symmetry == VOX_SYMMETRY_REFLECT6);
  CHECK(s.init.kind == VOX_INITIAL_TRIGONOMETRIC);
  CHECK(s.init.seed == UINT64_MAX);
  CHECK(s.init.order == 3);
  CHECK(s.expression && strcmp(s.expression, "-(C44 + C55 + C66)/3") == 0);
  CHECK(err[0] == 0);

  const char *none[] = {"--initial", "random"};
  CHECK(parse(&s, err, sizeof err, 2, none) == 0);
  CHECK(s.init.kind == VOX_INITIAL_RANDOM && s.init.seed == 1 && s.init.order == 2);
  CHECK(s.symmetry == VOX_SYMMETRY_NONE && s.expression == NULL);
  const char *automatic[] = {"--initial", "auto"};
  CHECK(parse(&s, err, sizeof err, 2, automatic) == 0);
  CHECK(s.init.kind == CLI_INITIAL_AUTO);
  char text[32];
  cli_format_initial(&s.init.kind, text, sizeof text);
  CHECK(strcmp(text, "auto") == 0);

  struct {
    const char *option, *value, *message;
  } bad[] = {
      {"--symmetry", "mirror", "expected none, reflect3, reflect6 or rotate3, got 'mirror'"},
      {"--initial", "sine", "expected uniform, random, trigonometric or auto, got 'sine'"},
      {"--seed", "-1", "expected an integer from 0 to 18446744073709551615"},
      {"--seed", "18446744073709551616", "expected an integer from 0"},
      {"--seed", "12x", "expected an integer from 0"},
      {"--initial-order", "9", "--initial-order"},
      {"--expression", "C11 + * C22", "at character 7: expected a number, a name or '('"},
      {"--expression", "C77", "at character 1: unknown name 'C77'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    const char *args[] = {bad[i].option, bad[i].value};
    const int status = parse(&s, err, sizeof err, 2, args);
    const char *nl = strchr(err, '\n');
    if (status != 2 || !strstr(err, bad[i].message) || !nl || nl[1]) {
      fprintf(stdout, "%s %s: status %d, message '%s', expected '%s'\n", bad[i].option,
              bad[i].value, status, err, bad[i].message);
      check_failures++;
    }
  }
  /* stderr went to the file; report there too */
  remove(err_path);
  if (check_failures) fprintf(stdout, "%d check(s) failed\n", check_failures);
  return check_failures ? 1 : 0;
}
