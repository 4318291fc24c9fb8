// One op of an iteration's op list by name, for the tests that build lists with
// build_iteration_ops (a missing op fails the test case instead of reading past the list).
#pragma once
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "sim/model/ops.hpp"

namespace servesim::test {

inline const Op& find_op(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (name == op.name) return op;
  }
  FAIL("no op " << name);
  return ops.front();
}

}  // namespace servesim::test
