#include "standard_output.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <streambuf>
#include <string>

#include "occam/status.h"

namespace occam::cli {
namespace {

// std::cout's buffer: 64 kB written to descriptor 1 with write(2), retried on EINTR and short
// writes. The first failure is kept (its errno) and later output is dropped: the command goes on to
// its end, and main.cc reports the failure then.
class CheckedBuffer final : public std::streambuf {
 public:
  CheckedBuffer() : terminal_(::isatty(STDOUT_FILENO) == 1) { setp(buffer_.data(), buffer_.data() + buffer_.size()); }

  // 0, or the errno of the first write that failed.
  int error() const { return error_; }

  // Writes what is buffered; false once any write failed.
  bool flush() {
    const char* data = pbase();
    std::size_t left = static_cast<std::size_t>(pptr() - pbase());
    while (left > 0 && error_ == 0) {
      const ssize_t written = ::write(STDOUT_FILENO, data, left);
      if (written < 0) {
        if (errno == EINTR) continue;
        error_ = errno;
      } else {
        data += written;
        left -= static_cast<std::size_t>(written);
      }
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return error_ == 0;
  }

 protected:
  int_type overflow(int_type c) override {
    if (!flush()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }

  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::streamsize done = 0;
    while (done < n) {
      if (pptr() == epptr() && !flush()) return done;
      const std::streamsize room = std::min<std::streamsize>(epptr() - pptr(), n - done);
      std::memcpy(pptr(), s + done, static_cast<std::size_t>(room));
      pbump(static_cast<int>(room));
      done += room;
    }
    // A terminal sees each line as it is printed, as with stdio's line buffering.
    if (terminal_ && std::memchr(s, '\n', static_cast<std::size_t>(n)) != nullptr && !flush()) return 0;
    return done;
  }

  int sync() override { return flush() ? 0 : -1; }

 private:
  std::array<char, 1 << 16> buffer_{};
  bool terminal_;
  int error_ = 0;
};

CheckedBuffer* g_buffer = nullptr;
bool g_started_closed = false;  // descriptor 1 was closed when the tool started (`>&-`)

// What descriptor 1 is, for the message: a file's path, /dev/full, pipe:[1234].
std::string stdout_name() {
  if (g_started_closed) return " (it was closed)";
  char target[PATH_MAX + 1] = {};
  const ssize_t n = ::readlink("/proc/self/fd/1", target, PATH_MAX);
  return n > 0 ? " (" + std::string(target, static_cast<std::size_t>(n)) + ")" : std::string();
}

[[noreturn]] void write_failed(int error) {
  throw Error(ErrorKind::kIo, "cannot write standard output" + stdout_name() + ": " + std::strerror(error));
}

}  // namespace

void open_standard_output() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
      // open() returns the lowest free descriptor: this one, as the lower ones are open.
      const int null = ::open("/dev/null", O_RDONLY);
      if (null >= 0 && null != fd) ::close(null);
      if (fd == STDOUT_FILENO) g_started_closed = true;
    }
  }
  static CheckedBuffer buffer;
  g_buffer = &buffer;
  std::cout.rdbuf(&buffer);
}

void close_standard_output() {
  if (g_buffer == nullptr) return;
  std::cout.flush();
  const bool flushed = g_buffer->flush();
  const int error = g_buffer->error();
  std::cout.rdbuf(nullptr);  // nothing more is written through it
  g_buffer = nullptr;
  if (!flushed) write_failed(error);
  // A file system that reports a full disk only when the file is closed (NFS) says so here.
  if (::close(STDOUT_FILENO) != 0 && errno != EINTR && errno != EBADF) write_failed(errno);
}

}  // namespace occam::cli
