//===- Kernel.cpp - Checking buffers and running a loaded kernel ----------===//

#include "LoadedObject.h"

#include "attnc/Runtime/Runtime.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <mutex>
#include <new>

using namespace attnc;

namespace {

llvm::Error bufferError(const llvm::Twine &message) {
  return llvm::make_error<BufferError>(message.str());
}

/// The error of an allocation of the runtime's own that failed.
llvm::Error outOfMemory(const std::string &what, size_t bytes) {
  return llvm::createStringError(what + ": out of memory (" +
                                 std::to_string(bytes) +
                                 " bytes could not be allocated)");
}

/// The error of a kernel that returned `status` (buffers were checked
/// before, so only the CPU guard or an embedding id can fail it).
llvm::Error statusError(llvm::StringRef kernel, int status,
                        const LoadedObject &object) {
  // A GPU object says what failed (no driver, a CUDA error) itself.
  std::string gpuError = status < 0 ? object.lastError() : "";
  if (!gpuError.empty())
    return llvm::createStringError("kernel '" + kernel + "': " + gpuError);
  if (status == ATTNC_STATUS_UNSUPPORTED_CPU)
    return llvm::createStringError(
        "kernel '" + kernel +
        "': this machine lacks the instruction set the kernel was compiled "
        "for (--mcpu), or ATTNC_CPU_VARIANT names a CPU it lacks (nothing "
        "ran), or the OS refused the AMX tile state its bf16 GEMMs use "
        "(compile for a CPU without AMX)");
  if (status == ATTNC_STATUS_CACHE_POSITION)
    return llvm::createStringError(
        "kernel '" + kernel +
        "': a position is out of range (a KV cache's: some cache_pos[b] < "
        "0, or cache_pos[b] + T > L, the cache's rows; or a "
        "positional_encoding's: some offset[b] < 0, or offset[b] + T > "
        "max_len); nothing was written to the caches");
  if (status == ATTNC_STATUS_OUT_OF_MEMORY)
    return llvm::createStringError(
        "kernel '" + kernel +
        "': out of memory: a buffer the kernel needs for its own work could "
        "not be allocated (the outputs are not valid; a state may have been "
        "partly written)");
  return llvm::createStringError("kernel '" + kernel + "' failed with status " +
                                 llvm::Twine(status));
}

std::string shapeText(ElementType type, llvm::ArrayRef<int64_t> shape) {
  KernelArgument a;
  a.type = type;
  a.shape.assign(shape.begin(), shape.end());
  return a.typeString();
}

/// [1, 3] for flat index 7 of shape [2, 4].
std::string multiIndex(int64_t flat, llvm::ArrayRef<int64_t> shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(index, os);
  os << "]";
  return text;
}

} // namespace

char BufferError::ID = 0;

void BufferError::log(llvm::raw_ostream &os) const { os << text; }

std::error_code BufferError::convertToErrorCode() const {
  return llvm::inconvertibleErrorCode();
}

Kernel::Kernel(KernelSignature signature, std::shared_ptr<LoadedObject> object)
    : kernelSignature(std::move(signature)), object(std::move(object)),
      bound(kernelSignature.arguments.size()) {}

Kernel::~Kernel() = default;

llvm::Expected<unsigned> Kernel::argumentIndex(llvm::StringRef name) const {
  const auto &args = kernelSignature.arguments;
  for (unsigned i = 0; i < args.size(); ++i)
    if (args[i].name == name)
      return i;
  std::vector<std::string> names;
  for (const KernelArgument &a : args)
    names.push_back(a.name);
  return bufferError("kernel '" + kernelSignature.name +
                     "' has no argument named '" + name +
                     "'; its arguments are " + llvm::join(names, ", "));
}

llvm::Error Kernel::check(unsigned index, const HostBuffer &buffer) const {
  const KernelArgument &a = kernelSignature.arguments[index];
  std::string what = (roleName(a.role) + " '" + a.name + "'").str();
  if (!buffer.data)
    return bufferError(what + ": the buffer pointer is null");
  if (buffer.type != a.type || buffer.shape != a.shape)
    return bufferError(what + ": expected " + a.typeString() + ", got " +
                       shapeText(buffer.type, buffer.shape));
  return llvm::Error::success();
}

llvm::Error Kernel::bindParam(const HostBuffer &param) {
  return bindParams(param);
}

llvm::Error Kernel::bindParams(llvm::ArrayRef<HostBuffer> params) {
  std::vector<std::pair<unsigned, std::vector<char>>> copies;
  for (const HostBuffer &param : params) {
    llvm::Expected<unsigned> index = argumentIndex(param.name);
    if (!index)
      return index.takeError();
    const KernelArgument &a = kernelSignature.arguments[*index];
    if (a.role != ArgumentRole::Param)
      return bufferError("'" + a.name + "' is " +
                         (a.role == ArgumentRole::State ? "a " : "an ") +
                         roleName(a.role) +
                         ", not a param: only params can be bound");
    if (llvm::any_of(copies, [&](const auto &c) { return c.first == *index; }))
      return bufferError("'" + param.name + "' is given more than once");
    if (llvm::Error error = check(*index, param))
      return error;
    const char *bytes = static_cast<const char *>(param.data);
    size_t size = size_t(a.numElements()) * elementSize(a.type);
    // A param's copy is as large as the param (up to 2^40 elements): its
    // allocation failing is an error, not std::bad_alloc through the C API.
    try {
      copies.emplace_back(*index, std::vector<char>(bytes, bytes + size));
    } catch (const std::bad_alloc &) {
      return outOfMemory("binding param '" + a.name + "'", size);
    }
  }
  std::unique_lock<std::shared_mutex> lock(boundMutex);
  for (auto &[index, copy] : copies)
    bound[index] = std::move(copy);
  prepared = false;
  return llvm::Error::success();
}

bool Kernel::isBound(unsigned index) const {
  std::shared_lock<std::shared_mutex> lock(boundMutex);
  return index < bound.size() && !bound[index].empty();
}

std::vector<std::string> Kernel::unboundParams() const {
  std::vector<std::string> names;
  for (unsigned i = 0; i < kernelSignature.arguments.size(); ++i)
    if (kernelSignature.arguments[i].role == ArgumentRole::Param &&
        bound[i].empty())
      names.push_back("'" + kernelSignature.arguments[i].name + "'");
  return names;
}

llvm::Error Kernel::preparePacked() const {
  std::vector<void *> pointers;
  for (unsigned i = 0; i < kernelSignature.arguments.size(); ++i)
    pointers.push_back(const_cast<char *>(bound[i].data()));
  constexpr size_t kAlignment = 64 / sizeof(float);
  try {
    packedStorage.assign(kernelSignature.packedElements + kAlignment, 0.0f);
  } catch (const std::bad_alloc &) {
    return outOfMemory("preparing the params of '" + kernelSignature.name + "'",
                       (kernelSignature.packedElements + kAlignment) *
                           sizeof(float));
  }
  auto address = reinterpret_cast<uintptr_t>(packedStorage.data());
  packed = packedStorage.data() +
           (kAlignment - address / sizeof(float) % kAlignment) % kAlignment;
  if (int status = object->call(LoadedObject::Entry::Prepare, pointers, packed))
    return statusError(kernelSignature.name, status, *object);
  prepared = true;
  return llvm::Error::success();
}

llvm::Error Kernel::prepareParams() {
  std::unique_lock<std::shared_mutex> lock(boundMutex);
  std::vector<std::string> unbound = unboundParams();
  if (!unbound.empty())
    return bufferError(
        "kernel '" + kernelSignature.name +
        "': cannot prepare its params before they are bound; not bound: " +
        llvm::join(unbound, ", "));
  // A GPU object has no prepare step: its runs take the bound params.
  return prepared || !object->canPrepare() ? llvm::Error::success()
                                           : preparePacked();
}

llvm::Error Kernel::checkEmbeddingIds(llvm::ArrayRef<void *> pointers) const {
  for (const EmbeddingIds &ids : kernelSignature.embeddingIds) {
    const KernelArgument &a = kernelSignature.arguments[ids.argument];
    const auto *values = static_cast<const int32_t *>(pointers[ids.argument]);
    for (int64_t i = 0, e = a.numElements(); i < e; ++i)
      if (values[i] < 0 || values[i] >= ids.vocabSize)
        return bufferError(
            "input '" + a.name + "': id " + llvm::Twine(values[i]) + " at " +
            multiIndex(i, a.shape) + " is outside the embedding table [0, " +
            llvm::Twine(ids.vocabSize) + ")");
  }
  return llvm::Error::success();
}

llvm::Error Kernel::checkPositions(llvm::ArrayRef<void *> pointers) const {
  for (const Positions &p : kernelSignature.positions) {
    const KernelArgument &a = kernelSignature.arguments[p.argument];
    const auto *values = static_cast<const int32_t *>(pointers[p.argument]);
    std::string bound = p.cache
                            ? "the rows of state '" +
                                  kernelSignature.arguments[*p.cache].name + "'"
                            : std::string("positional_encoding's max_len");
    std::string tokens = p.tokens == 1
                             ? std::string("1 token at position pos[b]")
                             : std::to_string(p.tokens) +
                                   " tokens at positions pos[b] .. pos[b] + " +
                                   std::to_string(p.tokens - 1);
    for (int64_t i = 0, e = a.numElements(); i < e; ++i)
      if (values[i] < 0 || values[i] > p.rows - p.tokens)
        return bufferError("input '" + a.name + "': position " +
                           llvm::Twine(values[i]) + " at " +
                           multiIndex(i, a.shape) +
                           " is out of range: each call adds " + tokens +
                           ", which must be in [0, " + llvm::Twine(p.rows) +
                           ") (" + bound + "); nothing was run");
  }
  return llvm::Error::success();
}

llvm::Error Kernel::checkWrittenApart(llvm::ArrayRef<void *> pointers) const {
  const auto &args = kernelSignature.arguments;
  auto bytes = [&](unsigned i) {
    auto begin = reinterpret_cast<uintptr_t>(pointers[i]);
    return std::make_pair(begin, begin + uintptr_t(args[i].numElements()) *
                                             elementSize(args[i].type));
  };
  for (unsigned out = 0; out < args.size(); ++out) {
    if (!mlir::attn::abi::isWritten(args[out].role) || !pointers[out])
      continue;
    auto [outBegin, outEnd] = bytes(out);
    for (unsigned other = 0; other < args.size(); ++other) {
      if (other == out || !pointers[other] ||
          (mlir::attn::abi::isWritten(args[other].role) && other < out))
        continue;
      auto [begin, end] = bytes(other);
      if (begin < outEnd && outBegin < end)
        return bufferError(
            (roleName(args[out].role) + " '" + args[out].name + "' overlaps " +
             roleName(args[other].role) + " '" + args[other].name +
             "' in memory: the kernel writes " +
             (args[out].role == ArgumentRole::State ? "a state" : "an output") +
             " while it reads the other buffers; pass separate buffers")
                .str());
    }
  }
  return llvm::Error::success();
}

llvm::Error Kernel::run(llvm::ArrayRef<HostBuffer> buffers) const {
  const auto &args = kernelSignature.arguments;
  llvm::SmallVector<void *, 16> pointers(args.size(), nullptr);
  bool paramGiven = false;
  for (const HostBuffer &buffer : buffers) {
    llvm::Expected<unsigned> index = argumentIndex(buffer.name);
    if (!index)
      return index.takeError();
    if (pointers[*index])
      return bufferError("'" + buffer.name + "' is given more than once");
    if (llvm::Error error = check(*index, buffer))
      return error;
    pointers[*index] = buffer.data;
    paramGiven |= args[*index].role == ArgumentRole::Param;
  }
  if (llvm::Error error = checkWrittenApart(pointers))
    return error;

  // With every param bound and none passed, run on the prepared params
  // (prepared here the first time).
  auto canPrepare = [&] {
    return object->canPrepare() && !prepared && unboundParams().empty();
  };
  bool prepareNow = false;
  if (!paramGiven) {
    std::shared_lock<std::shared_mutex> lock(boundMutex);
    prepareNow = canPrepare();
  }
  if (prepareNow) {
    std::unique_lock<std::shared_mutex> lock(boundMutex);
    if (canPrepare())
      if (llvm::Error error = preparePacked())
        return error;
  }

  std::shared_lock<std::shared_mutex> lock(boundMutex);
  std::vector<std::string> missing;
  for (unsigned i = 0; i < args.size(); ++i) {
    if (pointers[i])
      continue;
    if (!bound[i].empty()) {
      pointers[i] = const_cast<char *>(bound[i].data());
      continue;
    }
    missing.push_back((roleName(args[i].role) + " '" + args[i].name + "' (" +
                       args[i].typeString() + ")")
                          .str());
  }
  if (!missing.empty())
    return bufferError("kernel '" + kernelSignature.name + "' is missing " +
                       llvm::join(missing, ", "));
  if (llvm::Error error = checkEmbeddingIds(pointers))
    return error;
  if (llvm::Error error = checkPositions(pointers))
    return error;

  auto entry = LoadedObject::Entry::Run;
  if (!paramGiven && prepared)
    entry = LoadedObject::Entry::Prepared;
  if (int status = object->call(entry, pointers, packed))
    return statusError(kernelSignature.name, status, *object);
  return llvm::Error::success();
}

llvm::Error Kernel::runOnDevice(llvm::ArrayRef<HostBuffer> buffers,
                                void *stream) const {
  if (!object->has(LoadedObject::Entry::Cuda))
    return llvm::createStringError(
        "kernel '" + kernelSignature.name +
        "' is CPU code: device buffers need a kernel compiled for the GPU "
        "(--target=nvptx)");
  const auto &args = kernelSignature.arguments;
  std::vector<void *> pointers(args.size(), nullptr);
  for (const HostBuffer &buffer : buffers) {
    llvm::Expected<unsigned> index = argumentIndex(buffer.name);
    if (!index)
      return index.takeError();
    if (pointers[*index])
      return bufferError("'" + buffer.name + "' is given more than once");
    if (llvm::Error error = check(*index, buffer))
      return error;
    pointers[*index] = buffer.data;
  }
  std::vector<std::string> missing;
  for (unsigned i = 0; i < args.size(); ++i)
    if (!pointers[i])
      missing.push_back((roleName(args[i].role) + " '" + args[i].name + "' (" +
                         args[i].typeString() + ")")
                            .str());
  if (!missing.empty())
    return bufferError("kernel '" + kernelSignature.name +
                       "' on device buffers is missing " +
                       llvm::join(missing, ", ") +
                       " (bound params are host memory: pass every param)");
  // Embedding ids are device memory here: the kernel checks them itself
  // (its status counts the ids out of range).
  if (int status =
          object->call(LoadedObject::Entry::Cuda, pointers, nullptr, stream))
    return statusError(kernelSignature.name, status, *object);
  return llvm::Error::success();
}
