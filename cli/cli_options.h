/* SPDX-License-Identifier: BSD-3-Clause */
/* Command-line options declared once, as data: each program lists its options
 * in a table (name, type, where the value goes, accepted range, help), and
 * this module turns the table into argp's --help and parser, and into the
 * "resolved options" written to the output file's history.
 *
 * Every usage error is one line on stderr ("voxfe-optimize: ...") and exit
 * status 2; --help and --version print to stdout and exit 0. */
#ifndef VOXFE_CLI_OPTIONS_H
#define VOXFE_CLI_OPTIONS_H

#include <stddef.h>

#include "cli_numbers.h"

typedef enum cli_kind {
  CLI_END = 0, /* ends a table */
  CLI_HEADING, /* a group title in --help; only `help` is used */
  CLI_REAL,    /* double, checked against `range` */
  CLI_INTEGER, /* int, checked against `range` */
  CLI_STRING,  /* const char *, pointing into argv */
  CLI_ENABLE,  /* flag without argument: stores 1 in an int */
  CLI_DISABLE, /* flag without argument: stores 0 in an int */
  CLI_CUSTOM   /* parsed and formatted by the `parse` and `format` callbacks */
} cli_kind;

enum cli_option_flags {
  CLI_REQUIRED = 1u,  /* missing from the command line is a usage error */
  CLI_RECORD = 2u,    /* its resolved value goes into the history */
  CLI_NO_DEFAULT = 4u /* --help shows no "(default: ...)" */
};

typedef struct cli_option {
  const char *name;         /* long name without the dashes */
  int key;                  /* short option letter, or 0 for long only */
  const char *arg;          /* the argument's name in --help ("F", "FILE") */
  cli_kind kind;
  size_t offset;            /* of the value in the program's settings struct */
  cli_range range;          /* CLI_REAL and CLI_INTEGER */
  unsigned flags;           /* enum cli_option_flags */
  const char *help;
  const char *default_text; /* shown as the default instead of the value */
  /* CLI_CUSTOM: parse prints its own message and returns -1 on bad text;
   * format writes the value as the option would take it. */
  int (*parse)(const char *what, const char *text, void *value);
  void (*format)(const void *value, char *buf, size_t size);
} cli_option;

typedef struct cli_program {
  const char *name;         /* "voxfe-optimize": --version and every message */
  const char *args_doc;     /* the usage line after the name */
  const char *doc;          /* what the program does, for --help */
  const char *epilogue;     /* printed after the options in --help, or NULL */
  const cli_option *options;/* ends with a CLI_END entry */
  const char *input;        /* the positional input's name ("MODEL.nc"), or NULL */
  size_t input_offset;      /* where it goes (a const char * in settings) */
} cli_program;

/* Parses the command line into `settings`, which already holds the defaults
 * (--help shows them from there); `argv` itself is left as it is. Returns
 * 0, or the exit status (CLI_EXIT_USAGE) after one line on stderr. --help,
 * --usage and --version exit 0 from here. */
int cli_parse(const cli_program *program, int argc, char **argv, void *settings);

/* The --help text of one option: its help, then its default (from
 * `settings`) or "(required)"; its length, as snprintf's. */
int cli_describe_option(const cli_option *o, const void *settings, char *doc, size_t size);

/* The line a program appends to the output file's history: its command line,
 * quoted so that a shell runs it again, then the resolved value of every
 * CLI_RECORD option, defaults included:
 *   voxfe-optimize model.nc -o design.nc [resolved: --volume-fraction=0.3 ...]
 * malloc'd; NULL when out of memory. */
char *cli_history_line(const cli_program *program, const void *settings, int argc,
                       char **argv);

#endif
