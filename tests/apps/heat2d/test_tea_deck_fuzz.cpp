// heat2d's implicit mode: a thousand mutated decks (seeded, so every run feeds the same ones) into
// the parser. Each must parse or throw tally::InputError, nothing else; one that parses must read back
// from deck_text to the same deck. Under the sanitizers (the CI's asan build) a crash, an overflow or
// an out-of-bounds read fails it; a hang trips CTest's timeout (the whole case takes well under a
// second).
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "implicit/deck.hpp"
#include "tally/common/error.hpp"

namespace {

using namespace tally::heat2d::implicit;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> split_lines(const std::string& t) {
  std::vector<std::string> v;
  std::stringstream ss(t);
  for (std::string l; std::getline(ss, l);) v.push_back(l);
  return v;
}

/// One random mutation of `text`.
std::string mutate(const std::string& text, std::mt19937_64& rng) {
  static const std::vector<std::string> words = {"state",
                                                 "1",
                                                 "2",
                                                 "7",
                                                 "1000",
                                                 "1001",
                                                 "0",
                                                 "-1",
                                                 "density",
                                                 "energy",
                                                 "geometry",
                                                 "rectangle",
                                                 "circle",
                                                 "point",
                                                 "xmin",
                                                 "xmax",
                                                 "ymin",
                                                 "ymax",
                                                 "radius",
                                                 "=",
                                                 ",",
                                                 "!",
                                                 "#",
                                                 "*tea",
                                                 "*endtea",
                                                 "tl_",
                                                 "use_cg",
                                                 "use_ppcg",
                                                 "eps",
                                                 "1e308",
                                                 "1e-320",
                                                 "-0",
                                                 "nan",
                                                 "inf",
                                                 "1d5",
                                                 "+",
                                                 "99999999999999999999",
                                                 "x_cells",
                                                 "y_cells",
                                                 "max_iters",
                                                 "preconditioner_type",
                                                 "jac_block",
                                                 "summary_frequency",
                                                 "\t",
                                                 "\r",
                                                 std::string(1, '\0'),
                                                 "\xff"};
  std::uniform_int_distribution<int> op(0, 8);
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n ? n - 1 : 0)(rng); };
  std::string s = text;
  switch (op(rng)) {
    case 0:  // delete a character
      if (!s.empty()) s.erase(pick(s.size()), 1);
      break;
    case 1:  // insert a random byte
      s.insert(pick(s.size() + 1), 1, static_cast<char>(pick(256)));
      break;
    case 2:  // insert a word
      s.insert(pick(s.size() + 1), " " + words[pick(words.size())] + " ");
      break;
    case 3: {  // replace a character with a word
      if (!s.empty()) s.replace(pick(s.size()), 1, words[pick(words.size())]);
      break;
    }
    case 4: {  // duplicate a line
      auto l = split_lines(s);
      if (!l.empty()) l.insert(l.begin() + static_cast<std::ptrdiff_t>(pick(l.size())), l[pick(l.size())]);
      s.clear();
      for (auto& x : l) s += x + "\n";
      break;
    }
    case 5: {  // delete a line
      auto l = split_lines(s);
      if (!l.empty()) l.erase(l.begin() + static_cast<std::ptrdiff_t>(pick(l.size())));
      s.clear();
      for (auto& x : l) s += x + "\n";
      break;
    }
    case 6: {  // swap two lines
      auto l = split_lines(s);
      if (l.size() > 1) std::swap(l[pick(l.size())], l[pick(l.size())]);
      s.clear();
      for (auto& x : l) s += x + "\n";
      break;
    }
    case 7:  // truncate
      s.resize(pick(s.size() + 1));
      break;
    default: {  // flip a digit
      for (int tries = 0; tries < 8 && !s.empty(); ++tries) {
        const std::size_t i = pick(s.size());
        if (s[i] >= '0' && s[i] <= '9') {
          s[i] = static_cast<char>('0' + pick(10));
          break;
        }
      }
    }
  }
  return s;
}

}  // namespace

TEST_CASE("tea deck fuzz: a thousand mutated decks parse or fail as bad input", "[tea][deck][fuzz]") {
  const std::vector<std::string> seeds = {
      read_file(TEA_DATA_DIR "/tea_bm_1.in"), read_file(TEA_DATA_DIR "/tea_512_20.in"),
      "*tea\nstate 1 density=1 energy=1\nstate 2 density=2 energy=3 geometry=circle xmin=50 ymin=50 radius=10\n"
      "state 3 density=2 energy=3 geometry=point xmin=5 ymin=5\ntl_use_ppcg\ntl_preconditioner_type "
      "jac_diag\n*endtea\n"};
  std::mt19937_64 rng(20261207);
  int parsed = 0, refused = 0;
  for (int k = 0; k < 1000; ++k) {
    std::string text = seeds[static_cast<std::size_t>(k) % seeds.size()];
    const int n = 1 + static_cast<int>(rng() % 6);  // one to six mutations
    for (int m = 0; m < n; ++m) text = mutate(text, rng);
    try {
      const Deck d = parse_deck(text, "fuzz.in");
      const Deck back = parse_deck(deck_text(d), "back.in");
      REQUIRE(deck_text(back) == deck_text(d));
      ++parsed;
    } catch (const tally::InputError&) {
      ++refused;
    }
  }
  // Both outcomes occur (a mutation set that never parses, or never fails, tests nothing).
  CHECK(parsed > 50);
  CHECK(refused > 50);
  CHECK(parsed + refused == 1000);
}
