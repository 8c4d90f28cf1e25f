// message_text.h — the text of a message as the tool prints it on stderr.
//
// Messages quote what the user gave (an option's value, a cell, a name from a file), which can be
// a 100,000-digit number or a 100 MB name, and they use a few symbols (≥, α, β, ×, W²) that a
// terminal in a non-UTF-8 locale shows as "???". printable_message() shortens each overlong word
// to its start and end with its length, and, when the locale is not UTF-8, writes those symbols in
// ASCII (">=", "alpha", "beta", "x", "W^2"), and a combining circumflex or tilde after its letter
// ("R̂" as "R-hat", "x̃" as "x~"); any other non-ASCII character becomes "?".
//
//   std::cerr << occam::cli::printable_message("occam: error: " + what, occam::cli::utf8_locale());
#pragma once

#include <string>
#include <string_view>

namespace occam::cli {

// Whether the locale the environment selects for characters (LC_ALL, else LC_CTYPE, else LANG,
// as the C library reads them) is UTF-8. Unset (the C locale) is not.
bool utf8_locale();

// The message with every word (a run without spaces) longer than kLongWord bytes shortened to
// "<start>...<end> (N characters)", and, unless `utf8`, in ASCII.
inline constexpr std::size_t kLongWord = 200;
std::string printable_message(std::string_view message, bool utf8);

// Writes printable_message(message, utf8_locale()) to stderr: every error and warning the tool prints.
void print_message(std::string_view message);

}  // namespace occam::cli
