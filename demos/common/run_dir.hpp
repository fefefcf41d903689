// Where a run writes its files, so that no run replaces an earlier run's output silently.
#pragma once
#include <string>
#include <vector>

namespace demo {

/// Without an explicit folder (`explicit_dir` empty): creates and returns a new folder
/// `base/<name>-<N>`, N one more than the largest already there (claimed with create_directory, so
/// two runs started together get different folders). With one: creates it if needed and returns
/// it, but throws std::runtime_error naming the file and the ways out if it already holds one of
/// `files` and `overwrite` is false. Throws std::runtime_error if the folder cannot be created.
std::string claim_output_dir(const std::string& explicit_dir, const std::string& base, const std::string& name,
                             const std::vector<std::string>& files, bool overwrite);

}  // namespace demo
