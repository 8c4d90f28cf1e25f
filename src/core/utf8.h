// utf8.h — strict UTF-8 validation (internal).
//
// Names read from a data file (column names, class labels) end up in model files and reports,
// which are JSON and must be UTF-8; a name that is not is refused where it is read, with its file,
// line and column, rather than when the finished fit is written.
#pragma once

#include <cstddef>
#include <string_view>

namespace occam::internal {

// True when `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above
// U+10FFFF). Otherwise *bad receives the offset of the first byte of the first bad sequence.
inline bool valid_utf8(std::string_view text, std::size_t* bad) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  std::size_t i = 0;
  while (i < text.size()) {
    const unsigned char lead = byte(i);
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
    if (lead < 0x80) {
      length = 1;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;   // overlong
      if (lead == 0xED) high = 0x9F;  // surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;   // overlong
      if (lead == 0xF4) high = 0x8F;  // above U+10FFFF
    }
    bool ok = length > 0 && i + length <= text.size();
    for (std::size_t k = 1; ok && k < length; ++k) {
      const unsigned char c = byte(i + k);
      ok = k == 1 ? c >= low && c <= high : c >= 0x80 && c <= 0xBF;
    }
    if (!ok) {
      *bad = i;
      return false;
    }
    i += length;
  }
  return true;
}

}  // namespace occam::internal
