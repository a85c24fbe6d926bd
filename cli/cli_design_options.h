/* SPDX-License-Identifier: BSD-3-Clause */
/* The options of a periodic cell's design that voxfe-optimize
 * takes next to --objective: --symmetry, --initial, --seed, --initial-order
 * and --expression, as option-table entries and the parsers of their
 * values (engine: voxfe/symmetry.h, voxfe/initial_design.h,
 * voxfe/expression.h). */
#ifndef VOXFE_CLI_DESIGN_OPTIONS_H
#define VOXFE_CLI_DESIGN_OPTIONS_H

#include <limits.h>
#include <stddef.h>

#include "cli_options.h"

/* --symmetry not given: the model file's (a problem file's `cell:`), else
 * none; the program resolves it. */
#define CLI_SYMMETRY_FROM_MODEL ((vox_symmetry)-1)

/* --initial auto: the input's density where it has one (a design to go on
 * with), else uniform; the program resolves it. */
#define CLI_INITIAL_AUTO ((vox_initial_kind)-1)

/* CLI_CUSTOM callbacks: a vox_symmetry, a vox_initial_kind (or
 * CLI_INITIAL_AUTO), a uint64_t seed
 * (0 to 2^64 - 1), and a `const char *` formula that must parse (checked
 * here, so that a typo is a usage error naming the character, before any
 * file is read). */
int cli_parse_symmetry(const char *what, const char *text, void *value);
void cli_format_symmetry(const void *value, char *buf, size_t size);
int cli_parse_initial(const char *what, const char *text, void *value);
void cli_format_initial(const void *value, char *buf, size_t size);
int cli_parse_seed(const char *what, const char *text, void *value);
void cli_format_seed(const void *value, char *buf, size_t size);
int cli_parse_expression(const char *what, const char *text, void *value);
void cli_format_expression(const void *value, char *buf, size_t size);

/* The "Periodic cell:" entries of an option table, for members of the
 * settings struct TYPE: SYMMETRY a vox_symmetry, INIT a vox_initial_design
 * (kind, seed and order set here; the volume fraction, rho_min and symmetry
 * are the program's to fill in), EXPRESSION a const char *. The program
 * sets INIT.kind to CLI_INITIAL_AUTO or to a kind before parsing. */
#define CLI_DESIGN_OPTIONS(TYPE, SYMMETRY, INIT, EXPRESSION)                                      \
  {.kind = CLI_HEADING,                                                                           \
   .help = "Design symmetry and start (periodic cells, Zhang et al. 2023):"},                     \
  {.name = "symmetry", .arg = "S", .kind = CLI_CUSTOM, .offset = offsetof(TYPE, SYMMETRY),        \
   .flags = CLI_RECORD,                                                                           \
   .help = "symmetry of the design, enforced on the start, the sensitivities and the density "   \
           "every iteration: none, reflect3 (mirrors in the mid-planes), reflect6 (and in the "   \
           "diagonal planes: the cube's 48 symmetries) or rotate3 (the cube's 24 rotations); "    \
           "reflect6 and rotate3 need a cubic grid",                                              \
   .default_text = "the model file's cell symmetry, else none",                                   \
   .parse = cli_parse_symmetry, .format = cli_format_symmetry},                                   \
  {.name = "initial", .arg = "KIND", .kind = CLI_CUSTOM, .offset = offsetof(TYPE, INIT.kind),     \
   .flags = CLI_RECORD,                                                                           \
   .help = "starting density of the design voxels, with the volume fraction as its mean: "        \
           "uniform, random (per element), trigonometric (a random mix of cos/sin waves and "     \
           "their products, Zhang et al. 2023 section 6.2), or auto (the input's density "        \
           "when it is a design file, else uniform)",                                             \
   .parse = cli_parse_initial, .format = cli_format_initial},                                     \
  {.name = "seed", .arg = "N", .kind = CLI_CUSTOM, .offset = offsetof(TYPE, INIT.seed),           \
   .flags = CLI_RECORD, .help = "seed of the random and trigonometric starting designs",          \
   .parse = cli_parse_seed, .format = cli_format_seed},                                           \
  {.name = "initial-order", .arg = "N", .kind = CLI_INTEGER,                                      \
   .offset = offsetof(TYPE, INIT.order), .range = {1, 8, 0, 0}, .flags = CLI_RECORD,              \
   .help = "highest wave number n of the trigonometric starting design"},                         \
  {.name = "expression", .arg = "F", .kind = CLI_CUSTOM, .offset = offsetof(TYPE, EXPRESSION),    \
   .flags = CLI_RECORD | CLI_NO_DEFAULT,                                                          \
   .help = "--objective custom: the formula to minimise, in C11..C66 (the homogenized "           \
           "stiffness, 1-based, Voigt order xx yy zz xy yz zx), iter, pi, numbers, + - * / ^, "   \
           "sqrt log exp abs sin cos min max pow; e.g. \"-(C44 + C55 + C66)/3\"; default: the "   \
           "model file's cell expression",                                                        \
   .parse = cli_parse_expression, .format = cli_format_expression}

#endif
