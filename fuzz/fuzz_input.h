// fuzz_input.h — what the fuzz targets share: the input bytes as a file a loader can open, and
// the one outcome besides success that a loader may have.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace occam::fuzz {

// The bytes as an anonymous in-memory file, opened by path (/proc/self/fd/N) like any other.
class InputFile {
 public:
  InputFile(const std::uint8_t* data, std::size_t size) {
    fd_ = ::memfd_create("occam-fuzz-input", MFD_CLOEXEC);
    if (fd_ < 0) std::abort();
    for (std::size_t written = 0; written < size;) {
      const ssize_t n = ::write(fd_, data + written, size - written);
      if (n <= 0) std::abort();
      written += static_cast<std::size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~InputFile() { ::close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// A property every accepted input must have; a violation is a finding, reported as a crash.
inline void require(bool holds) {
  if (!holds) std::abort();
}

}  // namespace occam::fuzz
