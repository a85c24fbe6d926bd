/* SPDX-License-Identifier: BSD-3-Clause */
/* --help and --usage from a program's option table (cli_help.h says why
 * not argp's). */
#include "cli_help.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Where the short and the long option start on an option's line. */
enum { SHORT_COLUMN = 2, LONG_COLUMN = 6, USAGE_INDENT = 12 };

/* The options every program has; cli_options.c parses them. */
const cli_option cli_help_options[] = {
    {.name = "help", .key = '?', .kind = CLI_ENABLE, .help = "print this help and exit"},
    {.name = "usage", .kind = CLI_ENABLE, .help = "print a short usage message and exit"},
    {.name = "version", .key = 'V', .kind = CLI_ENABLE,
     .help = "print the program's name and version and exit"},
    {.kind = CLI_END}};

/* A text printed word by word: `column` is where the next character goes. */
typedef struct filler {
  FILE *out;
  int column;
} filler;

static void spaces(filler *f, int n) {
  for (int i = 0; i < n; i++) fputc(' ', f->out);
  f->column += n > 0 ? n : 0;
}

static void newline(filler *f) {
  fputc('\n', f->out);
  f->column = 0;
}

static void put(filler *f, const char *s, size_t n) {
  fwrite(s, 1, n, f->out);
  f->column += (int)n;
}

/* The words of s[0, n) filled into lines of CLI_HELP_WIDTH columns, the
 * lines after the first starting at `indent`. A word longer than a line
 * gets a line of its own. */
static void fill(filler *f, const char *s, size_t n, int indent) {
  const char *end = s + n;
  int first = 1;
  while (s < end) {
    while (s < end && *s == ' ') s++;
    const char *word = s;
    while (s < end && *s != ' ') s++;
    const size_t len = (size_t)(s - word);
    if (len == 0) break;
    if (!first && f->column + 1 + (int)len > CLI_HELP_WIDTH && f->column > indent) {
      newline(f);
      spaces(f, indent);
    } else if (!first) {
      spaces(f, 1);
    }
    put(f, word, len);
    first = 0;
  }
}

/* A text of lines: each filled (its lines after the first at `indent`), an
 * empty one left empty, one that begins with a space printed as it is. The
 * first starts where the filler is, the others at `indent`; each ends with a
 * newline. */
static void paragraphs(filler *f, const char *text, int indent) {
  for (const char *line = text;;) {
    const char *nl = strchr(line, '\n');
    const size_t n = nl ? (size_t)(nl - line) : strlen(line);
    if (n > 0 && f->column == 0) spaces(f, indent);
    if (n > 0 && line[0] == ' ')
      put(f, line, n);
    else
      fill(f, line, n, indent);
    newline(f);
    if (!nl) return;
    line = nl + 1;
  }
}

/* --help's line of one option: "  -o, --output=FILE" then its text at the
 * documentation column (three columns past a head that reaches it). */
static void option_entry(filler *f, const cli_option *o, const char *doc) {
  spaces(f, SHORT_COLUMN);
  if (o->key) {
    char head[4] = {'-', (char)o->key, ',', '\0'};
    put(f, head, 3);
  }
  spaces(f, LONG_COLUMN - f->column);
  put(f, "--", 2);
  put(f, o->name, strlen(o->name));
  if (o->arg && o->kind != CLI_ENABLE && o->kind != CLI_DISABLE) {
    put(f, "=", 1);
    put(f, o->arg, strlen(o->arg));
  }
  spaces(f, f->column < CLI_HELP_DOC_COLUMN ? CLI_HELP_DOC_COLUMN - f->column : 3);
  paragraphs(f, doc, CLI_HELP_DOC_COLUMN);
}

static int by_name(const void *a, const void *b) {
  const cli_option *const *x = a, *const *y = b;
  return strcasecmp((*x)->name, (*y)->name);
}

/* The options of the group that starts at `first` (up to the next heading
 * or the end), sorted by name, in `sorted` (room for OPTIONS_ROOM); their
 * number. */
enum { OPTIONS_ROOM = 256 };
static size_t sorted_group(const cli_option *first, const cli_option **sorted) {
  size_t n = 0;
  for (; first[n].kind != CLI_END && first[n].kind != CLI_HEADING && n < OPTIONS_ROOM; n++)
    sorted[n] = &first[n];
  qsort(sorted, n, sizeof *sorted, by_name);
  return n;
}

/* --help's lines of one group's options; their defaults from `settings`
 * (NULL: the help alone). */
static void group_entries(filler *f, const cli_option *first, const void *settings) {
  const cli_option *sorted[OPTIONS_ROOM];
  const size_t n = sorted_group(first, sorted);
  for (size_t i = 0; i < n; i++) {
    if (!settings) {
      option_entry(f, sorted[i], sorted[i]->help);
      continue;
    }
    char room[1024], *doc = room;
    const int len = cli_describe_option(sorted[i], settings, room, sizeof room);
    if (len >= (int)sizeof room && (doc = malloc((size_t)len + 1)))
      cli_describe_option(sorted[i], settings, doc, (size_t)len + 1);
    option_entry(f, sorted[i], doc ? doc : room); /* out of memory: cut short */
    if (doc != room) free(doc);
  }
}

/* The arguments' first line from where the filler is, then
 * "  or:  NAME [OPTION...] ..." for each further line of them; each whole on
 * one line, as help2man reads a synopsis. */
static void argument_lines(filler *f, const cli_program *program) {
  const char *args = program->args_doc ? program->args_doc : "";
  for (int first = 1;; first = 0) {
    const char *nl = strchr(args, '\n');
    const size_t n = nl ? (size_t)(nl - args) : strlen(args);
    if (!first) {
      put(f, "  or:  ", 7);
      put(f, program->name, strlen(program->name));
      put(f, " [OPTION...]", 12);
    }
    if (n > 0) {
      spaces(f, 1);
      put(f, args, n);
    }
    newline(f);
    if (!nl) return;
    args = nl + 1;
  }
}

void cli_print_help(const cli_program *program, const void *settings, FILE *out) {
  filler f = {out, 0};
  put(&f, "Usage: ", 7);
  put(&f, program->name, strlen(program->name));
  put(&f, " [OPTION...]", 12);
  argument_lines(&f, program);
  paragraphs(&f, program->doc, 0);
  const cli_option *o = program->options;
  int short_with_argument = 0;
  for (const cli_option *p = o; p->kind != CLI_END; p++)
    short_with_argument |= p->key && p->arg && p->kind != CLI_ENABLE && p->kind != CLI_DISABLE;
  if (o->kind != CLI_HEADING && o->kind != CLI_END) { /* options before any heading */
    newline(&f);
    group_entries(&f, o, settings);
  }
  for (; o->kind != CLI_END; o++) {
    if (o->kind != CLI_HEADING) continue;
    newline(&f);
    spaces(&f, 1);
    paragraphs(&f, o->help, 1);
    group_entries(&f, o + 1, settings);
  }
  newline(&f);
  group_entries(&f, cli_help_options, NULL);
  if (short_with_argument) {
    newline(&f);
    paragraphs(&f,
               "A short option takes its value as the next word (-o FILE), a long one "
               "after '=' or as the next word (--output=FILE, --output FILE).",
               0);
  }
  newline(&f);
  paragraphs(&f, "Exit status: 0 on success, 1 if the run failed, 2 for bad usage or bad input.",
             0);
  if (program->epilogue) {
    newline(&f);
    paragraphs(&f, program->epilogue, 0);
  }
}

/* "[-o FILE]" or "[--name=ARG]" into the usage line, on a new line if it
 * does not fit. */
static void usage_item(filler *f, const char *text) {
  const int len = (int)strlen(text);
  if (f->column + 1 + len > CLI_HELP_WIDTH && f->column > USAGE_INDENT) {
    newline(f);
    spaces(f, USAGE_INDENT);
  } else {
    spaces(f, 1);
  }
  put(f, text, (size_t)len);
}

static int takes_value(const cli_option *o) {
  return o->arg && o->kind != CLI_ENABLE && o->kind != CLI_DISABLE && o->kind != CLI_HEADING;
}

void cli_print_usage(const cli_program *program, FILE *out) {
  filler f = {out, 0};
  put(&f, "Usage: ", 7);
  put(&f, program->name, strlen(program->name));
  const cli_option *tables[2] = {program->options, cli_help_options};
  char item[256];
  /* the short flags together, "[-q?V]" */
  size_t n = 0;
  item[n++] = '[', item[n++] = '-';
  for (int t = 0; t < 2; t++)
    for (const cli_option *o = tables[t]; o->kind != CLI_END; o++)
      if (o->key && o->kind != CLI_HEADING && !takes_value(o) && n < sizeof item - 2)
        item[n++] = (char)o->key;
  item[n++] = ']', item[n] = '\0';
  if (n > 3) usage_item(&f, item);
  for (const cli_option *o = program->options; o->kind != CLI_END; o++)
    if (o->key && takes_value(o)) {
      snprintf(item, sizeof item, "[-%c %s]", o->key, o->arg);
      usage_item(&f, item);
    }
  /* the long options, group by group, each sorted */
  for (int t = 0; t < 2; t++)
    for (const cli_option *o = tables[t]; o->kind != CLI_END; o++) {
      if (o != tables[t] && o->kind != CLI_HEADING) continue;
      const cli_option *sorted[OPTIONS_ROOM];
      const size_t count = sorted_group(o->kind == CLI_HEADING ? o + 1 : o, sorted);
      for (size_t i = 0; i < count; i++) {
        if (takes_value(sorted[i]))
          snprintf(item, sizeof item, "[--%s=%s]", sorted[i]->name, sorted[i]->arg);
        else
          snprintf(item, sizeof item, "[--%s]", sorted[i]->name);
        usage_item(&f, item);
      }
    }
  /* the arguments' first line on a line of its own where it does not fit */
  const char *args = program->args_doc ? program->args_doc : "";
  const size_t first_line = strcspn(args, "\n");
  if (f.column + 1 + (int)first_line > CLI_HELP_WIDTH) {
    newline(&f);
    spaces(&f, USAGE_INDENT - 1);
  }
  argument_lines(&f, program);
}
