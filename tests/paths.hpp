// Where the tests find the checkout and the binary. The paths are compiled into paths.cpp alone
// (tests/CMakeLists.txt), so the other test objects do not depend on the checkout's location.
#pragma once

namespace servesim::test {

const char* test_data_dir();    // the checkout's tests/ folder
const char* reference_dir();    // the checkout's data/ folder
const char* servesim_binary();  // the built servesim executable

}  // namespace servesim::test
