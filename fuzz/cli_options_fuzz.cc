// The command-line options: any list of arguments is either accepted — its ModelSpec and options
// built and validated as the command would before reading a file — or refused as a usage error
// (exit code 1) or an invalid argument (exit code 2), with a message. Nothing else may escape:
// no other exception, no crash, no unbounded allocation or time (nothing is fitted or read).
//
// The input is the argument list, one argument per line ("fit\n--data\nx.csv\n--hidden\n3\n").
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "command_line.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::size_t kMaxArguments = 64;
  std::vector<std::string> args(1);
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == '\n') {
      if (args.size() == kMaxArguments) break;
      args.emplace_back();
    } else {
      args.back() += static_cast<char>(data[i]);
    }
  }
  if (!args.empty() && args.back().empty()) args.pop_back();
  std::string message;
  const int code = occam::cli::check_command_line(args, &message);  // anything thrown is a finding
  occam::fuzz::require(code == 0 || code == 1 || code == 2);
  occam::fuzz::require(code == 0 || message.rfind("occam: error: ", 0) == 0);
  return 0;
}
