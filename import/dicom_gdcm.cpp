/* SPDX-License-Identifier: BSD-3-Clause */
// The GDCM shim of dicom_gdcm.h. GDCM decodes every transfer syntax its
// codecs cover (JPEG baseline/extended/lossless 8-16 bit, JPEG-LS, JPEG 2000,
// RLE, deflate, big endian); what it cannot decode is reported, never
// guessed. No C++ exception crosses into C.
#include "dicom_gdcm.h"

#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include <gdcmImage.h>
#include <gdcmImageReader.h>
#include <gdcmReader.h>
#include <gdcmStringFilter.h>
#include <gdcmTrace.h>
#include <gdcmTransferSyntax.h>

namespace {

// GDCM writes warnings and errors to std::cerr unless told not to; voxfe
// reports one line of its own.
void quiet() {
  gdcm::Trace::SetDebug(false);
  gdcm::Trace::SetWarning(false);
  gdcm::Trace::SetError(false);
}

void say(char *message, size_t size, const std::string &text) {
  std::snprintf(message, size, "%s", text.c_str());
}

// GDCM as Debian builds it keeps its assert()s, and some malformed files
// (a NumberOfFrames of the wrong VR, 1-bit pixels) trip one: abort() would
// end the program with a core dump instead of one line of error. While GDCM
// runs, SIGABRT jumps back here, and stderr (where assert, libjpeg and
// OpenJPEG write) goes to /dev/null. The jump skips C++ destructors: the
// memory of that one failed read is lost, which the program, about to exit
// with an error, can afford. Not thread-safe: the readers run one at a time.
sigjmp_buf abort_jump;

void on_abort(int) { siglongjmp(abort_jump, 1); }

struct guard {
  struct sigaction old_action;
  int saved_stderr = -1;
  guard() {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_abort;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGABRT, &sa, &old_action);
    std::fflush(stderr);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      saved_stderr = dup(2);
      dup2(null, 2);
      close(null);
    }
  }
  ~guard() {
    std::fflush(stderr);
    if (saved_stderr >= 0) {
      dup2(saved_stderr, 2);
      close(saved_stderr);
    }
    sigaction(SIGABRT, &old_action, nullptr);
  }
};

std::string value_of(const gdcm::StringFilter &sf, const gdcm::DataSet &ds, uint16_t group,
                     uint16_t element) {
  gdcm::Tag tag(group, element);
  if (!ds.FindDataElement(tag) || ds.GetDataElement(tag).IsEmpty()) return std::string();
  std::string v = sf.ToString(tag);
  // DICOM pads values to an even length with spaces or NULs
  while (!v.empty() && (v.back() == ' ' || v.back() == '\0')) v.pop_back();
  size_t first = v.find_first_not_of(' ');
  return first == std::string::npos ? std::string() : v.substr(first);
}

// Up to `max` backslash-separated numbers; returns how many were read.
int numbers_of(const std::string &text, double *out, int max) {
  int n = 0;
  const char *p = text.c_str();
  while (*p && n < max) {
    char *end;
    double v = std::strtod(p, &end);
    if (end == p) return n;
    out[n++] = v;
    p = end;
    while (*p == ' ') p++;
    if (*p == '\\') p++;
  }
  return n;
}

void copy(char *dst, size_t size, const std::string &src) {
  std::snprintf(dst, size, "%s", src.c_str());
}

std::string syntax_name(const gdcm::TransferSyntax &ts, const gdcm::DataSet &header_ds,
                        const gdcm::StringFilter &sf) {
  const char *name = gdcm::TransferSyntax::GetTSString(ts);
  if (ts != gdcm::TransferSyntax::TS_END && name) return name;
  std::string uid = value_of(sf, header_ds, 0x0002, 0x0010);
  return uid.empty() ? std::string("unknown") : uid;
}

template <typename T> void convert(const char *src, size_t n, double a, double b, float *dst) {
  for (size_t i = 0; i < n; i++) {
    T v;
    std::memcpy(&v, src + i * sizeof(T), sizeof(T));
    dst[i] = static_cast<float>(a * static_cast<double>(v) + b);
  }
}

int read_header(const char *path, dicom_header *h, char *message, size_t size) {
  std::memset(h, 0, sizeof *h);
  try {
    gdcm::Reader reader;
    reader.SetFileName(path);
    std::set<gdcm::Tag> skip;
    if (!reader.ReadUpToTag(gdcm::Tag(0x7fe0, 0x0010), skip)) {
      say(message, size, "not a readable DICOM file (corrupt or truncated)");
      return DICOM_BAD;
    }
    const gdcm::File &file = reader.GetFile();
    const gdcm::DataSet &ds = file.GetDataSet();
    gdcm::StringFilter sf;
    sf.SetFile(file);
    double v[6];
    h->rows = numbers_of(value_of(sf, ds, 0x0028, 0x0010), v, 1) ? (int)v[0] : 0;
    h->columns = numbers_of(value_of(sf, ds, 0x0028, 0x0011), v, 1) ? (int)v[0] : 0;
    h->frames = numbers_of(value_of(sf, ds, 0x0028, 0x0008), v, 1) ? (int)v[0] : 1;
    h->bits_allocated = numbers_of(value_of(sf, ds, 0x0028, 0x0100), v, 1) ? (int)v[0] : 0;
    h->samples_per_pixel = numbers_of(value_of(sf, ds, 0x0028, 0x0002), v, 1) ? (int)v[0] : 1;
    h->has_position = numbers_of(value_of(sf, ds, 0x0020, 0x0032), h->position, 3) == 3;
    h->has_orientation = numbers_of(value_of(sf, ds, 0x0020, 0x0037), h->orientation, 6) == 6;
    h->has_pixel_spacing = numbers_of(value_of(sf, ds, 0x0028, 0x0030), h->pixel_spacing, 2) == 2;
    if (numbers_of(value_of(sf, ds, 0x0018, 0x0050), v, 1)) h->slice_thickness = v[0];
    if (numbers_of(value_of(sf, ds, 0x0018, 0x0088), v, 1)) h->spacing_between_slices = v[0];
    h->slope = numbers_of(value_of(sf, ds, 0x0028, 0x1053), v, 1) ? v[0] : 1;
    h->intercept = numbers_of(value_of(sf, ds, 0x0028, 0x1052), v, 1) ? v[0] : 0;
    copy(h->rescale_type, sizeof h->rescale_type, value_of(sf, ds, 0x0028, 0x1054));
    copy(h->modality, sizeof h->modality, value_of(sf, ds, 0x0008, 0x0060));
    copy(h->series_uid, sizeof h->series_uid, value_of(sf, ds, 0x0020, 0x000e));
    const gdcm::FileMetaInformation &meta = file.GetHeader();
    copy(h->transfer_syntax, sizeof h->transfer_syntax,
         syntax_name(meta.GetDataSetTransferSyntax(), meta, sf));
    if (h->rows <= 0 || h->columns <= 0) {
      say(message, size, "no image (Rows and Columns missing)");
      return DICOM_BAD;
    }
    return DICOM_OK;
  } catch (const std::exception &e) {
    say(message, size, std::string("not a readable DICOM file (") + e.what() + ")");
  } catch (...) {
    say(message, size, "not a readable DICOM file");
  }
  return DICOM_BAD;
}

int read_pixels(const char *path, float *out, size_t count, char *message, size_t size) {
  try {
    gdcm::ImageReader reader;
    reader.SetFileName(path);
    if (!reader.Read()) {
      say(message, size, "not a readable DICOM image (corrupt or truncated, or no pixel data)");
      return DICOM_BAD;
    }
    const gdcm::Image &image = reader.GetImage();
    const gdcm::PixelFormat &pf = image.GetPixelFormat();
    const unsigned int *dims = image.GetDimensions();
    size_t n = (size_t)dims[0] * dims[1] * (image.GetNumberOfDimensions() > 2 ? dims[2] : 1);
    std::string ts = gdcm::TransferSyntax::GetTSString(image.GetTransferSyntax())
                         ? gdcm::TransferSyntax::GetTSString(image.GetTransferSyntax())
                         : "unknown";
    if (pf.GetSamplesPerPixel() != 1) {
      say(message, size,
          "colour images are not read (" + std::to_string(pf.GetSamplesPerPixel()) +
              " samples per pixel)");
      return DICOM_UNSUPPORTED;
    }
    if (n != count) {
      say(message, size,
          "the image holds " + std::to_string(n) + " pixels, not the " + std::to_string(count) +
              " its header announced");
      return DICOM_BAD;
    }
    // A native (uncompressed) Pixel Data element shorter than the image is a
    // truncated file; GDCM would pad it silently.
    const gdcm::DataSet &ds = reader.GetFile().GetDataSet();
    const gdcm::Tag pixel_data(0x7fe0, 0x0010);
    if (ds.FindDataElement(pixel_data)) {
      const gdcm::DataElement &de = ds.GetDataElement(pixel_data);
      const gdcm::ByteValue *bv = de.GetByteValue();
      size_t need = n * pf.GetPixelSize();
      if (!de.GetSequenceOfFragments() && (!bv || bv->GetLength() < need)) {
        say(message, size,
            "truncated (the pixel data hold " +
                std::to_string(bv ? (size_t)bv->GetLength() : (size_t)0) +
                " bytes, the image needs " + std::to_string(need) + ")");
        return DICOM_BAD;
      }
    }
    size_t bytes = image.GetBufferLength();
    std::vector<char> buffer(bytes);
    if (bytes == 0 || !image.GetBuffer(buffer.data())) {
      say(message, size,
          "cannot decode the pixel data (transfer syntax " + ts +
              "): an unsupported compression, or corrupt data");
      return DICOM_UNSUPPORTED;
    }
    double a = image.GetSlope(), b = image.GetIntercept();
    size_t need;
    switch (pf.GetScalarType()) {
#define CASE(code, T)                                                                              \
  case gdcm::PixelFormat::code:                                                                    \
    need = n * sizeof(T);                                                                          \
    if (bytes < need) break;                                                                       \
    convert<T>(buffer.data(), n, a, b, out);                                                       \
    return DICOM_OK;
      CASE(UINT8, uint8_t)
      CASE(INT8, int8_t)
      CASE(UINT16, uint16_t)
      CASE(INT16, int16_t)
      CASE(UINT32, uint32_t)
      CASE(INT32, int32_t)
      CASE(FLOAT32, float)
      CASE(FLOAT64, double)
#undef CASE
    default:
      say(message, size, std::string("pixel type ") + pf.GetScalarTypeAsString() + " is not read");
      return DICOM_UNSUPPORTED;
    }
    say(message, size, "the pixel data are shorter than the image");
    return DICOM_BAD;
  } catch (const std::exception &e) {
    say(message, size, std::string("cannot decode the pixel data (") + e.what() + ")");
  } catch (...) {
    say(message, size, "cannot decode the pixel data");
  }
  return DICOM_BAD;
}

} // namespace

extern "C" int dicom_read_header(const char *path, dicom_header *h, char *message, size_t size) {
  quiet();
  guard g;
  if (sigsetjmp(abort_jump, 1)) {
    say(message, size, "a malformed DICOM file (GDCM gave up on it)");
    return DICOM_BAD;
  }
  return read_header(path, h, message, size);
}

extern "C" int dicom_read_pixels(const char *path, float *out, size_t count, char *message,
                                 size_t size) {
  quiet();
  guard g;
  if (sigsetjmp(abort_jump, 1)) {
    say(message, size, "a malformed DICOM image (GDCM gave up on it)");
    return DICOM_BAD;
  }
  return read_pixels(path, out, count, message, size);
}

extern "C" int dicom_syntax_known(const char *uid) {
  return gdcm::TransferSyntax::GetTSType(uid) != gdcm::TransferSyntax::TS_END;
}
