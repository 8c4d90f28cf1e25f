// standard_output.h — the tool's standard output, every write checked.
//
// A table printed to a full disk (`occam predict ... > /dev/full`, a redirect into a full file
// system) or to a closed descriptor (`>&-`) is lost; the command must then fail, not exit 0.
// std::cout is routed through a buffer that writes file descriptor 1 itself and keeps the first
// error; main.cc flushes and closes it last and turns an error into exit code 3 with the path
// (as /proc/self/fd/1 names it) and the system's text:
//
//   occam: error: cannot write standard output (/dev/full): No space left on device
#pragma once

namespace occam::cli {

// Occupies the standard descriptors 0, 1 and 2 that the tool was started without (`>&-`) with
// /dev/null opened read-only, so that no file the command opens later takes their number (and a
// table meant for standard output never lands in it), and a write to them fails with EBADF.
// Then routes std::cout through the checked buffer. Call first thing in main.
void open_standard_output();

// Flushes and closes standard output; throws Error(kIo) naming it and the first error of any write
// to it since open_standard_output(). Call once, after the command ran.
void close_standard_output();

}  // namespace occam::cli
