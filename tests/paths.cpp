#include "paths.hpp"

namespace servesim::test {

const char* test_data_dir() { return SERVESIM_TEST_DATA_DIR; }
const char* reference_dir() { return SERVESIM_REFERENCE_DIR; }
const char* servesim_binary() { return SERVESIM_BINARY; }

}  // namespace servesim::test
