// A plan key of two words (p2p=scatter|whole, vocab=parallel|replicated): the other word than the
// default is printed and round trips, the default prints nothing, and a third word is refused
// naming both.
#pragma once
#include <doctest/doctest.h>

#include <string>

#include "common/error.hpp"
#include "plan/plan.hpp"

namespace fabtrain::test {

// with: a plan text holding key=<the other word>; plain: the same with the default word; bad: a
// plan text with a third word, refused with `refusal`.
inline void check_two_word_key(const std::string& with, const std::string& key,
                               const std::string& plain, const std::string& bad,
                               const std::string& refusal) {
  const Plan p = parse_plan(with);
  CHECK(to_string(p).find(key) != std::string::npos);
  CHECK(parse_plan(to_string(p)) == p);
  CHECK(to_string(parse_plan(plain)).find(key.substr(0, key.find('='))) == std::string::npos);
  CHECK_THROWS_WITH_AS(parse_plan(bad), doctest::Contains(refusal.c_str()), Error);
}

}  // namespace fabtrain::test
