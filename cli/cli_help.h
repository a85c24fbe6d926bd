/* SPDX-License-Identifier: BSD-3-Clause */
/* The --help and --usage text of a program's option table.
 *
 * The layout is argp's (options at columns 2 and 6, their text at column 29,
 * lines of at most 79 columns, the options of a group sorted by name), which
 * help2man and the bash completion read; the text is laid out here rather
 * than by argp because glibc's argp-fmtstream misplaces a line where it
 * crosses its buffer's boundary and breaks the examples' command lines that
 * users copy. Lines of a text that begin with a space (examples) and the
 * synopsis lines are printed whole, as help2man reads them. */
#ifndef VOXFE_CLI_HELP_H
#define VOXFE_CLI_HELP_H

#include <stdio.h>

#include "cli_options.h"

/* Columns of the layout. */
enum { CLI_HELP_DOC_COLUMN = 29, CLI_HELP_WIDTH = 79 };

/* --help, --usage and --version: the options every program has, which
 * cli_parse adds to the program's (a CLI_END-terminated table). */
extern const cli_option cli_help_options[];

/* The whole --help text, the defaults taken from `settings`. */
void cli_print_help(const cli_program *program, const void *settings, FILE *out);

/* The --usage text: every option in brackets, then the arguments. */
void cli_print_usage(const cli_program *program, FILE *out);

#endif
