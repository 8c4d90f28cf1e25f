#include "message_text.h"

#include <algorithm>
#include <iterator>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <utility>

namespace occam::cli {
namespace {

// The symbols occam's messages use, in ASCII; sequences before their parts ("⁻¹" before "⁻"). A
// combining mark follows its letter: "R̂" becomes "R-hat".
constexpr std::pair<std::string_view, std::string_view> kAscii[] = {
    {"⁻¹", "^-1"},  {"⁻²", "^-2"},  {"⁻ᵀ", "^-T"},   {"\u0302", "-hat"}, {"\u0303", "~"}, {"≥", ">="},  {"≤", "<="},
    {"≠", "!="},    {"≈", "~"},     {"≫", ">>"},     {"≪", "<<"},        {"±", "+/-"},    {"×", "x"},   {"·", "*"},
    {"−", "-"},     {"–", "-"},     {"—", "--"},     {"…", "..."},       {"→", "->"},     {"←", "<-"},  {"∞", "inf"},
    {"√", "sqrt"},  {"∈", "in"},    {"‖", "||"},     {"∇", "grad "},     {"∂", "d"},      {"Σ", "sum"}, {"½", "1/2"},
    {"²", "^2"},    {"³", "^3"},    {"ᵀ", "^T"},     {"⁶", "^6"},        {"⁻", "^-"},     {"₀", "0"},   {"₁", "1"},
    {"₂", "2"},     {"α", "alpha"}, {"β", "beta"},   {"γ", "gamma"},     {"δ", "delta"},  {"ε", "eps"}, {"η", "eta"},
    {"θ", "theta"}, {"κ", "kappa"}, {"λ", "lambda"}, {"μ", "mu"},        {"π", "pi"},     {"ρ", "rho"}, {"σ", "sigma"},
    {"τ", "tau"},   {"φ", "phi"},   {"ω", "omega"},  {"Λ", "Lambda"},    {"Δ", "Delta"},  {"Φ", "Phi"}, {"ℓ", "l"},
    {"“", "\""},    {"”", "\""},    {"‘", "'"},      {"’", "'"},         {"\u00a0", " "},
};

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The message in ASCII: the symbols above spelt out, any other non-ASCII character as '?'.
std::string ascii(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      out += text[i++];
      continue;
    }
    const auto known = std::find_if(std::begin(kAscii), std::end(kAscii),
                                    [&](const auto& p) { return text.substr(i).starts_with(p.first); });
    if (known != std::end(kAscii)) {
      out += known->second;
      i += known->first.size();
      continue;
    }
    out += '?';
    for (++i; i < text.size() && continuation(text[i]); ++i) {
    }
  }
  return out;
}

// `word` cut to its first and last few characters, at character boundaries, with its length.
std::string shortened(std::string_view word) {
  constexpr std::size_t kHead = 40, kTail = 12;
  std::size_t head = kHead, tail = word.size() - kTail;
  while (head > 0 && continuation(word[head])) --head;
  while (tail < word.size() && continuation(word[tail])) ++tail;
  const auto characters = std::count_if(word.begin(), word.end(), [](char c) { return !continuation(c); });
  return std::string(word.substr(0, head)) + "..." + std::string(word.substr(tail)) + " (" +
         std::to_string(characters) + " characters)";
}

}  // namespace

bool utf8_locale() {
  // The first of these that is set and not empty decides, as setlocale(LC_CTYPE, "") would.
  const char* locale = nullptr;
  for (const char* name : {"LC_ALL", "LC_CTYPE", "LANG"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') {
      locale = value;
      break;
    }
  }
  if (locale == nullptr) return false;
  std::string lower(locale);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("utf-8") != std::string::npos || lower.find("utf8") != std::string::npos;
}

std::string printable_message(std::string_view message, bool utf8) {
  std::string out;
  out.reserve(std::min(message.size(), std::size_t{4096}));
  std::size_t start = 0;
  while (start < message.size()) {
    std::size_t end = message.find_first_of(" \n\t", start);
    if (end == std::string_view::npos) end = message.size();
    const std::string_view word = message.substr(start, end - start);
    out += word.size() > kLongWord ? shortened(word) : std::string(word);
    if (end < message.size()) out += message[end];
    start = end + 1;
  }
  return utf8 ? out : ascii(out);
}

void print_message(std::string_view message) { std::cerr << printable_message(message, utf8_locale()) << std::flush; }

}  // namespace occam::cli
