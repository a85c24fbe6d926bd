/* SPDX-License-Identifier: BSD-3-Clause */
/* Option tables to argp (parsing, usage errors; the help text is
 * cli_help.c's) and to the history line. */
#include "cli_options.h"

#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "cli_help.h"
#include "voxfe/context.h"

/* Room for the argp table built from a program's option table and the help
 * options. */
#define OPTIONS_MAX 128
#define HELP_OPTIONS 3
/* Keys of long-only options: above every character, below ARGP_KEY_ARG;
 * the help options' after the program's. */
#define LONG_KEY_BASE 0x100
#define HELP_KEY_BASE (LONG_KEY_BASE + OPTIONS_MAX)

static struct argp_option argp_options[OPTIONS_MAX + HELP_OPTIONS + 1];

typedef struct parse_state {
  const cli_program *program;
  void *settings;
  unsigned char given[OPTIONS_MAX];
  int n_inputs;
} parse_state;

static void *field(void *settings, const cli_option *o) { return (char *)settings + o->offset; }
static const void *cfield(const void *settings, const cli_option *o) {
  return (const char *)settings + o->offset;
}

static int option_key(const cli_option *o, int index) {
  return o->key ? o->key : LONG_KEY_BASE + index;
}

/* The value of `o` in `settings` as the option would take it; "" for flags
 * and unset strings. */
static void format_value(const cli_option *o, const void *settings, char *buf, size_t size) {
  const void *value = cfield(settings, o);
  buf[0] = '\0';
  switch (o->kind) {
  case CLI_REAL: cli_format_real(*(const double *)value, buf, size); break;
  case CLI_INTEGER: snprintf(buf, size, "%d", *(const int *)value); break;
  case CLI_STRING:
    if (*(const char *const *)value) snprintf(buf, size, "%s", *(const char *const *)value);
    break;
  case CLI_CUSTOM: o->format(value, buf, size); break;
  case CLI_END:
  case CLI_HEADING:
  case CLI_ENABLE:
  case CLI_DISABLE: break;
  }
}

int cli_describe_option(const cli_option *o, const void *settings, char *doc, size_t size) {
  char value[256];
  format_value(o, settings, value, sizeof value);
  const char *shown = o->default_text ? o->default_text : value;
  if (o->flags & CLI_REQUIRED) return snprintf(doc, size, "%s (required)", o->help);
  if (!(o->flags & CLI_NO_DEFAULT) && *shown)
    return snprintf(doc, size, "%s (default: %s)", o->help, shown);
  return snprintf(doc, size, "%s", o->help);
}

/* Fills the static argp table from the program's table and the help
 * options; argp parses, its help is switched off (ARGP_NO_HELP). */
static int build_argp(const cli_program *program, struct argp *argp) {
  int n = 0, m = 0; /* the program's entries, argp's (the headings left out) */
  for (const cli_option *o = program->options; o->kind != CLI_END; o++, n++) {
    if (n == OPTIONS_MAX) {
      cli_error("internal error: more than %d options", OPTIONS_MAX);
      return -1;
    }
    if (o->kind == CLI_HEADING) continue; /* an argp entry of no name, key and doc ends it */
    argp_options[m++] = (struct argp_option){
        .name = o->name,
        .key = option_key(o, n),
        .arg = o->kind == CLI_ENABLE || o->kind == CLI_DISABLE ? NULL : o->arg};
  }
  for (int i = 0; i < HELP_OPTIONS; i++) {
    const cli_option *o = &cli_help_options[i];
    argp_options[m++] =
        (struct argp_option){.name = o->name, .key = o->key ? o->key : HELP_KEY_BASE + i};
  }
  argp_options[m] = (struct argp_option){0};
  memset(argp, 0, sizeof *argp);
  argp->options = argp_options;
  return 0;
}

/* --help, --usage or --version (cli_help_options[which]) printed on stdout;
 * the exit status: 0, or 1 where stdout could not take it. */
static int print_help(int which, const parse_state *ps) {
  const char *name = cli_help_options[which].name;
  if (!strcmp(name, "help"))
    cli_print_help(ps->program, ps->settings, stdout);
  else if (!strcmp(name, "usage"))
    cli_print_usage(ps->program, stdout);
  else
    printf("%s %s\n", cli_program_name(), vox_version());
  if (fflush(stdout) || ferror(stdout)) {
    cli_error("--%s: could not write to the standard output", name);
    return CLI_EXIT_FAILED;
  }
  return CLI_EXIT_OK;
}

/* Stores the text of option `o` in the settings; -1 after a message. */
static int store(const cli_option *o, const char *text, void *settings) {
  char what[80];
  snprintf(what, sizeof what, "--%s", o->name);
  void *value = field(settings, o);
  switch (o->kind) {
  case CLI_REAL: return cli_parse_real(what, text, o->range, value);
  case CLI_INTEGER: {
    long long v;
    if (cli_parse_integer(what, text, o->range, &v)) return -1;
    *(int *)value = (int)v; /* ranges of int options lie within int */
    return 0;
  }
  case CLI_STRING:
    if (!*text) {
      cli_error("%s: expected %s, got an empty text", what, o->arg);
      return -1;
    }
    *(const char **)value = text;
    return 0;
  case CLI_ENABLE: *(int *)value = 1; return 0;
  case CLI_DISABLE: *(int *)value = 0; return 0;
  case CLI_CUSTOM: return o->parse(what, text, value);
  case CLI_END:
  case CLI_HEADING: break;
  }
  return -1;
}

/* Everything that must be there once the whole line is read. */
static int check_complete(const parse_state *ps) {
  const cli_program *program = ps->program;
  int index = 0;
  for (const cli_option *o = program->options; o->kind != CLI_END; o++, index++) {
    if ((o->flags & CLI_REQUIRED) && !ps->given[index]) {
      if (o->key)
        cli_error("missing -%c %s (--%s)", o->key, o->arg, o->name);
      else
        cli_error("missing --%s %s", o->name, o->arg);
      return -1;
    }
  }
  if (program->input && ps->n_inputs == 0) {
    cli_error("missing the input file %s", program->input);
    return -1;
  }
  return 0;
}

static error_t parse_option(int key, char *arg, struct argp_state *state) {
  parse_state *ps = state->input;
  const cli_program *program = ps->program;
  switch (key) {
  case ARGP_KEY_INIT:
    /* argp would follow each usage error with a second "Try --help" line;
     * our messages are one line each, so argp's error stream is switched
     * off (getopt's own one-line messages still reach stderr). */
    state->err_stream = NULL;
    return 0;
  case ARGP_KEY_ARG:
    if (!program->input || ps->n_inputs == 1) {
      cli_error("unexpected argument '%s'", arg);
      return EINVAL;
    }
    *(const char **)((char *)ps->settings + program->input_offset) = arg;
    ps->n_inputs++;
    return 0;
  case ARGP_KEY_END: return check_complete(ps) ? EINVAL : 0;
  default: break;
  }
  for (int i = 0; i < HELP_OPTIONS; i++) {
    const int help_key = cli_help_options[i].key ? cli_help_options[i].key : HELP_KEY_BASE + i;
    if (key == help_key) exit(print_help(i, ps));
  }
  int index = 0;
  for (const cli_option *o = program->options; o->kind != CLI_END; o++, index++) {
    if (o->kind == CLI_HEADING || option_key(o, index) != key) continue;
    if (store(o, arg, ps->settings)) return EINVAL;
    ps->given[index] = 1;
    return 0;
  }
  return ARGP_ERR_UNKNOWN;
}

int cli_parse(const cli_program *program, int argc, char **argv, void *settings) {
  cli_set_program_name(program->name);
  argp_err_exit_status = CLI_EXIT_USAGE;

  struct argp argp;
  if (build_argp(program, &argp)) return CLI_EXIT_USAGE;
  argp.parser = parse_option;

  /* argp works on a copy: getopt reorders the arguments it is given, and
   * the history must record the command line as typed. The copy's argv[0]
   * is the program's name, so that getopt's messages say "voxfe-optimize:"
   * however the program was started. Static, to stay reachable when argp
   * exits after --help (print_help). */
  static char **args;
  int n = argc > 0 ? argc : 1; /* exec may pass no argv[0] at all */
  free(args);
  args = calloc((size_t)n + 1, sizeof *args);
  if (!args) {
    cli_error("out of memory");
    return CLI_EXIT_FAILED;
  }
  for (int i = 0; i < argc; i++) args[i] = argv[i];
  args[0] = (char *)program->name;
  parse_state ps = {.program = program, .settings = settings};
  error_t err = argp_parse(&argp, n, args, ARGP_NO_HELP, NULL, &ps);
  return err ? CLI_EXIT_USAGE : 0;
}

/* --- the history line ---------------------------------------------------- */

/* A growing string; `failed` once an allocation failed. */
typedef struct text {
  char *data;
  size_t len, cap;
  int failed;
} text;

static void append(text *t, const char *s) {
  size_t n = strlen(s);
  if (t->failed) return;
  if (t->len + n + 1 > t->cap) {
    size_t cap = 2 * (t->len + n + 1);
    char *data = realloc(t->data, cap);
    if (!data) {
      t->failed = 1;
      return;
    }
    t->data = data;
    t->cap = cap;
  }
  memcpy(t->data + t->len, s, n + 1);
  t->len += n;
}

/* Appends `s` so that a POSIX shell reads it back as one word. */
static void append_quoted(text *t, const char *s) {
  const char *safe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                     "_@%+=:,./-";
  if (*s && strspn(s, safe) == strlen(s)) {
    append(t, s);
    return;
  }
  append(t, "'");
  for (const char *c = s; *c; c++) {
    char one[2] = {*c, '\0'};
    append(t, *c == '\'' ? "'\\''" : one);
  }
  append(t, "'");
}

char *cli_history_line(const cli_program *program, const void *settings, int argc,
                       char **argv) {
  text t = {0};
  append(&t, program->name);
  for (int i = 1; i < argc; i++) {
    append(&t, " ");
    append_quoted(&t, argv[i]);
  }
  const char *open = " [resolved:";
  for (const cli_option *o = program->options; o->kind != CLI_END; o++) {
    if (!(o->flags & CLI_RECORD)) continue;
    int set = o->kind == CLI_ENABLE || o->kind == CLI_DISABLE
                  ? *(const int *)cfield(settings, o) == (o->kind == CLI_ENABLE)
                  : 1;
    if (!set) continue; /* a flag in its default state */
    char value[256];
    format_value(o, settings, value, sizeof value);
    /* a string not given, or a custom value that formats to nothing (an
     * option of a geometry source not in use), is left out */
    if ((o->kind == CLI_STRING || o->kind == CLI_CUSTOM) && !value[0]) continue;
    append(&t, open);
    open = "";
    append(&t, " --");
    append(&t, o->name);
    if (o->kind != CLI_ENABLE && o->kind != CLI_DISABLE) {
      append(&t, "=");
      append_quoted(&t, value);
    }
  }
  if (!*open) append(&t, "]");
  if (t.failed) {
    free(t.data);
    return NULL;
  }
  return t.data;
}
