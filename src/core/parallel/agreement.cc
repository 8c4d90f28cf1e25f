// agreement.cc — text and failures exchanged through a Communicator's all-gather of doubles.
//
// A string travels as its length followed by its bytes, one double each (every byte value is
// exact in a double); a process's strings as their count followed by each string.

#include "core/parallel/agreement.h"

#include <cstddef>

#include "occam/status.h"

namespace occam::internal {

std::vector<std::string> allgather_strings(const Communicator& processes, const std::vector<std::string>& mine) {
  std::vector<double> packed{static_cast<double>(mine.size())};
  for (const std::string& s : mine) {
    packed.push_back(static_cast<double>(s.size()));
    for (const char c : s) packed.push_back(static_cast<double>(static_cast<unsigned char>(c)));
  }
  const std::vector<double> all = processes.allgather(packed);
  std::vector<std::string> strings;
  std::size_t at = 0;
  const auto next = [&] {
    if (at >= all.size()) throw Error(ErrorKind::kIo, "allgather_strings: a process sent a truncated message");
    return static_cast<std::size_t>(all[at++]);
  };
  for (int process = 0; process < processes.size(); ++process) {
    const std::size_t count = next();
    for (std::size_t k = 0; k < count; ++k) {
      std::string s(next(), '\0');
      for (char& c : s) c = static_cast<char>(static_cast<unsigned char>(next()));
      strings.push_back(std::move(s));
    }
  }
  return strings;
}

void agree_on_failure(const Communicator& processes, const std::exception_ptr& failure) {
  // Each process says whether it failed, and how: kind and message.
  std::string mine = "ok";
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const Error& e) {
      mine = std::to_string(static_cast<int>(e.kind())) + "\n" + e.what();
    } catch (const std::exception& e) {
      mine = std::to_string(static_cast<int>(ErrorKind::kIo)) + "\n" + e.what();
    } catch (...) {
      mine = std::to_string(static_cast<int>(ErrorKind::kIo)) + "\nan unknown exception";
    }
  }
  const std::vector<std::string> all = allgather_strings(processes, {mine});
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r] == "ok") continue;
    const std::size_t split = all[r].find('\n');
    const auto kind = static_cast<ErrorKind>(std::stoi(all[r].substr(0, split)));
    throw CollectiveError(kind, all[r].substr(split + 1) + " (on process " + std::to_string(r) + ")");
  }
}

}  // namespace occam::internal
