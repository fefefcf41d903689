// The probed loop limit's answer file (loop_probe.cpp; DeviceImpl::probe_loop_limit measures it).
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "gltensor/device.hpp"

namespace gltensor::detail {

/// What an answer is kept under: the renderer, GL version and vendor strings (a driver update
/// changes the version string, so it is probed again).
std::string loop_limit_key(const Capabilities& c);
/// <dir>/loop-limit-<hash of key>.txt ("" where dir is ""): the limit (0 = none) on its first
/// line, the key on its second.
std::filesystem::path loop_limit_file(const std::filesystem::path& dir, const std::string& key);
/// The limit kept in `file` for `key`; nullopt where the file is missing, unreadable or names
/// another key.
std::optional<std::uint64_t> read_loop_limit(const std::filesystem::path& file, const std::string& key);
/// Keeps `limit` for `key` (written to a temporary file, then renamed: processes that open
/// devices at once never read half an answer); nothing where `file` is "" or not writable.
void write_loop_limit(const std::filesystem::path& file, const std::string& key, std::uint64_t limit);

}  // namespace gltensor::detail
