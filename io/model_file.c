/* SPDX-License-Identifier: BSD-3-Clause */
/* The voxfe model file: vox_model_write and vox_model_read map a vox_model to
 * and from one netCDF-4 file (schema: docs/file-format.md).
 *
 * The schema lives here once: the sparse lists (materials, constraints, loads,
 * load cases, optimization history) are tables of columns that the writer and
 * the reader both walk, so that the two cannot drift apart. The grid variables
 * (label, density, displacement) are written and read by hand. */
#define _GNU_SOURCE /* sync_file_range */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <netcdf.h>

#include "chunk_inflate.h"
#include "netcdf_guard.h"
#include "voxfe/output_target.h"
#include "model_writer.h"
#include "voxfe/temp_files.h"
#include "voxfe/analysis.h"
#include "voxfe/expression.h"
#include "voxfe/io.h"
#include "voxfe/optimizer.h" /* vox_cell_objective_parse */
#include "voxfe/symmetry.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
/* Both conventions by name, as CF-1.8 allows (blank-separated). */
#define CONVENTIONS "CF-1.8 voxfe-" STRINGIFY(VOX_SCHEMA_VERSION)

enum {
  /* Chunks of at most 4 MiB: big enough that the per-chunk overhead (B-tree
   * entry, filter call) vanishes, small enough that reading one slab of a
   * large model does not inflate much more than the slab. */
  CHUNK_BYTES = 4 << 20,
  /* Deflate level 1: once shuffle has grouped the bytes of the doubles, levels
   * 2 to 6 saved under 2 % of the size for up to 30 % more time (measured on
   * 128^3 fields, docs/file-format.md). */
  DEFLATE_LEVEL = 1,
  /* Lists (constraints, loads) are compressed only above this size: small
   * ones stay contiguous, which is smaller and faster for a few entries. */
  COMPRESS_LIST_BYTES = 64 << 10,
  /* An analysis's arrays over the bone (displacement, element fields) are
   * stored uncompressed: doubles and floats of a solution deflate by little
   * (docs/experiments.md), and netCDF deflates on one thread, which made
   * writing most of a clinical sample's time. */
  BONE_COMPRESS = 0,
  MAX_COLUMNS = 9, /* columns of the widest table */
  MAX_DIMS = 5     /* dimensions of the widest variable (displacement) */
};

/* ---------------------------------------------------------------------------
 * The schema of the lists: one table per dimension, one column per variable.
 * ------------------------------------------------------------------------- */

typedef enum col_type {
  COL_U8,   /* uint8_t field, stored NC_UBYTE */
  COL_ROLE, /* vox_material_role field, stored NC_UBYTE */
  COL_I32,  /* int32_t field, stored NC_INT */
  COL_I64,  /* int64_t field, stored NC_INT64 */
  COL_F64,  /* double field, stored NC_DOUBLE */
  COL_NAME  /* char[VOX_NAME_MAX] field, stored NC_STRING */
} col_type;

typedef struct column {
  const char *name;
  col_type type;
  size_t offset; /* of the field in the row struct */
  const char *long_name;
  const char *units;         /* NULL: none (labels, counts, flags, names) */
  const char *flag_meanings; /* meanings of flag_values 0, 1, ...; or NULL */
  const char *comment;       /* or NULL */
} column;

typedef struct table {
  const char *dim; /* the dimension all columns run along */
  size_t row_size; /* bytes per row in memory */
  int n_columns;
  const column *columns;
} table;

#define TABLE(dim, row_type, cols)                                                                 \
  { dim, sizeof(row_type), (int)(sizeof cols / sizeof cols[0]), cols }

static const char node_comment[] =
    "0-based node index n = (k*(ny+1) + j)*(nx+1) + i of node (i,j,k), x fastest";

static const column material_columns[] = {
    {"material_label", COL_U8, offsetof(vox_material, label), "label value of the material", NULL,
     NULL, "voxels whose label equals this value are made of this material"},
    {"material_name", COL_NAME, offsetof(vox_material, name), "material name", NULL, NULL, NULL},
    {"material_role", COL_ROLE, offsetof(vox_material, role),
     "role of the material in optimization", NULL, "design passive_solid passive_void", NULL},
    {"material_youngs_modulus", COL_F64, offsetof(vox_material, youngs_modulus),
     "Young's modulus of the solid material", "MPa", NULL, NULL},
    {"material_poisson_ratio", COL_F64, offsetof(vox_material, poisson_ratio), "Poisson's ratio",
     "1", NULL, NULL},
    {"material_conductivity", COL_F64, offsetof(vox_material, conductivity), "thermal conductivity",
     "W mm-1 K-1", NULL, NULL},
};

static const column constraint_columns[] = {
    {"constraint_node", COL_I64, offsetof(vox_constraint, node), "constrained node", NULL, NULL,
     node_comment},
    {"constraint_component", COL_U8, offsetof(vox_constraint, component),
     "constrained displacement component", NULL, "x y z", NULL},
    {"constraint_value", COL_F64, offsetof(vox_constraint, value), "prescribed displacement", "mm",
     NULL, NULL},
};

static const column load_columns[] = {
    {"load_node", COL_I64, offsetof(vox_load, node), "loaded node", NULL, NULL, node_comment},
    {"load_component", COL_U8, offsetof(vox_load, component), "force component", NULL, "x y z",
     NULL},
    {"load_case_index", COL_I32, offsetof(vox_load, load_case), "load case of the force", NULL,
     NULL, "0-based index along dimension load_case"},
    {"load_value", COL_F64, offsetof(vox_load, value), "nodal force", "N", NULL, NULL},
};

static const column spring_columns[] = {
    {"spring_node", COL_I64, offsetof(vox_spring, node), "node of a spring to ground", NULL, NULL,
     node_comment},
    {"spring_component", COL_U8, offsetof(vox_spring, component), "spring direction", NULL,
     "x y z", NULL},
    {"spring_stiffness", COL_F64, offsetof(vox_spring, stiffness), "spring stiffness", "N mm-1",
     NULL, NULL},
};

static const column output_columns[] = {
    {"output_node", COL_I64, offsetof(vox_output, node), "node of the output displacement", NULL,
     NULL, node_comment},
    {"output_component", COL_U8, offsetof(vox_output, component),
     "output displacement component", NULL, "x y z", NULL},
    {"output_weight", COL_F64, offsetof(vox_output, weight),
     "weight of the dof in the output displacement l.u", "1", NULL, NULL},
};

static const column design_constraint_columns[] = {
    {"design_constraint_name", COL_NAME, offsetof(vox_design_constraint, name),
     "name of a design constraint of the optimization", NULL, NULL, NULL},
    {"design_constraint_kind", COL_U8, offsetof(vox_design_constraint, kind),
     "what the design constraint bounds", NULL, "volume compliance", NULL},
    {"design_constraint_relation", COL_U8, offsetof(vox_design_constraint, equal),
     "relation of the value to the limit", NULL, "at_most equal", NULL},
    {"design_constraint_label", COL_U8, offsetof(vox_design_constraint, label),
     "label whose design elements a volume constraint measures", NULL, NULL,
     "0: the whole design domain"},
    {"design_constraint_load_case", COL_I32, offsetof(vox_design_constraint, load_case),
     "load case of a compliance constraint", NULL, NULL,
     "0-based index along dimension load_case"},
    {"design_constraint_limit", COL_F64, offsetof(vox_design_constraint, limit),
     "limit of the design constraint", NULL, NULL,
     "volume: a fraction of the region's volume; compliance: N mm"},
};

/* The load case names are an array of char[VOX_NAME_MAX]: a one-column table. */
typedef struct load_case_row {
  char name[VOX_NAME_MAX];
} load_case_row;
_Static_assert(sizeof(load_case_row) == VOX_NAME_MAX,
               "load_case_row must match char[VOX_NAME_MAX]");

static const column load_case_columns[] = {
    {"load_case_name", COL_NAME, offsetof(load_case_row, name), "load case name", NULL, NULL, NULL},
};

static const column history_columns[] = {
    {"iteration", COL_I32, offsetof(vox_history_row, iteration), "design iteration", NULL, NULL,
     "1-based"},
    {"objective", COL_F64, offsetof(vox_history_row, objective),
     "compliance summed over the load cases", "N mm", NULL, NULL},
    {"volume_fraction", COL_F64, offsetof(vox_history_row, volume_fraction),
     "volume fraction of the design domain", "1", NULL, NULL},
    {"change", COL_F64, offsetof(vox_history_row, change), "largest density change", "1", NULL,
     NULL},
    {"non_discreteness", COL_F64, offsetof(vox_history_row, non_discreteness),
     "measure of non-discreteness M_nd", "percent", NULL, NULL},
    {"penalty", COL_F64, offsetof(vox_history_row, penalty), "SIMP penalty exponent p", "1", NULL,
     NULL},
    {"q", COL_F64, offsetof(vox_history_row, q), "intermediate-density exponent q", "1", NULL,
     NULL},
    {"cg_iterations", COL_I32, offsetof(vox_history_row, cg_iterations),
     "conjugate-gradient iterations summed over the load cases", NULL, NULL, NULL},
    {"seconds", COL_F64, offsetof(vox_history_row, seconds), "wall time of the iteration", "s",
     NULL, NULL},
};

static const table material_table = TABLE("material", vox_material, material_columns);
static const table constraint_table = TABLE("constraint", vox_constraint, constraint_columns);
static const table load_table = TABLE("load", vox_load, load_columns);
static const table load_case_table = TABLE("load_case", load_case_row, load_case_columns);
static const table spring_table = TABLE("spring", vox_spring, spring_columns);
static const table output_table = TABLE("output", vox_output, output_columns);
static const table history_table = TABLE("iteration", vox_history_row, history_columns);
static const table design_constraint_table =
    TABLE("design_constraint", vox_design_constraint, design_constraint_columns);

#define HISTORY_GROUP "optimization"

/* Integer fields travel as long long: netCDF converts to and from the stored
 * type, and a range check on read catches values the field cannot hold. */
static long long get_int_field(const column *c, const char *row) {
  const void *f = row + c->offset;
  switch (c->type) {
  case COL_U8: return *(const uint8_t *)f;
  case COL_ROLE: return *(const vox_material_role *)f;
  case COL_I32: return *(const int32_t *)f;
  case COL_I64: return *(const int64_t *)f;
  default: return 0;
  }
}

/* Returns 0 when `v` does not fit the field. Any byte is a role here:
 * vox_model_validate names an unknown one. */
static int set_int_field(const column *c, char *row, long long v) {
  void *f = row + c->offset;
  switch (c->type) {
  case COL_U8:
  case COL_ROLE:
    if (v < 0 || v > UINT8_MAX) return 0;
    if (c->type == COL_U8)
      *(uint8_t *)f = (uint8_t)v;
    else
      *(vox_material_role *)f = (vox_material_role)v;
    return 1;
  case COL_I32:
    if (v < INT32_MIN || v > INT32_MAX) return 0;
    *(int32_t *)f = (int32_t)v;
    return 1;
  case COL_I64: *(int64_t *)f = v; return 1;
  default: return 0;
  }
}

static nc_type column_nc_type(col_type t) {
  switch (t) {
  case COL_U8:
  case COL_ROLE: return NC_UBYTE;
  case COL_I32: return NC_INT;
  case COL_I64: return NC_INT64;
  case COL_F64: return NC_DOUBLE;
  case COL_NAME: return NC_STRING;
  }
  return NC_NAT;
}

static size_t nc_type_bytes(nc_type t) {
  switch (t) {
  case NC_UBYTE: return 1;
  case NC_USHORT: return 2;
  case NC_INT: return 4;
  default: return 8;
  }
}

/* ---------------------------------------------------------------------------
 * Shared helpers.
 * ------------------------------------------------------------------------- */

/* a*b, or 0 (with *ok cleared) when it overflows size_t. */
static size_t mul_size(size_t a, size_t b, int *ok) {
  if (a && b > SIZE_MAX / a) {
    *ok = 0;
    return 0;
  }
  return a * b;
}

/* Puts "path: " before the context's current message (from helpers that do
 * not know the file) and keeps it on one line: the message may quote material
 * names, which come from the caller or the file. */
static vox_status with_path(vox_context *ctx, vox_status status, const char *path) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", vox_context_message(ctx));
  for (char *p = msg; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = ' ';
  return vox_error(ctx, status, "%s: %s", path, msg);
}

/* ---------------------------------------------------------------------------
 * Writing.
 * ------------------------------------------------------------------------- */

typedef struct writer {
  vox_context *ctx;
  const char *path; /* the destination, for messages */
  int ncid;
  /* an analysis's displacement is stored on these nodes only */
  int64_t *bone_nodes;
  size_t n_bone_nodes;
  const char *tmp; /* the temporary file being written */
  int deflate_fields; /* vox_write_options */
  size_t slab_bytes;  /* vox_write_options, 0 resolved */
} writer;

/* Large uncompressed fields go to the file in slabs of about this many
 * bytes (vox_write_options.slab_bytes), the kernel asked after each to start
 * writing them to the disk: the disk then works while the next slab is
 * copied, and the fsync before the rename waits for the last slabs instead
 * of the whole file (a 1 GB design file: docs/benchmarks.md). */
#define SLAB_BYTES ((size_t)64 << 20)

void vox_start_writeback(int ncid) {
#ifdef SYNC_FILE_RANGE_WRITE
  size_t len = 0;
  if (nc_inq_path(ncid, &len, NULL) != NC_NOERR || len == 0) return;
  char *path = malloc(len + 1);
  if (!path) return;
  int fd = nc_inq_path(ncid, &len, path) == NC_NOERR ? open(path, O_RDONLY) : -1;
  free(path);
  if (fd < 0) return;
  (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  close(fd);
#else
  (void)ncid;
#endif
}

/* Writes a contiguous variable in slabs along its dimension d, the first
 * whose one index holds at most a slab (or the last): runs of d's indices
 * for each index of the dimensions before it. */
static int put_slabs(const writer *w, int varid, int ndims, const size_t *shape, size_t elem,
                     const char *data) {
  size_t start[MAX_DIMS], count[MAX_DIMS], inner = elem;
  for (int k = 0; k < ndims; k++) inner *= shape[k];
  int d = 0;
  for (; d < ndims; d++) {
    inner /= shape[d] ? shape[d] : 1; /* bytes of one index of d */
    if (inner <= w->slab_bytes || d == ndims - 1) break;
  }
  size_t outer = 1;
  for (int k = 0; k < d; k++) outer *= shape[k];
  const size_t step = inner >= w->slab_bytes ? 1 : w->slab_bytes / inner;
  for (int k = d + 1; k < ndims; k++) start[k] = 0, count[k] = shape[k];
  for (size_t o = 0; o < outer; o++) {
    size_t q = o; /* o as the indices of the dimensions before d */
    for (int k = d - 1; k >= 0; k--) start[k] = q % shape[k], count[k] = 1, q /= shape[k];
    for (size_t i = 0; i < shape[d]; i += step) {
      start[d] = i;
      count[d] = shape[d] - i < step ? shape[d] - i : step;
      int err = nc_put_vara(w->ncid, varid, start, count, data + (o * shape[d] + i) * inner);
      if (err) return err;
      vox_start_writeback(w->ncid);
    }
  }
  return NC_NOERR;
}

/* nc_put_var of a whole variable whose values in memory have its own type:
 * in slabs where it is stored contiguously (a chunked, deflated one in one
 * call, which its chunk cache wants). */
static int put_field(const writer *w, int varid, const void *data) {
  int ndims, dimids[MAX_DIMS], storage;
  nc_type type;
  size_t elem, shape[MAX_DIMS];
  int err = nc_inq_varndims(w->ncid, varid, &ndims);
  if (!err && (ndims < 1 || ndims > MAX_DIMS)) err = NC_EINVAL;
  if (!err) err = nc_inq_vardimid(w->ncid, varid, dimids);
  if (!err) err = nc_inq_vartype(w->ncid, varid, &type);
  if (!err) err = nc_inq_type(w->ncid, type, NULL, &elem);
  if (!err) err = nc_inq_var_chunking(w->ncid, varid, &storage, NULL);
  for (int d = 0; !err && d < ndims; d++) err = nc_inq_dimlen(w->ncid, dimids[d], &shape[d]);
  if (err) return err;
  if (storage != NC_CONTIGUOUS) return nc_put_var(w->ncid, varid, data);
  return put_slabs(w, varid, ndims, shape, elem, data);
}

/* Every netCDF failure while writing is an I/O error (disk full, quota,
 * permissions surface as HDF errors), except running out of memory. */
static vox_status write_fail(writer *w, int err, const char *what) {
  return vox_error(w->ctx, err == NC_ENOMEM ? VOX_ERR_NO_MEMORY : VOX_ERR_IO,
                   "%s: cannot write %s: %s", w->path, what, nc_strerror(err));
}

#define W_TRY(w, call, what)                                                                       \
  do {                                                                                             \
    int w_err_ = (call);                                                                           \
    if (w_err_ != NC_NOERR) return write_fail((w), w_err_, (what));                                \
  } while (0)

static int put_text(int ncid, int varid, const char *name, const char *text) {
  return nc_put_att_text(ncid, varid, name, strlen(text), text);
}

/* long_name, units, flag_values/flag_meanings, comment: what CF readers look
 * for. flag_values are 0..n-1 for n blank-separated meanings. */
static int put_var_atts(int ncid, int varid, const char *long_name, const char *units,
                        const char *flag_meanings, const char *comment) {
  int err = put_text(ncid, varid, "long_name", long_name);
  if (!err && units) err = put_text(ncid, varid, "units", units);
  if (!err && flag_meanings) {
    unsigned char values[16];
    size_t n = 0;
    for (const char *p = flag_meanings; *p && n < sizeof values; n++) {
      values[n] = (unsigned char)n;
      p += strcspn(p, " ");
      p += strspn(p, " ");
    }
    err = nc_put_att_uchar(ncid, varid, "flag_values", NC_UBYTE, n, values);
    if (!err) err = put_text(ncid, varid, "flag_meanings", flag_meanings);
  }
  if (!err && comment) err = put_text(ncid, varid, "comment", comment);
  return err;
}

/* Chunk shape for an array of `ndims` dimensions (C order, last fastest) and
 * `elem` bytes per value: the inner dimensions whole, then as many slabs of
 * the next one as fit in CHUNK_BYTES, spread evenly so that the last chunk
 * is not a sliver; the first `single` dimensions get chunk 1 (one load case
 * per chunk, so that one case reads alone). */
static void choose_chunks(int ndims, const size_t *shape, size_t elem, int single, size_t *chunk) {
  size_t bytes = elem;
  int d = ndims - 1;
  for (; d >= single && shape[d] <= CHUNK_BYTES / bytes; d--) {
    chunk[d] = shape[d];
    bytes *= shape[d];
  }
  if (d >= single) {
    size_t fit = CHUNK_BYTES / bytes; /* >= 1: bytes never exceeds CHUNK_BYTES */
    size_t pieces = (shape[d] + fit - 1) / fit;
    chunk[d] = (shape[d] + pieces - 1) / pieces;
    d--;
  }
  for (; d >= 0; d--) chunk[d] = 1;
}

/* Defines a variable that is written whole (so no fill is needed), chunked
 * and deflated when `compress`, with shuffle for multi-byte values. */
static int def_var(int ncid, const char *name, nc_type type, int ndims, const int *dimids,
                   const size_t *shape, int compress, int single, int *varid) {
  int err = nc_def_var(ncid, name, type, ndims, dimids, varid);
  if (!err && type != NC_STRING) err = nc_def_var_fill(ncid, *varid, NC_NOFILL, NULL);
  if (!err && compress) {
    size_t chunk[MAX_DIMS];
    size_t elem = nc_type_bytes(type);
    choose_chunks(ndims, shape, elem, single, chunk);
    err = nc_def_var_chunking(ncid, *varid, NC_CHUNKED, chunk);
    if (!err) err = nc_def_var_deflate(ncid, *varid, elem > 1, 1, DEFLATE_LEVEL);
  }
  return err;
}

/* Defines the dimension and the column variables of a non-empty table. */
static vox_status def_table(writer *w, int ncid, const table *t, size_t n, int *varids) {
  int dim;
  W_TRY(w, nc_def_dim(ncid, t->dim, n, &dim), t->dim);
  for (int i = 0; i < t->n_columns; i++) {
    const column *c = &t->columns[i];
    nc_type type = column_nc_type(c->type);
    int compress = type != NC_STRING && n * nc_type_bytes(type) >= COMPRESS_LIST_BYTES;
    W_TRY(w, def_var(ncid, c->name, type, 1, &dim, &n, compress, 0, &varids[i]), c->name);
    W_TRY(w, put_var_atts(ncid, varids[i], c->long_name, c->units, c->flag_meanings, c->comment),
          c->name);
  }
  return VOX_OK;
}

/* Writes the columns of a table: each gathered from the rows into one buffer. */
static vox_status put_table(writer *w, int ncid, const table *t, const void *rows, size_t n,
                            const int *varids) {
  void *buf = malloc(n * 8); /* long long, double or char * per row */
  if (!buf) return vox_error(w->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", w->path);
  for (int i = 0; i < t->n_columns; i++) {
    const column *c = &t->columns[i];
    const char *row = rows;
    int err;
    if (c->type == COL_F64) {
      for (size_t r = 0; r < n; r++, row += t->row_size)
        memcpy((double *)buf + r, row + c->offset, sizeof(double));
      err = nc_put_var_double(ncid, varids[i], buf);
    } else if (c->type == COL_NAME) {
      for (size_t r = 0; r < n; r++, row += t->row_size) ((const char **)buf)[r] = row + c->offset;
      err = nc_put_var_string(ncid, varids[i], buf);
    } else {
      for (size_t r = 0; r < n; r++, row += t->row_size)
        ((long long *)buf)[r] = get_int_field(c, row);
      err = nc_put_var_longlong(ncid, varids[i], buf);
    }
    if (err) {
      free(buf);
      return write_fail(w, err, c->name);
    }
  }
  free(buf);
  return VOX_OK;
}

/* Makes a word of a material name for flag_meanings, which CF wants as
 * blank-separated words of letters, digits and _.+-@. */
static void append_flag_word(char *out, const vox_material *m) {
  char *p = out + strlen(out);
  if (*out) *p++ = ' ';
  if (!m->name[0]) {
    sprintf(p, "label_%d", m->label);
    return;
  }
  for (const char *s = m->name; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             strchr("_.+-@", ch);
    *p++ = ok && ch ? (char)ch : '_';
  }
  *p = '\0';
}

/* label: the material of each voxel, with the material table as CF flags. */
static vox_status def_label(writer *w, const vox_model *m, const int *dims, const size_t *shape,
                            int *varid) {
  W_TRY(w, def_var(w->ncid, "label", NC_UBYTE, 3, dims, shape, 1, 0, varid), "label");
  unsigned char values[256];
  char *meanings = malloc((size_t)(m->n_materials + 1) * (VOX_NAME_MAX + 1) + 8);
  if (!meanings) return vox_error(w->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", w->path);
  strcpy(meanings, "empty");
  values[0] = 0;
  for (int i = 0; i < m->n_materials; i++) {
    values[i + 1] = m->materials[i].label;
    append_flag_word(meanings, &m->materials[i]);
  }
  int err = put_var_atts(w->ncid, *varid, "material label", NULL, NULL,
                         "0 = empty voxel; other values are material_label values of the "
                         "material table");
  if (!err)
    err = nc_put_att_uchar(w->ncid, *varid, "flag_values", NC_UBYTE, (size_t)m->n_materials + 1,
                           values);
  if (!err) err = put_text(w->ncid, *varid, "flag_meanings", meanings);
  free(meanings);
  if (err) return write_fail(w, err, "label");
  return VOX_OK;
}

/* Defines a coordinate variable along `dim` (cell centres or nodes). */
static vox_status def_coord(writer *w, const char *name, int dim, const char *long_name,
                            const char *axis, int *varid) {
  size_t unused = 0; /* the shape only matters for chunked variables */
  W_TRY(w, def_var(w->ncid, name, NC_DOUBLE, 1, &dim, &unused, 0, 0, varid), name);
  W_TRY(w, put_var_atts(w->ncid, *varid, long_name, "mm", NULL, NULL), name);
  W_TRY(w, put_text(w->ncid, *varid, "axis", axis), name);
  return VOX_OK;
}

/* Writes origin + (i + shift) * h for i < n. */
static vox_status put_coord(writer *w, int varid, size_t n, double origin, double h, double shift) {
  double *v = malloc(n * sizeof *v);
  if (!v) return vox_error(w->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", w->path);
  for (size_t i = 0; i < n; i++) v[i] = origin + ((double)i + shift) * h;
  int err = nc_put_var_double(w->ncid, varid, v);
  free(v);
  if (err) return write_fail(w, err, "coordinates");
  return VOX_OK;
}

typedef struct var_ids {
  int cell_coord[3], node_coord[3]; /* x, y, z */
  int label, intensity, density, displacement, bone_node_index;
  int snapshot_iteration, snapshot_density, nodal_density;
  int history_group;
  int constraint_value;
  int load_case_weight;
  int support_name, constraint_name_index, load_name, load_name_index;
  int material[MAX_COLUMNS], constraint[MAX_COLUMNS], load[MAX_COLUMNS], load_case[MAX_COLUMNS],
      spring[MAX_COLUMNS], output[MAX_COLUMNS], history[MAX_COLUMNS],
      design_constraint[MAX_COLUMNS];
} var_ids;

static const char *const axis_names[3] = {"x", "y", "z"};
static const char *const node_dim_names[3] = {"node_x", "node_y", "node_z"};

/* Is the displacement stored on the nodes of the non-empty voxels only
 * (dimension bone_node) rather than on the whole box? For analysis results
 * of elasticity models: the solver holds every other node at zero, and on a
 * porous bone most of the box is empty. */
static int on_bone_nodes(const vox_model *m) {
  return m->stage == VOX_STAGE_ANALYSIS && m->physics == VOX_PHYSICS_ELASTICITY &&
         m->displacement != NULL;
}

/* The nodes of the non-empty voxels in node order (vox_bone_node_mask),
 * counted per node layer, then listed at each layer's offset, both in
 * parallel over the layers. */
static vox_status find_bone_nodes(writer *w, const vox_model *m) {
  const int64_t per_layer = (m->grid.nx + 1) * (m->grid.ny + 1), layers = m->grid.nz + 1;
  uint8_t *mask = malloc((size_t)(per_layer * layers));
  size_t *start = calloc((size_t)layers + 1, sizeof *start);
  if (!mask || !start || vox_bone_node_mask(w->ctx, m, mask)) {
    free(mask), free(start);
    return vox_error(w->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", w->path);
  }
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < layers; k++) {
    size_t count = 0;
    for (int64_t n = k * per_layer; n < (k + 1) * per_layer; n++) count += mask[n];
    start[k + 1] = count;
  }
  for (int64_t k = 0; k < layers; k++) start[k + 1] += start[k];
  w->n_bone_nodes = start[layers];
  if (!(w->bone_nodes = malloc((w->n_bone_nodes + 1) * sizeof *w->bone_nodes))) {
    free(mask), free(start);
    return vox_error(w->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", w->path);
  }
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < layers; k++) {
    size_t at = start[k];
    for (int64_t n = k * per_layer; n < (k + 1) * per_layer; n++)
      if (mask[n]) w->bone_nodes[at++] = n;
  }
  free(mask), free(start);
  return VOX_OK;
}

void *vox_alloc_buffer(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, (size_t)2 << 20, bytes ? bytes : 1)) return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, bytes, MADV_HUGEPAGE); /* a hint: failure changes nothing */
#endif
  return p;
}

/* Writes `n` indices as the variable's type (int32 or int64), converted in
 * parallel here: netCDF's own conversion took longer than the write. */
int vox_put_indices(int ncid, int varid, const int64_t *index, size_t n) {
  nc_type type;
  int err = nc_inq_vartype(ncid, varid, &type);
  if (err || type != NC_INT)
    return err ? err : nc_put_var_longlong(ncid, varid, (const long long *)index);
  int *narrow = vox_alloc_buffer(n * sizeof *narrow);
  if (!narrow) return NC_ENOMEM;
  const ptrdiff_t count = (ptrdiff_t)n;
#pragma omp parallel for schedule(static)
  for (ptrdiff_t i = 0; i < count; i++) narrow[i] = (int)index[i];
  err = nc_put_var_int(ncid, varid, narrow);
  free(narrow);
  return err;
}

static const char *const axis_upper[3] = {"X", "Y", "Z"};

/* Does the model say more about its optimization problem than a version 1
 * or 2 reader understands (VOX_SCHEMA_VERSION_OBJECTIVE)? */
static int has_objective_data(const vox_model *m) {
  return m->n_springs > 0 || m->n_outputs > 0 || m->objective != VOX_OBJECTIVE_COMPLIANCE ||
         m->load_case_weights != NULL;
}

static vox_status def_globals(writer *w, const vox_model *m) {
  const int heat = m->physics == VOX_PHYSICS_HEAT;
  int ncid = w->ncid, version = m->n_design_constraints > 0 || m->objective == VOX_OBJECTIVE_VOLUME
                                   ? VOX_SCHEMA_VERSION_CONSTRAINTS
                               : on_bone_nodes(m)       ? VOX_SCHEMA_VERSION_BONE_NODES
                               : has_objective_data(m) ? VOX_SCHEMA_VERSION_OBJECTIVE
                               : heat                  ? VOX_SCHEMA_VERSION_HEAT
                                                       : VOX_SCHEMA_VERSION;
  W_TRY(w, put_text(ncid, NC_GLOBAL, "Conventions", CONVENTIONS), "attribute Conventions");
  W_TRY(w, nc_put_att_int(ncid, NC_GLOBAL, "voxfe_schema_version", NC_INT, 1, &version),
        "attribute voxfe_schema_version");
  if (m->title) W_TRY(w, put_text(ncid, NC_GLOBAL, "title", m->title), "attribute title");
  if (m->history_text)
    W_TRY(w, put_text(ncid, NC_GLOBAL, "history", m->history_text), "attribute history");
  W_TRY(w, put_text(ncid, NC_GLOBAL, "voxfe_version", vox_version()), "attribute voxfe_version");
  W_TRY(w, put_text(ncid, NC_GLOBAL, "stage", vox_stage_name(m->stage)),
        "attribute stage");
  if (heat) W_TRY(w, put_text(ncid, NC_GLOBAL, "physics", "heat"), "attribute physics");
  if (m->objective != VOX_OBJECTIVE_COMPLIANCE)
    W_TRY(w, put_text(ncid, NC_GLOBAL, "objective", vox_objective_name(m->objective)),
          "attribute objective");
  W_TRY(w, nc_put_att_double(ncid, NC_GLOBAL, "voxel_size", NC_DOUBLE, 3, m->grid.voxel_size),
        "attribute voxel_size");
  W_TRY(w, put_text(ncid, NC_GLOBAL, "voxel_size_units", "mm"), "attribute voxel_size_units");
  W_TRY(w, nc_put_att_double(ncid, NC_GLOBAL, "origin", NC_DOUBLE, 3, m->grid.origin),
        "attribute origin");
  W_TRY(w, put_text(ncid, NC_GLOBAL, "origin_units", "mm"), "attribute origin_units");
  if (m->target_volume_fraction > 0)
    W_TRY(w, nc_put_att_double(ncid, NC_GLOBAL, "target_volume_fraction", NC_DOUBLE, 1,
                               &m->target_volume_fraction),
          "attribute target_volume_fraction");
  if (m->cell_tensor) {
    W_TRY(w, nc_put_att_double(ncid, NC_GLOBAL, "homogenized_stiffness", NC_DOUBLE, 36,
                               m->cell_tensor),
          "attribute homogenized_stiffness");
    W_TRY(w, put_text(ncid, NC_GLOBAL, "homogenized_stiffness_order",
                      "6x6 row-major, Voigt order xx yy zz xy yz zx, engineering shear strains"),
          "attribute homogenized_stiffness_order");
  }
  /* a cell's design settings from its problem file */
  if (m->cell_objective)
    W_TRY(w, put_text(ncid, NC_GLOBAL, "cell_objective", m->cell_objective),
          "attribute cell_objective");
  if (m->cell_expression)
    W_TRY(w, put_text(ncid, NC_GLOBAL, "cell_expression", m->cell_expression),
          "attribute cell_expression");
  if (m->cell_symmetry)
    W_TRY(w, put_text(ncid, NC_GLOBAL, "cell_symmetry", m->cell_symmetry),
          "attribute cell_symmetry");
  return VOX_OK;
}

/* The names of the supports and loads a problem file gave (dimensions
 * named_support and named_load), and which one made each constraint and
 * load (1-based, 0 for none): only for a model that has names. */
static int has_names(size_t n_rows, int n_names) { return n_rows > 0 && n_names > 0; }

static vox_status def_condition_names(writer *w, const vox_model *m, var_ids *v) {
  const int ncid = w->ncid;
  const struct {
    size_t n_rows;
    int n_names;
    const char *dim, *rows_dim, *names, *index, *names_long, *index_long;
    int *v_names, *v_index;
  } lists[2] = {
      {m->n_constraints, m->n_support_names, "named_support", "constraint", "support_name",
       "constraint_name_index", "name of a support of the problem file",
       "the support that made the constraint", &v->support_name, &v->constraint_name_index},
      {m->n_loads, m->n_load_names, "named_load", "load", "load_name", "load_name_index",
       "name of a load of the problem file", "the load that made the nodal force", &v->load_name,
       &v->load_name_index},
  };
  for (int i = 0; i < 2; i++) {
    if (!has_names(lists[i].n_rows, lists[i].n_names)) continue;
    int dim, rows_dim;
    size_t n = (size_t)lists[i].n_names, rows = lists[i].n_rows;
    W_TRY(w, nc_def_dim(ncid, lists[i].dim, n, &dim), lists[i].dim);
    W_TRY(w, nc_inq_dimid(ncid, lists[i].rows_dim, &rows_dim), lists[i].rows_dim);
    W_TRY(w, def_var(ncid, lists[i].names, NC_STRING, 1, &dim, &n, 0, 0, lists[i].v_names),
          lists[i].names);
    W_TRY(w, put_var_atts(ncid, *lists[i].v_names, lists[i].names_long, NULL, NULL, NULL),
          lists[i].names);
    W_TRY(w,
          def_var(ncid, lists[i].index, NC_USHORT, 1, &rows_dim, &rows,
                  rows * 2 >= COMPRESS_LIST_BYTES, 0, lists[i].v_index),
          lists[i].index);
    char comment[96];
    snprintf(comment, sizeof comment, "1-based index along %s; 0: none", lists[i].dim);
    W_TRY(w, put_var_atts(ncid, *lists[i].v_index, lists[i].index_long, NULL, NULL, comment),
          lists[i].index);
  }
  return VOX_OK;
}

static vox_status put_condition_names(writer *w, const vox_model *m, const var_ids *v) {
  const size_t most = m->n_constraints > m->n_loads ? m->n_constraints : m->n_loads;
  if (!has_names(m->n_constraints, m->n_support_names) && !has_names(m->n_loads, m->n_load_names))
    return VOX_OK;
  unsigned short *index = malloc(most * sizeof *index);
  const char **names = malloc(VOX_MAX_CONDITION_NAMES * sizeof *names);
  if (!index || !names) {
    free(index), free(names);
    return vox_error(w->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", w->path);
  }
  vox_status s = VOX_OK;
  for (int list = 0; list < 2 && !s; list++) {
    const int n_names = list ? m->n_load_names : m->n_support_names;
    const size_t n_rows = list ? m->n_loads : m->n_constraints;
    if (!has_names(n_rows, n_names)) continue;
    for (int i = 0; i < n_names; i++) names[i] = list ? m->load_names[i] : m->support_names[i];
    for (size_t i = 0; i < n_rows; i++)
      index[i] = list ? m->loads[i].name_index : m->constraints[i].name_index;
    int err = nc_put_var_string(w->ncid, list ? v->load_name : v->support_name, names);
    if (err) {
      s = write_fail(w, err, list ? "load_name" : "support_name");
      break;
    }
    err = nc_put_var_ushort(w->ncid, list ? v->load_name_index : v->constraint_name_index, index);
    if (err) s = write_fail(w, err, list ? "load_name_index" : "constraint_name_index");
  }
  free(index), free(names);
  return s;
}

/* How the run that made the design ended, as attributes of the history's
 * group (docs/file-format.md); nothing where no run recorded it. */
static vox_status def_optimization_end(writer *w, int gid, const vox_optimization_end *end,
                                       const vox_model *m) {
  if (!end->stop_reason) return VOX_OK;
  if (m->final_constraint && m->n_design_constraints > 0)
    W_TRY(w,
          nc_put_att_double(gid, NC_GLOBAL, "final_constraint_value", NC_DOUBLE,
                            (size_t)m->n_design_constraints, m->final_constraint),
          "attribute final_constraint_value");
  const long long cg = end->cg_iterations;
  W_TRY(w, put_text(gid, NC_GLOBAL, "stop_reason", vox_stop_reason_name(end->stop_reason)),
        "attribute stop_reason");
  W_TRY(w, nc_put_att_double(gid, NC_GLOBAL, "final_objective", NC_DOUBLE, 1, &end->objective),
        "attribute final_objective");
  W_TRY(w,
        nc_put_att_double(gid, NC_GLOBAL, "final_volume_fraction", NC_DOUBLE, 1,
                          &end->volume_fraction),
        "attribute final_volume_fraction");
  W_TRY(w,
        nc_put_att_double(gid, NC_GLOBAL, "final_non_discreteness", NC_DOUBLE, 1,
                          &end->non_discreteness),
        "attribute final_non_discreteness");
  W_TRY(w, nc_put_att_longlong(gid, NC_GLOBAL, "final_cg_iterations", NC_INT64, 1, &cg),
        "attribute final_cg_iterations");
  W_TRY(w,
        put_text(gid, NC_GLOBAL, "final_comment",
                 "final_*: the design the file holds (density), evaluated after the last "
                 "update; each row is the design its iteration evaluated, before its update"),
        "attribute final_comment");
  return VOX_OK;
}

/* Defines everything, so that the data then go out in one pass. */
static vox_status define_all(writer *w, const vox_model *m, var_ids *v) {
  int ncid = w->ncid;
  const vox_grid *g = &m->grid;
  size_t n[3] = {(size_t)g->nx, (size_t)g->ny, (size_t)g->nz};
  int cell_dim[3], node_dim[3], component_dim = -1, case_dim = -1;
  vox_status s = def_globals(w, m);
  if (s) return s;

  for (int a = 2; a >= 0; a--)
    W_TRY(w, nc_def_dim(ncid, axis_names[a], n[a], &cell_dim[a]), axis_names[a]);
  for (int a = 2; a >= 0; a--) {
    char long_name[64];
    snprintf(long_name, sizeof long_name, "%s coordinate of voxel centre", axis_names[a]);
    if ((s = def_coord(w, axis_names[a], cell_dim[a], long_name, axis_upper[a], &v->cell_coord[a])))
      return s;
  }
  const int zyx[3] = {cell_dim[2], cell_dim[1], cell_dim[0]};
  const size_t zyx_len[3] = {n[2], n[1], n[0]};
  if ((s = def_label(w, m, zyx, zyx_len, &v->label))) return s;

  if (m->n_materials > 0 &&
      (s = def_table(w, ncid, &material_table, (size_t)m->n_materials, v->material)))
    return s;
  if (m->n_constraints > 0 &&
      (s = def_table(w, ncid, &constraint_table, m->n_constraints, v->constraint)))
    return s;
  if (m->n_load_cases > 0) {
    if ((s = def_table(w, ncid, &load_case_table, (size_t)m->n_load_cases, v->load_case))) return s;
    W_TRY(w, nc_inq_dimid(ncid, "load_case", &case_dim), "load_case");
    if (m->load_case_weights) {
      size_t len = (size_t)m->n_load_cases;
      W_TRY(w,
            def_var(ncid, "load_case_weight", NC_DOUBLE, 1, &case_dim, &len, 0, 0,
                    &v->load_case_weight),
            "load_case_weight");
      W_TRY(w,
            put_var_atts(ncid, v->load_case_weight,
                         "weight of the load case in the compliance objective", "1", NULL, NULL),
            "load_case_weight");
    }
  }
  if (m->n_loads > 0 && (s = def_table(w, ncid, &load_table, m->n_loads, v->load))) return s;
  if ((s = def_condition_names(w, m, v))) return s;
  if (m->n_springs > 0 && (s = def_table(w, ncid, &spring_table, m->n_springs, v->spring)))
    return s;
  if (m->n_outputs > 0 && (s = def_table(w, ncid, &output_table, m->n_outputs, v->output)))
    return s;
  if (m->n_design_constraints > 0 &&
      (s = def_table(w, ncid, &design_constraint_table, (size_t)m->n_design_constraints,
                     v->design_constraint)))
    return s;

  if (m->intensity) {
    /* an analysis result's copy of the input's intensity: uncompressed, as
     * the bone arrays (deflating it took longer than a clinical sample's
     * solve) */
    W_TRY(w,
          def_var(ncid, "intensity", NC_FLOAT, 3, zyx, zyx_len,
                  w->deflate_fields && m->stage != VOX_STAGE_ANALYSIS, 0, &v->intensity),
          "intensity");
    W_TRY(w,
          put_var_atts(ncid, v->intensity, "image intensity the labels were segmented from",
                       m->intensity_units[0] ? m->intensity_units : "1", NULL, NULL),
          "intensity");
  }
  if (m->density) {
    W_TRY(w, def_var(ncid, "density", NC_DOUBLE, 3, zyx, zyx_len, w->deflate_fields, 0,
                     &v->density), "density");
    W_TRY(w,
          put_var_atts(ncid, v->density, "physical (filtered) density", "1", NULL,
                       "1 = solid, 0 = void"),
          "density");
  }
  if (m->n_snapshots > 0) {
    /* density snapshots of the optimization: one chunk (at most) per snapshot */
    int snap_dim;
    W_TRY(w, nc_def_dim(ncid, "snapshot", m->n_snapshots, &snap_dim), "snapshot");
    size_t unused = m->n_snapshots;
    W_TRY(w, def_var(ncid, "snapshot_iteration", NC_INT, 1, &snap_dim, &unused, 0, 0,
                     &v->snapshot_iteration),
          "snapshot_iteration");
    W_TRY(w,
          put_var_atts(ncid, v->snapshot_iteration, "design iteration of each density snapshot",
                       "1", NULL, NULL),
          "snapshot_iteration");
    const int dims[4] = {snap_dim, zyx[0], zyx[1], zyx[2]};
    const size_t shape[4] = {m->n_snapshots, zyx_len[0], zyx_len[1], zyx_len[2]};
    W_TRY(w, def_var(ncid, "density_snapshot", NC_DOUBLE, 4, dims, shape, w->deflate_fields, 1,
                     &v->snapshot_density),
          "density_snapshot");
    W_TRY(w,
          put_var_atts(ncid, v->snapshot_density,
                       "physical (filtered) density after the snapshot's iteration", "1", NULL,
                       "1 = solid, 0 = void"),
          "density_snapshot");
  }
  if (m->displacement || m->nodal_density) {
    for (int a = 2; a >= 0; a--)
      W_TRY(w, nc_def_dim(ncid, node_dim_names[a], n[a] + 1, &node_dim[a]), node_dim_names[a]);
    for (int a = 2; a >= 0; a--) {
      char long_name[64];
      snprintf(long_name, sizeof long_name, "%s coordinate of node", axis_names[a]);
      if ((s = def_coord(w, node_dim_names[a], node_dim[a], long_name, axis_upper[a],
                         &v->node_coord[a])))
        return s;
    }
  }
  if (m->nodal_density) {
    const int ndims[3] = {node_dim[2], node_dim[1], node_dim[0]};
    const size_t nshape[3] = {n[2] + 1, n[1] + 1, n[0] + 1};
    W_TRY(w, def_var(ncid, "nodal_density", NC_DOUBLE, 3, ndims, nshape, w->deflate_fields, 0,
                     &v->nodal_density),
          "nodal_density");
    W_TRY(w,
          put_var_atts(ncid, v->nodal_density,
                       "nodal density of the element-free Galerkin design", "1", NULL,
                       "the design variables of voxfe-optimize --discretization efg, whose "
                       "moving least-squares interpolation made density; 0 at nodes that "
                       "touch no material"),
          "nodal_density");
  }
  if (m->displacement) {
    const int heat = m->physics == VOX_PHYSICS_HEAT;
    if (!heat) W_TRY(w, nc_def_dim(ncid, "component", 3, &component_dim), "component");
    const int dims[5] = {case_dim, node_dim[2], node_dim[1], node_dim[0], component_dim};
    const size_t shape[5] = {(size_t)m->n_load_cases, n[2] + 1, n[1] + 1, n[0] + 1, 3};
    /* heat: one temperature per node, the variable without the component axis */
    const char *name = heat ? "temperature" : "displacement";
    if (on_bone_nodes(m)) {
      /* (load_case, bone_node, component), uncompressed: the doubles of a
       * solution hardly deflate (docs/file-format.md), and one-threaded
       * deflate was most of the time of writing a clinical result */
      int bone_dim;
      if ((s = find_bone_nodes(w, m))) return s;
      W_TRY(w, nc_def_dim(ncid, "bone_node", w->n_bone_nodes, &bone_dim), "bone_node");
      /* int32 where the grid's nodes fit (half the bytes; readers convert) */
      const nc_type index_type = vox_grid_nodes(g) <= INT32_MAX ? NC_INT : NC_INT64;
      W_TRY(w, def_var(ncid, "bone_node_index", index_type, 1, &bone_dim, &w->n_bone_nodes,
                       BONE_COMPRESS, 0, &v->bone_node_index),
            "bone_node_index");
      W_TRY(w,
            put_var_atts(ncid, v->bone_node_index, "grid node of each bone node", NULL, NULL,
                         "(k * (ny + 1) + j) * (nx + 1) + i for node (i, j, k); the nodes of "
                         "the non-empty voxels, in node order"),
            "bone_node_index");
      const int bdims[3] = {case_dim, bone_dim, component_dim};
      const size_t bshape[3] = {(size_t)m->n_load_cases, w->n_bone_nodes, 3};
      W_TRY(w, def_var(ncid, name, NC_DOUBLE, 3, bdims, bshape, BONE_COMPRESS, 1,
                       &v->displacement),
            name);
    } else {
      W_TRY(w, def_var(ncid, name, NC_DOUBLE, heat ? 4 : 5, dims, shape, w->deflate_fields, 1,
                       &v->displacement),
            name);
    }
    if (heat)
      W_TRY(w,
            put_var_atts(ncid, v->displacement, "nodal temperature", "K", NULL,
                         "above the fixed-temperature regions' reference; one field per "
                         "load case"),
            name);
    else
      W_TRY(w,
            put_var_atts(ncid, v->displacement, "nodal displacement", "mm", NULL,
                         on_bone_nodes(m)
                             ? "component 0 = x, 1 = y, 2 = z; one field per load case; at "
                               "the bone nodes (bone_node_index), 0 at every other node"
                             : "component 0 = x, 1 = y, 2 = z; one field per load case"),
            name);
    /* The case names label the first axis for CF readers (xarray, cf-python). */
    W_TRY(w, put_text(ncid, v->displacement, "coordinates", "load_case_name"), name);
  }
  if (m->n_history > 0 || m->optimization_end.stop_reason) {
    W_TRY(w, nc_def_grp(ncid, HISTORY_GROUP, &v->history_group), "group " HISTORY_GROUP);
    W_TRY(w, put_text(v->history_group, NC_GLOBAL, "comment", "one row per design iteration"),
          "group " HISTORY_GROUP);
    if (m->n_history > 0 &&
        (s = def_table(w, v->history_group, &history_table, m->n_history, v->history)))
      return s;
    if (m->n_history > 0 && m->history_constraint && m->n_design_constraints > 0) {
      int dims[2];
      const size_t shape[2] = {m->n_history, (size_t)m->n_design_constraints};
      W_TRY(w, nc_inq_dimid(v->history_group, "iteration", &dims[0]), "iteration");
      W_TRY(w, nc_inq_dimid(ncid, "design_constraint", &dims[1]), "design_constraint");
      W_TRY(w,
            def_var(v->history_group, "design_constraint_value", NC_DOUBLE, 2, dims, shape, 0, 0,
                    &v->constraint_value),
            "design_constraint_value");
      W_TRY(w,
            put_var_atts(v->history_group, v->constraint_value,
                         "value of each design constraint at the iteration's design", NULL, NULL,
                         "volume: the region's volume fraction; compliance: N mm; the limits "
                         "are design_constraint_limit"),
            "design_constraint_value");
    }
    if ((s = def_optimization_end(w, v->history_group, &m->optimization_end, m))) return s;
  }
  return VOX_OK;
}

static vox_status put_all(writer *w, const vox_model *m, const var_ids *v,
                          const vox_model_extra *extra) {
  int ncid = w->ncid;
  const vox_grid *g = &m->grid;
  size_t n[3] = {(size_t)g->nx, (size_t)g->ny, (size_t)g->nz};
  vox_status s;
  for (int a = 0; a < 3; a++)
    if ((s = put_coord(w, v->cell_coord[a], n[a], g->origin[a], g->voxel_size[a], 0.5))) return s;
  W_TRY(w, nc_put_var_uchar(ncid, v->label, m->label), "label");
  if (m->n_materials > 0 &&
      (s = put_table(w, ncid, &material_table, m->materials, (size_t)m->n_materials, v->material)))
    return s;
  if (m->n_constraints > 0 &&
      (s = put_table(w, ncid, &constraint_table, m->constraints, m->n_constraints, v->constraint)))
    return s;
  if (m->n_load_cases > 0 && (s = put_table(w, ncid, &load_case_table, m->load_case_names,
                                            (size_t)m->n_load_cases, v->load_case)))
    return s;
  if (m->n_loads > 0 && (s = put_table(w, ncid, &load_table, m->loads, m->n_loads, v->load)))
    return s;
  if ((s = put_condition_names(w, m, v))) return s;
  if (m->n_load_cases > 0 && m->load_case_weights)
    W_TRY(w, nc_put_var_double(ncid, v->load_case_weight, m->load_case_weights),
          "load_case_weight");
  if (m->n_springs > 0 &&
      (s = put_table(w, ncid, &spring_table, m->springs, m->n_springs, v->spring)))
    return s;
  if (m->n_outputs > 0 &&
      (s = put_table(w, ncid, &output_table, m->outputs, m->n_outputs, v->output)))
    return s;
  if (m->n_design_constraints > 0 &&
      (s = put_table(w, ncid, &design_constraint_table, m->design_constraints,
                     (size_t)m->n_design_constraints, v->design_constraint)))
    return s;
  if (m->intensity) W_TRY(w, put_field(w, v->intensity, m->intensity), "intensity");
  if (m->density) W_TRY(w, put_field(w, v->density, m->density), "density");
  if (m->n_snapshots > 0) {
    W_TRY(w, nc_put_var_int(ncid, v->snapshot_iteration, m->snapshot_iteration),
          "snapshot_iteration");
    W_TRY(w, put_field(w, v->snapshot_density, m->snapshot_density), "density_snapshot");
  }
  if (m->displacement || m->nodal_density)
    for (int a = 0; a < 3; a++)
      if ((s = put_coord(w, v->node_coord[a], n[a] + 1, g->origin[a], g->voxel_size[a], 0)))
        return s;
  if (m->nodal_density)
    W_TRY(w, put_field(w, v->nodal_density, m->nodal_density), "nodal_density");
  if (m->displacement) {
    if (on_bone_nodes(m)) {
      W_TRY(w, vox_put_indices(ncid, v->bone_node_index, w->bone_nodes, w->n_bone_nodes),
            "bone_node_index");
      if (extra && extra->before_displacement &&
          (s = extra->before_displacement(extra->user, ncid)))
        return s;
      const size_t nb = w->n_bone_nodes, nn = (size_t)vox_grid_nodes(g);
      double *values = vox_alloc_buffer(3 * nb * sizeof *values);
      if (!values) return vox_error(w->ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", w->path);
      for (int c = 0; c < m->n_load_cases; c++) {
        const double *u = m->displacement + (size_t)c * 3 * nn;
        const ptrdiff_t count = (ptrdiff_t)nb;
#pragma omp parallel for schedule(static)
        for (ptrdiff_t b = 0; b < count; b++)
          for (int d = 0; d < 3; d++) values[3 * b + d] = u[3 * w->bone_nodes[b] + d];
        const size_t start[3] = {(size_t)c, 0, 0}, count3[3] = {1, nb, 3};
        int err = nc_put_vara_double(ncid, v->displacement, start, count3, values);
        if (err) {
          free(values);
          return write_fail(w, err, "displacement");
        }
      }
      free(values);
      /* a writer beside the analysis waits for the fields next */
      if (extra && extra->before_displacement) vox_start_writeback(ncid);
    } else {
      if (extra && extra->before_displacement &&
          (s = extra->before_displacement(extra->user, ncid)))
        return s;
      W_TRY(w, put_field(w, v->displacement, m->displacement),
            m->physics == VOX_PHYSICS_HEAT ? "temperature" : "displacement");
    }
  }
  if (m->n_history > 0 &&
      (s = put_table(w, v->history_group, &history_table, m->history, m->n_history, v->history)))
    return s;
  if (m->n_history > 0 && m->history_constraint && m->n_design_constraints > 0)
    W_TRY(w, nc_put_var_double(v->history_group, v->constraint_value, m->history_constraint),
          "design_constraint_value");
  return VOX_OK;
}

static int name_ok(const char *name) { return memchr(name, '\0', VOX_NAME_MAX) != NULL; }

/* What vox_model_validate leaves to the caller's care but the file needs:
 * terminated names, unique non-zero labels (the reader refuses others),
 * arrays present where counts say so. */
static vox_status check_writable(vox_context *ctx, const char *path, const vox_model *m) {
  /* Arrays first: vox_model_validate walks them. */
  if (m->n_materials < 0 || m->n_load_cases < 0 || (m->n_materials && !m->materials) ||
      (m->n_constraints && !m->constraints) || (m->n_loads && !m->loads) ||
      (m->n_springs && !m->springs) || (m->n_outputs && !m->outputs) ||
      (m->n_load_cases && !m->load_case_names) || (m->n_history && !m->history) ||
      (m->n_snapshots && (!m->snapshot_iteration || !m->snapshot_density)))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: a list of the model has a count but no array", path);
  if (vox_model_validate(ctx, m)) return with_path(ctx, VOX_ERR_INVALID_ARGUMENT, path);
  if (m->stage != VOX_STAGE_MODEL && m->stage != VOX_STAGE_DESIGN &&
      m->stage != VOX_STAGE_ANALYSIS)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: unknown stage %d", path, (int)m->stage);
  int seen[256] = {0};
  for (int i = 0; i < m->n_materials; i++) {
    const vox_material *mat = &m->materials[i];
    if (mat->label == 0 || seen[mat->label]++)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: material %d has label %d, which is zero or taken", path, i, mat->label);
    if (!name_ok(mat->name))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: material %d has an unterminated name",
                       path, i);
  }
  for (int i = 0; i < m->n_load_cases; i++)
    if (!name_ok(m->load_case_names[i]))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: load case %d has an unterminated name",
                       path, i);
  return VOX_OK;
}

/* Creates an empty file under a fresh name "<path>.tmp.<pid>.<random>" beside
 * `path` (same folder, so that rename() is atomic). Not mkstemp: its mode 0600
 * would stay on the renamed file; O_EXCL with 0666 gives the mode the user's
 * umask asks for. */
vox_status vox_create_temp(vox_context *ctx, const char *path, char **out) {
  const char *refusal = vox_output_refusal(path);
  if (refusal)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: is %s, not a regular file; refusing to replace it", path, refusal);
  char *base = vox_output_temp_base(path);
  size_t size = base ? strlen(base) + 48 : 0;
  char *tmp = base ? malloc(size) : NULL;
  if (!tmp) {
    free(base);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", path);
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned long seed =
      (unsigned long)ts.tv_nsec ^ ((unsigned long)ts.tv_sec << 20) ^ (unsigned long)(uintptr_t)&ts;
  for (int attempt = 0; attempt < 100; attempt++) {
    seed = seed * 6364136223846793005UL + 1442695040888963407UL; /* an LCG step */
    snprintf(tmp, size, "%s.tmp.%ld.%06lx", base, (long)getpid(), (seed >> 40) & 0xffffff);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd >= 0) {
      close(fd);
      free(base);
      vox_temp_register(tmp);
      *out = tmp;
      return VOX_OK;
    }
    if (errno != EEXIST) break;
  }
  int e = errno;
  free(base);
  free(tmp);
  return vox_error(ctx, VOX_ERR_IO, "%s: cannot create a temporary file beside it: %s", path,
                   strerror(e));
}

/* Flushes the finished temporary file to disk, so that the rename never
 * publishes a file whose data are still in flight. */
int vox_sync_file(const char *tmp) {
  int fd = open(tmp, O_RDONLY);
  if (fd < 0) return errno;
  int e = fsync(fd) ? errno : 0;
  close(fd);
  return e;
}

void vox_write_options_default(vox_write_options *options) {
  *options = (vox_write_options){.deflate_fields = 0, .slab_bytes = 0};
}

vox_status vox_model_write(vox_context *ctx, const char *path, const vox_model *model) {
  return vox_model_write_extra(ctx, path, model, NULL, NULL);
}

vox_status vox_model_write_with(vox_context *ctx, const char *path, const vox_model *model,
                                const vox_write_options *options) {
  return vox_model_write_extra(ctx, path, model, options, NULL);
}

vox_status vox_model_write_extra(vox_context *ctx, const char *path, const vox_model *model,
                                 const vox_write_options *options, const vox_model_extra *extra) {
  vox_write_options defaults;
  vox_write_options_default(&defaults);
  if (!options) options = &defaults;
  if (!path || !*path || !model)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "vox_model_write: no path or no model");
  vox_status s = check_writable(ctx, path, model);
  if (s) return s;
  char *tmp = NULL;
  if ((s = vox_create_temp(ctx, path, &tmp))) return s;

  writer w = {.ctx = ctx,
              .path = path,
              .ncid = -1,
              .tmp = tmp,
              .deflate_fields = options->deflate_fields,
              .slab_bytes = options->slab_bytes ? options->slab_bytes : SLAB_BYTES};
  int err = nc_create(tmp, NC_CLOBBER | NC_NETCDF4, &w.ncid);
  if (err) {
    s = write_fail(&w, err, "the file");
  } else {
    var_ids v;
    memset(&v, -1, sizeof v);
    
    s = define_all(&w, model, &v);
    if (!s && extra) s = extra->define(extra->user, w.ncid);
    if (!s && (err = nc_enddef(w.ncid))) s = write_fail(&w, err, "the header");
    if (!s) s = put_all(&w, model, &v, extra);
    if (!s && extra) s = extra->put(extra->user, w.ncid);
    if (s) {
      nc_abort(w.ncid); /* the temporary file goes below */
    } else if ((err = nc_close(w.ncid))) {
      s = write_fail(&w, err, "the file");
    } else if ((err = vox_sync_file(tmp))) {
      s = vox_error(ctx, VOX_ERR_IO, "%s: cannot write the file: %s", path, strerror(err));
    } else if ((err = vox_output_place(tmp, path))) {
      s = vox_error(ctx, VOX_ERR_IO, "%s: cannot move the written file into place: %s", path,
                    strerror(err));
    }
  }
  if (s) unlink(tmp);
  vox_temp_unregister(tmp);
  free(tmp);
  free(w.bone_nodes);
  return s;
}

/* ---------------------------------------------------------------------------
 * Reading.
 * ------------------------------------------------------------------------- */

typedef struct reader {
  vox_context *ctx;
  const char *path; /* for messages */
  int ncid;
  int version; /* voxfe_schema_version of the file */
} reader;

static vox_status read_fail(reader *r, vox_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static vox_status read_fail(reader *r, vox_status status, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return vox_error(r->ctx, status, "%s: %s", r->path, msg);
}

/* A failing netCDF call while reading: system errors are I/O errors, the rest
 * (HDF errors on truncated or damaged data, conversions out of range) mean
 * the content is bad. */
static vox_status read_nc_fail(reader *r, int err, const char *what) {
  vox_status status = err > 0 ? VOX_ERR_IO : err == NC_ENOMEM ? VOX_ERR_NO_MEMORY : VOX_ERR_FORMAT;
  return read_fail(r, status, "cannot read %s: %s", what, nc_strerror(err));
}

#define R_TRY(r, call, what)                                                                       \
  do {                                                                                             \
    int r_err_ = (call);                                                                           \
    if (r_err_ != NC_NOERR) return read_nc_fail((r), r_err_, (what));                              \
  } while (0)

static int is_int_type(nc_type t) {
  return t == NC_BYTE || t == NC_UBYTE || t == NC_SHORT || t == NC_USHORT || t == NC_INT ||
         t == NC_UINT || t == NC_INT64 || t == NC_UINT64;
}

static int is_number_type(nc_type t) { return is_int_type(t) || t == NC_FLOAT || t == NC_DOUBLE; }

/* What a variable may be stored as; netCDF converts on read. */
typedef enum want_type { WANT_INT, WANT_NUMBER, WANT_STRING } want_type;

static const char *const want_names[] = {"an integer", "a number", "a string"};

static int type_fits(nc_type t, want_type want) {
  switch (want) {
  case WANT_INT: return is_int_type(t);
  case WANT_NUMBER: return is_number_type(t);
  case WANT_STRING: return t == NC_STRING;
  }
  return 0;
}

/* Length of dimension `name` as seen from group `ncid`; *found = 0 when absent. */
static vox_status dim_length(reader *r, int ncid, const char *name, size_t *len, int *found) {
  int dim, err = nc_inq_dimid(ncid, name, &dim);
  *len = 0;
  *found = err == NC_NOERR;
  if (err == NC_EBADDIM) return VOX_OK;
  R_TRY(r, err, name);
  R_TRY(r, nc_inq_dimlen(ncid, dim, len), name);
  return VOX_OK;
}

/* Finds variable `name` and checks its type and dimension names. A missing
 * optional variable gives *varid = -1. */
static vox_status find_var(reader *r, int ncid, const char *name, want_type want, int ndims,
                           const char *const *dim_names, int required, int *varid) {
  int err = nc_inq_varid(ncid, name, varid);
  if (err == NC_ENOTVAR) {
    *varid = -1;
    if (!required) return VOX_OK;
    return read_fail(r, VOX_ERR_FORMAT, "required variable '%s' is missing", name);
  }
  R_TRY(r, err, name);
  nc_type type;
  int nd, dims[MAX_DIMS];
  R_TRY(r, nc_inq_vartype(ncid, *varid, &type), name);
  R_TRY(r, nc_inq_varndims(ncid, *varid, &nd), name);
  if (!type_fits(type, want))
    return read_fail(r, VOX_ERR_FORMAT, "variable '%s' should hold %s", name, want_names[want]);
  if (nd != ndims)
    return read_fail(r, VOX_ERR_FORMAT, "variable '%s' has %d dimension(s), expected %d", name, nd,
                     ndims);
  R_TRY(r, nc_inq_vardimid(ncid, *varid, dims), name);
  /* Same rank: compare the names, and name both lists if they differ. */
  int same = 1;
  char have[MAX_DIMS * (NC_MAX_NAME + 1) + 1] = "", expect[MAX_DIMS * (NC_MAX_NAME + 1) + 1] = "";
  for (int i = 0; i < nd; i++) {
    char dim_name[NC_MAX_NAME + 1];
    R_TRY(r, nc_inq_dimname(ncid, dims[i], dim_name), name);
    same = same && !strcmp(dim_name, dim_names[i]);
    if (i) {
      strcat(have, ",");
      strcat(expect, ",");
    }
    strcat(have, dim_name);
    strcat(expect, dim_names[i]);
  }
  if (same) return VOX_OK;
  return read_fail(r, VOX_ERR_FORMAT, "variable '%s' has dimensions (%s), expected (%s)", name,
                   have, expect);
}

/* Reads a text attribute (NC_CHAR, or a single NC_STRING as some tools write
 * it) into a new string; *text = NULL when the attribute is absent. */
static vox_status read_text_att(reader *r, int ncid, int varid, const char *name, char **text) {
  nc_type type;
  size_t len;
  *text = NULL;
  int err = nc_inq_att(ncid, varid, name, &type, &len);
  if (err == NC_ENOTATT) return VOX_OK;
  R_TRY(r, err, name);
  if (type == NC_CHAR) {
    if (!(*text = malloc(len + 1))) return read_fail(r, VOX_ERR_NO_MEMORY, "out of memory");
    err = nc_get_att_text(ncid, varid, name, *text);
    (*text)[len] = '\0';
  } else if (type == NC_STRING && len == 1) {
    char *s = NULL;
    if (!(err = nc_get_att_string(ncid, varid, name, &s))) {
      *text = strdup(s ? s : "");
      nc_free_string(1, &s);
      if (!*text) return read_fail(r, VOX_ERR_NO_MEMORY, "out of memory");
    }
  } else {
    return read_fail(r, VOX_ERR_FORMAT, "attribute '%s' is not text", name);
  }
  if (err) {
    free(*text);
    *text = NULL;
    return read_nc_fail(r, err, name);
  }
  return VOX_OK;
}

/* Reads a global numeric attribute of exactly `n` values. */
static vox_status read_number_att(reader *r, const char *name, size_t n, double *values) {
  nc_type type;
  size_t len;
  int err = nc_inq_att(r->ncid, NC_GLOBAL, name, &type, &len);
  if (err == NC_ENOTATT)
    return read_fail(r, VOX_ERR_FORMAT, "required attribute '%s' is missing", name);
  R_TRY(r, err, name);
  if (!is_number_type(type) || len != n)
    return read_fail(r, VOX_ERR_FORMAT, "attribute '%s' should hold %zu number(s)", name, n);
  R_TRY(r, nc_get_att_double(r->ncid, NC_GLOBAL, name, values), name);
  return VOX_OK;
}

/* Is this a voxfe file, of a schema version this code reads? */
static vox_status check_identity(reader *r) {
  char *conventions;
  vox_status s = read_text_att(r, r->ncid, NC_GLOBAL, "Conventions", &conventions);
  if (s) return s;
  int voxfe = conventions && strstr(conventions, "voxfe-");
  free(conventions);
  nc_type type;
  size_t len;
  int version = 0, err = nc_inq_att(r->ncid, NC_GLOBAL, "voxfe_schema_version", &type, &len);
  if (err && err != NC_ENOTATT) return read_nc_fail(r, err, "voxfe_schema_version");
  if (!voxfe || err || !is_int_type(type) || len != 1)
    return read_fail(r, VOX_ERR_FORMAT,
                     "not a voxfe model file (no voxfe Conventions or voxfe_schema_version)");
  R_TRY(r, nc_get_att_int(r->ncid, NC_GLOBAL, "voxfe_schema_version", &version),
        "voxfe_schema_version");
  if (version > VOX_SCHEMA_VERSION_NEWEST)
    return read_fail(r, VOX_ERR_FORMAT,
                     "schema version %d is newer than this voxfe reads (%d); update voxfe", version,
                     VOX_SCHEMA_VERSION_NEWEST);
  r->version = version;
  if (version < 1) return read_fail(r, VOX_ERR_FORMAT, "invalid schema version %d", version);
  return VOX_OK;
}

static vox_status read_stage(reader *r, vox_model *m) {
  char *stage;
  vox_status s = read_text_att(r, r->ncid, NC_GLOBAL, "stage", &stage);
  if (s) return s;
  if (!stage) return read_fail(r, VOX_ERR_FORMAT, "required attribute 'stage' is missing");
  if (!strcmp(stage, "model"))
    m->stage = VOX_STAGE_MODEL;
  else if (!strcmp(stage, "design"))
    m->stage = VOX_STAGE_DESIGN;
  else if (!strcmp(stage, "analysis"))
    m->stage = VOX_STAGE_ANALYSIS;
  else
    s = read_fail(r, VOX_ERR_FORMAT, "unknown stage '%.32s'", stage);
  free(stage);
  return s;
}

/* `physics`: absent means elasticity; heat comes with schema version 2. */
static vox_status read_physics(reader *r, vox_model *m) {
  char *physics;
  vox_status s = read_text_att(r, r->ncid, NC_GLOBAL, "physics", &physics);
  if (s || !physics) return s;
  if (vox_physics_parse(physics, &m->physics))
    s = read_fail(r, VOX_ERR_FORMAT, "unknown physics '%.32s' (elasticity or heat)", physics);
  else if (m->physics == VOX_PHYSICS_HEAT && r->version < VOX_SCHEMA_VERSION_HEAT)
    s = read_fail(r, VOX_ERR_FORMAT, "physics 'heat' needs voxfe_schema_version %d, not %d",
                  VOX_SCHEMA_VERSION_HEAT, r->version);
  free(physics);
  return s;
}

/* `objective`: absent means compliance; others come with schema version 3. */
static vox_status read_objective(reader *r, vox_model *m) {
  char *objective;
  vox_status s = read_text_att(r, r->ncid, NC_GLOBAL, "objective", &objective);
  if (s || !objective) return s;
  if (vox_objective_parse(objective, &m->objective))
    s = read_fail(r, VOX_ERR_FORMAT, "unknown objective '%.32s' (compliance or output_displacement)",
                  objective);
  else if (m->objective != VOX_OBJECTIVE_COMPLIANCE && r->version < VOX_SCHEMA_VERSION_OBJECTIVE)
    s = read_fail(r, VOX_ERR_FORMAT, "objective '%s' needs voxfe_schema_version %d, not %d",
                  objective, VOX_SCHEMA_VERSION_OBJECTIVE, r->version);
  free(objective);
  return s;
}

/* The grid from the dimensions x, y, z and the global attributes; allocates
 * the label array. */
static vox_status read_grid(reader *r, vox_model *m) {
  vox_grid g;
  memset(&g, 0, sizeof g);
  int64_t *len[3] = {&g.nx, &g.ny, &g.nz};
  size_t elements = 1;
  int ok = 1;
  for (int a = 0; a < 3; a++) {
    size_t n;
    int found;
    vox_status s = dim_length(r, r->ncid, axis_names[a], &n, &found);
    if (s) return s;
    if (!found)
      return read_fail(r, VOX_ERR_FORMAT, "required dimension '%s' is missing", axis_names[a]);
    /* Bounded so that node counts and byte sizes below cannot overflow. */
    if (n < 1 || n > (size_t)INT32_MAX)
      return read_fail(r, VOX_ERR_FORMAT, "dimension '%s' has length %zu", axis_names[a], n);
    *len[a] = (int64_t)n;
    elements = mul_size(elements, n, &ok);
  }
  size_t nodes = mul_size(mul_size((size_t)g.nx + 1, (size_t)g.ny + 1, &ok), (size_t)g.nz + 1, &ok);
  /* density bytes and one load case's displacement bytes must be countable */
  if (!ok || elements > (size_t)INT64_MAX / sizeof(double) ||
      nodes > SIZE_MAX / (3 * sizeof(double)))
    return read_fail(r, VOX_ERR_FORMAT, "grid %lldx%lldx%lld is too large", (long long)g.nx,
                     (long long)g.ny, (long long)g.nz);
  vox_status s = read_number_att(r, "voxel_size", 3, g.voxel_size);
  if (!s) s = read_number_att(r, "origin", 3, g.origin);
  if (s) return s;
  if ((s = vox_model_init(r->ctx, m, &g)))
    return with_path(r->ctx, s == VOX_ERR_NO_MEMORY ? s : VOX_ERR_FORMAT, r->path);
  return VOX_OK;
}

static const char *const zyx_names[3] = {"z", "y", "x"};

static vox_status read_label(reader *r, vox_model *m) {
  int varid;
  vox_status s = find_var(r, r->ncid, "label", WANT_INT, 3, zyx_names, 1, &varid);
  if (s) return s;
  /* its chunks inflated on all threads where it is stored as voxfe writes
   * it (most of reading a large model's time); through netCDF otherwise */
  const size_t shape[3] = {(size_t)m->grid.nz, (size_t)m->grid.ny, (size_t)m->grid.nx};
  if (vox_read_deflated_bytes(r->path, "label", 3, shape, m->label)) return VOX_OK;
  R_TRY(r, nc_get_var_uchar(r->ncid, varid, m->label), "variable 'label'");
  return VOX_OK;
}

/* Reads the `n` rows of table `t` from group `ncid` into `rows` (zeroed). */
static vox_status read_table(reader *r, int ncid, const table *t, size_t n, void *rows) {
  if (n > SIZE_MAX / 8) return read_fail(r, VOX_ERR_FORMAT, "dimension '%s' is too long", t->dim);
  void *buf = malloc(n * 8); /* long long, double or char * per row */
  if (!buf) return read_fail(r, VOX_ERR_NO_MEMORY, "out of memory");
  vox_status s = VOX_OK;
  for (int i = 0; i < t->n_columns && !s; i++) {
    const column *c = &t->columns[i];
    want_type want = c->type == COL_NAME  ? WANT_STRING
                     : c->type == COL_F64 ? WANT_NUMBER
                                          : WANT_INT;
    int varid, err;
    if ((s = find_var(r, ncid, c->name, want, 1, &t->dim, 1, &varid))) break;
    char *row = rows;
    if (c->type == COL_F64) {
      if ((err = nc_get_var_double(ncid, varid, buf))) {
        s = read_nc_fail(r, err, c->name);
        break;
      }
      for (size_t k = 0; k < n; k++, row += t->row_size)
        memcpy(row + c->offset, (double *)buf + k, sizeof(double));
    } else if (c->type == COL_NAME) {
      char **names = buf;
      if ((err = nc_get_var_string(ncid, varid, names))) {
        s = read_nc_fail(r, err, c->name);
        break;
      }
      for (size_t k = 0; k < n && !s; k++, row += t->row_size) {
        const char *name = names[k] ? names[k] : "";
        if (strlen(name) >= VOX_NAME_MAX)
          s = read_fail(r, VOX_ERR_FORMAT, "%s %zu is longer than %d bytes", c->name, k,
                        VOX_NAME_MAX - 1);
        else
          strcpy(row + c->offset, name);
      }
      nc_free_string(n, names);
    } else {
      long long *values = buf;
      if ((err = nc_get_var_longlong(ncid, varid, values))) {
        s = read_nc_fail(r, err, c->name);
        break;
      }
      for (size_t k = 0; k < n && !s; k++, row += t->row_size)
        if (!set_int_field(c, row, values[k]))
          s = read_fail(r, VOX_ERR_FORMAT, "%s %zu: value %lld is out of range", c->name, k,
                        values[k]);
    }
  }
  free(buf);
  return s;
}

/* Reads an optional table into a new zeroed array; *n = 0 and *rows = NULL
 * when its dimension is absent. */
static vox_status read_table_alloc(reader *r, int ncid, const table *t, size_t *n, void **rows) {
  int found;
  *rows = NULL;
  vox_status s = dim_length(r, ncid, t->dim, n, &found);
  if (s || *n == 0) return s;
  if (!(*rows = calloc(*n, t->row_size))) return read_fail(r, VOX_ERR_NO_MEMORY, "out of memory");
  if ((s = read_table(r, ncid, t, *n, *rows))) {
    free(*rows);
    *rows = NULL;
  }
  return s;
}

/* The names of the supports and loads, and each constraint's and load's
 * index into them (optional: models of a problem file with names). */
static vox_status read_condition_names(reader *r, vox_model *m) {
  for (int list = 0; list < 2; list++) {
    const char *dim = list ? "named_load" : "named_support";
    const char *names_var = list ? "load_name" : "support_name";
    const char *index_var = list ? "load_name_index" : "constraint_name_index";
    const char *rows_dim = list ? "load" : "constraint";
    const size_t n_rows = list ? m->n_loads : m->n_constraints;
    size_t n;
    int found, v_names, v_index;
    vox_status s = dim_length(r, r->ncid, dim, &n, &found);
    if (s) return s;
    if (!found || n == 0) continue;
    if (n > VOX_MAX_CONDITION_NAMES)
      return read_fail(r, VOX_ERR_FORMAT, "%zu %s names; at most %d", n, list ? "load" : "support",
                       VOX_MAX_CONDITION_NAMES);
    if ((s = find_var(r, r->ncid, names_var, WANT_STRING, 1, &dim, 1, &v_names))) return s;
    if ((s = find_var(r, r->ncid, index_var, WANT_INT, 1, &rows_dim, n_rows > 0, &v_index)))
      return s;
    char **names = calloc(n, sizeof *names);
    long long *index = malloc((n_rows ? n_rows : 1) * sizeof *index);
    if (!names || !index) {
      free(names), free(index);
      return read_fail(r, VOX_ERR_NO_MEMORY, "out of memory");
    }
    int err = nc_get_var_string(r->ncid, v_names, names);
    if (err) s = read_nc_fail(r, err, names_var);
    for (size_t i = 0; i < n && !s; i++) {
      uint16_t unused;
      if (names[i] && strlen(names[i]) >= VOX_NAME_MAX)
        s = read_fail(r, VOX_ERR_FORMAT, "%s %zu is longer than %d bytes", names_var, i,
                      VOX_NAME_MAX - 1);
      else
        s = vox_model_add_condition_name(r->ctx, m, list, names[i] ? names[i] : "", &unused);
    }
    if (!err) nc_free_string(n, names);
    if (!s && n_rows > 0 && (err = nc_get_var_longlong(r->ncid, v_index, index)))
      s = read_nc_fail(r, err, index_var);
    for (size_t i = 0; i < n_rows && !s; i++) {
      if (index[i] < 0 || (size_t)index[i] > n)
        s = read_fail(r, VOX_ERR_FORMAT, "%s %zu: %lld is not a name of %s", index_var, i,
                      index[i], dim);
      else if (list)
        m->loads[i].name_index = (uint16_t)index[i];
      else
        m->constraints[i].name_index = (uint16_t)index[i];
    }
    free(names), free(index);
    if (s) return s;
  }
  return VOX_OK;
}

/* Materials, constraints, load cases and loads. The model's own append
 * functions build the lists: they check labels, and they keep the capacity
 * convention that later appends rely on. */
static vox_status read_lists(reader *r, vox_model *m) {
  size_t n;
  void *rows;
  vox_status s = read_table_alloc(r, r->ncid, &material_table, &n, &rows);
  if (s) return s;
  if (n > 255) s = read_fail(r, VOX_ERR_FORMAT, "%zu materials; at most 255 fit the labels", n);
  for (size_t i = 0; i < n && !s; i++)
    if ((s = vox_model_add_material(r->ctx, m, (vox_material *)rows + i)))
      s = with_path(r->ctx, s == VOX_ERR_NO_MEMORY ? s : VOX_ERR_FORMAT, r->path);
  free(rows);
  if (s) return s;

  if ((s = read_table_alloc(r, r->ncid, &constraint_table, &n, &rows))) return s;
  for (size_t i = 0; i < n && !s; i++) {
    const vox_constraint *c = (vox_constraint *)rows + i;
    s = vox_model_add_constraint(r->ctx, m, c->node, c->component, c->value);
  }
  free(rows);
  if (s) return with_path(r->ctx, s, r->path);

  if ((s = read_table_alloc(r, r->ncid, &load_case_table, &n, &rows))) return s;
  if (n > INT32_MAX) s = read_fail(r, VOX_ERR_FORMAT, "too many load cases");
  if (!s && n && (s = vox_model_set_load_cases(r->ctx, m, (int)n)))
    s = with_path(r->ctx, s, r->path);
  if (!s && n) memcpy(m->load_case_names, rows, n * VOX_NAME_MAX);
  free(rows);
  if (s) return s;

  if ((s = read_table_alloc(r, r->ncid, &load_table, &n, &rows))) return s;
  for (size_t i = 0; i < n && !s; i++) {
    const vox_load *l = (vox_load *)rows + i;
    s = vox_model_add_load(r->ctx, m, l->node, l->component, l->load_case, l->value);
  }
  free(rows);
  if (s) return with_path(r->ctx, s, r->path);

  /* springs, outputs and load case weights: schema version 3 (older files
   * have none, and a reader that ignored them would solve another problem) */
  if ((s = read_table_alloc(r, r->ncid, &spring_table, &n, &rows))) return s;
  for (size_t i = 0; i < n && !s; i++) {
    const vox_spring *sp = (vox_spring *)rows + i;
    s = vox_model_add_spring(r->ctx, m, sp->node, sp->component, sp->stiffness);
  }
  free(rows);
  if (s) return with_path(r->ctx, s, r->path);
  if ((s = read_table_alloc(r, r->ncid, &output_table, &n, &rows))) return s;
  for (size_t i = 0; i < n && !s; i++) {
    const vox_output *o = (vox_output *)rows + i;
    s = vox_model_add_output(r->ctx, m, o->node, o->component, o->weight);
  }
  free(rows);
  if (s) return with_path(r->ctx, s, r->path);
  static const char *const case_dims[1] = {"load_case"};
  int varid;
  if ((s = find_var(r, r->ncid, "load_case_weight", WANT_NUMBER, 1, case_dims, 0, &varid)))
    return s;
  if (varid >= 0 && m->n_load_cases > 0) {
    double *w = malloc((size_t)m->n_load_cases * sizeof *w);
    if (!w) return read_fail(r, VOX_ERR_NO_MEMORY, "out of memory");
    int err = nc_get_var_double(r->ncid, varid, w);
    if (!err) s = vox_model_set_load_case_weights(r->ctx, m, w);
    free(w);
    if (err) return read_nc_fail(r, err, "load_case_weight");
    if (s) return with_path(r->ctx, s, r->path);
  }
  if ((m->n_springs || m->n_outputs || varid >= 0) && r->version < VOX_SCHEMA_VERSION_OBJECTIVE)
    return read_fail(r, VOX_ERR_FORMAT,
                     "springs, outputs or load case weights need voxfe_schema_version %d, not %d",
                     VOX_SCHEMA_VERSION_OBJECTIVE, r->version);
  /* design constraints: schema version 5 */
  if ((s = read_table_alloc(r, r->ncid, &design_constraint_table, &n, &rows))) return s;
  if (n > VOX_MAX_DESIGN_CONSTRAINTS)
    s = read_fail(r, VOX_ERR_FORMAT, "%zu design constraints; at most %d", n,
                  VOX_MAX_DESIGN_CONSTRAINTS);
  for (size_t i = 0; i < n && !s; i++)
    s = vox_model_add_design_constraint(r->ctx, m, (vox_design_constraint *)rows + i);
  free(rows);
  if (s) return s;
  if ((m->n_design_constraints || m->objective == VOX_OBJECTIVE_VOLUME) &&
      r->version < VOX_SCHEMA_VERSION_CONSTRAINTS)
    return read_fail(r, VOX_ERR_FORMAT,
                     "design constraints or the volume objective need voxfe_schema_version %d, "
                     "not %d", VOX_SCHEMA_VERSION_CONSTRAINTS, r->version);
  return VOX_OK;
}

static vox_status read_density(reader *r, vox_model *m) {
  int varid;
  vox_status s = find_var(r, r->ncid, "density", WANT_NUMBER, 3, zyx_names, 0, &varid);
  if (s || varid < 0) return s;
  if (!(m->density = malloc((size_t)vox_grid_elements(&m->grid) * sizeof(double))))
    return read_fail(r, VOX_ERR_NO_MEMORY, "out of memory");
  R_TRY(r, nc_get_var_double(r->ncid, varid, m->density), "variable 'density'");
  /* a density is a fraction of the solid: NaN, -5 or 7 would flow into the
   * moduli and the export's thresholds without a word */
  const int64_t ne = vox_grid_elements(&m->grid);
  for (int64_t e = 0; e < ne; e++)
    if (!(m->density[e] >= 0 && m->density[e] <= 1))
      return read_fail(r, VOX_ERR_FORMAT,
                       "variable 'density': voxel %lld (x %lld, y %lld, z %lld) holds %g, not a "
                       "number in [0, 1]",
                       (long long)e, (long long)(e % m->grid.nx),
                       (long long)(e / m->grid.nx % m->grid.ny),
                       (long long)(e / m->grid.nx / m->grid.ny), m->density[e]);
  return VOX_OK;
}

/* The optional nodal densities of an element-free Galerkin design. */
static vox_status read_nodal_density(reader *r, vox_model *m) {
  static const char *const dims[3] = {"node_z", "node_y", "node_x"};
  int varid;
  vox_status s = find_var(r, r->ncid, "nodal_density", WANT_NUMBER, 3, dims, 0, &varid);
  if (s || varid < 0) return s;
  const long long want[3] = {m->grid.nz + 1, m->grid.ny + 1, m->grid.nx + 1};
  for (int d = 0; d < 3; d++) {
    size_t len;
    int found;
    if ((s = dim_length(r, r->ncid, dims[d], &len, &found))) return s;
    if ((long long)len != want[d])
      return read_fail(r, VOX_ERR_FORMAT, "dimension '%s' has length %zu, expected %lld", dims[d],
                       len, want[d]);
  }
  const int64_t nn = vox_grid_nodes(&m->grid);
  if (!(m->nodal_density = malloc((size_t)nn * sizeof(double))))
    return read_fail(r, VOX_ERR_NO_MEMORY, "out of memory");
  R_TRY(r, nc_get_var_double(r->ncid, varid, m->nodal_density), "variable 'nodal_density'");
  for (int64_t i = 0; i < nn; i++)
    if (!(m->nodal_density[i] >= 0 && m->nodal_density[i] <= 1))
      return read_fail(r, VOX_ERR_FORMAT,
                       "variable 'nodal_density': node %lld holds %g, not a number in [0, 1]",
                       (long long)i, m->nodal_density[i]);
  return VOX_OK;
}

/* The optional density snapshots: snapshot_iteration(snapshot) and
 * density_snapshot(snapshot, z, y, x), both or neither. */
static vox_status read_snapshots(reader *r, vox_model *m) {
  static const char *const it_dims[1] = {"snapshot"};
  static const char *const dims[4] = {"snapshot", "z", "y", "x"};
  int it_var, var;
  vox_status s = find_var(r, r->ncid, "snapshot_iteration", WANT_INT, 1, it_dims, 0, &it_var);
  if (!s) s = find_var(r, r->ncid, "density_snapshot", WANT_NUMBER, 4, dims, 0, &var);
  if (s) return s;
  if ((it_var < 0) != (var < 0))
    return read_fail(r, VOX_ERR_FORMAT,
                     "variables 'snapshot_iteration' and 'density_snapshot' come together");
  if (var < 0) return VOX_OK;
  size_t n;
  int found;
  if ((s = dim_length(r, r->ncid, "snapshot", &n, &found))) return s;
  if (n == 0) return VOX_OK;
  const size_t ne = (size_t)vox_grid_elements(&m->grid);
  if (n > SIZE_MAX / sizeof(double) / ne)
    return read_fail(r, VOX_ERR_FORMAT, "dimension 'snapshot' is too long");
  m->snapshot_iteration = malloc(n * sizeof *m->snapshot_iteration);
  m->snapshot_density = malloc(n * ne * sizeof *m->snapshot_density);
  if (!m->snapshot_iteration || !m->snapshot_density)
    return read_fail(r, VOX_ERR_NO_MEMORY, "out of memory");
  m->n_snapshots = n;
  R_TRY(r, nc_get_var_int(r->ncid, it_var, m->snapshot_iteration), "variable 'snapshot_iteration'");
  R_TRY(r, nc_get_var_double(r->ncid, var, m->snapshot_density), "variable 'density_snapshot'");
  return VOX_OK;
}

/* The optional image intensities and their units (netCDF converts any
 * number type to float). */
static vox_status read_intensity(reader *r, vox_model *m) {
  int varid;
  vox_status s = find_var(r, r->ncid, "intensity", WANT_NUMBER, 3, zyx_names, 0, &varid);
  if (s || varid < 0) return s;
  if (!(m->intensity = malloc((size_t)vox_grid_elements(&m->grid) * sizeof(float))))
    return read_fail(r, VOX_ERR_NO_MEMORY, "out of memory");
  R_TRY(r, nc_get_var_float(r->ncid, varid, m->intensity), "variable 'intensity'");
  char *units = NULL;
  if ((s = read_text_att(r, r->ncid, varid, "units", &units))) return s;
  snprintf(m->intensity_units, sizeof m->intensity_units, "%s", units ? units : "1");
  free(units);
  return VOX_OK;
}

/* An analysis result's displacement on the bone nodes (schema version 4):
 * `displacement` (case, bone_node, component) at the nodes that
 * `bone_node_index` names (increasing, on the grid), zero elsewhere. */
static vox_status read_bone_displacement(reader *r, vox_model *m) {
  static const char *const dims[3] = {"load_case", "bone_node", "component"};
  static const char *const index_dims[1] = {"bone_node"};
  int varid, index_id;
  vox_status s = find_var(r, r->ncid, "displacement", WANT_NUMBER, 3, dims, 1, &varid);
  if (!s) s = find_var(r, r->ncid, "bone_node_index", WANT_INT, 1, index_dims, 1, &index_id);
  if (s) return s;
  if (m->n_load_cases < 1)
    return read_fail(r, VOX_ERR_FORMAT, "variable 'displacement' is stored but no load case is");
  size_t n_cases, nb, n_comp;
  int found;
  if ((s = dim_length(r, r->ncid, "load_case", &n_cases, &found)) ||
      (s = dim_length(r, r->ncid, "bone_node", &nb, &found)) ||
      (s = dim_length(r, r->ncid, "component", &n_comp, &found)))
    return s;
  if (n_comp != 3)
    return read_fail(r, VOX_ERR_FORMAT, "dimension 'component' has length %zu, expected 3",
                     n_comp);
  if (n_cases != (size_t)m->n_load_cases)
    return read_fail(r, VOX_ERR_FORMAT, "dimension 'load_case' has length %zu, expected %d",
                     n_cases, m->n_load_cases);
  const size_t nn = (size_t)vox_grid_nodes(&m->grid);
  if (nb > nn)
    return read_fail(r, VOX_ERR_FORMAT, "%zu bone nodes on a grid of %zu nodes", nb, nn);
  int ok = 1;
  size_t bytes = mul_size((size_t)m->n_load_cases, nn * 3 * sizeof(double), &ok);
  if (!ok) return read_fail(r, VOX_ERR_FORMAT, "variable 'displacement' is too large");
  long long *index = malloc((nb ? nb : 1) * sizeof *index);
  double *values = malloc((nb ? 3 * nb : 1) * sizeof *values);
  if (!index || !values || !(m->displacement = calloc(1, bytes))) {
    free(index), free(values);
    return read_fail(r, VOX_ERR_NO_MEMORY, "out of memory");
  }
  int err = nc_get_var_longlong(r->ncid, index_id, index);
  for (size_t b = 0; !err && !s && b < nb; b++)
    if (index[b] < (b ? index[b - 1] + 1 : 0) || index[b] >= (long long)nn)
      s = read_fail(r, VOX_ERR_FORMAT,
                    "bone_node_index[%zu] = %lld is off the grid or not increasing", b, index[b]);
  for (int c = 0; !err && !s && c < m->n_load_cases; c++) {
    const size_t start[3] = {(size_t)c, 0, 0}, count[3] = {1, nb, 3};
    if (nb && (err = nc_get_vara_double(r->ncid, varid, start, count, values))) break;
    double *u = m->displacement + (size_t)c * 3 * nn;
    for (size_t b = 0; b < nb; b++)
      for (int d = 0; d < 3; d++) u[3 * (size_t)index[b] + d] = values[3 * b + d];
  }
  free(index), free(values);
  if (err) return read_nc_fail(r, err, "displacement");
  return s;
}

/* The state: `displacement` (case, node, component), or for heat models
 * `temperature` (case, node); an analysis result's on the bone nodes. */
static vox_status read_displacement(reader *r, vox_model *m) {
  static const char *const dims[5] = {"load_case", "node_z", "node_y", "node_x", "component"};
  const int heat = m->physics == VOX_PHYSICS_HEAT, n_dims = heat ? 4 : 5;
  const char *name = heat ? "temperature" : "displacement";
  int bone_dim;
  if (!heat && nc_inq_dimid(r->ncid, "bone_node", &bone_dim) == NC_NOERR) {
    if (r->version < VOX_SCHEMA_VERSION_BONE_NODES)
      return read_fail(r, VOX_ERR_FORMAT,
                       "a displacement on bone nodes needs voxfe_schema_version %d, not %d",
                       VOX_SCHEMA_VERSION_BONE_NODES, r->version);
    return read_bone_displacement(r, m);
  }
  int varid;
  vox_status s = find_var(r, r->ncid, name, WANT_NUMBER, n_dims, dims, 0, &varid);
  if (s || varid < 0) return s;
  if (m->n_load_cases < 1)
    return read_fail(r, VOX_ERR_FORMAT, "variable '%s' is stored but no load case is", name);
  const long long want[5] = {m->n_load_cases, m->grid.nz + 1, m->grid.ny + 1, m->grid.nx + 1, 3};
  for (int d = 0; d < n_dims; d++) {
    size_t len;
    int found;
    if ((s = dim_length(r, r->ncid, dims[d], &len, &found))) return s;
    if ((long long)len != want[d])
      return read_fail(r, VOX_ERR_FORMAT, "dimension '%s' has length %zu, expected %lld", dims[d],
                       len, want[d]);
  }
  int ok = 1;
  size_t bytes =
      mul_size((size_t)m->n_load_cases,
               (size_t)vox_grid_nodes(&m->grid) * (heat ? 1 : 3) * sizeof(double), &ok);
  if (!ok) return read_fail(r, VOX_ERR_FORMAT, "variable '%s' is too large", name);
  if (!(m->displacement = malloc(bytes))) return read_fail(r, VOX_ERR_NO_MEMORY, "out of memory");
  R_TRY(r, nc_get_var_double(r->ncid, varid, m->displacement), name);
  return VOX_OK;
}

/* One number of the history group's end attributes (any numeric type). */
static vox_status read_end_number(reader *r, int gid, const char *name, double *value) {
  nc_type type;
  size_t len;
  int err = nc_inq_att(gid, NC_GLOBAL, name, &type, &len);
  if (err == NC_ENOTATT)
    return read_fail(r, VOX_ERR_FORMAT, "group " HISTORY_GROUP " has stop_reason but no %s", name);
  R_TRY(r, err, name);
  if (!is_number_type(type) || len != 1)
    return read_fail(r, VOX_ERR_FORMAT, "attribute '%s' should hold one number", name);
  R_TRY(r, nc_get_att_double(gid, NC_GLOBAL, name, value), name);
  return VOX_OK;
}

/* How the run ended, where the file says (stop_reason and the final_*
 * attributes come together). */
static vox_status read_optimization_end(reader *r, int gid, vox_model *m) {
  char *reason = NULL;
  vox_status s = read_text_att(r, gid, NC_GLOBAL, "stop_reason", &reason);
  if (s || !reason) return s;
  vox_stop_reason parsed;
  if (vox_stop_reason_parse(reason, &parsed) != 0 || parsed == VOX_STOP_SOLVER_FAILED) {
    s = read_fail(r, VOX_ERR_FORMAT,
                  "stop_reason '%.40s' is none of converged, iteration_limit, "
                  "continuation_unfinished, interrupted",
                  reason);
    free(reason);
    return s;
  }
  free(reason);
  vox_optimization_end end = {.stop_reason = parsed};
  double cg = 0;
  if ((s = read_end_number(r, gid, "final_objective", &end.objective)) ||
      (s = read_end_number(r, gid, "final_volume_fraction", &end.volume_fraction)) ||
      (s = read_end_number(r, gid, "final_non_discreteness", &end.non_discreteness)) ||
      (s = read_end_number(r, gid, "final_cg_iterations", &cg)))
    return s;
  if (!(cg >= 0 && cg <= 9e15 && cg == (double)(int64_t)cg))
    return read_fail(r, VOX_ERR_FORMAT, "final_cg_iterations %g is not a count", cg);
  end.cg_iterations = (int64_t)cg;
  m->optimization_end = end;
  nc_type type;
  size_t len;
  int err = nc_inq_att(gid, NC_GLOBAL, "final_constraint_value", &type, &len);
  if (err == NC_ENOTATT) return VOX_OK;
  R_TRY(r, err, "final_constraint_value");
  if (len != (size_t)m->n_design_constraints || !is_number_type(type))
    return read_fail(r, VOX_ERR_FORMAT,
                     "final_constraint_value has %zu value(s) for %d design constraint(s)", len,
                     m->n_design_constraints);
  if (!(m->final_constraint = malloc(len * sizeof *m->final_constraint)))
    return read_fail(r, VOX_ERR_NO_MEMORY, "out of memory");
  R_TRY(r, nc_get_att_double(gid, NC_GLOBAL, "final_constraint_value", m->final_constraint),
        "final_constraint_value");
  return VOX_OK;
}

/* The design constraints' values per history row and at the end
 * (optional: a run records them where the model has design constraints). */
static vox_status read_history_constraints(reader *r, int gid, vox_model *m) {
  const size_t nc = (size_t)m->n_design_constraints;
  static const char *const dims[2] = {"iteration", "design_constraint"};
  int varid;
  vox_status s = find_var(r, gid, "design_constraint_value", WANT_NUMBER, 2, dims, 0, &varid);
  if (s || varid < 0) return s;
  if (nc == 0 || m->n_history == 0) return VOX_OK;
  if (!(m->history_constraint = malloc(m->n_history * nc * sizeof *m->history_constraint)))
    return read_fail(r, VOX_ERR_NO_MEMORY, "out of memory");
  R_TRY(r, nc_get_var_double(gid, varid, m->history_constraint), "design_constraint_value");
  return VOX_OK;
}

/* The optimization history: the group is optional, its table is not
 * (unless the group holds only how the run ended). */
static vox_status read_history(reader *r, vox_model *m) {
  int gid, err = nc_inq_grp_ncid(r->ncid, HISTORY_GROUP, &gid);
  if (err == NC_ENOGRP || err == NC_ENOTNC4) return VOX_OK;
  R_TRY(r, err, "group " HISTORY_GROUP);
  size_t n;
  int found;
  vox_status s = read_optimization_end(r, gid, m);
  if (!s) s = dim_length(r, gid, history_table.dim, &n, &found);
  if (s) return s;
  if (!found && m->optimization_end.stop_reason) return VOX_OK;
  if (!found)
    return read_fail(r, VOX_ERR_FORMAT, "group " HISTORY_GROUP " has no dimension 'iteration'");
  if (n == 0) return VOX_OK;
  /* Capacity rounded up to a power of two, the convention of model.c's
   * appends, so that code appending rows later does not overrun. */
  size_t capacity = 1;
  while (capacity < n) capacity *= 2;
  if (!(m->history = calloc(capacity, sizeof *m->history)))
    return read_fail(r, VOX_ERR_NO_MEMORY, "out of memory");
  m->n_history = n;
  if ((s = read_table(r, gid, &history_table, n, m->history))) return s;
  return read_history_constraints(r, gid, m);
}

/* The homogenized stiffness of a periodic-cell design, when present. */
static vox_status read_cell_tensor(reader *r, vox_model *m) {
  int err = nc_inq_att(r->ncid, NC_GLOBAL, "homogenized_stiffness", NULL, NULL);
  if (err == NC_ENOTATT) return VOX_OK;
  R_TRY(r, err, "homogenized_stiffness");
  if (!(m->cell_tensor = malloc(36 * sizeof *m->cell_tensor)))
    return read_fail(r, VOX_ERR_NO_MEMORY, "out of memory");
  return read_number_att(r, "homogenized_stiffness", 36, m->cell_tensor);
}

/* A cell's design settings (optional attributes), checked as the problem
 * file's reader checks them: a file edited by hand fails here, naming it. */
/* The optimization's volume target (optional; 0 when absent). */
static vox_status read_target_volume_fraction(reader *r, vox_model *m) {
  nc_type type;
  size_t len;
  int err = nc_inq_att(r->ncid, NC_GLOBAL, "target_volume_fraction", &type, &len);
  if (err == NC_ENOTATT) return VOX_OK;
  R_TRY(r, err, "target_volume_fraction");
  vox_status s = read_number_att(r, "target_volume_fraction", 1, &m->target_volume_fraction);
  if (s) return s;
  if (!(m->target_volume_fraction > 0 && m->target_volume_fraction <= 1))
    return read_fail(r, VOX_ERR_FORMAT, "target_volume_fraction %g is not in (0, 1]",
                     m->target_volume_fraction);
  return VOX_OK;
}

static vox_status read_cell_settings(reader *r, vox_model *m) {
  vox_status s = read_text_att(r, r->ncid, NC_GLOBAL, "cell_objective", &m->cell_objective);
  if (!s) s = read_text_att(r, r->ncid, NC_GLOBAL, "cell_expression", &m->cell_expression);
  if (!s) s = read_text_att(r, r->ncid, NC_GLOBAL, "cell_symmetry", &m->cell_symmetry);
  if (s) return s;
  vox_cell_objective objective = VOX_CELL_NONE;
  if (m->cell_objective &&
      (vox_cell_objective_parse(m->cell_objective, &objective) || objective == VOX_CELL_NONE))
    return read_fail(r, VOX_ERR_FORMAT,
                     "unknown cell_objective '%.32s' (bulk, shear, poisson, poisson-log or "
                     "custom)", m->cell_objective);
  vox_symmetry symmetry;
  if (m->cell_symmetry && vox_symmetry_parse(m->cell_symmetry, &symmetry))
    return read_fail(r, VOX_ERR_FORMAT,
                     "unknown cell_symmetry '%.32s' (none, reflect3, reflect6 or rotate3)",
                     m->cell_symmetry);
  if (objective == VOX_CELL_CUSTOM && !m->cell_expression)
    return read_fail(r, VOX_ERR_FORMAT, "cell_objective 'custom' without a cell_expression");
  if (m->cell_expression) {
    vox_expression *e = NULL;
    if (vox_expression_parse(r->ctx, m->cell_expression, &e) != VOX_OK) {
      char message[512];
      snprintf(message, sizeof message, "%s", vox_context_message(r->ctx));
      return read_fail(r, VOX_ERR_FORMAT, "attribute cell_expression: %s", message);
    }
    vox_expression_free(e);
  }
  return VOX_OK;
}

static vox_status read_model(reader *r, vox_model *m) {
  vox_status s = check_identity(r);
  if (!s) s = read_grid(r, m);
  if (!s) s = read_stage(r, m); /* after read_grid: vox_model_init zeroes the model */
  if (!s) s = read_physics(r, m);
  if (!s) s = read_objective(r, m);
  if (!s) s = read_label(r, m);
  if (!s) s = read_text_att(r, r->ncid, NC_GLOBAL, "history", &m->history_text);
  if (!s) s = read_text_att(r, r->ncid, NC_GLOBAL, "title", &m->title);
  if (!s) s = read_lists(r, m);
  if (!s) s = read_condition_names(r, m);
  if (!s) s = read_intensity(r, m);
  if (!s) s = read_density(r, m);
  if (!s) s = read_snapshots(r, m);
  if (!s) s = read_nodal_density(r, m);
  if (!s) s = read_displacement(r, m);
  if (!s) s = read_history(r, m);
  if (!s) s = read_cell_tensor(r, m);
  if (!s) s = read_cell_settings(r, m);
  if (!s) s = read_target_volume_fraction(r, m);
  return s;
}

/* Opens the file, telling a missing or unreadable file (I/O) from one that is
 * not netCDF (format). The system is asked first: netCDF reports a missing
 * file differently across versions and backends, and only errno names it. */
static vox_status open_file(vox_context *ctx, const char *path, int *ncid) {
  struct stat st;
  if (stat(path, &st)) return vox_error(ctx, VOX_ERR_IO, "%s: %s", path, strerror(errno));
  if (S_ISDIR(st.st_mode)) return vox_error(ctx, VOX_ERR_IO, "%s: %s", path, strerror(EISDIR));
  if (!S_ISREG(st.st_mode)) return vox_error(ctx, VOX_ERR_IO, "%s: not a regular file", path);
  FILE *file = fopen(path, "rb");
  if (!file) return vox_error(ctx, VOX_ERR_IO, "%s: %s", path, strerror(errno));
  const char *problem = vox_netcdf_header_problem(file, (long long)st.st_size);
  fclose(file);
  if (problem) return vox_error(ctx, VOX_ERR_FORMAT, "%s: %s", path, problem);
  int err = nc_open(path, NC_NOWRITE, ncid);
  if (err == NC_NOERR) return VOX_OK;
  if (err > 0) return vox_error(ctx, VOX_ERR_IO, "%s: %s", path, strerror(err));
  if (err == NC_ENOMEM) return vox_error(ctx, VOX_ERR_NO_MEMORY, "%s: out of memory", path);
  return vox_error(ctx, VOX_ERR_FORMAT, "%s: not a netCDF file or truncated (%s)", path,
                   nc_strerror(err));
}

vox_status vox_model_read(vox_context *ctx, const char *path, vox_model *model) {
  if (!model) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "vox_model_read: no model");
  memset(model, 0, sizeof *model);
  if (!path || !*path) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "vox_model_read: no path");
  reader r = {ctx, path, -1, 0};
  vox_status s = open_file(ctx, path, &r.ncid);
  if (s) return s;
  s = read_model(&r, model);
  int err = nc_close(r.ncid);
  if (!s && err) s = read_nc_fail(&r, err, "the file");
  if (!s && (s = vox_model_validate(ctx, model))) s = with_path(ctx, s, path);
  if (s) vox_model_free(model);
  return s;
}
