//===- Runtime.h - Compile, load and run attnc kernels from C++ -*- C++ -*-===//
//
// The C++ API host programs use (docs/spec.md §6): compile a spec (string or
// file) for a block, look up its arguments, bind params once, run with host
// buffers that are checked (count, names, dtypes, shapes, embedding ids)
// before any kernel code runs. Compiled kernels are cached in memory and on
// disk (ATTNC_CACHE_DIR, else $XDG_CACHE_HOME/attnc, else ~/.cache/attnc).
//
// Kernels and the runtime are safe to use from many threads at once.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_RUNTIME_H
#define ATTNC_RUNTIME_RUNTIME_H

#include "attnc/Codegen/CompileOptions.h"
#include "attnc/Codegen/KernelSignature.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

namespace attnc {

/// A host buffer handed to a kernel: dense, row-major, any alignment.
/// Inputs and params are only read; outputs are written.
struct HostBuffer {
  std::string name;
  void *data = nullptr;
  ElementType type = ElementType::F32;
  std::vector<int64_t> shape;
};

/// An error in the buffers or names a host passed (an unknown, missing or
/// repeated name, a wrong dtype or shape, a null pointer, an embedding id
/// out of range, params not bound): found before any kernel code ran.
/// Every other error of Kernel (a CPU without the kernel's instruction set,
/// a CUDA error) is a plain string error. The Python module raises
/// ValueError for this one.
class BufferError : public llvm::ErrorInfo<BufferError> {
public:
  static char ID;
  explicit BufferError(std::string message) : text(std::move(message)) {}
  std::string message() const override { return text; }
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;

private:
  std::string text;
};

class LoadedObject;

/// A compiled kernel, loaded and ready to run. Each Kernel that compile()
/// returns has params of its own (bound, prepared); kernels compiled from
/// the same spec and options share their loaded code.
class Kernel {
public:
  Kernel(KernelSignature signature, std::shared_ptr<LoadedObject> object);
  ~Kernel();

  const KernelSignature &signature() const { return kernelSignature; }

  /// The argument called `name`; the error lists the argument names.
  llvm::Expected<unsigned> argumentIndex(llvm::StringRef name) const;

  /// Copies a param's values into the kernel; later runs use them unless a
  /// run passes that param itself. Checked like a run's buffers.
  llvm::Error bindParam(const HostBuffer &param);

  /// Binds several params at once: every one is checked and copied before
  /// any is bound, so a run on another thread sees the params bound before
  /// or all of these, never a mix; on an error none is bound.
  llvm::Error bindParams(llvm::ArrayRef<HostBuffer> params);

  /// Whether argument `index` is a param with values bound.
  bool isBound(unsigned index) const;

  /// Once every param is bound, does the work that depends on the params
  /// only (the kernel's NAME_prepare: weights transposed for the GEMMs), so
  /// that runs skip it. The first run after a bind does it otherwise; a
  /// bind undoes it. An error when a param is not bound.
  llvm::Error prepareParams();

  /// Runs the kernel. `buffers` names every input, every output and every
  /// param that is not bound; each is checked against the signature before
  /// the kernel runs, and no output may share a byte with another buffer
  /// (the kernel reads its inputs while it writes its outputs). When no param
  /// is passed and all are bound, the run uses the prepared params.
  llvm::Error run(llvm::ArrayRef<HostBuffer> buffers) const;

  /// A GPU kernel (TargetKind::Nvptx) on device buffers: `buffers` name
  /// every argument, params included (bound params live on the host), with
  /// device pointers (CUdeviceptr values) in `data`, checked like run's;
  /// the kernel is enqueued on `stream` (a CUstream; null: the default
  /// stream) and may still run when this returns. An error for a CPU
  /// kernel.
  llvm::Error runOnDevice(llvm::ArrayRef<HostBuffer> buffers,
                          void *stream) const;

private:
  /// Checks one buffer against argument `index`.
  llvm::Error check(unsigned index, const HostBuffer &buffer) const;
  llvm::Error checkEmbeddingIds(llvm::ArrayRef<void *> pointers) const;
  /// KV cache positions and positional_encoding offsets in range
  /// (KernelSignature::positions), each bad entry named.
  llvm::Error checkPositions(llvm::ArrayRef<void *> pointers) const;
  /// Refuses an output or state whose bytes overlap another buffer's.
  llvm::Error checkWrittenApart(llvm::ArrayRef<void *> pointers) const;
  /// The names of the params not bound; `boundMutex` held.
  std::vector<std::string> unboundParams() const;
  /// Fills `packed` from the bound params; `boundMutex` held exclusively.
  llvm::Error preparePacked() const;

  KernelSignature kernelSignature;
  std::shared_ptr<LoadedObject> object;
  /// Bound params (index -> owned copy); guarded by `boundMutex`.
  std::vector<std::vector<char>> bound;
  /// NAME_prepare's output for the bound params, valid when `prepared`;
  /// guarded by `boundMutex` (filled lazily by run, hence mutable).
  /// `packed` points into `packedStorage` at a 64-byte boundary: the GEMMs
  /// load its rows as whole cache lines.
  mutable std::vector<float> packedStorage;
  mutable float *packed = nullptr;
  mutable bool prepared = false;
  mutable std::shared_mutex boundMutex;
};

struct RuntimeStatistics {
  unsigned compilations = 0;
  unsigned memoryHits = 0;
  unsigned diskHits = 0;
  /// Disk entries that were unreadable or did not match and were rebuilt.
  unsigned corruptEntries = 0;
};

class Runtime {
public:
  /// The process-wide runtime (cache directory from the environment).
  static Runtime &global();

  /// `cacheDirectory` empty: no disk cache.
  explicit Runtime(std::string cacheDirectory);

  /// Compiles (or finds in a cache) block `block` of the spec `text`
  /// (`sourceName` names it in diagnostics, which are part of the error).
  /// An empty `block` selects the spec's only block. The Kernel is new,
  /// with no params bound, even when its code comes from a cache: binding
  /// weights to one never changes another's.
  llvm::Expected<std::shared_ptr<Kernel>>
  compile(llvm::StringRef text, llvm::StringRef sourceName,
          llvm::StringRef block,
          const CompileOptions &options = defaultOptions());
  llvm::Expected<std::shared_ptr<Kernel>>
  compileFile(llvm::StringRef path, llvm::StringRef block,
              const CompileOptions &options = defaultOptions());

  /// -O2 for this CPU, attention chosen by shape, parallel loops on.
  static CompileOptions defaultOptions();

  /// The CPUs this process may use: its affinity mask (taskset), capped by
  /// its cgroups' CPU quota (a container's --cpus); at least 1.
  static unsigned defaultNumThreads();

  /// Threads a kernel may use: the process-wide pool of attnc_rt
  /// (ATTNC_NUM_THREADS at start, else defaultNumThreads()). Kernels
  /// compiled with
  /// `pipeline.parallel` (the default of compile()) split their GEMM blocks
  /// and attention batch entries over it; with 1 thread they run entirely on
  /// the calling thread.
  void setNumThreads(unsigned threads);
  unsigned numThreads() const;

  const std::string &cacheDirectory() const { return cacheDir; }
  RuntimeStatistics statistics() const;
  /// Forgets the in-memory cache (the disk cache stays).
  void clearMemoryCache();

private:
  struct State;
  std::string cacheDir;
  std::shared_ptr<State> state;
};

/// ATTNC_CACHE_DIR, else $XDG_CACHE_HOME/attnc, else $HOME/.cache/attnc.
std::string defaultCacheDirectory();

/// The version string that keys caches: attnc's and LLVM's versions and the
/// source revision attnc was built from.
llvm::StringRef compilerVersion();

} // namespace attnc

#endif // ATTNC_RUNTIME_RUNTIME_H
