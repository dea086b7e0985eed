//===- Runtime.cpp - Compiling specs, and the kernel caches ---------------===//
//
// A kernel is keyed by SHA-256 of (compiler version, spec text, block,
// code-generation options with the resolved CPU). The disk cache holds
// KEY.o (the object) and KEY.json (signature, the object's digest and the
// whole entry's); both are
// written to temporary files and renamed into place, JSON last, so a reader
// sees a complete entry or none. An entry that does not parse, does not
// match its digest or does not load is rebuilt, never trusted.
//
//===----------------------------------------------------------------------===//

#include "CacheTrust.h"
#include "LoadedObject.h"

#include "attnc/Codegen/CodeGenerator.h"
#include "attnc/Gen/SpecToModule.h"
#include "attnc/InitAttn.h"
#include "attnc/Runtime/Runtime.h"
#include "attnc/Support/ReadFile.h"
#include "attnc/Support/Version.h"

#include "attnc_rt.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>
#include <map>
#include <mutex>
#include <optional>

using namespace attnc;

// A rebuilt compiler with uncommitted changes has the same commit as the
// one before it and must not reuse its kernels: the key also names the
// binary that holds this code, by size and modification time.
llvm::StringRef attnc::compilerVersion() {
  static const std::string version = [] {
    std::string text = std::string("attnc ") + attnc::version() + " " +
                       gitCommit() + " LLVM " LLVM_VERSION_STRING;
    Dl_info info;
    llvm::sys::fs::file_status status;
    if (dladdr(reinterpret_cast<void *>(&attnc::compilerVersion), &info) &&
        info.dli_fname && !llvm::sys::fs::status(info.dli_fname, status))
      text +=
          " " + std::to_string(status.getSize()) + "@" +
          std::to_string(llvm::sys::toTimeT(status.getLastModificationTime()));
    return text;
  }();
  return version;
}

std::string attnc::defaultCacheDirectory() {
  if (auto dir = llvm::sys::Process::GetEnv("ATTNC_CACHE_DIR"))
    return *dir;
  llvm::SmallString<256> path;
  if (auto xdg = llvm::sys::Process::GetEnv("XDG_CACHE_HOME");
      xdg && !xdg->empty()) {
    path = *xdg;
  } else if (auto home = llvm::sys::Process::GetEnv("HOME");
             home && !home->empty()) {
    path = *home;
    llvm::sys::path::append(path, ".cache");
  } else {
    return "";
  }
  llvm::sys::path::append(path, "attnc");
  return std::string(path);
}

namespace {

std::string sha256Hex(llvm::ArrayRef<llvm::StringRef> parts) {
  llvm::SHA256 hash;
  for (llvm::StringRef part : parts) {
    // Length-prefixed, so that ("ab", "c") and ("a", "bc") differ.
    hash.update(std::to_string(part.size()) + ":");
    hash.update(part);
  }
  return llvm::toHex(hash.final(), /*LowerCase=*/true);
}

/// Writes `contents` to `path` (mode 0600) through a temporary file in the
/// same directory and a rename.
llvm::Error writeAtomically(llvm::StringRef path, llvm::StringRef contents) {
  llvm::SmallString<256> temp;
  int fd = -1;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(
          path + ".tmp-%%%%%%%%", fd, temp, llvm::sys::fs::OF_None,
          llvm::sys::fs::owner_read | llvm::sys::fs::owner_write))
    return llvm::createStringError(ec, "cannot create a file next to '" + path +
                                           "'");
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << contents;
    os.close();
    if (os.has_error()) {
      std::error_code ec = os.error();
      // A stream destroyed with its error set calls report_fatal_error: a
      // full disk would kill the host program.
      os.clear_error();
      llvm::sys::fs::remove(temp);
      return llvm::createStringError(ec, "cannot write '" + temp + "'");
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temp, path)) {
    llvm::sys::fs::remove(temp);
    return llvm::createStringError(ec, "cannot rename '" + temp + "' to '" +
                                           path + "'");
  }
  return llvm::Error::success();
}

struct DiskEntry {
  KernelSignature signature;
  std::string object;
};

/// The digest of a whole entry: its key, the compiler, the object's digest
/// and the signature's text. A signature edited on disk (a shrunk output
/// shape, a smaller packed size) must not be trusted any more than a
/// changed object.
std::string entryDigest(llvm::StringRef key, llvm::StringRef objectDigest,
                        llvm::StringRef signatureText) {
  return sha256Hex({key, compilerVersion(), objectDigest, signatureText});
}

/// A cache file as it is on disk: a regular file of this user's alone
/// (CacheTrust.h), whose size bounds what is read (one replaced by a device
/// or a pipe, /dev/zero say, would be read without end).
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readCacheFile(llvm::StringRef path) {
  if (llvm::Error untrusted = checkPrivateFile(path))
    return std::move(untrusted);
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::errorCodeToError(buffer.getError());
  return std::move(*buffer);
}

/// Reads and validates a cache entry; any mismatch is an error.
llvm::Expected<DiskEntry> readEntry(llvm::StringRef jsonPath,
                                    llvm::StringRef objectPath,
                                    llvm::StringRef key) {
  auto jsonBuffer = readCacheFile(jsonPath);
  if (!jsonBuffer)
    return jsonBuffer.takeError();
  auto parsed = llvm::json::parse((*jsonBuffer)->getBuffer());
  if (!parsed)
    return parsed.takeError();
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root || root->getString("key") != key ||
      root->getString("version") != compilerVersion())
    return llvm::createStringError("entry does not belong to this key");
  std::optional<llvm::StringRef> digest = root->getString("object_sha256");
  std::optional<llvm::StringRef> signatureText = root->getString("signature");
  std::optional<llvm::StringRef> whole = root->getString("entry_sha256");
  if (!digest || !signatureText || !whole)
    return llvm::createStringError("entry lacks a digest or a signature");
  if (entryDigest(key, *digest, *signatureText) != *whole)
    return llvm::createStringError("entry does not match its digest");
  auto objectBuffer = readCacheFile(objectPath);
  if (!objectBuffer)
    return objectBuffer.takeError();
  DiskEntry entry;
  entry.object = (*objectBuffer)->getBuffer().str();
  if (sha256Hex({entry.object}) != *digest)
    return llvm::createStringError("object does not match its digest");
  auto signature = KernelSignature::fromJSON(*signatureText);
  if (!signature)
    return signature.takeError();
  entry.signature = std::move(*signature);
  return entry;
}

llvm::Error writeEntry(llvm::StringRef directory, llvm::StringRef jsonPath,
                       llvm::StringRef objectPath, llvm::StringRef key,
                       const DiskEntry &entry) {
  if (llvm::Error error = makePrivateDirectory(directory))
    return error;
  if (llvm::Error error = writeAtomically(objectPath, entry.object))
    return error;
  std::string objectDigest = sha256Hex({entry.object});
  std::string signatureText = entry.signature.toJSON();
  llvm::json::Object root{
      {"key", key},
      {"version", compilerVersion()},
      {"kernel", entry.signature.name},
      {"object_sha256", objectDigest},
      {"signature", signatureText},
      {"entry_sha256", entryDigest(key, objectDigest, signatureText)}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(root)) << "\n";
  return writeAtomically(jsonPath, text);
}

/// Front end, code generation: spec text -> signature and object.
llvm::Expected<DiskEntry> compileSpec(llvm::StringRef text,
                                      llvm::StringRef sourceName,
                                      llvm::StringRef block,
                                      const CodeGenerator &generator) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  std::string diagnostics;
  llvm::raw_string_ostream diagnosticStream(diagnostics);
  auto module =
      specToModule(context, text, sourceName, block, diagnosticStream);
  if (!module) {
    std::string message = llvm::toString(module.takeError());
    if (!diagnostics.empty())
      message = diagnostics + message;
    return llvm::createStringError(message);
  }
  // Lowering errors are MLIR diagnostics: collect them into the error.
  std::string lowering;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    llvm::raw_string_ostream(lowering) << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  auto compiled = generator.compile(**module, OutputKind::Object);
  if (!compiled)
    return llvm::createStringError(lowering +
                                   llvm::toString(compiled.takeError()));
  if (compiled->signatures.size() != 1)
    return llvm::createStringError("expected exactly one kernel");
  return DiskEntry{std::move(compiled->signatures.front()),
                   std::move(compiled->code)};
}

} // namespace

/// What the memory cache keeps of a kernel: its code, loaded once, and its
/// signature; every compile() makes a Kernel of its own from them.
struct CachedKernel {
  KernelSignature signature;
  std::shared_ptr<LoadedObject> object;
};

struct Runtime::State {
  std::mutex mutex;
  std::map<std::string, CachedKernel> kernels;
  RuntimeStatistics statistics;
};

CompileOptions Runtime::defaultOptions() {
  CompileOptions options;
  options.pipeline.parallel = true;
  options.objectBlockCache = false;
  return options;
}

Runtime::Runtime(std::string cacheDirectory)
    : cacheDir(std::move(cacheDirectory)), state(std::make_shared<State>()) {}

Runtime &Runtime::global() {
  static Runtime runtime(defaultCacheDirectory());
  return runtime;
}

// The pool is the process's (attnc_rt): every Runtime shares it.
void Runtime::setNumThreads(unsigned threads) {
  attnc_rt_set_num_threads(static_cast<int>(threads == 0 ? 1 : threads));
}

unsigned Runtime::defaultNumThreads() {
  return static_cast<unsigned>(attnc_rt_default_threads());
}

unsigned Runtime::numThreads() const {
  return static_cast<unsigned>(attnc_rt_get_num_threads());
}

RuntimeStatistics Runtime::statistics() const {
  std::lock_guard<std::mutex> lock(state->mutex);
  return state->statistics;
}

void Runtime::clearMemoryCache() {
  std::lock_guard<std::mutex> lock(state->mutex);
  state->kernels.clear();
}

llvm::Expected<std::shared_ptr<Kernel>>
Runtime::compile(llvm::StringRef text, llvm::StringRef sourceName,
                 llvm::StringRef block, const CompileOptions &options) {
  std::unique_ptr<CodeGenerator> generator = createCodeGenerator(options);
  if (llvm::Error error = generator->checkLoadsHere())
    return std::move(error);
  mlir::attn::abi::ObjectKind objectKind = generator->objectKind();
  std::string key =
      sha256Hex({compilerVersion(), text, block, generator->fingerprint()});
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    auto it = state->kernels.find(key);
    if (it != state->kernels.end()) {
      ++state->statistics.memoryHits;
      return std::make_shared<Kernel>(it->second.signature, it->second.object);
    }
  }

  llvm::SmallString<256> jsonPath(cacheDir), objectPath(cacheDir);
  llvm::sys::path::append(jsonPath, key + ".json");
  llvm::sys::path::append(objectPath, key + ".o");
  std::optional<CachedKernel> kernel;
  // Machine code is read only from a directory of this user's alone; one
  // that is not (shared, writable by others) is not used at all.
  bool useDisk = !cacheDir.empty();
  if (useDisk && llvm::sys::fs::exists(cacheDir))
    if (llvm::Error untrusted = checkPrivateDirectory(cacheDir)) {
      warnUntrustedCache(cacheDir, std::move(untrusted));
      useDisk = false;
    }
  if (useDisk && llvm::sys::fs::exists(jsonPath)) {
    auto entry = readEntry(jsonPath, objectPath, key);
    if (entry) {
      auto object = LoadedObject::load(entry->object, entry->signature.name,
                                       objectKind, entry->signature.roles());
      if (object)
        kernel = CachedKernel{std::move(entry->signature), std::move(*object)};
      else
        llvm::consumeError(object.takeError());
    } else {
      llvm::consumeError(entry.takeError());
    }
    std::lock_guard<std::mutex> lock(state->mutex);
    ++(kernel ? state->statistics.diskHits : state->statistics.corruptEntries);
  }

  if (!kernel) {
    auto entry = compileSpec(text, sourceName, block, *generator);
    if (!entry)
      return entry.takeError();
    if (useDisk)
      // A read-only or full cache directory costs speed, not correctness.
      llvm::consumeError(
          writeEntry(cacheDir, jsonPath, objectPath, key, *entry));
    auto object = LoadedObject::load(entry->object, entry->signature.name,
                                     objectKind, entry->signature.roles());
    if (!object)
      return object.takeError();
    kernel = CachedKernel{std::move(entry->signature), std::move(*object)};
    std::lock_guard<std::mutex> lock(state->mutex);
    ++state->statistics.compilations;
  }

  std::lock_guard<std::mutex> lock(state->mutex);
  // Another thread may have finished the same kernel first: share its code.
  auto [it, inserted] = state->kernels.emplace(key, std::move(*kernel));
  return std::make_shared<Kernel>(it->second.signature, it->second.object);
}

llvm::Expected<std::shared_ptr<Kernel>>
Runtime::compileFile(llvm::StringRef path, llvm::StringRef block,
                     const CompileOptions &options) {
  auto buffer = readSpecFile(path);
  if (!buffer)
    return buffer.takeError();
  return compile((*buffer)->getBuffer(), path, block, options);
}
