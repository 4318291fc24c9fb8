// Resolves bundled data by name (models/llama-3-8b.json, hwprofiles/h100-sxm.json) from the
// install or build tree, never the current directory, or takes an explicit path.
#pragma once
#include <string>
#include <vector>

namespace servesim {

// Directory holding models/, hwprofiles/, scenarios/: $SERVESIM_DATA_DIR, else the install
// tree next to the executable, else the source tree the binary was built from.
std::string data_dir();

// A reference that names an existing file (or contains '/' or ends in .json) is a path;
// otherwise it is a bundled name looked up as <data_dir>/<subdir>/<name>.json.
// Returns the path; InputError naming `file`/`key` when nothing matches.
std::string resolve_data_ref(const std::string& subdir, const std::string& ref, const std::string& file,
                             const std::string& key);

// `path` as a file that is committed should record it (provenance sources and commands): an
// absolute path inside the data directory or the working directory becomes relative to it
// (hwprofiles/h200-sxm.json), so no profile names the machine that wrote it; others are unchanged.
std::string portable_path(const std::string& path);

// Names of the bundled files in a subdirectory (without .json), sorted.
std::vector<std::string> bundled_names(const std::string& subdir);

}  // namespace servesim
