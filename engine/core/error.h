// Typed errors of the engine. Every message names the file or input, the item at fault and,
// where it helps, what is supported, so a person can act on it.
#pragma once

#include <stdexcept>
#include <string>

namespace servescope {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A GGUF file that is malformed, truncated or uses something ServeScope does not load.
class GgufError : public Error {
 public:
  enum class Kind {
    kIo,                     // cannot open / map / write
    kBadMagic,               // not a GGUF file
    kUnsupportedVersion,     // version other than 2 or 3
    kTruncated,              // ends before a header, metadata or tensor info item is complete
    kMalformed,              // a value that cannot be right (bad type id, absurd count, ...)
    kTensorOutOfBounds,      // tensor data lies (partly) outside the file
    kUnsupportedTensorType,  // e.g. Q5_K
  };
  GgufError(Kind kind, const std::string& message) : Error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// A model whose metadata or tensors do not describe a model ServeScope can run.
class ModelError : public Error {
 public:
  enum class Kind {
    kUnsupportedArchitecture,
    kMissingMetadata,
    kMissingTensor,
    kBadShape,
    kBadTokenizer,
  };
  ModelError(Kind kind, const std::string& message) : Error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// Input from the user that cannot be processed: invalid UTF-8, a token id outside the
// vocabulary, a prompt longer than the context.
class InputError : public Error {
 public:
  using Error::Error;
};

// A compute backend that cannot run here (no device, not built, ...).
class BackendError : public Error {
 public:
  using Error::Error;
};

}  // namespace servescope
