//===- RunCommand.cpp - `attnc run`: JIT a block on .npy files ------------===//
//
// Reads each input/param from --input NAME=FILE.npy (an i32 argument also
// takes an int64 file whose values fit) or fills it with --random-inputs,
// binds and prepares the params once, runs the kernel --repeat times,
// prints the median time per call and writes every output to
// DIR/NAME.npy.
//
//===----------------------------------------------------------------------===//

#include "RunCommand.h"

#include "attnc/Runtime/Npy.h"
#include "attnc/Runtime/Runtime.h"

#include "attn/Target/FloatConversions.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <unistd.h>

using namespace attnc;

namespace {

enum ExitCode { kSuccess = 0, kUserError = 1, kInternalError = 2 };

llvm::raw_ostream &error() {
  return llvm::WithColor::error(llvm::errs(), "attnc");
}

/// `values` as an array of the float type `type` (bf16/f16 rounded to
/// nearest even).
NpyArray floatArray(ElementType type, std::vector<int64_t> shape,
                    llvm::ArrayRef<float> values) {
  if (type == ElementType::F32)
    return NpyArray::fromF32(std::move(shape), values);
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    bits[i] = mlir::attn::narrowTo(type, values[i]);
  return NpyArray::fromBits16(*npyDtypeOf(type), std::move(shape), bits);
}

/// An argument's values as an npy array: read from FILE, checked against
/// the signature.
llvm::Expected<NpyArray> readArgument(const KernelArgument &argument,
                                      llvm::StringRef file) {
  // At most a header and the argument's data (8 bytes an element: an i32
  // argument also takes an int64 file).
  constexpr uint64_t kMaxHeaderBytes = uint64_t(1) << 20;
  llvm::Expected<NpyArray> array =
      readNpy(file, kMaxHeaderBytes + 8 * uint64_t(argument.numElements()));
  // readNpy's message names the file; say which argument it was for.
  if (!array)
    return llvm::createStringError(
        (roleName(argument.role) + " '" + argument.name + "': ").str() +
        llvm::toString(array.takeError()));
  std::string what =
      (roleName(argument.role) + " '" + argument.name + "' (" + file + ")")
          .str();
  if (argument.type == ElementType::I32 && array->dtype == NpyDtype::I64) {
    array = narrowToI32(*array, file);
    if (!array)
      return array.takeError();
  }
  bool lowPrecision =
      argument.type == ElementType::BF16 || argument.type == ElementType::F16;
  // bf16 bit patterns saved as uint16 are bf16.
  if (argument.type == ElementType::BF16 && array->dtype == NpyDtype::U16)
    array->dtype = NpyDtype::BF16;
  // An f32 file for a bf16/f16 argument is rounded to it (docs/spec.md §4,
  // v3), and said once.
  if (lowPrecision && array->dtype == NpyDtype::F32) {
    static bool said = false;
    if (!said) {
      llvm::WithColor::note(llvm::errs(), "attnc")
          << what << ": f32 values rounded to "
          << mlir::attn::nameOf(argument.type)
          << " (to nearest even); later such files are rounded too\n";
      said = true;
    }
    array = floatArray(argument.type, array->shape, array->toF32());
  }
  std::optional<NpyDtype> expected = npyDtypeOf(argument.type);
  if (!expected)
    return llvm::createStringError(what + ": .npy files of " +
                                   mlir::attn::nameOf(argument.type) +
                                   " are not supported yet");
  if (array->dtype != *expected)
    return llvm::createStringError(
        what + ": expected dtype '" + npyDtypeDescr(*expected) + "'" +
        (argument.type == ElementType::I32    ? " (or '<i8')"
         : argument.type == ElementType::BF16 ? " (ml_dtypes' bfloat16; or "
                                                "'<u2' bit patterns, or '<f4')"
         : argument.type == ElementType::F16  ? " (or '<f4')"
                                              : "") +
        ", got '" + npyDtypeDescr(array->dtype) + "'" +
        (array->dtype == NpyDtype::F64 && mlir::attn::isFloat(argument.type)
             ? " (save it as float32: np.save(path, a.astype(np.float32)))"
             : ""));
  if (array->shape != argument.shape)
    return llvm::createStringError(
        what + ": expected shape " + formatNpyShape(argument.shape) + " (" +
        argument.typeString() + "), got " + formatNpyShape(array->shape));
  return array;
}

/// --random-inputs: inputs and 1-D params uniform in [-1, 1); a weight
/// (a param of rank 2 or more) uniform in +-1/sqrt(its last dim), as
/// torch.nn.Linear initializes its weight[out, in], so that outputs stay
/// near the inputs' scale instead of growing with every projection;
/// lengths uniform in [0, keys], ids uniform in [0, vocab).
NpyArray randomArgument(const KernelSignature &signature, unsigned index,
                        std::mt19937_64 &rng) {
  const KernelArgument &argument = signature.arguments[index];
  size_t count = static_cast<size_t>(argument.numElements());
  if (mlir::attn::isFloat(argument.type)) {
    float bound = 1.0f;
    if (argument.role == ArgumentRole::Param && argument.shape.size() >= 2 &&
        argument.shape.back() > 0)
      bound = 1.0f / std::sqrt(static_cast<float>(argument.shape.back()));
    std::uniform_real_distribution<float> uniform(-bound, bound);
    std::vector<float> values(count);
    for (float &v : values)
      v = uniform(rng);
    return floatArray(argument.type, argument.shape, values);
  }
  int64_t low = 0, high = 1;
  for (const ValidLens &lens : signature.validLens)
    if (lens.argument == index)
      high = lens.keys;
  for (const EmbeddingIds &ids : signature.embeddingIds)
    if (ids.argument == index)
      high = ids.vocabSize - 1;
  std::uniform_int_distribution<int64_t> uniform(low, high);
  std::vector<int32_t> values(count);
  for (int32_t &v : values)
    v = static_cast<int32_t>(uniform(rng));
  return NpyArray::fromI32(argument.shape, values);
}

/// `[0.1234, -0.5678, ...]`: the first few values of an output.
std::string preview(const std::vector<float> &values) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  size_t shown = std::min<size_t>(values.size(), 6);
  for (size_t i = 0; i < shown; ++i)
    os << (i ? ", " : "") << llvm::format("%.6g", values[i]);
  if (shown < values.size())
    os << ", ... (" << values.size() << " values)";
  os << "]";
  return text;
}

/// Writes `array` to DIR/NAME.npy (creating DIR); reports and returns false
/// on failure.
bool writeArray(llvm::StringRef dir, llvm::StringRef name,
                const NpyArray &array, llvm::SmallString<256> &path) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    error() << "cannot create the directory '" << dir << "': " << ec.message()
            << "\n";
    return false;
  }
  path = dir;
  llvm::sys::path::append(path, name + ".npy");
  if (llvm::Error failure = writeNpy(path, array)) {
    error() << llvm::toString(std::move(failure)) << "\n";
    return false;
  }
  return true;
}

/// --input-dir: reads DIR/NAME.npy for every input and param that has no
/// value yet, and warns about .npy files that name no argument (a typo
/// would otherwise be filled by --random-inputs unnoticed).
bool readInputDir(llvm::StringRef dir, const KernelSignature &signature,
                  std::vector<std::optional<NpyArray>> &values) {
  if (!llvm::sys::fs::is_directory(dir)) {
    error() << "--input-dir " << dir << ": not a directory\n";
    return false;
  }
  const std::vector<KernelArgument> &arguments = signature.arguments;
  for (unsigned i = 0; i < arguments.size(); ++i) {
    if (arguments[i].role == ArgumentRole::Output || values[i])
      continue;
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, arguments[i].name + ".npy");
    if (!llvm::sys::fs::exists(path))
      continue;
    auto array = readArgument(arguments[i], path);
    if (!array) {
      error() << llvm::toString(array.takeError()) << "\n";
      return false;
    }
    values[i] = std::move(*array);
  }
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef file = llvm::sys::path::filename(it->path());
    if (!file.consume_back(".npy"))
      continue;
    bool known = llvm::any_of(arguments, [&](const KernelArgument &a) {
      return a.role != ArgumentRole::Output && a.name == file;
    });
    if (known)
      continue;
    // A near miss (names are case-sensitive: x.npy for input X) says so.
    std::string hint;
    for (const KernelArgument &a : arguments)
      if (a.role != ArgumentRole::Output &&
          (file.equals_insensitive(a.name) ||
           file.edit_distance(a.name, /*AllowReplacements=*/true,
                              /*MaxEditDistance=*/2) <= 1))
        hint = " (did you mean " + a.name + ".npy? names are case-sensitive)";
    llvm::WithColor::warning(llvm::errs(), "attnc")
        << it->path() << " names no input, param or state of block '"
        << signature.name << "'" << hint << "; ignored\n";
  }
  if (ec) {
    error() << "--input-dir " << dir << ": " << ec.message() << "\n";
    return false;
  }
  return true;
}

/// The threads a run uses: --threads, else ATTNC_NUM_THREADS, else the
/// runtime's default (the CPUs this process may use, its cgroup quota
/// included).
unsigned defaultThreads(unsigned requested) {
  if (requested)
    return requested;
  if (const char *text = std::getenv("ATTNC_NUM_THREADS")) {
    unsigned value = 0;
    if (!llvm::StringRef(text).getAsInteger(10, value) && value > 0)
      return value;
    llvm::WithColor::warning(llvm::errs(), "attnc")
        << "ATTNC_NUM_THREADS='" << text
        << "' is not a positive number; ignored\n";
  }
  return Runtime::defaultNumThreads();
}

} // namespace

int attnc::runCommand(const RunOptions &options) {
  auto kernel = Runtime::global().compile(options.specText, options.specPath,
                                          options.block, options.compile);
  if (!kernel) {
    // The front end accepted the spec: a failure here is attnc's own.
    llvm::errs() << "attnc: internal error: "
                 << llvm::toString(kernel.takeError()) << "\n";
    return kInternalError;
  }
  const KernelSignature &signature = (*kernel)->signature();
  const std::vector<KernelArgument> &arguments = signature.arguments;
  // The buffers of a legal spec may not fit this machine (2^40 elements are
  // legal): say so instead of dying in the allocator.
  double bytes = 4.0 * double(signature.packedElements);
  for (const KernelArgument &argument : arguments)
    bytes += double(mlir::attn::bytesOf(argument.type)) *
             double(argument.numElements());
  double memory =
      double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  if (memory > 0 && bytes > memory) {
    error() << "block '" << signature.name << "' needs "
            << llvm::format("%.1f", bytes / double(1 << 30))
            << " GiB for its arguments and packed params, more than this "
               "machine's "
            << llvm::format("%.1f", memory / double(1 << 30))
            << " GiB of memory\n";
    return kUserError;
  }

  std::vector<std::optional<NpyArray>> values(arguments.size());
  for (const std::string &input : options.inputs) {
    auto [name, file] = llvm::StringRef(input).split('=');
    auto index = (*kernel)->argumentIndex(name);
    if (!index) {
      llvm::consumeError(index.takeError());
      std::vector<std::string> names;
      for (const KernelArgument &a : arguments)
        if (a.role != ArgumentRole::Output)
          names.push_back(a.name);
      error() << "--input " << input << ": block '" << signature.name
              << "' has no input, param or state named '" << name
              << "'; its inputs, params and states are "
              << llvm::join(names, ", ") << "\n";
      return kUserError;
    }
    if (arguments[*index].role == ArgumentRole::Output) {
      error() << "--input " << input << ": '" << name
              << "' is an output of block '" << signature.name
              << "', not an input\n";
      return kUserError;
    }
    if (values[*index]) {
      error() << "--input " << name << "=... is given more than once\n";
      return kUserError;
    }
    auto array = readArgument(arguments[*index], file);
    if (!array) {
      error() << llvm::toString(array.takeError()) << "\n";
      return kUserError;
    }
    values[*index] = std::move(*array);
  }

  if (!options.inputDir.empty() &&
      !readInputDir(options.inputDir, signature, values))
    return kUserError;

  std::mt19937_64 rng(options.seed);
  for (unsigned i = 0; i < arguments.size(); ++i) {
    const KernelArgument &a = arguments[i];
    // An output, or a state not given (--random-inputs: an empty cache),
    // starts as zeros of its dtype (every supported type has one).
    bool startsAsZeros =
        a.role == ArgumentRole::Output ||
        (a.role == ArgumentRole::State && !values[i] && options.randomInputs);
    if (startsAsZeros) {
      NpyArray zeros;
      zeros.dtype = *npyDtypeOf(a.type);
      zeros.shape = a.shape;
      zeros.data.assign(a.numElements() * npyDtypeSize(zeros.dtype), 0);
      values[i] = std::move(zeros);
      continue;
    }
    if (values[i])
      continue;
    if (!options.randomInputs) {
      error() << "missing " << roleName(a.role) << " '" << a.name << "' ("
              << a.typeString() << "): pass --input " << a.name
              << "=FILE.npy, --input-dir DIR with " << a.name
              << ".npy in it, or --random-inputs\n";
      return kUserError;
    }
    values[i] = randomArgument(signature, i, rng);
  }

  if (!options.saveInputsDir.empty())
    for (unsigned i = 0; i < arguments.size(); ++i) {
      llvm::SmallString<256> path;
      if (arguments[i].role != ArgumentRole::Output &&
          !writeArray(options.saveInputsDir, arguments[i].name, *values[i],
                      path))
        return kUserError;
    }

  Runtime::global().setNumThreads(defaultThreads(options.threads));
  unsigned threads = Runtime::global().numThreads(); // the pool may cap it

  // Params are bound and prepared once, as a host that keeps its weights
  // would; the timed calls pass the inputs and outputs.
  std::vector<HostBuffer> buffers;
  for (unsigned i = 0; i < arguments.size(); ++i) {
    HostBuffer buffer{arguments[i].name, values[i]->data.data(),
                      arguments[i].type, arguments[i].shape};
    if (arguments[i].role != ArgumentRole::Param) {
      buffers.push_back(std::move(buffer));
      continue;
    }
    if (llvm::Error failure = (*kernel)->bindParam(buffer)) {
      error() << llvm::toString(std::move(failure)) << "\n";
      return kUserError;
    }
  }
  if (llvm::Error failure = (*kernel)->prepareParams()) {
    llvm::errs() << "attnc: internal error: "
                 << llvm::toString(std::move(failure)) << "\n";
    return kInternalError;
  }

  std::vector<double> milliseconds;
  for (unsigned r = 0; r < options.repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    if (llvm::Error failure = (*kernel)->run(buffers)) {
      error() << llvm::toString(std::move(failure)) << "\n";
      return kUserError;
    }
    auto end = std::chrono::steady_clock::now();
    milliseconds.push_back(
        std::chrono::duration<double, std::milli>(end - start).count());
  }
  std::sort(milliseconds.begin(), milliseconds.end());
  double median = milliseconds[milliseconds.size() / 2];
  if (milliseconds.size() % 2 == 0)
    median = (median + milliseconds[milliseconds.size() / 2 - 1]) / 2;

  // The outputs, and the states as the runs left them.
  for (unsigned i = 0; i < arguments.size(); ++i) {
    const KernelArgument &a = arguments[i];
    if (!mlir::attn::abi::isWritten(a.role))
      continue;
    llvm::SmallString<256> path;
    if (!writeArray(options.outputDir, a.name, *values[i], path))
      return kUserError;
    llvm::outs() << a.name << ": " << a.typeString() << " -> " << path << "\n";
    if (mlir::attn::isFloat(a.type))
      llvm::outs() << "  " << preview(values[i]->toFloats()) << "\n";
  }
  llvm::outs() << "time per call: " << llvm::format("%.4f", median)
               << " ms (median of " << milliseconds.size() << " run"
               << (milliseconds.size() == 1 ? "" : "s") << ", " << threads
               << " thread" << (threads == 1 ? "" : "s") << ")\n";
  return kSuccess;
}
