// The validation bounds, all in one data file (data/validation/bounds.json): the tables `servesim
// validate` checks per (group, engine, phase) and the scalar figures the validation tests bound,
// each with why it is what it is and, where it changed, its earlier values and why they changed.
// A bound is set before the result it checks and only tightens; tests/validation/
// test_bounds_file.cpp fails when a bound is looser than an earlier value without a recorded reason.
#pragma once
#include <string>
#include <vector>

namespace servesim {

// A stated bound on one (group, engine, phase): the median and worst |error| allowed.
struct ValidationBound {
  std::string group, engine, phase;
  double median = 0.0, worst = 0.0;
};

// data/validation/bounds.json in the bundled data folder.
std::string default_bounds_file();

// The table named `set` ("published", "independent/h200-sxm", ...); InputError naming the file
// and key for a set the file does not hold or a malformed entry. Read once per process.
std::vector<ValidationBound> bound_table(const std::string& set);

// The scalar bound named `id` (e.g. "vllm-runs/median"); InputError naming the file when absent.
double validation_bound(const std::string& id);

}  // namespace servesim
