// A temporary folder of this test process's own: temp_directory_path()/gltensor-tests-<pid>,
// made at first use and removed with its files when the process exits. Test programs that ctest
// runs at the same time (a program and its _check_loops copy, or two that save models of the same
// name) so never read each other's files.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace glt_test {

inline const std::filesystem::path& temp_dir() {
  struct Dir {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("gltensor-tests-" + std::to_string(::getpid()));
    Dir() { std::filesystem::create_directories(path); }
    ~Dir() {
      std::error_code ec;  // never throws at exit
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

}  // namespace glt_test
