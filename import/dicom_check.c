/* A structural check of a DICOM file before GDCM parses it: every data
 * element's length must fit in the file, sequences and items must close.
 * GDCM as Debian builds it keeps its assertions, and a file cut short in the
 * middle of an element makes it abort the whole program; this walk turns
 * such files into one line of error instead. It reads no values except the
 * transfer syntax, which says how the elements are encoded. */
#include <stdlib.h>
#include <string.h>

#include "dicom_check.h"

typedef struct walker {
  const unsigned char *p;
  size_t n;
  int explicit_vr, big_endian;
  const char *error;
} walker;

#define UNDEFINED 0xffffffffu
#define MAX_DEPTH 64

static uint16_t u16(const walker *w, size_t at) {
  const unsigned char *b = w->p + at;
  return w->big_endian ? (uint16_t)(b[0] << 8 | b[1]) : (uint16_t)(b[1] << 8 | b[0]);
}

static uint32_t u32(const walker *w, size_t at) {
  const unsigned char *b = w->p + at;
  return w->big_endian ? (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]
                       : (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
}

/* VRs with a 2-byte reserved field and a 4-byte length in explicit VR. */
static int long_vr(const unsigned char *vr) {
  static const char *const vrs[] = {"OB", "OW", "OF", "SQ", "UT", "UN", "OD", "OL", "OV",
                                    "UC", "UR", "SV", "UV"};
  for (size_t i = 0; i < sizeof vrs / sizeof vrs[0]; i++)
    if (vr[0] == vrs[i][0] && vr[1] == vrs[i][1]) return 1;
  return 0;
}

static int is_vr(const unsigned char *vr) {
  return vr[0] >= 'A' && vr[0] <= 'Z' && vr[1] >= 'A' && vr[1] <= 'Z';
}

static int walk_dataset(walker *w, size_t *at, size_t end, int depth, int in_item);

/* The items of a sequence (or of encapsulated pixel data) of undefined
 * length, up to its delimiter. */
static int walk_items(walker *w, size_t *at, size_t end, int depth) {
  while (*at + 8 <= end) {
    uint16_t g = u16(w, *at), e = u16(w, *at + 2);
    uint32_t len = u32(w, *at + 4);
    *at += 8;
    if (g != 0xfffe) return (w->error = "a sequence holds something other than items"), -1;
    if (e == 0xe0dd) return 0; /* sequence delimiter */
    if (e != 0xe000) return (w->error = "a malformed sequence item"), -1;
    if (len == UNDEFINED) {
      if (walk_dataset(w, at, end, depth + 1, 1)) return -1;
    } else {
      if (len > end - *at) return (w->error = "truncated (an item runs past the end)"), -1;
      *at += len;
    }
  }
  return (w->error = "truncated (a sequence is not closed)"), -1;
}

static int walk_dataset(walker *w, size_t *at, size_t end, int depth, int in_item) {
  if (depth > MAX_DEPTH) return (w->error = "sequences nested too deeply"), -1;
  while (*at < end) {
    if (end - *at < 8) return (w->error = "truncated (in an element's header)"), -1;
    uint16_t g = u16(w, *at), e = u16(w, *at + 2);
    if (g == 0xfffe) { /* item delimiter ends the item we are in */
      *at += 8;
      if (e == 0xe00d && in_item) return 0;
      return (w->error = "an item delimiter out of place"), -1;
    }
    uint32_t len;
    int sequence = 0;
    /* group 0002 is always explicit little endian */
    int explicit_vr = g == 0x0002 ? 1 : w->explicit_vr;
    if (explicit_vr) {
      const unsigned char *vr = w->p + *at + 4;
      if (!is_vr(vr)) return (w->error = "an element without a valid VR"), -1;
      if (long_vr(vr)) {
        if (end - *at < 12) return (w->error = "truncated (in an element's header)"), -1;
        len = u32(w, *at + 8);
        *at += 12;
      } else {
        len = u16(w, *at + 6);
        *at += 8;
      }
      sequence = vr[0] == 'S' && vr[1] == 'Q';
    } else {
      len = u32(w, *at + 4);
      *at += 8;
    }
    if (len == UNDEFINED) {
      /* a sequence, encapsulated pixel data, or UN of undefined length */
      if (walk_items(w, at, end, depth + 1)) return -1;
      continue;
    }
    if (len > end - *at) return (w->error = "truncated (an element runs past the end)"), -1;
    (void)sequence; /* a sequence of defined length is skipped whole */
    *at += len;
  }
  if (in_item) return (w->error = "truncated (an item is not closed)"), -1;
  return 0;
}

int dicom_check_buffer(const unsigned char *data, size_t size, const char **error,
                       char *syntax_out) {
  walker w = {data, size, 1, 0, NULL};
  size_t at = 0;
  char syntax[65] = "";
  if (syntax_out) syntax_out[0] = '\0';
  if (size >= 132 && memcmp(data + 128, "DICM", 4) == 0) {
    at = 132;
    /* the meta group: explicit little endian, ends where group 0002 does */
    while (at + 8 <= size && u16(&w, at) == 0x0002) {
      uint16_t e = u16(&w, at + 2);
      const unsigned char *vr = data + at + 4;
      if (!is_vr(vr)) {
        *error = "a malformed file meta group";
        return -1;
      }
      uint32_t len;
      size_t head = long_vr(vr) ? 12 : 8;
      if (size - at < head) break;
      len = head == 12 ? u32(&w, at + 8) : u16(&w, at + 6);
      if (len > size - at - head) {
        *error = "truncated (in the file meta group)";
        return -1;
      }
      if (e == 0x0010) {
        size_t l = len < sizeof syntax - 1 ? len : sizeof syntax - 1;
        memcpy(syntax, data + at + head, l);
        syntax[l] = '\0';
        while (l && (syntax[l - 1] == '\0' || syntax[l - 1] == ' ')) syntax[--l] = '\0';
      }
      at += head + len;
    }
    if (syntax_out) memcpy(syntax_out, syntax, sizeof syntax);
    if (!strcmp(syntax, "1.2.840.10008.1.2")) w.explicit_vr = 0;
    if (!strcmp(syntax, "1.2.840.10008.1.2.2")) w.big_endian = 1;
    /* deflated data sets cannot be walked without inflating them */
    if (!strcmp(syntax, "1.2.840.10008.1.2.1.99")) return 0;
  } else {
    /* no preamble: explicit or implicit VR, told by the first element */
    if (size < 8) {
      *error = "not a DICOM file (too short)";
      return -1;
    }
    w.explicit_vr = is_vr(data + 4);
  }
  if (walk_dataset(&w, &at, size, 0, 0)) {
    *error = w.error;
    return -1;
  }
  return 0;
}

int dicom_check_file(const char *path, const char **error, char *syntax) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    *error = "cannot open";
    return -1;
  }
  unsigned char *data = NULL;
  size_t size = 0, capacity = 0;
  for (;;) {
    if (size == capacity) {
      capacity = capacity ? 2 * capacity : 1 << 16;
      unsigned char *p = realloc(data, capacity);
      if (!p) {
        free(data);
        fclose(f);
        *error = "out of memory";
        return -1;
      }
      data = p;
    }
    size_t got = fread(data + size, 1, capacity - size, f);
    size += got;
    if (got == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  int status = bad ? (*error = "read error", -1) : dicom_check_buffer(data, size, error, syntax);
  free(data);
  return status;
}
