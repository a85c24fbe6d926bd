/* SPDX-License-Identifier: BSD-3-Clause */
/* Reads a problem file -- the small YAML file in which people say where a
 * voxel model is held, loaded and kept solid or empty (docs/problem-file.md)
 * -- into a vox_problem, checking every value on the way. Geometry is not
 * looked at here: problem_rasterize.c turns the regions into node lists. */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libfyaml.h>

#include "voxfe/expression.h"
#include "voxfe/problem.h"

#define PROBLEM_FORMAT_VERSION 1
/* A problem file is a few hundred bytes; the cap stops a CT volume passed by
 * mistake from being read whole into memory just to fail as bad YAML. */
#define PROBLEM_FILE_MAX (16u << 20)
#define WHERE_MAX 160
/* Aliases (*name) may repeat an anchored part of the file, but libfyaml
 * expands them in place: nine levels of nine aliases in 533 bytes grow to
 * 9^9 nodes and past 5 GB. A problem file needs a few aliases for repeated
 * regions; the copies they make may add at most this many nodes, nested at
 * most ALIAS_DEPTH_MAX deep. */
#define ALIAS_NODES_MAX 100000
#define ALIAS_DEPTH_MAX 256
#define STRINGIFY_VALUE(x) #x
#define STRINGIFY(x) STRINGIFY_VALUE(x)

/* The names of one list (supports, loads, ...) by hash: checking each new
 * name against every earlier one made a file of 64 k supports take a
 * minute. Open addressing; slot.index is the item's index + 1, 0 when free. */
typedef struct name_slot {
  const char *name;
  int index;
} name_slot;

typedef struct name_table {
  name_slot *slots;
  size_t mask;
} name_table;

typedef struct reader {
  vox_context *ctx;
  const char *path;
  name_table *cases; /* the load cases' names, once read */
} reader;

/* One key of a mapping as found in the file; both NULL when absent. The key
 * is kept because an empty value has no position of its own. */
typedef struct entry {
  struct fy_node *key, *value;
} entry;

static const char *const face_names[6] = {"x-", "x+", "y-", "y+", "z-", "z+"};
static const char *const component_names[3] = {"x", "y", "z"};

/* ---- names ---------------------------------------------------------------- */

static size_t name_hash(const char *name) {
  uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
  for (const unsigned char *c = (const unsigned char *)name; *c; c++)
    h = (h ^ *c) * 0x100000001b3u;
  return (size_t)h;
}

/* Room for `n` names, the table at most half full; 0, or -1 out of memory. */
static int name_table_init(name_table *t, int n) {
  size_t capacity = 16;
  while (capacity < 2 * (size_t)(n > 0 ? n : 1)) capacity *= 2;
  t->slots = calloc(capacity, sizeof *t->slots);
  t->mask = capacity - 1;
  return t->slots ? 0 : -1;
}

static void name_table_free(name_table *t) {
  free(t->slots);
  t->slots = NULL;
}

/* The slot of `name`: its own, or the free one where it would go. */
static name_slot *name_table_slot(const name_table *t, const char *name) {
  size_t i = name_hash(name) & t->mask;
  while (t->slots[i].index && strcmp(t->slots[i].name, name)) i = (i + 1) & t->mask;
  return &t->slots[i];
}

/* Adds `name` (kept by pointer: it must outlive the table) as item `index`,
 * or returns the index of the item that has it already; -1 when new. */
static int name_table_add(name_table *t, const char *name, int index) {
  name_slot *slot = name_table_slot(t, name);
  if (slot->index) return slot->index - 1;
  *slot = (name_slot){name, index + 1};
  return -1;
}

/* The index of the item called `name`, or -1. */
static int name_table_find(const name_table *t, const char *name) {
  return name_table_slot(t, name)->index - 1;
}

/* ---- messages ------------------------------------------------------------- */

/* The 1-based line and column where a node starts. Scalars carry a token with
 * a mark; a collection is placed at its first scalar (libfyaml 0.7 has no
 * public start mark for collections). Returns 0 when there is none: an empty
 * value or an empty collection. */
static int node_position(struct fy_node *node, int *line, int *column) {
  while (node) {
    switch (fy_node_get_type(node)) {
    case FYNT_SCALAR: {
      struct fy_token *token = fy_node_get_scalar_token(node);
      const struct fy_mark *mark = token ? fy_token_start_mark(token) : NULL;
      if (!mark) return 0;
      *line = mark->line + 1;
      *column = mark->column + 1;
      return 1;
    }
    case FYNT_MAPPING: {
      void *iter = NULL;
      struct fy_node_pair *pair = fy_node_mapping_iterate(node, &iter);
      node = pair ? fy_node_pair_key(pair) : NULL;
      break;
    }
    case FYNT_SEQUENCE: {
      void *iter = NULL;
      node = fy_node_sequence_iterate(node, &iter);
      break;
    }
    default:
      return 0;
    }
  }
  return 0;
}

/* Puts "<file>:<line>:<column>: <where>: <text>" on the context as one line
 * (text quoted from the file may hold newlines) and returns `status`. */
static vox_status report(const reader *r, vox_status status, int line, int column,
                         const char *where, const char *text) {
  char message[768];
  int n = snprintf(message, sizeof message, "%s", r->path);
  if (n >= 0 && (size_t)n < sizeof message && line > 0)
    n += snprintf(message + n, sizeof message - (size_t)n, ":%d:%d", line, column);
  if (n >= 0 && (size_t)n < sizeof message)
    snprintf(message + n, sizeof message - (size_t)n, ": %s%s%s", where, *where ? ": " : "",
             text);
  for (char *c = message; *c; c++)
    if (*c == '\n' || *c == '\r') *c = ' ';
  return vox_error(r->ctx, status, "%s", message);
}

/* A content error at `node`, or at `fallback` when `node` has no position. */
static vox_status fail(const reader *r, struct fy_node *node, struct fy_node *fallback,
                       const char *where, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static vox_status fail(const reader *r, struct fy_node *node, struct fy_node *fallback,
                       const char *where, const char *fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  int line = 0, column = 0;
  if (!node_position(node, &line, &column)) node_position(fallback, &line, &column);
  return report(r, VOX_ERR_FORMAT, line, column, where, text);
}

/* "parent.key" and "parent[index]": where a value sits, for messages. */
static void where_key(char out[WHERE_MAX], const char *parent, const char *key) {
  if (snprintf(out, WHERE_MAX, "%s%s%s", parent, *parent ? "." : "", key) >= WHERE_MAX)
    out[WHERE_MAX - 1] = '\0';
}

static void where_index(char out[WHERE_MAX], const char *parent, int index) {
  if (snprintf(out, WHERE_MAX, "%s[%d]", parent, index) >= WHERE_MAX) out[WHERE_MAX - 1] = '\0';
}

/* ---- scalars -------------------------------------------------------------- */

/* YAML's null: a missing value, "~" or "null" written plain. */
static bool is_null(struct fy_node *node) {
  if (!node) return true;
  if (fy_node_get_type(node) != FYNT_SCALAR || fy_node_get_style(node) != FYNS_PLAIN)
    return false;
  size_t len;
  const char *text = fy_node_get_scalar(node, &len);
  if (!text || len == 0) return true;
  static const char *const nulls[] = {"~", "null", "Null", "NULL"};
  for (size_t i = 0; i < sizeof nulls / sizeof *nulls; i++)
    if (len == strlen(nulls[i]) && memcmp(text, nulls[i], len) == 0) return true;
  return false;
}

/* What a node is, for "must be X, not Y" messages: a plain value is quoted
 * (shortened), anything else named. `buf` holds the text. */
typedef struct description {
  char text[48];
} description;

static const char *describe(struct fy_node *node, description *buf) {
  if (is_null(node)) return "empty";
  switch (fy_node_get_type(node)) {
  case FYNT_MAPPING: return "a mapping";
  case FYNT_SEQUENCE: return "a list";
  default: break;
  }
  if (fy_node_get_style(node) != FYNS_PLAIN) return "a quoted string";
  size_t len;
  const char *text = fy_node_get_scalar(node, &len);
  if (!text) return "a value";
  snprintf(buf->text, sizeof buf->text, "'%.*s%s'", (int)(len > 32 ? 32 : len), text,
           len > 32 ? "..." : "");
  return buf->text;
}

static bool scalar_is(struct fy_node *node, const char *word) {
  size_t len;
  const char *text = fy_node_get_scalar(node, &len);
  return text && len == strlen(word) && memcmp(text, word, len) == 0;
}

/* A number written plain, as YAML 1.2 writes floats: digits, sign, point,
 * exponent, or .inf when `allow_infinite` (box bounds). strtod alone would
 * also take "nan", "0x1p3" and "infinity", which YAML reads as strings. */
static vox_status get_number(const reader *r, struct fy_node *node, struct fy_node *fallback,
                             const char *where, bool allow_infinite, double *out) {
  if (is_null(node) || fy_node_get_type(node) != FYNT_SCALAR ||
      fy_node_get_style(node) != FYNS_PLAIN)
    return fail(r, node, fallback, where, "must be a number, not %s",
                describe(node, &(description){0}));
  size_t len;
  const char *text = fy_node_get_scalar(node, &len);
  char buf[64];
  if (!text || len >= sizeof buf) return fail(r, node, fallback, where, "is not a number");
  memcpy(buf, text, len);
  buf[len] = '\0';
  const char *body = buf + (buf[0] == '+' || buf[0] == '-');
  if (!strcmp(body, ".inf") || !strcmp(body, ".Inf") || !strcmp(body, ".INF")) {
    if (!allow_infinite) return fail(r, node, fallback, where, "must be a finite number");
    *out = buf[0] == '-' ? -INFINITY : INFINITY;
    return VOX_OK;
  }
  char *end;
  errno = 0;
  double value = strtod(buf, &end);
  if (strspn(buf, "0123456789+-.eE") != len || strcspn(buf, "0123456789") == len || *end)
    return fail(r, node, fallback, where, "'%s' is not a number", buf);
  if (errno == ERANGE && !isfinite(value))
    return fail(r, node, fallback, where, "%s is out of range", buf);
  *out = value;
  return VOX_OK;
}

/* A whole number in [lo, hi]. */
static vox_status get_integer(const reader *r, struct fy_node *node, struct fy_node *fallback,
                              const char *where, int lo, int hi, int *out) {
  double value;
  vox_status status = get_number(r, node, fallback, where, false, &value);
  if (status) return status;
  if (value != floor(value) || value < lo || value > hi)
    return fail(r, node, fallback, where, "must be a whole number from %d to %d, not %g", lo, hi,
                value);
  *out = (int)value;
  return VOX_OK;
}

/* A non-empty string that fits a VOX_NAME_MAX name. */
static vox_status get_name(const reader *r, struct fy_node *node, struct fy_node *fallback,
                           const char *where, char out[VOX_NAME_MAX]) {
  if (is_null(node) || fy_node_get_type(node) != FYNT_SCALAR)
    return fail(r, node, fallback, where, "must be a name, not %s",
                describe(node, &(description){0}));
  size_t len;
  const char *text = fy_node_get_scalar(node, &len);
  if (!text || len == 0) return fail(r, node, fallback, where, "must not be empty");
  if (len >= VOX_NAME_MAX)
    return fail(r, node, fallback, where, "is longer than %d characters", VOX_NAME_MAX - 1);
  if (memchr(text, '\0', len)) return fail(r, node, fallback, where, "holds a NUL character");
  memcpy(out, text, len);
  out[len] = '\0';
  return VOX_OK;
}

/* One of `n` words; *out gets its index. `what` names the kind in messages. */
static vox_status get_word(const reader *r, struct fy_node *node, struct fy_node *fallback,
                           const char *where, const char *what, const char *const *words, int n,
                           int *out) {
  char word[VOX_NAME_MAX];
  vox_status status = get_name(r, node, fallback, where, word);
  if (status) return status;
  for (int i = 0; i < n; i++)
    if (!strcmp(word, words[i])) {
      *out = i;
      return VOX_OK;
    }
  char list[128] = "";
  for (int i = 0; i < n; i++) {
    size_t used = strlen(list);
    snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", words[i]);
  }
  return fail(r, node, fallback, where, "unknown %s '%s' (one of %s)", what, word, list);
}

/* [x, y, z]: a list of three numbers. */
static vox_status get_vec3(const reader *r, struct fy_node *node, struct fy_node *fallback,
                           const char *where, bool allow_infinite, double out[3]) {
  if (is_null(node) || fy_node_get_type(node) != FYNT_SEQUENCE)
    return fail(r, node, fallback, where, "must be a list of three numbers [x, y, z], not %s",
                describe(node, &(description){0}));
  if (fy_node_sequence_item_count(node) != 3)
    return fail(r, node, fallback, where,
                "must be a list of three numbers [x, y, z], not a list of %d",
                fy_node_sequence_item_count(node));
  void *iter = NULL;
  for (int i = 0; i < 3; i++) {
    struct fy_node *item = fy_node_sequence_iterate(node, &iter);
    char at[WHERE_MAX];
    where_index(at, where, i);
    vox_status status = get_number(r, item, node, at, allow_infinite, &out[i]);
    if (status) return status;
  }
  return VOX_OK;
}

/* A mesh file's path; a relative one is taken from the problem file's folder,
 * so that a problem and its meshes move together. The file is read when the
 * problem is rasterised. */
static vox_status get_mesh_path(const reader *r, struct fy_node *node, struct fy_node *fallback,
                                const char *where, char out[VOX_PATH_MAX]) {
  if (is_null(node) || fy_node_get_type(node) != FYNT_SCALAR)
    return fail(r, node, fallback, where, "must be the path of a mesh file, not %s",
                describe(node, &(description){0}));
  size_t len;
  const char *text = fy_node_get_scalar(node, &len);
  if (!text || len == 0) return fail(r, node, fallback, where, "must not be empty");
  if (memchr(text, '\0', len)) return fail(r, node, fallback, where, "holds a NUL character");
  const char *slash = strrchr(r->path, '/');
  int folder = text[0] != '/' && slash ? (int)(slash - r->path + 1) : 0;
  if ((size_t)folder + len >= VOX_PATH_MAX)
    return fail(r, node, fallback, where, "the path is longer than %d characters",
                VOX_PATH_MAX - 1);
  memcpy(out, r->path, (size_t)folder);
  memcpy(out + folder, text, len);
  out[folder + len] = '\0';
  return VOX_OK;
}

/* ---- mappings ------------------------------------------------------------- */

/* Checks that `node` is a mapping whose keys are all among `keys` (NULL
 * terminated) and fills found[i] for keys[i]. Unknown keys are errors, so
 * that a misspelt optional key ("fixx") is not silently ignored. */
static vox_status get_fields(const reader *r, struct fy_node *node, struct fy_node *fallback,
                             const char *where, const char *const *keys, entry *found) {
  int n = 0;
  while (keys[n]) found[n++] = (entry){NULL, NULL};
  if (is_null(node) || fy_node_get_type(node) != FYNT_MAPPING)
    return fail(r, node, fallback, where, "must be a mapping (key: value), not %s",
                describe(node, &(description){0}));
  void *iter = NULL;
  struct fy_node_pair *pair;
  while ((pair = fy_node_mapping_iterate(node, &iter))) {
    struct fy_node *key = fy_node_pair_key(pair);
    int i = 0;
    if (key && fy_node_get_type(key) == FYNT_SCALAR)
      while (i < n && !scalar_is(key, keys[i])) i++;
    else
      i = n;
    if (i < n) {
      found[i] = (entry){key, fy_node_pair_value(pair)};
      continue;
    }
    char list[256] = "";
    for (int k = 0; k < n; k++) {
      size_t used = strlen(list);
      snprintf(list + used, sizeof list - used, "%s%s", k ? ", " : "", keys[k]);
    }
    size_t len = 0;
    const char *text = key && fy_node_get_type(key) == FYNT_SCALAR
                           ? fy_node_get_scalar(key, &len) : NULL;
    if (!text) return fail(r, key, node, where, "keys must be words (one of %s)", list);
    return fail(r, key, node, where, "unknown key '%.*s' (expected %s)", (int)(len > 64 ? 64 : len),
                text, list);
  }
  return VOX_OK;
}

static vox_status missing(const reader *r, struct fy_node *map, struct fy_node *fallback,
                          const char *where, const char *key) {
  return fail(r, map, fallback, where, "missing '%s'", key);
}

/* ---- the parts of a problem ----------------------------------------------- */

static vox_status parse_material(const reader *r, entry e, vox_physics physics, vox_material *m) {
  static const char *const keys[] = {"name", "E", "nu", "conductivity", NULL};
  entry f[4];
  vox_status status = get_fields(r, e.value, e.key, "material", keys, f);
  if (status) return status;
  memset(m, 0, sizeof *m);
  m->label = 1;
  m->role = VOX_ROLE_DESIGN;
  snprintf(m->name, sizeof m->name, "design");
  /* Heat conduction is not what most problem files are about; 1 keeps a
   * conduction run well posed instead of singular. */
  m->conductivity = 1.0;
  if (f[0].key && (status = get_name(r, f[0].value, f[0].key, "material.name", m->name)))
    return status;
  /* A heat problem needs no elastic constants; these keep the model valid
   * for the elastic tools that may read it. */
  m->youngs_modulus = 1.0;
  m->poisson_ratio = 0.3;
  if (physics == VOX_PHYSICS_HEAT && !f[3].key)
    return missing(r, e.value, e.key, "material", "conductivity");
  if (physics != VOX_PHYSICS_HEAT && !f[1].key) return missing(r, e.value, e.key, "material", "E");
  if (physics != VOX_PHYSICS_HEAT && !f[2].key)
    return missing(r, e.value, e.key, "material", "nu");
  if (f[1].key &&
      (status = get_number(r, f[1].value, f[1].key, "material.E", false, &m->youngs_modulus)))
    return status;
  if (!(m->youngs_modulus > 0))
    return fail(r, f[1].value, f[1].key, "material.E", "must be positive, not %g",
                m->youngs_modulus);
  if (f[2].key &&
      (status = get_number(r, f[2].value, f[2].key, "material.nu", false, &m->poisson_ratio)))
    return status;
  if (!(m->poisson_ratio > -1 && m->poisson_ratio < 0.5))
    return fail(r, f[2].value, f[2].key, "material.nu",
                "must lie in (-1, 0.5) for a stable isotropic solid, not %g", m->poisson_ratio);
  if (f[3].key) {
    if ((status = get_number(r, f[3].value, f[3].key, "material.conductivity", false,
                             &m->conductivity)))
      return status;
    if (!(m->conductivity > 0))
      return fail(r, f[3].value, f[3].key, "material.conductivity", "must be positive, not %g",
                  m->conductivity);
  }
  return VOX_OK;
}

static vox_status parse_region(const reader *r, entry e, const char *where, vox_region *rg) {
  static const char *const keys[] = {"face", "edge", "point", "box", "sphere", "label", "mesh",
                                     NULL};
  entry f[7];
  vox_status status = get_fields(r, e.value, e.key, where, keys, f);
  if (status) return status;
  int kind = -1;
  for (int i = 0; i < 7; i++) {
    if (!f[i].key) continue;
    if (kind >= 0)
      return fail(r, f[i].key, e.value, where, "has both '%s' and '%s'; give one shape",
                  keys[kind], keys[i]);
    kind = i;
  }
  if (kind < 0)
    return fail(r, e.value, e.key, where,
                "needs one of face, edge, point, box, sphere, label, mesh");
  memset(rg, 0, sizeof *rg);
  entry v = f[kind];
  char at[WHERE_MAX];
  where_key(at, where, keys[kind]);
  switch (kind) {
  case 0:
    rg->kind = VOX_REGION_FACE;
    return get_word(r, v.value, v.key, at, "face", face_names, 6, &rg->face[0]);
  case 1: {
    rg->kind = VOX_REGION_EDGE;
    if (is_null(v.value) || fy_node_get_type(v.value) != FYNT_SEQUENCE ||
        fy_node_sequence_item_count(v.value) != 2)
      return fail(r, v.value, v.key, at, "must be a list of two faces, such as [x+, z-]");
    void *iter = NULL;
    for (int i = 0; i < 2; i++) {
      char item[WHERE_MAX];
      where_index(item, at, i);
      if ((status = get_word(r, fy_node_sequence_iterate(v.value, &iter), v.value, item, "face",
                             face_names, 6, &rg->face[i])))
        return status;
    }
    if (rg->face[0] / 2 == rg->face[1] / 2)
      return fail(r, v.value, v.key, at, "%s and %s are parallel; an edge joins faces of two axes",
                  face_names[rg->face[0]], face_names[rg->face[1]]);
    return VOX_OK;
  }
  case 2:
    rg->kind = VOX_REGION_POINT;
    return get_vec3(r, v.value, v.key, at, false, rg->point);
  case 3: {
    static const char *const box_keys[] = {"min", "max", NULL};
    entry b[2];
    rg->kind = VOX_REGION_BOX;
    if ((status = get_fields(r, v.value, v.key, at, box_keys, b))) return status;
    if (!b[0].key) return missing(r, v.value, v.key, at, "min");
    if (!b[1].key) return missing(r, v.value, v.key, at, "max");
    char lo[WHERE_MAX], hi[WHERE_MAX];
    where_key(lo, at, "min");
    where_key(hi, at, "max");
    if ((status = get_vec3(r, b[0].value, b[0].key, lo, true, rg->point)) ||
        (status = get_vec3(r, b[1].value, b[1].key, hi, true, rg->point2)))
      return status;
    for (int a = 0; a < 3; a++)
      if (!(rg->point[a] <= rg->point2[a]))
        return fail(r, v.value, v.key, at, "min %g is greater than max %g along %s", rg->point[a],
                    rg->point2[a], component_names[a]);
    return VOX_OK;
  }
  case 4: {
    static const char *const sphere_keys[] = {"center", "radius", NULL};
    entry s[2];
    rg->kind = VOX_REGION_SPHERE;
    if ((status = get_fields(r, v.value, v.key, at, sphere_keys, s))) return status;
    if (!s[0].key) return missing(r, v.value, v.key, at, "center");
    if (!s[1].key) return missing(r, v.value, v.key, at, "radius");
    char c[WHERE_MAX], rad[WHERE_MAX];
    where_key(c, at, "center");
    where_key(rad, at, "radius");
    if ((status = get_vec3(r, s[0].value, s[0].key, c, false, rg->point)) ||
        (status = get_number(r, s[1].value, s[1].key, rad, false, &rg->radius)))
      return status;
    if (rg->radius < 0)
      return fail(r, s[1].value, s[1].key, rad, "must not be negative, not %g", rg->radius);
    return VOX_OK;
  }
  case 5:
    rg->kind = VOX_REGION_LABEL;
    return get_integer(r, v.value, v.key, at, 1, 255, &rg->label);
  default:
    rg->kind = VOX_REGION_MESH;
    return get_mesh_path(r, v.value, v.key, at, rg->mesh);
  }
}

/* The name of list item `index`: the one written, or "<kind><index+1>". */
static vox_status item_name(const reader *r, entry e, const char *where, const char *kind,
                            int index, char name[VOX_NAME_MAX]) {
  if (!e.key) {
    snprintf(name, VOX_NAME_MAX, "%s%d", kind, index + 1);
    return VOX_OK;
  }
  char at[WHERE_MAX];
  where_key(at, where, "name");
  return get_name(r, e.value, e.key, at, name);
}

/* Names appear in messages (and later in the model file's node sets), so
 * they must tell the items of one list apart. */
static vox_status duplicate_name(const reader *r, entry e, struct fy_node *item, const char *where,
                                 const char *name, const char *list, int first) {
  return fail(r, e.value, item, where, "the name '%s' is already used by %s[%d]", name, list,
              first);
}

/* Components held by a support: `fix: [x, y]` at 0, `displacement: {z: 0.1}`
 * at a value; for heat, `temperature: 0`. */
static vox_status parse_support(const reader *r, struct fy_node *node, const char *where,
                                int index, vox_physics physics, vox_support *list,
                                name_table *names) {
  static const char *const keys[] = {"name", "region", "fix", "displacement", "temperature",
                                     NULL};
  entry f[5];
  vox_support *s = &list[index];
  vox_status status = get_fields(r, node, NULL, where, keys, f);
  if (status) return status;
  if ((status = item_name(r, f[0], where, "support", index, s->name))) return status;
  const int first = name_table_add(names, s->name, index);
  if (first >= 0) return duplicate_name(r, f[0], node, where, s->name, "supports", first);
  char at[WHERE_MAX];
  where_key(at, where, "region");
  if (!f[1].key) return missing(r, node, NULL, where, "region");
  if ((status = parse_region(r, f[1], at, &s->region))) return status;
  if (physics == VOX_PHYSICS_HEAT) {
    if (f[2].key || f[3].key)
      return fail(r, f[2].key ? f[2].key : f[3].key, node, where,
                  "'%s' is for elasticity; a heat problem holds 'temperature'",
                  f[2].key ? "fix" : "displacement");
    if (!f[4].key) return fail(r, node, NULL, where, "needs 'temperature' (K)");
    where_key(at, where, "temperature");
    s->fixed[0] = 1;
    return get_number(r, f[4].value, f[4].key, at, false, &s->value[0]);
  }
  if (f[4].key)
    return fail(r, f[4].key, node, where, "'temperature' needs 'physics: heat' in the file");
  if (!f[2].key && !f[3].key)
    return fail(r, node, NULL, where, "needs 'fix' or 'displacement' (which components to hold)");
  if (f[2].key) {
    where_key(at, where, "fix");
    struct fy_node *list_node = f[2].value;
    if (is_null(list_node) || fy_node_get_type(list_node) != FYNT_SEQUENCE ||
        fy_node_sequence_item_count(list_node) < 1)
      return fail(r, list_node, f[2].key, at, "must be a list of components, such as [x, y, z]");
    void *iter = NULL;
    struct fy_node *item;
    for (int i = 0; (item = fy_node_sequence_iterate(list_node, &iter)); i++) {
      char item_at[WHERE_MAX];
      int c = 0;
      where_index(item_at, at, i);
      if ((status = get_word(r, item, list_node, item_at, "component", component_names, 3, &c)))
        return status;
      if (s->fixed[c])
        return fail(r, item, list_node, item_at, "lists %s twice", component_names[c]);
      s->fixed[c] = 1;
      s->value[c] = 0;
    }
  }
  if (f[3].key) {
    static const char *const comp_keys[] = {"x", "y", "z", NULL};
    entry d[3];
    where_key(at, where, "displacement");
    if ((status = get_fields(r, f[3].value, f[3].key, at, comp_keys, d))) return status;
    int any = 0;
    for (int c = 0; c < 3; c++) {
      if (!d[c].key) continue;
      char comp_at[WHERE_MAX];
      where_key(comp_at, at, component_names[c]);
      if (s->fixed[c])
        return fail(r, d[c].key, f[3].value, comp_at, "%s is both in 'fix' and 'displacement'",
                    component_names[c]);
      if ((status = get_number(r, d[c].value, d[c].key, comp_at, false, &s->value[c])))
        return status;
      s->fixed[c] = 1;
      any = 1;
    }
    if (!any) return fail(r, f[3].value, f[3].key, at, "gives no component (x, y or z)");
  }
  return VOX_OK;
}

/* The amount of a heat load: `heat` (W) or `heat_source` (W/mm^3), one of them. */
static vox_status parse_heat_amount(const reader *r, struct fy_node *node, const char *where,
                                    const entry *f, vox_force *l) {
  if (f[2].key)
    return fail(r, f[2].key, node, where, "'force' is for elasticity; a heat problem loads "
                                          "'heat' (W) or 'heat_source' (W/mm^3)");
  if (f[4].key && f[5].key)
    return fail(r, f[5].key, node, where, "give 'heat' or 'heat_source', not both");
  if (!f[4].key && !f[5].key)
    return fail(r, node, NULL, where, "needs 'heat' (W) or 'heat_source' (W/mm^3)");
  const entry *e = f[4].key ? &f[4] : &f[5];
  char at[WHERE_MAX];
  where_key(at, where, f[4].key ? "heat" : "heat_source");
  l->kind = f[4].key ? VOX_LOAD_HEAT : VOX_LOAD_HEAT_SOURCE;
  return get_number(r, e->value, e->key, at, false, &l->force[0]);
}

static vox_status parse_force(const reader *r, struct fy_node *node, const char *where, int index,
                              const vox_problem *p, vox_force *list, name_table *names) {
  static const char *const keys[] = {"name", "region", "force", "case", "heat", "heat_source",
                                     NULL};
  entry f[6];
  vox_force *l = &list[index];
  vox_status status = get_fields(r, node, NULL, where, keys, f);
  if (status) return status;
  if ((status = item_name(r, f[0], where, "load", index, l->name))) return status;
  const int first = name_table_add(names, l->name, index);
  if (first >= 0) return duplicate_name(r, f[0], node, where, l->name, "loads", first);
  char at[WHERE_MAX];
  if (p->physics == VOX_PHYSICS_HEAT) {
    if ((status = parse_heat_amount(r, node, where, f, l))) return status;
  } else if (f[4].key || f[5].key) {
    return fail(r, f[4].key ? f[4].key : f[5].key, node, where,
                "'%s' needs 'physics: heat' in the file", f[4].key ? "heat" : "heat_source");
  }
  /* a heat source without a region heats every element with material */
  l->whole_model = l->kind == VOX_LOAD_HEAT_SOURCE && !f[1].key;
  if (!f[1].key && !l->whole_model) return missing(r, node, NULL, where, "region");
  where_key(at, where, "region");
  if (f[1].key && (status = parse_region(r, f[1], at, &l->region))) return status;
  if (p->physics != VOX_PHYSICS_HEAT) {
    if (!f[2].key) return missing(r, node, NULL, where, "force");
    where_key(at, where, "force");
    if ((status = get_vec3(r, f[2].value, f[2].key, at, false, l->force))) return status;
  }
  l->load_case = 0;
  if (!f[3].key) {
    if (p->n_load_cases > 1)
      return fail(r, node, NULL, where, "needs 'case': the file declares %d load cases",
                  p->n_load_cases);
    return VOX_OK;
  }
  char name[VOX_NAME_MAX];
  where_key(at, where, "case");
  if ((status = get_name(r, f[3].value, f[3].key, at, name))) return status;
  const int found = name_table_find(r->cases, name);
  if (found >= 0) {
    l->load_case = found;
    return VOX_OK;
  }
  char list_text[256] = "";
  for (int c = 0; c < p->n_load_cases; c++) {
    size_t used = strlen(list_text);
    snprintf(list_text + used, sizeof list_text - used, "%s%s", c ? ", " : "",
             p->load_case_names[c]);
  }
  return fail(r, f[3].value, f[3].key, at, "unknown load case '%s' (declared: %s)", name,
              list_text);
}

static vox_status parse_passive(const reader *r, struct fy_node *node, const char *where,
                                int index, vox_passive *list, name_table *names) {
  static const char *const keys[] = {"name", "region", "type", NULL};
  static const char *const types[] = {"solid", "void"};
  entry f[3];
  vox_passive *pa = &list[index];
  vox_status status = get_fields(r, node, NULL, where, keys, f);
  if (status) return status;
  if ((status = item_name(r, f[0], where, "passive", index, pa->name))) return status;
  const int first = name_table_add(names, pa->name, index);
  if (first >= 0) return duplicate_name(r, f[0], node, where, pa->name, "passive", first);
  char at[WHERE_MAX];
  if (!f[1].key) return missing(r, node, NULL, where, "region");
  where_key(at, where, "region");
  if ((status = parse_region(r, f[1], at, &pa->region))) return status;
  if (!f[2].key) return missing(r, node, NULL, where, "type");
  where_key(at, where, "type");
  int type = 0;
  if ((status = get_word(r, f[2].value, f[2].key, at, "type", types, 2, &type))) return status;
  pa->role = type == 0 ? VOX_ROLE_SOLID : VOX_ROLE_VOID;
  return VOX_OK;
}

/* A spring (`stiffness`, N/mm per component, >= 0, one > 0) or an output
 * (`direction`, not all zero): a region and three numbers, in force[]. */
static vox_status parse_spring_or_output(const reader *r, struct fy_node *node, const char *where,
                                         int index, int spring, vox_force *list,
                                         name_table *names) {
  const char *const amount = spring ? "stiffness" : "direction";
  const char *const keys[] = {"name", "region", amount, NULL};
  const char *const kind = spring ? "spring" : "output", *const plural = spring ? "springs" : "outputs";
  entry f[3];
  vox_force *l = &list[index];
  vox_status status = get_fields(r, node, NULL, where, keys, f);
  if (status) return status;
  if ((status = item_name(r, f[0], where, kind, index, l->name))) return status;
  const int first = name_table_add(names, l->name, index);
  if (first >= 0) return duplicate_name(r, f[0], node, where, l->name, plural, first);
  char at[WHERE_MAX];
  if (!f[1].key) return missing(r, node, NULL, where, "region");
  where_key(at, where, "region");
  if ((status = parse_region(r, f[1], at, &l->region))) return status;
  if (!f[2].key) return missing(r, node, NULL, where, amount);
  where_key(at, where, amount);
  if ((status = get_vec3(r, f[2].value, f[2].key, at, false, l->force))) return status;
  if (spring && (l->force[0] < 0 || l->force[1] < 0 || l->force[2] < 0))
    return fail(r, f[2].value, f[2].key, at, "stiffnesses must be >= 0");
  if (l->force[0] == 0 && l->force[1] == 0 && l->force[2] == 0)
    return fail(r, f[2].value, f[2].key, at, "must not be all zero");
  return VOX_OK;
}

/* A list's items, after checking it is one; *count gets their number. */
static vox_status get_list(const reader *r, entry e, const char *where, int *count) {
  *count = 0;
  if (!e.key) return VOX_OK;
  if (is_null(e.value) || fy_node_get_type(e.value) != FYNT_SEQUENCE)
    return fail(r, e.value, e.key, where, "must be a list (items starting with '-'), not %s",
                describe(e.value, &(description){0}));
  int n = fy_node_sequence_item_count(e.value);
  *count = n > 0 ? n : 0;
  return VOX_OK;
}

static vox_status parse_load_cases(const reader *r, entry e, vox_problem *p) {
  int n;
  vox_status status = get_list(r, e, "load_cases", &n);
  if (status) return status;
  if (e.key && n == 0) return fail(r, e.value, e.key, "load_cases", "must name at least one case");
  int declared = e.key != NULL;
  if (!declared) n = 1;
  p->load_case_names = calloc((size_t)n, sizeof *p->load_case_names);
  if (!p->load_case_names) return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  p->n_load_cases = n;
  if (name_table_init(r->cases, n)) return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  if (!declared) {
    snprintf(p->load_case_names[0], VOX_NAME_MAX, "case1");
    name_table_add(r->cases, p->load_case_names[0], 0);
    return VOX_OK;
  }
  void *iter = NULL;
  for (int i = 0; i < n; i++) {
    struct fy_node *item = fy_node_sequence_iterate(e.value, &iter);
    char at[WHERE_MAX];
    where_index(at, "load_cases", i);
    if ((status = get_name(r, item, e.value, at, p->load_case_names[i]))) return status;
    if (name_table_add(r->cases, p->load_case_names[i], i) >= 0)
      return fail(r, item, e.value, at, "load case '%s' is declared twice",
                  p->load_case_names[i]);
  }
  return VOX_OK;
}

/* `objective`, `load_case_weights`, `springs` and `outputs` (after the load
 * cases): a compliant mechanism or weighted load cases, elasticity only. */
static vox_status parse_mechanism(const reader *r, struct fy_node *root, entry objective,
                                  entry weights, entry springs, entry outputs, vox_problem *p) {
  const entry *given[] = {&objective, &weights, &springs, &outputs};
  static const char *const names[] = {"objective", "load_case_weights", "springs", "outputs"};
  for (int i = 0; i < 4; i++)
    if (given[i]->key && p->physics == VOX_PHYSICS_HEAT)
      return fail(r, given[i]->key, root, names[i], "is for elasticity, not 'physics: heat'");
  static const char *const objective_names[] = {"compliance", "output_displacement", "volume"};
  int kind = 0;
  vox_status status;
  if (objective.key && (status = get_word(r, objective.value, objective.key, "objective",
                                          "objective", objective_names, 3, &kind)))
    return status;
  p->objective = kind == 1   ? VOX_OBJECTIVE_OUTPUT_DISPLACEMENT
                 : kind == 2 ? VOX_OBJECTIVE_VOLUME
                             : VOX_OBJECTIVE_COMPLIANCE;

  int n;
  char at[WHERE_MAX];
  if ((status = get_list(r, weights, "load_case_weights", &n))) return status;
  if (weights.key) {
    if (n != p->n_load_cases)
      return fail(r, weights.value, weights.key, "load_case_weights",
                  "has %d weight(s) for %d load case(s)", n, p->n_load_cases);
    if (!(p->load_case_weights = malloc((size_t)n * sizeof *p->load_case_weights)))
      return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "out of memory");
    void *iter = NULL;
    for (int i = 0; i < n; i++) {
      struct fy_node *item = fy_node_sequence_iterate(weights.value, &iter);
      where_index(at, "load_case_weights", i);
      if ((status = get_number(r, item, weights.value, at, false, &p->load_case_weights[i])))
        return status;
      if (p->load_case_weights[i] < 0)
        return fail(r, item, weights.value, at, "must be >= 0, not %g", p->load_case_weights[i]);
    }
  }
  for (int list = 0; list < 2; list++) {
    const entry *e = list == 0 ? &springs : &outputs;
    const char *where = names[2 + list];
    if ((status = get_list(r, *e, where, &n))) return status;
    vox_force **items = list == 0 ? &p->springs : &p->outputs;
    int *count = list == 0 ? &p->n_springs : &p->n_outputs;
    if (n && !(*items = calloc((size_t)n, sizeof **items)))
      return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "out of memory");
    name_table taken;
    if (name_table_init(&taken, n)) return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "out of memory");
    void *iter = NULL;
    struct fy_node *item;
    for (int i = 0; i < n && (item = fy_node_sequence_iterate(e->value, &iter)); i++) {
      where_index(at, where, i);
      status = parse_spring_or_output(r, item, at, i, list == 0, *items, &taken);
      if (status) break;
      *count = i + 1;
    }
    name_table_free(&taken);
    if (status) return status;
  }
  if (p->objective == VOX_OBJECTIVE_OUTPUT_DISPLACEMENT) {
    if (p->n_outputs == 0)
      return fail(r, objective.value, objective.key, "objective",
                  "'output_displacement' needs 'outputs' (where the output displacement is)");
    if (p->n_load_cases > 1)
      return fail(r, objective.value, objective.key, "objective",
                  "'output_displacement' takes one load case, not %d", p->n_load_cases);
  } else if (p->n_outputs > 0) {
    return fail(r, outputs.key, root, "outputs", "need 'objective: output_displacement'");
  }
  return VOX_OK;
}

/* One item of `constraints:`: `volume: F` (a fraction of the design
 * domain, or of the design elements of `region: {label: L}`) with
 * `relation: "<="` (default) or `"="`, or `compliance: C` (N mm, an upper
 * bound) of the load case `case` (needed with 2+ cases). */
static vox_status parse_constraint(const reader *r, struct fy_node *node, const char *where,
                                   int index, const vox_problem *p,
                                   vox_design_constraint *list, name_table *names) {
  static const char *const keys[] = {"name", "volume", "compliance", "region", "relation",
                                     "case", NULL};
  static const char *const relations[] = {"<=", "="};
  enum { C_NAME, C_VOLUME, C_COMPLIANCE, C_REGION, C_RELATION, C_CASE };
  entry f[6];
  vox_design_constraint *c = &list[index];
  vox_status status = get_fields(r, node, NULL, where, keys, f);
  if (status) return status;
  if ((status = item_name(r, f[C_NAME], where, "constraint", index, c->name))) return status;
  const int first = name_table_add(names, c->name, index);
  if (first >= 0) return duplicate_name(r, f[C_NAME], node, where, c->name, "constraints", first);
  if (!f[C_VOLUME].key == !f[C_COMPLIANCE].key)
    return fail(r, f[C_VOLUME].key ? f[C_COMPLIANCE].key : node, node, where,
                "needs one of 'volume' (a volume fraction) and 'compliance' (N mm)%s",
                f[C_VOLUME].key ? ", not both" : "");
  char at[WHERE_MAX];
  const int volume = f[C_VOLUME].key != NULL;
  const entry amount = volume ? f[C_VOLUME] : f[C_COMPLIANCE];
  c->kind = volume ? VOX_CONSTRAINT_VOLUME : VOX_CONSTRAINT_COMPLIANCE;
  where_key(at, where, volume ? "volume" : "compliance");
  if ((status = get_number(r, amount.value, amount.key, at, false, &c->limit))) return status;
  if (volume && !(c->limit > 0 && c->limit <= 1))
    return fail(r, amount.value, amount.key, at,
                "is a volume fraction in (0, 1], not %g", c->limit);
  if (!volume && !(c->limit > 0))
    return fail(r, amount.value, amount.key, at, "must be positive, not %g", c->limit);
  const entry *volume_only[] = {&f[C_REGION], &f[C_RELATION]};
  static const char *const volume_only_names[] = {"region", "relation"};
  for (int i = 0; i < 2 && !volume; i++)
    if (volume_only[i]->key)
      return fail(r, volume_only[i]->key, node, where,
                  "'%s' is for a volume constraint; a compliance limit is an upper bound over "
                  "the whole model", volume_only_names[i]);
  if (volume && f[C_CASE].key)
    return fail(r, f[C_CASE].key, node, where,
                "'case' is for a compliance constraint; a volume holds in every load case");
  if (f[C_REGION].key) {
    vox_region region;
    where_key(at, where, "region");
    if ((status = parse_region(r, f[C_REGION], at, &region))) return status;
    if (region.kind != VOX_REGION_LABEL)
      return fail(r, f[C_REGION].value, f[C_REGION].key, at,
                  "a volume constraint takes a labelled region, {label: L} (the design "
                  "elements of a material)");
    c->label = (uint8_t)region.label;
  }
  if (f[C_RELATION].key) {
    int relation = 0;
    where_key(at, where, "relation");
    if ((status = get_word(r, f[C_RELATION].value, f[C_RELATION].key, at, "relation", relations,
                           2, &relation)))
      return status;
    c->equal = (uint8_t)relation;
  }
  if (volume) return VOX_OK;
  if (!f[C_CASE].key) {
    if (p->n_load_cases > 1)
      return fail(r, node, NULL, where, "needs 'case': the file declares %d load cases",
                  p->n_load_cases);
    return VOX_OK;
  }
  char name[VOX_NAME_MAX];
  where_key(at, where, "case");
  if ((status = get_name(r, f[C_CASE].value, f[C_CASE].key, at, name))) return status;
  const int found = name_table_find(r->cases, name);
  if (found < 0)
    return fail(r, f[C_CASE].value, f[C_CASE].key, at, "unknown load case '%s'", name);
  c->load_case = found;
  return VOX_OK;
}

/* `constraints:` (after the load cases and the objective), and what the
 * objective asks of them: the volume objective needs a compliance limit. */
static vox_status parse_constraints(const reader *r, struct fy_node *root, entry e,
                                    entry objective, entry weights, vox_problem *p) {
  int n;
  vox_status status = get_list(r, e, "constraints", &n);
  if (status) return status;
  if (n > VOX_MAX_DESIGN_CONSTRAINTS)
    return fail(r, e.value, e.key, "constraints", "has %d items; at most %d", n,
                VOX_MAX_DESIGN_CONSTRAINTS);
  if (n && !(p->design_constraints = calloc((size_t)n, sizeof *p->design_constraints)))
    return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  name_table taken;
  if (name_table_init(&taken, n)) return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  void *iter = NULL;
  struct fy_node *item;
  int compliance = 0;
  for (int i = 0; i < n && (item = fy_node_sequence_iterate(e.value, &iter)); i++) {
    char at[WHERE_MAX];
    where_index(at, "constraints", i);
    if ((status = parse_constraint(r, item, at, i, p, p->design_constraints, &taken))) break;
    p->n_design_constraints = i + 1;
    compliance += p->design_constraints[i].kind == VOX_CONSTRAINT_COMPLIANCE;
  }
  name_table_free(&taken);
  if (status) return status;
  if (p->objective != VOX_OBJECTIVE_VOLUME) return VOX_OK;
  if (compliance == 0)
    return fail(r, objective.value, objective.key ? objective.key : root, "objective",
                "'volume' needs a compliance constraint under 'constraints' (without one the "
                "empty design is its minimum)");
  if (weights.key)
    return fail(r, weights.key, root, "load_case_weights",
                "weigh the compliance objective, not 'objective: volume'");
  return VOX_OK;
}

/* `cell: true|false`, or a mapping of the cell's design settings (which
 * makes it a cell): objective, expression (custom's formula, parsed here so
 * that a typo fails at once, naming its character) and symmetry. */
static vox_status parse_cell(const reader *r, entry e, vox_problem *p) {
  static const char *const booleans[] = {"false", "true"};
  if (is_null(e.value) || fy_node_get_type(e.value) != FYNT_MAPPING)
    return get_word(r, e.value, e.key, "cell", "value", booleans, 2,
                    &p->cell);
  p->cell = 1;
  static const char *const keys[] = {"objective", "expression", "symmetry", NULL};
  static const char *const objectives[] = {"bulk", "shear", "poisson", "poisson-log", "custom"};
  static const char *const symmetries[] = {"none", "reflect3", "reflect6", "rotate3"};
  entry f[3];
  int index = 0;
  vox_status status = get_fields(r, e.value, e.key, "cell", keys, f);
  if (status) return status;
  if (f[0].key) {
    if ((status = get_word(r, f[0].value, f[0].key, "cell.objective", "objective", objectives, 5,
                           &index)))
      return status;
    snprintf(p->cell_objective, sizeof p->cell_objective, "%s", objectives[index]);
  }
  if (f[2].key) {
    if ((status = get_word(r, f[2].value, f[2].key, "cell.symmetry", "symmetry", symmetries, 4,
                           &index)))
      return status;
    snprintf(p->cell_symmetry, sizeof p->cell_symmetry, "%s", symmetries[index]);
  }
  const int custom = !strcmp(p->cell_objective, "custom");
  if (f[1].key) {
    if (!custom)
      return fail(r, f[1].key, e.key, "cell.expression",
                  "is the formula of 'objective: custom', not of %s",
                  f[0].key ? p->cell_objective : "a cell without an objective");
    size_t len;
    const char *text = is_null(f[1].value) || fy_node_get_type(f[1].value) != FYNT_SCALAR
                           ? NULL
                           : fy_node_get_scalar(f[1].value, &len);
    if (!text)
      return fail(r, f[1].value, f[1].key, "cell.expression", "must be a formula, not %s",
                  describe(f[1].value, &(description){0}));
    if (!(p->cell_expression = malloc(len + 1)))
      return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "out of memory");
    memcpy(p->cell_expression, text, len);
    p->cell_expression[len] = '\0';
    vox_expression *parsed = NULL;
    if (strlen(p->cell_expression) != len) {
      status = fail(r, f[1].value, f[1].key, "cell.expression", "holds a NUL character");
    } else if (vox_expression_parse(r->ctx, p->cell_expression, &parsed) != VOX_OK) {
      char message[512]; /* the parser's words, which name the character */
      snprintf(message, sizeof message, "%s", vox_context_message(r->ctx));
      status = fail(r, f[1].value, f[1].key, "cell.expression", "%s", message);
    }
    vox_expression_free(parsed);
    return status;
  }
  if (custom)
    return fail(r, f[0].value, e.key, "cell.objective",
                "'custom' needs 'expression', the formula of C11..C66 to minimise");
  return VOX_OK;
}

/* `voxfe-problem: 1` is looked up before anything else: a file of another
 * version may have keys this reader does not know, and "unsupported version"
 * is then the message that helps. */
static vox_status check_version(const reader *r, struct fy_node *root) {
  void *iter = NULL;
  struct fy_node_pair *pair;
  while ((pair = fy_node_mapping_iterate(root, &iter))) {
    struct fy_node *key = fy_node_pair_key(pair);
    if (!key || fy_node_get_type(key) != FYNT_SCALAR || !scalar_is(key, "voxfe-problem")) continue;
    struct fy_node *value = fy_node_pair_value(pair);
    double version;
    vox_status status = get_number(r, value, key, "voxfe-problem", false, &version);
    if (status) return status;
    if (version != PROBLEM_FORMAT_VERSION)
      return fail(r, value, key, "voxfe-problem",
                  "unsupported format version %g (this voxfe reads version %d)", version,
                  PROBLEM_FORMAT_VERSION);
    return VOX_OK;
  }
  return fail(r, root, NULL, "",
              "missing 'voxfe-problem: %d' (the format version; is this a voxfe problem file?)",
              PROBLEM_FORMAT_VERSION);
}

static vox_status parse_root(const reader *r, struct fy_node *root, vox_problem *p) {
  if (is_null(root) || fy_node_get_type(root) != FYNT_MAPPING)
    return fail(r, root, NULL, "",
                "must be a YAML mapping starting with 'voxfe-problem: %d', not %s",
                PROBLEM_FORMAT_VERSION, describe(root, &(description){0}));
  vox_status status = check_version(r, root);
  if (status) return status;
  static const char *const keys[] = {
      "voxfe-problem", "title",   "material",  "load_cases",        "supports", "loads",
      "passive",       "physics", "objective", "load_case_weights", "springs",  "outputs",
      "cell",          "constraints", NULL};
  enum {
    K_VERSION, K_TITLE, K_MATERIAL, K_CASES, K_SUPPORTS, K_LOADS,
    K_PASSIVE, K_PHYSICS, K_OBJECTIVE, K_WEIGHTS, K_SPRINGS, K_OUTPUTS,
    K_CELL, K_CONSTRAINTS
  };
  entry f[14];
  if ((status = get_fields(r, root, NULL, "", keys, f))) return status;
  /* The title is free text for people, carried into the model file. */
  if (f[K_TITLE].key && (is_null(f[K_TITLE].value) ||
                         fy_node_get_type(f[K_TITLE].value) != FYNT_SCALAR))
    return fail(r, f[K_TITLE].value, f[K_TITLE].key, "title", "must be text, not %s",
                describe(f[K_TITLE].value, &(description){0}));
  if (f[K_TITLE].key) {
    size_t len;
    const char *text = fy_node_get_scalar(f[K_TITLE].value, &len);
    if (len >= sizeof p->title) len = sizeof p->title - 1;
    memcpy(p->title, text, len);
    p->title[len] = '\0';
  }
  static const char *const physics_names[] = {"elasticity", "heat"};
  int physics = 0;
  if (f[K_PHYSICS].key && (status = get_word(r, f[K_PHYSICS].value, f[K_PHYSICS].key, "physics",
                                             "physics", physics_names, 2, &physics)))
    return status;
  p->physics = physics == 1 ? VOX_PHYSICS_HEAT : VOX_PHYSICS_ELASTICITY;
  if (f[K_CELL].key && (status = parse_cell(r, f[K_CELL], p))) return status;
  if (p->cell && (f[K_SUPPORTS].key || f[K_LOADS].key || f[K_CASES].key))
    return fail(r, f[K_SUPPORTS].key   ? f[K_SUPPORTS].key
                   : f[K_LOADS].key    ? f[K_LOADS].key
                                       : f[K_CASES].key,
                NULL, "cell",
                "a periodic unit cell takes no supports, loads or load cases: its load cases "
                "are the six unit strains");
  if (p->cell && (f[K_OBJECTIVE].key || f[K_WEIGHTS].key || f[K_SPRINGS].key ||
                  f[K_OUTPUTS].key || f[K_CONSTRAINTS].key))
    return fail(r, f[K_CELL].key, NULL, "cell",
                "a periodic unit cell takes no objective, load_case_weights, springs, outputs "
                "or constraints: voxfe-optimize --objective chooses what to optimize");
  if (p->cell && p->physics == VOX_PHYSICS_HEAT)
    return fail(r, f[K_CELL].key, NULL, "cell", "a periodic unit cell needs elasticity");
  if (!f[K_MATERIAL].key) return missing(r, root, NULL, "", "material");
  if ((status = parse_material(r, f[K_MATERIAL], p->physics, &p->material))) return status;
  if ((status = parse_load_cases(r, f[K_CASES], p))) return status;

  int n;
  void *iter;
  struct fy_node *item;
  char at[WHERE_MAX];
  name_table names;
  if ((status = get_list(r, f[K_SUPPORTS], "supports", &n))) return status;
  if ((n && !(p->supports = calloc((size_t)n, sizeof *p->supports))) ||
      name_table_init(&names, n))
    return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  iter = NULL;
  for (int i = 0; i < n && (item = fy_node_sequence_iterate(f[K_SUPPORTS].value, &iter)); i++) {
    where_index(at, "supports", i);
    if ((status = parse_support(r, item, at, i, p->physics, p->supports, &names))) break;
    p->n_supports = i + 1;
  }
  name_table_free(&names);
  if (status) return status;
  if ((status = get_list(r, f[K_LOADS], "loads", &n))) return status;
  if ((n && !(p->forces = calloc((size_t)n, sizeof *p->forces))) || name_table_init(&names, n))
    return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  iter = NULL;
  for (int i = 0; i < n && (item = fy_node_sequence_iterate(f[K_LOADS].value, &iter)); i++) {
    where_index(at, "loads", i);
    if ((status = parse_force(r, item, at, i, p, p->forces, &names))) break;
    p->n_forces = i + 1;
  }
  name_table_free(&names);
  if (status) return status;
  if ((status = get_list(r, f[K_PASSIVE], "passive", &n))) return status;
  if ((n && !(p->passive = calloc((size_t)n, sizeof *p->passive))) ||
      name_table_init(&names, n))
    return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  iter = NULL;
  for (int i = 0; i < n && (item = fy_node_sequence_iterate(f[K_PASSIVE].value, &iter)); i++) {
    where_index(at, "passive", i);
    if ((status = parse_passive(r, item, at, i, p->passive, &names))) break;
    p->n_passive = i + 1;
  }
  name_table_free(&names);
  if (status) return status;

  if ((status = parse_mechanism(r, root, f[K_OBJECTIVE], f[K_WEIGHTS], f[K_SPRINGS],
                                f[K_OUTPUTS], p)))
    return status;
  if ((status = parse_constraints(r, root, f[K_CONSTRAINTS], f[K_OBJECTIVE], f[K_WEIGHTS], p)))
    return status;

  /* A declared case without a load is almost always a misspelt `case:`
   * elsewhere; optimizing it would weigh an empty case. */
  if (f[K_CASES].key) {
    char *used = calloc((size_t)p->n_load_cases, 1);
    if (!used) return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; i < p->n_forces; i++) used[p->forces[i].load_case] = 1;
    iter = NULL;
    for (int c = 0; c < p->n_load_cases; c++) {
      item = fy_node_sequence_iterate(f[K_CASES].value, &iter);
      if (!used[c]) {
        free(used);
        where_index(at, "load_cases", c);
        return fail(r, item, f[K_CASES].value, at, "load case '%s' has no load",
                    p->load_case_names[c]);
      }
    }
    free(used);
  }
  return VOX_OK;
}

/* ---- the file ------------------------------------------------------------- */

static vox_status read_text(const reader *r, char **text, size_t *length) {
  *text = NULL;
  *length = 0;
  FILE *file = fopen(r->path, "rb");
  if (!file) return vox_error(r->ctx, VOX_ERR_IO, "%s: cannot open: %s", r->path, strerror(errno));
  size_t capacity = 4096, used = 0;
  char *buf = malloc(capacity);
  vox_status status = VOX_OK;
  while (buf) {
    if (used == capacity) {
      if (capacity >= PROBLEM_FILE_MAX) {
        status = vox_error(r->ctx, VOX_ERR_FORMAT,
                           "%s: larger than %u MiB; a problem file is a small YAML text",
                           r->path, PROBLEM_FILE_MAX >> 20);
        break;
      }
      char *grown = realloc(buf, 2 * capacity);
      if (!grown) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = grown;
      capacity *= 2;
    }
    size_t got = fread(buf + used, 1, capacity - used, file);
    used += got;
    if (got == 0) {
      if (ferror(file))
        status = vox_error(r->ctx, VOX_ERR_IO, "%s: cannot read: %s", r->path, strerror(errno));
      break;
    }
  }
  fclose(file);
  if (!buf) return vox_error(r->ctx, VOX_ERR_NO_MEMORY, "out of memory");
  if (status) {
    free(buf);
    return status;
  }
  *text = buf;
  *length = used;
  return VOX_OK;
}

/* Whether text[0..length) is well-formed UTF-8 (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF); *line gets the 1-based line
 * of the first bad sequence. */
static int utf8_valid(const char *text, size_t length, size_t *line) {
  const unsigned char *s = (const unsigned char *)text;
  *line = 1;
  for (size_t i = 0; i < length;) {
    const unsigned c = s[i];
    if (c == '\n') (*line)++;
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t n;
    unsigned lo = 0x80, hi = 0xBF; /* the range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) n = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else
      return 0;
    for (size_t k = 1; k <= n; k++) {
      if (i + k >= length) return 0;
      const unsigned b = s[i + k];
      if (k == 1 ? b < lo || b > hi : b < 0x80 || b > 0xBF) return 0;
    }
    i += n + 1;
  }
  return 1;
}

/* Counts the nodes the aliases under `node` would copy into *copied (those
 * reached through an alias), stopping at the budget; 0, or -1 over it. */
static int count_alias_copies(struct fy_node *node, int in_alias, int depth, size_t *copied) {
  if (!node) return 0;
  if (depth > ALIAS_DEPTH_MAX) return -1;
  if (in_alias && ++*copied > ALIAS_NODES_MAX) return -1;
  if (fy_node_is_alias(node)) {
    /* an unknown anchor is left to the resolution, which names it */
    return count_alias_copies(fy_node_resolve_alias(node), 1, depth + 1, copied);
  }
  void *iter = NULL;
  switch (fy_node_get_type(node)) {
  case FYNT_SEQUENCE: {
    struct fy_node *item;
    while ((item = fy_node_sequence_iterate(node, &iter)))
      if (count_alias_copies(item, in_alias, depth + 1, copied)) return -1;
    return 0;
  }
  case FYNT_MAPPING: {
    struct fy_node_pair *pair;
    while ((pair = fy_node_mapping_iterate(node, &iter)))
      if (count_alias_copies(fy_node_pair_key(pair), in_alias, depth + 1, copied) ||
          count_alias_copies(fy_node_pair_value(pair), in_alias, depth + 1, copied))
        return -1;
    return 0;
  }
  default:
    return 0;
  }
}

/* libfyaml writes its diagnostics to stderr unless given somewhere else to
 * put them; the library never prints, so they go nowhere and are collected. */
static void discard_diagnostic(struct fy_diag *diag, void *user, const char *buf, size_t len) {}

/* The first error libfyaml collected, as our message; 0 if there is none. */
static int yaml_error(const reader *r, struct fy_diag *diag) {
  void *iter = NULL;
  struct fy_diag_error *error;
  while ((error = fy_diag_errors_iterate(diag, &iter))) {
    if (error->type < FYET_ERROR) continue;
    char text[256];
    snprintf(text, sizeof text, "YAML: %s", error->msg ? error->msg : "syntax error");
    report(r, VOX_ERR_FORMAT, error->line, error->column, "", text);
    return 1;
  }
  return 0;
}

vox_status vox_problem_read(vox_context *ctx, const char *path, vox_problem *problem) {
  if (!problem) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "no problem to read into");
  memset(problem, 0, sizeof *problem);
  if (!path) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "no problem file given");
  name_table cases = {0};
  reader r = {ctx, path, &cases};
  char *text;
  size_t length;
  vox_status status = read_text(&r, &text, &length);
  if (status) return status;
  /* libfyaml takes a binary file (a CT volume given by mistake) for an empty
   * stream without a word; say what it is instead. */
  if (memchr(text, '\0', length)) {
    free(text);
    return report(&r, VOX_ERR_FORMAT, 0, 0, "",
                  "is not a text file (it holds NUL bytes); a problem file is UTF-8 YAML");
  }

  /* Nor is anything but UTF-8 YAML: libfyaml's scanner can loop for good
   * on invalid bytes in a directive line (a fuzzed file hung it). */
  size_t bad_line;
  if (!utf8_valid(text, length, &bad_line)) {
    free(text);
    return report(&r, VOX_ERR_FORMAT, (int)bad_line, 1, "",
                  "is not UTF-8 text (an invalid byte sequence on this line); a problem file "
                  "is UTF-8 YAML");
  }

  struct fy_diag_cfg diag_cfg;
  fy_diag_cfg_default(&diag_cfg);
  diag_cfg.fp = NULL;
  diag_cfg.output_fn = discard_diagnostic;
  diag_cfg.colorize = false;
  struct fy_diag *diag = fy_diag_create(&diag_cfg);
  struct fy_parser *parser = NULL;
  struct fy_document *doc = NULL;
  if (diag) {
    fy_diag_set_collect_errors(diag, true);
    /* not FYPCF_RESOLVE_DOCUMENT: the aliases are counted before they are
     * expanded (count_alias_copies) */
    struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET, .diag = diag};
    parser = fy_parser_create(&cfg);
  }
  if (!parser || fy_parser_set_string(parser, text, length) != 0) {
    status = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  doc = fy_parse_load_document(parser);
  if (!doc || !fy_document_root(doc)) {
    status = VOX_ERR_FORMAT;
    if (!yaml_error(&r, diag))
      report(&r, status, 0, 0, "", "holds no YAML document (it is empty or only comments)");
    goto done;
  }
  /* Only the first document would be read; a second one is a mistake
   * (pasted twice, or '---' where a key was meant), not something to drop. */
  struct fy_document *second = fy_parse_load_document(parser);
  if (second) {
    struct fy_node *extra = fy_document_root(second);
    if (extra) status = fail(&r, extra, NULL, "", "holds more than one YAML document");
    fy_parse_document_destroy(parser, second); /* a bare trailing '---' is harmless */
  } else if (yaml_error(&r, diag)) {
    status = VOX_ERR_FORMAT;
  }
  if (status) goto done;
  size_t copied = 0;
  if (count_alias_copies(fy_document_root(doc), 0, 0, &copied)) {
    status = report(&r, VOX_ERR_FORMAT, 0, 0, "",
                    "its YAML aliases (*name) expand to more than " STRINGIFY(ALIAS_NODES_MAX)
                    " copied nodes or nest deeper than " STRINGIFY(ALIAS_DEPTH_MAX)
                    " levels; a problem file needs few");
    goto done;
  }
  if (fy_document_resolve(doc) != 0) {
    status = VOX_ERR_FORMAT;
    if (!yaml_error(&r, diag)) report(&r, status, 0, 0, "", "YAML: cannot resolve its aliases");
    goto done;
  }
  /* Numbers are read with strtod, which follows the thread's locale: a host
   * program running with LC_NUMERIC=de_DE would read "0.3" as 0. The C
   * locale is put in place for the parse only. */
  locale_t c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
  if (!c_locale) {
    status = vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
    goto done;
  }
  locale_t caller_locale = uselocale(c_locale);
  status = parse_root(&r, fy_document_root(doc), problem);
  uselocale(caller_locale);
  freelocale(c_locale);

done:
  if (doc) fy_parse_document_destroy(parser, doc);
  if (parser) fy_parser_destroy(parser);
  if (diag) fy_diag_destroy(diag);
  name_table_free(&cases);
  free(text);
  if (status) vox_problem_free(problem);
  return status;
}

void vox_problem_free(vox_problem *problem) {
  if (!problem) return;
  free(problem->load_case_names);
  free(problem->supports);
  free(problem->forces);
  free(problem->passive);
  free(problem->load_case_weights);
  free(problem->springs);
  free(problem->outputs);
  free(problem->design_constraints);
  free(problem->cell_expression);
  memset(problem, 0, sizeof *problem);
}
