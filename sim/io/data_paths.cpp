// Bundled-data lookup; see data_paths.hpp.
#include "sim/io/data_paths.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"

namespace fs = std::filesystem;

namespace servesim {

namespace {
bool has_data(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir / "models", ec) && fs::is_directory(dir / "hwprofiles", ec);
}
}  // namespace

std::string data_dir() {
  if (const char* env = std::getenv("SERVESIM_DATA_DIR"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "servesim";
    if (has_data(installed)) return installed.string();
  }
  if (has_data(SERVESIM_INSTALL_DATA_DIR)) return SERVESIM_INSTALL_DATA_DIR;
  return SERVESIM_SOURCE_DATA_DIR;
}

std::string resolve_data_ref(const std::string& subdir, const std::string& ref, const std::string& file,
                             const std::string& key) {
  std::error_code ec;
  const bool looks_like_path = ref.find('/') != std::string::npos ||
                               (ref.size() > 5 && ref.compare(ref.size() - 5, 5, ".json") == 0);
  if (looks_like_path || fs::is_regular_file(ref, ec)) {
    if (fs::is_directory(ref, ec)) throw InputError(file, key, "is a directory, not a JSON file: " + ref);
    if (fs::exists(ref, ec) && !fs::is_regular_file(ref, ec)) throw InputError(file, key, "not a regular file: " + ref);
    if (!fs::is_regular_file(ref, ec)) throw InputError(file, key, "file not found: " + ref);
    return ref;
  }
  const fs::path bundled = fs::path(data_dir()) / subdir / (ref + ".json");
  if (fs::is_regular_file(bundled, ec)) return bundled.string();
  // "unknown GPU 'h100'; did you mean h100-pcie or h100-sxm?", else the whole list.
  const std::vector<std::string> names = bundled_names(subdir);
  const std::string what = subdir == "hwprofiles" ? "GPU" : subdir == "models" ? "model" : subdir == "scenarios/engines" ? "engine" : "scenario";
  std::string hint = did_you_mean(ref, names);
  if (hint.empty()) {
    hint = " (bundled: ";
    for (std::size_t i = 0; i < names.size(); ++i) hint += (i ? ", " : "") + names[i];
    hint += ")";
  }
  throw InputError(file, key, "unknown " + what + " '" + ref + "'" + hint);
}

std::string portable_path(const std::string& path) {
  if (path.empty() || path.front() != '/') return path;
  std::error_code ec;
  const fs::path abs = fs::weakly_canonical(path, ec);
  if (ec) return path;
  for (const fs::path& root : {fs::weakly_canonical(data_dir(), ec), fs::current_path(ec)}) {
    if (root.empty()) continue;
    const fs::path rel = abs.lexically_relative(root);
    if (!rel.empty() && *rel.begin() != "..") return rel.string();
  }
  return path;
}

std::vector<std::string> bundled_names(const std::string& subdir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(data_dir()) / subdir, ec)) {
    // hwprofiles/prices.json is the price list, not a profile.
    if (entry.path().extension() == ".json" && !(subdir == "hwprofiles" && entry.path().stem() == "prices")) {
      names.push_back(entry.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace servesim
