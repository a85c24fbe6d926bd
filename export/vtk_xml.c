/* The VTK XML writer shared by the .vti and .vtu writers: compresses arrays
 * in VTK's zlib block layout, writes the XML with libxml2's xmlTextWriter
 * with the arrays appended as raw binary, and replaces the output file
 * atomically. See FORMATS.md (VTK XML) for the layout. */
#include "vtk_xml.h"
#include "temp_file.h"

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
  case VTKX_UINT8: return 1;
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
  vtkx_attr(doc, "format", "appended");
  vtkx_attr(doc, "offset", "%" PRIu64, doc->offsets[index]);
  vtkx_end(doc);
}

void vtkx_point_and_cell_data(vtkx_doc *doc, const char *vectors, const char *scalars,
                              size_t first_cell, size_t end) {
  vtkx_start(doc, "PointData");
  if (vectors) vtkx_attr(doc, "Vectors", "%s", vectors); /* the active vectors */
  for (size_t i = 0; i < first_cell; i++) vtkx_data_array(doc, i);
  vtkx_end(doc);
  vtkx_start(doc, "CellData");
  vtkx_attr(doc, "Scalars", "%s", scalars);
  for (size_t i = first_cell; i < end; i++) vtkx_data_array(doc, i);
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
  vtkx_attr(doc, "header_type", "UInt64");
  vtkx_attr(doc, "compressor", "vtkZLibDataCompressor");
  if (doc->status != VOX_OK) return vtkx_finish(doc);
  *out = doc;
  return VOX_OK;
}

vox_status vtkx_finish(vtkx_doc *doc) {
  if (doc->status == VOX_OK) {
    while (doc->depth > 1) vtkx_end(doc); /* down to <VTKFile> */
    vtkx_start(doc, "AppendedData");
    vtkx_attr(doc, "encoding", "raw");
    write_raw(doc, (const unsigned char *)"_", 1); /* offsets count from after it */
    for (size_t i = 0; i < doc->n_arrays; i++)
      write_raw(doc, doc->blobs[i].data, doc->blobs[i].size);
    vtkx_end(doc); /* AppendedData */
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
    if (doc->status == VOX_OK && rename(doc->tmp_path, doc->path) != 0)
      fail(doc, VOX_ERR_IO, "%s: cannot write: %s", doc->path, strerror(errno));
    if (doc->status != VOX_OK) unlink(doc->tmp_path); /* nothing more to do if this fails */
  }

  vox_status status = doc->status;
  for (size_t i = 0; doc->blobs && i < doc->n_arrays; i++) free(doc->blobs[i].data);
  free(doc->blobs);
  free(doc->offsets);
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

/* --- shared by the two model writers ------------------------------------------ */

void vtkx_displacement_name(const vox_model *model, int c, char name[VTKX_NAME_MAX]) {
  if (model->load_case_names)
    snprintf(name, VTKX_NAME_MAX, "displacement_%.*s", VOX_NAME_MAX - 1,
             model->load_case_names[c]);
  else
    snprintf(name, VTKX_NAME_MAX, "displacement_case%d", c + 1);
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
  if (!model->displacement) return VOX_OK;
  if (model->n_load_cases < 1)
    return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                     "%s: a displacement is stored but there are no load cases", path);
  /* Array names come from the case names: they must be text an XML reader
   * accepts, and distinct, or one array would hide another. */
  for (int c = 0; c < model->n_load_cases; c++) {
    char name[VTKX_NAME_MAX];
    vtkx_displacement_name(model, c, name);
    if (!xmlCheckUTF8(BAD_CAST name))
      return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT, "%s: load case %d's name is not UTF-8",
                       path, c + 1);
    for (int d = 0; d < c; d++) {
      char other[VTKX_NAME_MAX];
      vtkx_displacement_name(model, d, other);
      if (strcmp(name, other) == 0)
        return vox_error(ctx, VOX_ERR_INVALID_ARGUMENT,
                         "%s: load cases %d and %d have the same name '%s'", path, d + 1, c + 1,
                         name + strlen("displacement_"));
    }
  }
  return VOX_OK;
}
