// servesim entry point: hands the arguments to the subcommand dispatcher.
#include <string>
#include <vector>

#include "sim/cli/commands.hpp"

int main(int argc, char** argv) {
  return servesim::cli::dispatch(std::vector<std::string>(argv + 1, argv + argc));
}
