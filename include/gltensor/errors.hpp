// gltensor error types. Every failure the library reports is one of these, derived from
// gltensor::Error (itself a std::runtime_error). Messages start with "gltensor::<op>: " and name
// the shapes, dtypes and the limit that was broken. After any of them the Device stays usable.
#pragma once
#include <stdexcept>
#include <string>

namespace gltensor {

/// Base class of every gltensor error.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// No usable EGL/GLES 3.1 device, a lost context, or a GL call that failed.
class DeviceError : public Error {
 public:
  using Error::Error;
};

/// A compute shader failed to compile or link. log() is the driver's info log, line() the
/// offending source line when the log names one.
class ShaderError : public Error {
 public:
  ShaderError(const std::string& what, std::string log, std::string line)
      : Error(what), log_(std::move(log)), line_(std::move(line)) {}
  const std::string& log() const { return log_; }
  const std::string& line() const { return line_; }

 private:
  std::string log_, line_;
};

/// The SSBO pool's memory limit was reached, or the driver returned GL_OUT_OF_MEMORY.
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

/// A device limit was exceeded (max SSBO block size, max dims, 32-bit element indices).
class LimitError : public Error {
 public:
  using Error::Error;
};

/// Shapes that do not match or cannot be broadcast, or an invalid view of a tensor.
class ShapeError : public Error {
 public:
  using Error::Error;
};

/// A dtype the op does not support, or a host buffer of the wrong element type.
class DTypeError : public Error {
 public:
  using Error::Error;
};

/// A dimension or index out of range.
class IndexError : public Error {
 public:
  using Error::Error;
};

/// An invalid argument value (negative size, zero step, bad option).
class ValueError : public Error {
 public:
  using Error::Error;
};

/// A model file that cannot be loaded or run (gltensor::Model): an unsupported op, attribute,
/// dtype or opset (raised at load), or inputs that do not match the graph (raised at run). The
/// message names the model file, the node (name, index, op type) and the attribute or input.
/// reason() is the same message without the file and node (e.g. "op Foo is not supported",
/// "attribute auto_pad=VALID is not supported"), for grouping.
class ModelError : public Error {
 public:
  using Error::Error;
  ModelError(const std::string& what, std::string reason) : Error(what), reason_(std::move(reason)) {}
  /// Empty when the error was built from a message alone.
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

/// Work that a Recording cannot capture (gltensor/recording.hpp): a read-back to the host, a host
/// upload into a buffer the capture already uses, a capture inside a capture. The message names
/// the op and what it did.
class CaptureError : public Error {
 public:
  using Error::Error;
};

/// A Device (or a tensor on it) used from a thread other than the one that opened it.
class ThreadError : public Error {
 public:
  using Error::Error;
};

}  // namespace gltensor
