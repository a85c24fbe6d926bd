/* SPDX-License-Identifier: BSD-3-Clause */
/* The VTK XML writer shared by the .vti and .vtu writers: compresses arrays
 * in VTK's zlib block layout, writes the XML with libxml2's xmlTextWriter
 * with the arrays appended as raw binary, and replaces the output file
 * atomically. See FORMATS.md (VTK XML) for the layout. */
#include "voxfe/output_target.h"
#include "vtk_xml.h"
#include "temp_file.h"
#include "voxfe/temp_files.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libxml/globals.h>
#include <libxml/xmlIO.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlstring.h>
#include <libxml/xmlwriter.h>
#define ZLIB_CONST
#include <zlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* VTK's own block size. Readers take it from each array's header, but other
 * tools that parse the format by hand assume it. */
enum { BLOCK_SIZE = 32768 };
/* Blocks compressed in parallel per round: the scratch memory (raw and
 * compressed copies) stays near 2 * 256 * 32 KiB = 16 MiB whatever the array. */
enum { BATCH_BLOCKS = 256 };
/* zlib level 1: compression is most of a writer's time, and higher levels
 * take 2 to 10 times longer for a few percent on these arrays. */
enum { ZLIB_LEVEL = 1 };
/* libxml2's write calls take an int length. */
enum { RAW_CHUNK = 1 << 30 };

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_BYTE_ORDER "BigEndian"
#else
#define HOST_BYTE_ORDER "LittleEndian"
#endif

typedef struct blob {
  unsigned char *data;
  size_t size, capacity;
} blob;

struct vtkx_doc {
  vox_context *ctx;
  const char *path;
  vox_status status;      /* the first failure; VOX_OK until then */
  char *tmp_path;         /* the temporary file, NULL before it exists */
  int fd;                 /* its descriptor, -1 when closed */
  int write_errno;        /* errno of the first failed write(), for the message */
  char xml_message[160];  /* libxml2's first error message, when it gives one */
  xmlTextWriterPtr writer;
  int depth;              /* elements open, VTKFile included */
  const vtkx_array *arrays;
  size_t n_arrays;
  blob *blobs;            /* each array compressed, header first */
  uint64_t *offsets;      /* of each blob, counted from just after the "_" */
  int handlers_installed;
  xmlGenericErrorFunc saved_generic;
  void *saved_generic_context;
  xmlStructuredErrorFunc saved_structured;
  void *saved_structured_context;
};

static size_t type_size(vtkx_type type) {
  switch (type) {
  case VTKX_UINT8:
  case VTKX_STRING: return 1;
  case VTKX_FLOAT32: return 4;
  case VTKX_INT64:
  case VTKX_FLOAT64: return 8;
  }
  return 0;
}

static const char *type_name(vtkx_type type) {
  switch (type) {
  case VTKX_UINT8: return "UInt8";
  case VTKX_INT64: return "Int64";
  case VTKX_FLOAT32: return "Float32";
  case VTKX_FLOAT64: return "Float64";
  case VTKX_STRING: return "String";
  }
  return "?";
}

/* Records the first failure; later ones are consequences of it. */
__attribute__((format(printf, 3, 4))) static void fail(vtkx_doc *doc, vox_status status,
                                                       const char *fmt, ...) {
  if (doc->status != VOX_OK) return;
  char message[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  doc->status = vox_error(doc->ctx, status, "%s", message);
}

/* A libxml2 call failed: name the cause, the failed write() when there was one. */
static void fail_writer(vtkx_doc *doc) {
  if (doc->write_errno)
    fail(doc, VOX_ERR_IO, "%s: cannot write: %s", doc->path, strerror(doc->write_errno));
  else
    fail(doc, VOX_ERR_IO, "%s: cannot write: libxml2: %s", doc->path,
         doc->xml_message[0] ? doc->xml_message : "the text writer failed");
}

/* --- compression ------------------------------------------------------------ */

static int blob_append(blob *b, const void *data, size_t size) {
  if (b->capacity - b->size < size) {
    size_t capacity = b->capacity ? b->capacity : 4096;
    while (capacity - b->size < size) capacity *= 2;
    unsigned char *grown = realloc(b->data, capacity);
    if (!grown) return -1;
    b->data = grown;
    b->capacity = capacity;
  }
  memcpy(b->data + b->size, data, size);
  b->size += size;
  return 0;
}

/* One zlib stream of len bytes; *dst_len holds the room in dst (at least
 * compressBound(len)) and receives the size. compress2 without the choice
 * of strategy. */
static int deflate_block(unsigned char *dst, uLongf *dst_len, const unsigned char *src, size_t len,
                         int strategy) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (deflateInit2(&z, ZLIB_LEVEL, Z_DEFLATED, 15, 8, strategy) != Z_OK) return -1;
  z.next_in = src;
  z.avail_in = (uInt)len;
  z.next_out = dst;
  z.avail_out = (uInt)*dst_len;
  int result = deflate(&z, Z_FINISH);
  *dst_len = z.total_out;
  deflateEnd(&z);
  return result == Z_STREAM_END ? 0 : -1;
}

/* The array as VTK's compressed appended block:
 *   [UInt64 nblocks][UInt64 block size][UInt64 size of a partial last block,
 *   0 if the last is full][UInt64 compressed size of each block] streams...
 * Each block of 32768 bytes of the typed array is filled and compressed on
 * its own, in rounds of BATCH_BLOCKS blocks spread over the threads, so the
 * uncompressed array never exists as a whole. The result does not depend on
 * the number of threads. */
static vox_status compress_array(vtkx_doc *doc, const vtkx_array *a, blob *out) {
  size_t value_size = type_size(a->type);
  uint64_t n_values = a->tuples * (uint64_t)a->components;
  if (a->components < 1 || value_size == 0 ||
      (a->tuples && n_values / a->tuples != (uint64_t)a->components) ||
      n_values > (SIZE_MAX / 2) / value_size) {
    fail(doc, VOX_ERR_INVALID_ARGUMENT, "%s: array '%s' is too large", doc->path, a->name);
    return doc->status;
  }
  size_t n_bytes = (size_t)n_values * value_size;
  size_t n_blocks = n_bytes / BLOCK_SIZE + (n_bytes % BLOCK_SIZE != 0);
  size_t batch = n_blocks < BATCH_BLOCKS ? n_blocks : BATCH_BLOCKS;
  uLong bound = compressBound(BLOCK_SIZE);

  uint64_t *header = calloc(3 + n_blocks, sizeof *header);
  unsigned char *raw = malloc(batch * BLOCK_SIZE + 1);
  unsigned char *packed = malloc(batch * bound + 1);
  uLongf *packed_size = malloc((batch + 1) * sizeof *packed_size);
  if (!header || !raw || !packed || !packed_size) goto no_memory;
  header[0] = n_blocks;
  header[1] = BLOCK_SIZE;
  header[2] = n_bytes % BLOCK_SIZE;
  /* Reserve the header: it is complete only once every block is compressed. */
  out->size = 0;
  if (blob_append(out, header, (3 + n_blocks) * sizeof *header)) goto no_memory;

  int threads = doc->ctx ? vox_context_threads(doc->ctx) : 0;
#ifdef _OPENMP
  if (threads <= 0) threads = omp_get_max_threads();
#endif
  (void)threads; /* unused without OpenMP */
  for (size_t first_block = 0; first_block < n_blocks; first_block += batch) {
    size_t count = n_blocks - first_block < batch ? n_blocks - first_block : batch;
    int failed = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic) num_threads(threads) reduction(| : failed) if (count > 1)
#endif
    for (size_t i = 0; i < count; i++) {
      size_t start = (first_block + i) * BLOCK_SIZE;
      size_t len = n_bytes - start < BLOCK_SIZE ? n_bytes - start : BLOCK_SIZE;
      /* BLOCK_SIZE is a multiple of every value size: blocks hold whole values. */
      a->fill(a->source, start / value_size, len / value_size, raw + i * BLOCK_SIZE);
      packed_size[i] = bound;
      if (deflate_block(packed + i * bound, &packed_size[i], raw + i * BLOCK_SIZE, len,
                        a->noisy ? Z_RLE : Z_DEFAULT_STRATEGY))
        failed = 1;
    }
    if (failed) goto no_memory; /* zlib fails only for want of memory here */
    for (size_t i = 0; i < count; i++) {
      header[3 + first_block + i] = packed_size[i];
      if (blob_append(out, packed + i * bound, packed_size[i])) goto no_memory;
    }
  }
  memcpy(out->data, header, (3 + n_blocks) * sizeof *header);
  free(header);
  free(raw);
  free(packed);
  free(packed_size);
  return VOX_OK;

no_memory:
  free(header);
  free(raw);
  free(packed);
  free(packed_size);
  fail(doc, VOX_ERR_NO_MEMORY, "%s: out of memory compressing array '%s'", doc->path, a->name);
  return doc->status;
}

/* --- the temporary file ----------------------------------------------------- */

/* libxml2's output callback: write() all of it, or report the errno. */
static int write_callback(void *context, const char *buffer, int len) {
  vtkx_doc *doc = context;
  int done = 0;
  while (done < len) {
    ssize_t n = write(doc->fd, buffer + done, (size_t)(len - done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (!doc->write_errno) doc->write_errno = n < 0 ? errno : EIO;
      return -1;
    }
    done += (int)n;
  }
  return len;
}

/* --- libxml2 error handlers --------------------------------------------------
 * libxml2 prints its errors to stderr by default, and the library never
 * prints. While a document is open these handlers keep libxml2's first
 * message for our own error instead. libxml2 (built with threads, as Debian's
 * is) keeps the handlers per thread, and vtkx_finish puts the caller's back,
 * so writers on different threads and callers that set their own handlers
 * are unaffected. */

static void silent_generic(void *context, const char *msg, ...) {
  (void)context;
  (void)msg;
}

static void keep_structured(void *context, xmlErrorPtr error) {
  vtkx_doc *doc = context;
  if (doc->xml_message[0] || !error || !error->message) return;
  snprintf(doc->xml_message, sizeof doc->xml_message, "%s", error->message);
  size_t n = strlen(doc->xml_message);
  while (n > 0 && (doc->xml_message[n - 1] == '\n' || doc->xml_message[n - 1] == ' '))
    doc->xml_message[--n] = '\0';
}

static void install_handlers(vtkx_doc *doc) {
  doc->saved_generic = xmlGenericError;
  doc->saved_generic_context = xmlGenericErrorContext;
  doc->saved_structured = xmlStructuredError;
  doc->saved_structured_context = xmlStructuredErrorContext;
  xmlSetGenericErrorFunc(doc, silent_generic);
  xmlSetStructuredErrorFunc(doc, keep_structured);
  doc->handlers_installed = 1;
}

static void restore_handlers(vtkx_doc *doc) {
  if (!doc->handlers_installed) return;
  xmlSetGenericErrorFunc(doc->saved_generic_context, doc->saved_generic);
  xmlSetStructuredErrorFunc(doc->saved_structured_context, doc->saved_structured);
  doc->handlers_installed = 0;
}

/* --- the document ------------------------------------------------------------ */

void vtkx_start(vtkx_doc *doc, const char *element) {
  if (doc->status != VOX_OK) return;
  if (xmlTextWriterStartElement(doc->writer, BAD_CAST element) < 0) {
    fail_writer(doc);
    return;
  }
  doc->depth++;
}

void vtkx_attr(vtkx_doc *doc, const char *name, const char *fmt, ...) {
  if (doc->status != VOX_OK) return;
  char value[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(value, sizeof value, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof value) {
    fail(doc, VOX_ERR_INVALID_ARGUMENT, "%s: attribute %s is too long", doc->path, name);
    return;
  }
  if (xmlTextWriterWriteAttribute(doc->writer, BAD_CAST name, BAD_CAST value) < 0)
    fail_writer(doc);
}

/* The shortest of %.15g..%.17g that reads back as the same double. */
static void format_double(char out[32], double value) {
  for (int digits = 15; digits <= 17; digits++) {
    snprintf(out, 32, "%.*g", digits, value);
    if (strtod(out, NULL) == value) return;
  }
}

void vtkx_attr_vector(vtkx_doc *doc, const char *name, const double value[3]) {
  char x[32], y[32], z[32];
  format_double(x, value[0]);
  format_double(y, value[1]);
  format_double(z, value[2]);
  vtkx_attr(doc, name, "%s %s %s", x, y, z);
}

void vtkx_end(vtkx_doc *doc) {
  if (doc->status != VOX_OK) return;
  if (xmlTextWriterEndElement(doc->writer) < 0) {
    fail_writer(doc);
    return;
  }
  doc->depth--;
}

void vtkx_data_array(vtkx_doc *doc, size_t index) {
  const vtkx_array *a = &doc->arrays[index];
  vtkx_start(doc, "DataArray");
  vtkx_attr(doc, "type", "%s", type_name(a->type));
  vtkx_attr(doc, "Name", "%s", a->name);
  vtkx_attr(doc, "NumberOfComponents", "%d", a->components);
  for (int c = 0; a->component_names && c < a->components; c++) {
    char attr[32];
    snprintf(attr, sizeof attr, "ComponentName%d", c);
    vtkx_attr(doc, attr, "%s", a->component_names[c]);
  }
  vtkx_attr(doc, "format", "appended");
  vtkx_attr(doc, "offset", "%" PRIu64, doc->offsets[index]);
  vtkx_end(doc);
}

/* Field data arrays are <Array>, not <DataArray>, and give their number of
 * tuples: VTK cannot infer it as it does from a piece's points and cells. */
void vtkx_field_data(vtkx_doc *doc, size_t first, size_t end) {
  vtkx_start(doc, "FieldData");
  for (size_t i = first; i < end; i++) {
    const vtkx_array *a = &doc->arrays[i];
    vtkx_start(doc, "Array");
    vtkx_attr(doc, "type", "%s", type_name(a->type));
    vtkx_attr(doc, "Name", "%s", a->name);
    vtkx_attr(doc, "NumberOfTuples", "%" PRIu64, a->type == VTKX_STRING ? a->strings : a->tuples);
    vtkx_attr(doc, "format", "appended");
    vtkx_attr(doc, "offset", "%" PRIu64, doc->offsets[i]);
    vtkx_end(doc);
  }
  vtkx_end(doc);
}

static void write_raw(vtkx_doc *doc, const unsigned char *data, size_t size) {
  while (size > 0 && doc->status == VOX_OK) {
    int chunk = size > RAW_CHUNK ? RAW_CHUNK : (int)size;
    if (xmlTextWriterWriteRawLen(doc->writer, data, chunk) < 0) fail_writer(doc);
    data += chunk;
    size -= (size_t)chunk;
  }
}

vox_status vtkx_begin(vox_context *ctx, vtkx_doc **out, const char *path, const char *type,
                      const vtkx_array *arrays, size_t n_arrays) {
  *out = NULL;
  vtkx_doc *doc = calloc(1, sizeof *doc);
  if (!doc) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  doc->ctx = ctx;
  doc->path = path;
  doc->fd = -1;
  doc->arrays = arrays;
  doc->n_arrays = n_arrays;
  doc->blobs = calloc(n_arrays + 1, sizeof *doc->blobs);
  doc->offsets = calloc(n_arrays + 1, sizeof *doc->offsets);
  if (!doc->blobs || !doc->offsets) {
    fail(doc, VOX_ERR_NO_MEMORY, "out of memory");
    return vtkx_finish(doc);
  }

  /* Compress first, before any file exists: the header needs the offsets. */
  uint64_t offset = 0;
  for (size_t i = 0; i < n_arrays; i++) {
    if (compress_array(doc, &arrays[i], &doc->blobs[i]) != VOX_OK) return vtkx_finish(doc);
    doc->offsets[i] = offset;
    offset += doc->blobs[i].size;
  }

  doc->fd = vox_open_temp(path, &doc->tmp_path);
  if (doc->fd < 0) {
    fail(doc, VOX_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    return vtkx_finish(doc);
  }

  install_handlers(doc);
  xmlOutputBufferPtr buffer = xmlOutputBufferCreateIO(write_callback, NULL, doc, NULL);
  if (!buffer) {
    fail(doc, VOX_ERR_NO_MEMORY, "out of memory");
    return vtkx_finish(doc);
  }
  doc->writer = xmlNewTextWriter(buffer);
  if (!doc->writer) {
    xmlOutputBufferClose(buffer); /* a failed xmlNewTextWriter does not take it */
    fail(doc, VOX_ERR_NO_MEMORY, "out of memory");
    return vtkx_finish(doc);
  }
  if (xmlTextWriterSetIndent(doc->writer, 1) < 0 ||
      xmlTextWriterSetIndentString(doc->writer, BAD_CAST "  ") < 0 ||
      xmlTextWriterStartDocument(doc->writer, NULL, NULL, NULL) < 0) {
    fail_writer(doc);
    return vtkx_finish(doc);
  }
  vtkx_start(doc, "VTKFile");
  vtkx_attr(doc, "type", "%s", type);
  vtkx_attr(doc, "version", "1.0"); /* header_type needs version 1.0 */
  vtkx_attr(doc, "byte_order", HOST_BYTE_ORDER);
  if (n_arrays > 0) { /* a collection (.pvd) has no data of its own */
    vtkx_attr(doc, "header_type", "UInt64");
    vtkx_attr(doc, "compressor", "vtkZLibDataCompressor");
  }
  if (doc->status != VOX_OK) return vtkx_finish(doc);
  *out = doc;
  return VOX_OK;
}

vox_status vtkx_finish(vtkx_doc *doc) {
  if (doc->status == VOX_OK) {
    while (doc->depth > 1) vtkx_end(doc); /* down to <VTKFile> */
    if (doc->n_arrays > 0) {
      vtkx_start(doc, "AppendedData");
      vtkx_attr(doc, "encoding", "raw");
      write_raw(doc, (const unsigned char *)"_", 1); /* offsets count from after it */
      for (size_t i = 0; i < doc->n_arrays; i++)
        write_raw(doc, doc->blobs[i].data, doc->blobs[i].size);
      /* a line break after the data, as VTK writes it: readers that look
       * for the data's end at the last line break (meshio) need it */
      write_raw(doc, (const unsigned char *)"\n  ", 3);
      vtkx_end(doc); /* AppendedData */
    }
    vtkx_end(doc); /* VTKFile */
    if (doc->status == VOX_OK && xmlTextWriterEndDocument(doc->writer) < 0) fail_writer(doc);
  }
  /* Freeing the writer flushes what libxml2 still buffers; its own return
   * value is lost, so a failure there shows only in write_errno. */
  xmlFreeTextWriter(doc->writer);
  doc->writer = NULL;
  if (doc->write_errno) fail_writer(doc);
  restore_handlers(doc);

  if (doc->fd >= 0) {
    /* fsync so that a crash after the rename cannot leave an empty file in
     * place of the old one, and so that late write errors (NFS, quota) show. */
    if (doc->status == VOX_OK && fsync(doc->fd) != 0)
      fail(doc, VOX_ERR_IO, "%s: cannot write: %s", doc->path, strerror(errno));
    if (close(doc->fd) != 0)
      fail(doc, VOX_ERR_IO, "%s: cannot write: %s", doc->path, strerror(errno));
    doc->fd = -1;
  }
  if (doc->tmp_path) {
    int err = doc->status == VOX_OK ? vox_output_place(doc->tmp_path, doc->path) : 0;
    if (err) fail(doc, VOX_ERR_IO, "%s: cannot write: %s", doc->path, strerror(err));
    if (doc->status != VOX_OK) unlink(doc->tmp_path); /* nothing more to do if this fails */
  }

  vox_status status = doc->status;
  for (size_t i = 0; doc->blobs && i < doc->n_arrays; i++) free(doc->blobs[i].data);
  free(doc->blobs);
  free(doc->offsets);
  if (doc->tmp_path) vox_temp_unregister(doc->tmp_path);
  free(doc->tmp_path);
  free(doc);
  return status;
}

/* --- fills and conversions ------------------------------------------------------ */

float vtkx_float32(double value) {
  if (value > FLT_MAX) return INFINITY;
  if (value < -FLT_MAX) return -INFINITY;
  return (float)value;
}

void vtkx_fill_uint8(const void *source, uint64_t first, size_t count, void *dst) {
  memcpy(dst, (const uint8_t *)source + first, count);
}

void vtkx_fill_float32_of_double(const void *source, uint64_t first, size_t count, void *dst) {
  const double *in = (const double *)source + first;
  float *out = dst;
  for (size_t i = 0; i < count; i++) out[i] = vtkx_float32(in[i]);
}

void vtkx_fill_bytes(const void *source, uint64_t first, size_t count, void *dst) {
  memcpy(dst, (const char *)source + first, count);
}

/* --- String arrays -------------------------------------------------------------- */

int vtkx_strings_add(vtkx_strings *list, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return -1;
  size_t need = (size_t)n + 1; /* with its NUL, which ends it in the array */
  if (list->capacity - list->size < need) {
    size_t capacity = list->capacity ? list->capacity : 256;
    while (capacity - list->size < need) capacity *= 2;
    char *grown = realloc(list->data, capacity);
    if (!grown) return -1;
    list->data = grown;
    list->capacity = capacity;
  }
  va_start(ap, fmt);
  vsnprintf(list->data + list->size, need, fmt, ap);
  va_end(ap);
  list->size += need;
  list->count++;
  return 0;
}

void vtkx_strings_free(vtkx_strings *list) {
  free(list->data);
  memset(list, 0, sizeof *list);
}

vtkx_array vtkx_string_array(const char *name, const vtkx_strings *list) {
  return (vtkx_array){.name = name, .type = VTKX_STRING, .components = 1, .tuples = list->size,
                      .strings = list->count, .fill = vtkx_fill_bytes, .source = list->data};
}

/* --- shared by the model writers ------------------------------------------------ */

#define NAME_MAX_ (VOX_NAME_MAX + 16)

/* The point array name of load case `c`: "<prefix>_<case name>", where a
 * model without names gets "case<c+1>" as vox_model_set_load_cases does. */
static void case_name(const vox_model *model, const char *prefix, int c, char name[NAME_MAX_]) {
  if (model->load_case_names)
    snprintf(name, NAME_MAX_, "%s_%.*s", prefix, VOX_NAME_MAX - 1, model->load_case_names[c]);
  else
    snprintf(name, NAME_MAX_, "%s_case%d", prefix, c + 1);
}

vox_status vtkx_check_model(vox_context *ctx, const char *path, const vox_model *model) {
  if (!path || !*path) return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "no output path given");
  if (!model || !model->label)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the model has no labels", path);
  const vox_grid *g = &model->grid;
  const int64_t n[3] = {g->nx, g->ny, g->nz};
  int64_t nodes = 1;
  for (int a = 0; a < 3; a++) {
    /* VTK's extents are C ints. */
    if (n[a] < 1 || n[a] >= INT_MAX)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: grid size %lldx%lldx%lld is not one VTK can write", path,
                       (long long)g->nx, (long long)g->ny, (long long)g->nz);
    if (__builtin_mul_overflow(nodes, n[a] + 1, &nodes) || nodes > INT64_MAX / 64)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: grid size %lldx%lldx%lld is too large",
                       path, (long long)g->nx, (long long)g->ny, (long long)g->nz);
    if (!(g->voxel_size[a] > 0) || !isfinite(g->voxel_size[a]) || !isfinite(g->origin[a]))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: voxel size must be positive and the origin finite", path);
  }
  if (model->title && !xmlCheckUTF8(BAD_CAST model->title))
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: the model's title is not UTF-8", path);
  if (model->displacement && model->n_load_cases < 1)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: a displacement is stored but there are no load cases", path);
  if (model->n_loads > 0 && model->n_load_cases < 1)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: loads are stored but there are no load cases", path);
  if (!model->displacement && model->n_loads == 0) return VOX_OK; /* names unused */
  /* Array names come from the case names: they must be text an XML reader
   * accepts, and distinct, or one array would hide another. */
  for (int c = 0; c < model->n_load_cases; c++) {
    char name[NAME_MAX_];
    case_name(model, "displacement", c, name);
    if (!xmlCheckUTF8(BAD_CAST name))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: load case %d's name is not UTF-8",
                       path, c + 1);
    for (int d = 0; d < c; d++) {
      char other[NAME_MAX_];
      case_name(model, "displacement", d, other);
      if (strcmp(name, other) == 0)
        return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                         "%s: load cases %d and %d have the same name '%s'", path, d + 1, c + 1,
                         name + strlen("displacement_"));
    }
  }
  return VOX_OK;
}

/* --- the model's fields ----------------------------------------------------------- */

/* Sparse per-node values (constraints, loads) as a dense point array: the
 * nodes with a value, ascending, and their values. */
typedef struct sparse_field {
  const int64_t *node_of_point; /* NULL: point = node */
  const int64_t *node;          /* ascending, distinct */
  size_t n;
  const uint8_t *mask;          /* fixed: one per node */
  const double *vector;         /* force: three per node */
} sparse_field;

/* An analysis result's element field (over the bone elements, ascending) as
 * a cell array: NaN on the cells that are not bone elements. A tensor
 * (strain, stress: six values per element in voxfe's Voigt order xx, yy,
 * zz, yz, zx, xy, engineering shear strains) goes out in the order of VTK's
 * symmetric tensors, xx, yy, zz, xy, yz, xz, shear strains halved to
 * tensor components, so that ParaView's tensor filters (eigenvalues,
 * principal directions) read it right. */
typedef struct element_field {
  const int64_t *cell_of; /* NULL: cell = element */
  const int64_t *elements;
  size_t n;
  const double *values;
  int tensor;       /* 6 values per element */
  double shear;     /* the factor on the shear components: 0.5 for strain */
} element_field;

/* A dense per-node or per-element array, through a point or cell map. */
typedef struct dense_field {
  const int64_t *map; /* NULL: identity */
  const void *values;
} dense_field;

struct vtkx_fields_data {
  vtkx_strings units, title;
  char (*names)[NAME_MAX_];     /* displacement_<c>, then force_<c> */
  dense_field *dense;           /* displacement of each case, label, density */
  sparse_field *sparse;         /* force of each case, fixed */
  int64_t *fixed_node;
  uint8_t *fixed_mask;
  double *reaction;             /* an analysis result's: three per fixed node */
  sparse_field reaction_field;
  size_t n_fixed;
  element_field element[5];     /* an analysis result's strain, stress, ... */
  int64_t *force_node;          /* of every case, one after another */
  double *force;
  size_t *force_start;          /* n_cases + 1 */
};

static int64_t node_of(const int64_t *map, uint64_t point) {
  return map ? map[point] : (int64_t)point;
}

/* The first of the n ascending nodes that is >= node. */
static size_t lower_bound(const int64_t *nodes, size_t n, int64_t node) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (nodes[mid] < node) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static void fill_dense_vector(const void *source, uint64_t first, size_t count, void *dst) {
  const dense_field *f = source;
  const double *values = f->values;
  float *out = dst;
  for (size_t v = 0; v < count; v++) {
    int64_t n = node_of(f->map, (first + v) / 3);
    out[v] = vtkx_float32(values[3 * n + (int64_t)((first + v) % 3)]);
  }
}

static void fill_dense_uint8(const void *source, uint64_t first, size_t count, void *dst) {
  const dense_field *f = source;
  const uint8_t *values = f->values;
  uint8_t *out = dst;
  if (!f->map) memcpy(out, values + first, count);
  else
    for (size_t v = 0; v < count; v++) out[v] = values[f->map[first + v]];
}

static void fill_dense_scalar(const void *source, uint64_t first, size_t count, void *dst) {
  const dense_field *f = source;
  const double *values = f->values;
  float *out = dst;
  for (size_t v = 0; v < count; v++) out[v] = vtkx_float32(values[node_of(f->map, first + v)]);
}

/* Points are in ascending node order, so one search finds where the range
 * starts in the sparse list and the rest is a merge. */
static void fill_sparse(const sparse_field *f, int components, uint64_t first, size_t count,
                        void *dst) {
  size_t k = lower_bound(f->node, f->n, node_of(f->node_of_point, first / (uint64_t)components));
  for (size_t v = 0; v < count; v++) {
    uint64_t t = (first + v) / (uint64_t)components;
    int c = (int)((first + v) % (uint64_t)components);
    int64_t n = node_of(f->node_of_point, t);
    while (k < f->n && f->node[k] < n) k++;
    int here = k < f->n && f->node[k] == n;
    if (f->mask) ((uint8_t *)dst)[v] = here ? f->mask[k] : 0;
    else ((float *)dst)[v] = here ? vtkx_float32(f->vector[3 * k + (size_t)c]) : 0.0f;
  }
}

static void fill_fixed(const void *source, uint64_t first, size_t count, void *dst) {
  fill_sparse(source, 1, first, count, dst);
}

static void fill_force(const void *source, uint64_t first, size_t count, void *dst) {
  fill_sparse(source, 3, first, count, dst);
}

/* VTK's tensor component c (xx, yy, zz, xy, yz, xz) in voxfe's Voigt order. */
static const int voigt_of_vtk[6] = {0, 1, 2, 5, 3, 4};

/* Cells are in ascending element order, like the field's elements: one
 * search, then a merge. */
static void fill_element_field(const void *source, uint64_t first, size_t count, void *dst) {
  const element_field *f = source;
  const uint64_t components = f->tensor ? 6 : 1;
  float *out = dst;
  size_t k = lower_bound(f->elements, f->n, node_of(f->cell_of, first / components));
  for (size_t v = 0; v < count; v++) {
    const uint64_t t = (first + v) / components;
    const int c = (int)((first + v) % components);
    const int64_t e = node_of(f->cell_of, t);
    while (k < f->n && f->elements[k] < e) k++;
    if (k == f->n || f->elements[k] != e) {
      out[v] = NAN;
    } else if (!f->tensor) {
      out[v] = vtkx_float32(f->values[k]);
    } else {
      const int voigt = voigt_of_vtk[c];
      out[v] = vtkx_float32(f->values[6 * k + (size_t)voigt] * (voigt >= 3 ? f->shear : 1.0));
    }
  }
}

static const char *const tensor_components[6] = {"XX", "YY", "ZZ", "XY", "YZ", "XZ"};

typedef struct node_entry {
  int32_t load_case;
  int64_t node;
  size_t order; /* keeps the sums the same whatever qsort does with ties */
} node_entry;

static int compare_entries(const void *pa, const void *pb) {
  const node_entry *a = pa, *b = pb;
  if (a->load_case != b->load_case) return a->load_case < b->load_case ? -1 : 1;
  if (a->node != b->node) return a->node < b->node ? -1 : 1;
  return (a->order > b->order) - (a->order < b->order);
}

/* Constraints as a bit mask per node (1 x, 2 y, 4 z), loads summed per node
 * and case. */
static vox_status gather_conditions(vox_context *ctx, const char *path, const vox_model *model,
                                    const double *constraint_reaction,
                                    struct vtkx_fields_data *d) {
  int64_t nn = vox_grid_nodes(&model->grid);
  size_t nc = model->n_constraints, nl = model->n_loads;
  int n_cases = model->n_load_cases;
  for (size_t i = 0; i < nc; i++) {
    const vox_constraint *c = &model->constraints[i];
    if (c->node < 0 || c->node >= nn || c->component > 2)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: constraint %zu: node %lld component %d is not in the grid", path,
                       i + 1, (long long)c->node, c->component);
  }
  for (size_t i = 0; i < nl; i++) {
    const vox_load *l = &model->loads[i];
    if (l->node < 0 || l->node >= nn || l->component > 2)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: load %zu: node %lld component %d is not in the grid", path, i + 1,
                       (long long)l->node, l->component);
    if (l->load_case < 0 || l->load_case >= n_cases)
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                       "%s: load %zu: load case %d of %d", path, i + 1, l->load_case + 1, n_cases);
  }
  size_t most = nc > nl ? nc : nl;
  node_entry *e = malloc((most ? most : 1) * sizeof *e);
  d->fixed_node = malloc((nc ? nc : 1) * sizeof *d->fixed_node);
  d->fixed_mask = calloc(nc ? nc : 1, 1);
  d->reaction = calloc(3 * (nc ? nc : 1), sizeof *d->reaction);
  d->force_node = malloc((nl ? nl : 1) * sizeof *d->force_node);
  d->force = calloc(3 * (nl ? nl : 1), sizeof *d->force);
  d->force_start = calloc((size_t)(n_cases > 0 ? n_cases : 0) + 1, sizeof *d->force_start);
  if (!e || !d->fixed_node || !d->fixed_mask || !d->reaction || !d->force_node || !d->force ||
      !d->force_start) {
    free(e);
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  }

  for (size_t i = 0; i < nc; i++) e[i] = (node_entry){0, model->constraints[i].node, i};
  qsort(e, nc, sizeof *e, compare_entries);
  size_t n = 0;
  for (size_t i = 0; i < nc; i++) {
    if (n == 0 || d->fixed_node[n - 1] != e[i].node) d->fixed_node[n++] = e[i].node;
    const vox_constraint *c = &model->constraints[e[i].order];
    d->fixed_mask[n - 1] |= (uint8_t)(1u << c->component);
    /* the result stores a dof constrained twice at its first constraint, 0 at the others */
    if (constraint_reaction) d->reaction[3 * (n - 1) + c->component] += constraint_reaction[e[i].order];
  }
  d->n_fixed = n;

  for (size_t i = 0; i < nl; i++)
    e[i] = (node_entry){model->loads[i].load_case, model->loads[i].node, i};
  qsort(e, nl, sizeof *e, compare_entries);
  n = 0;
  for (size_t i = 0; i < nl; i++) {
    if (i == 0 || e[i].load_case != e[i - 1].load_case || e[i].node != e[i - 1].node) {
      d->force_node[n++] = e[i].node;
      d->force_start[e[i].load_case + 1] = n; /* the end of its case so far */
    }
    const vox_load *l = &model->loads[e[i].order];
    d->force[3 * (n - 1) + l->component] += l->value;
  }
  /* Cases without loads end where the previous one ends. */
  for (int c = 0; c < n_cases; c++)
    if (d->force_start[c + 1] < d->force_start[c]) d->force_start[c + 1] = d->force_start[c];
  free(e);
  return VOX_OK;
}

vox_status vtkx_fields_init(vox_context *ctx, const char *path, const vox_model *model,
                            const vox_result_data *result,
                            const int64_t *node_of_point, uint64_t n_points,
                            const int64_t *cell_of, uint64_t n_cells, size_t extra,
                            vtkx_fields *f) {
  memset(f, 0, sizeof *f);
  struct vtkx_fields_data *d = calloc(1, sizeof *d);
  if (!d) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  f->data = d;
  /* A heat model's state is a temperature per node; its heat loads (W, one
   * value a node) are not exported: the model file lists them. */
  const int heat = model->physics == VOX_PHYSICS_HEAT;
  int n_disp = model->displacement ? model->n_load_cases : 0;
  int n_force = model->n_loads > 0 && !heat ? model->n_load_cases : 0;
  int fixed = model->n_constraints > 0;
  const double *reaction =
      result && result->constraint_reaction && result->n_constraints == model->n_constraints
          ? result->constraint_reaction
          : NULL;
  const int n_element_fields = result && result->fields.elements ? 5 : 0;
  size_t n_names = (size_t)n_disp + (size_t)n_force;
  d->names = calloc(n_names + 1, sizeof *d->names);
  d->dense = calloc((size_t)n_disp + 3, sizeof *d->dense);
  d->sparse = calloc((size_t)n_force + 1, sizeof *d->sparse);
  f->arrays = calloc(2 + n_names + 3 + 2 + (size_t)n_element_fields + extra, sizeof *f->arrays);
  if (!d->names || !d->dense || !d->sparse || !f->arrays)
    return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  vox_status status = gather_conditions(ctx, path, model, fixed ? reaction : NULL, d);
  if (status != VOX_OK) return status;

  /* Field data first: it comes first in the file. `units` is filled below,
   * the arrays it points to are in place by the time it is compressed. */
  vtkx_array *a = f->arrays;
  size_t n = 0, units = n++;
  if (model->title && model->title[0]) {
    if (vtkx_strings_add(&d->title, "%s", model->title))
      return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
    a[n++] = vtkx_string_array("title", &d->title);
  }

  f->first_point = n;
  const int dpn = vox_physics_dofs_per_node(model->physics);
  for (int c = 0; c < n_disp; c++) {
    case_name(model, heat ? "temperature" : "displacement", c, d->names[c]);
    d->dense[c] = (dense_field){.map = node_of_point,
                                .values = model->displacement +
                                          (size_t)c * (size_t)vox_grid_nodes(&model->grid) * dpn};
    a[n++] = (vtkx_array){.name = d->names[c], .type = VTKX_FLOAT32, .components = dpn,
                          .tuples = n_points,
                          .fill = heat ? fill_dense_scalar : fill_dense_vector,
                          .source = &d->dense[c], .noisy = 1};
  }
  if (model->nodal_density) { /* an element-free Galerkin design's own variables */
    d->dense[n_disp + 2] = (dense_field){.map = node_of_point, .values = model->nodal_density};
    a[n++] = (vtkx_array){.name = "nodal_density", .type = VTKX_FLOAT32, .components = 1,
                          .tuples = n_points, .fill = fill_dense_scalar,
                          .source = &d->dense[n_disp + 2]};
  }
  for (int c = 0; c < n_force; c++) {
    char *name = d->names[n_disp + c];
    case_name(model, "force", c, name);
    d->sparse[c] = (sparse_field){.node_of_point = node_of_point,
                                  .node = d->force_node + d->force_start[c],
                                  .n = d->force_start[c + 1] - d->force_start[c],
                                  .vector = d->force + 3 * d->force_start[c]};
    a[n++] = (vtkx_array){.name = name, .type = VTKX_FLOAT32, .components = 3,
                          .tuples = n_points, .fill = fill_force, .source = &d->sparse[c]};
  }
  if (fixed) {
    d->sparse[n_force] = (sparse_field){.node_of_point = node_of_point, .node = d->fixed_node,
                                        .n = d->n_fixed, .mask = d->fixed_mask};
    a[n++] = (vtkx_array){.name = "fixed", .type = VTKX_UINT8, .components = 1,
                          .tuples = n_points, .fill = fill_fixed, .source = &d->sparse[n_force]};
  }
  if (fixed && reaction) {
    d->reaction_field = (sparse_field){.node_of_point = node_of_point, .node = d->fixed_node,
                                       .n = d->n_fixed, .vector = d->reaction};
    a[n++] = (vtkx_array){.name = "reaction", .type = VTKX_FLOAT32, .components = 3,
                          .tuples = n_points, .fill = fill_force, .source = &d->reaction_field};
  }

  f->first_cell = n;
  d->dense[n_disp] = (dense_field){.map = cell_of, .values = model->label};
  a[n++] = (vtkx_array){.name = "label", .type = VTKX_UINT8, .components = 1, .tuples = n_cells,
                        .fill = fill_dense_uint8, .source = &d->dense[n_disp]};
  if (model->density) {
    d->dense[n_disp + 1] = (dense_field){.map = cell_of, .values = model->density};
    a[n++] = (vtkx_array){.name = "density", .type = VTKX_FLOAT32, .components = 1,
                          .tuples = n_cells, .fill = fill_dense_scalar,
                          .source = &d->dense[n_disp + 1]};
  }
  if (n_element_fields) {
    const vox_element_fields *ef = &result->fields;
    static const char *const names[5] = {"strain", "stress", "von_mises",
                                         "strain_energy_density", "effective_strain"};
    const double *values[5] = {ef->strain, ef->stress, ef->von_mises, ef->sed,
                               ef->effective_strain};
    for (int i = 0; i < 5; i++) {
      d->element[i] = (element_field){.cell_of = cell_of, .elements = ef->elements,
                                      .n = ef->n_elements, .values = values[i], .tensor = i < 2,
                                      .shear = i == 0 ? 0.5 : 1.0};
      a[n++] = (vtkx_array){.name = names[i], .type = VTKX_FLOAT32, .components = i < 2 ? 6 : 1,
                            .tuples = n_cells, .fill = fill_element_field,
                            .source = &d->element[i], .noisy = 1,
                            .component_names = i < 2 ? tensor_components : NULL};
    }
  }
  f->n = n;
  f->vectors = n_disp > 0 && !heat ? d->names[0] : n_force > 0 ? d->names[n_disp] : NULL;
  f->scalars = n_element_fields ? "von_mises" : model->density ? "density" : "label";

  /* "name: unit" for each array, in the units of docs/file-format.md; "1"
   * for a fraction, "-" for a code without a unit. */
  int failed = vtkx_strings_add(&d->units, "coordinates: mm");
  for (size_t i = f->first_point; i < n; i++) {
    const char *name = a[i].name, *unit = "-";
    if (strncmp(name, "displacement_", 13) == 0) unit = "mm";
    else if (strncmp(name, "temperature_", 12) == 0) unit = "K";
    else if (strncmp(name, "force_", 6) == 0) unit = "N";
    else if (strcmp(name, "density") == 0 || strcmp(name, "nodal_density") == 0) unit = "1";
    else if (strcmp(name, "reaction") == 0) unit = "N";
    else if (strcmp(name, "strain") == 0 || strcmp(name, "effective_strain") == 0) unit = "1";
    else if (strcmp(name, "stress") == 0 || strcmp(name, "von_mises") == 0) unit = "MPa";
    else if (strcmp(name, "strain_energy_density") == 0) unit = "MPa";
    failed |= vtkx_strings_add(&d->units, "%s: %s", name, unit);
  }
  if (failed) return vox_error(ctx, VOX_ERR_NO_MEMORY, "out of memory");
  a[units] = vtkx_string_array("units", &d->units);
  return VOX_OK;
}

void vtkx_fields_free(vtkx_fields *f) {
  struct vtkx_fields_data *d = f->data;
  if (d) {
    vtkx_strings_free(&d->units);
    vtkx_strings_free(&d->title);
    free(d->names);
    free(d->dense);
    free(d->sparse);
    free(d->fixed_node);
    free(d->fixed_mask);
    free(d->reaction);
    free(d->force_node);
    free(d->force);
    free(d->force_start);
    free(d);
  }
  free(f->arrays);
  memset(f, 0, sizeof *f);
}

void vtkx_fields_field_data(vtkx_doc *doc, const vtkx_fields *f) {
  vtkx_field_data(doc, 0, f->first_point);
}

void vtkx_fields_point_and_cell_data(vtkx_doc *doc, const vtkx_fields *f) {
  vtkx_start(doc, "PointData");
  if (f->vectors) vtkx_attr(doc, "Vectors", "%s", f->vectors); /* the active vectors */
  for (size_t i = f->first_point; i < f->first_cell; i++) vtkx_data_array(doc, i);
  vtkx_end(doc);
  vtkx_start(doc, "CellData");
  vtkx_attr(doc, "Scalars", "%s", f->scalars);
  for (size_t i = f->first_cell; i < f->n; i++) vtkx_data_array(doc, i);
  vtkx_end(doc);
}
