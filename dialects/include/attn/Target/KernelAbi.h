//===- KernelAbi.h - How hosts call a compiled kernel -----------*- C++ -*-===//
//
// The one description of the calling convention of attnc's objects
// (docs/spec.md §5): the entries an object exports for block NAME (per object
// kind), their symbols, the order of their pointer parameters, the status codes
// they return, the names of the generated header's macros and hence every
// name the ABI reserves. attn-split-prepare, the code generators (MLIR CPU,
// Halide, NVPTX), the header emitter, Sema's name checks, the runtime and
// the Python module all ask this header; none spells a suffix itself.
// LLVM Support only: the DSL front end and the runtime include it.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TARGET_KERNELABI_H
#define ATTN_TARGET_KERNELABI_H

#include "attn/Target/KernelStatus.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::attn::abi {

/// What a buffer is to a kernel. Buffers are passed in declaration order
/// (inputs, params and states as declared), then the outputs in `output`
/// order. A state (docs/spec.md §2 v3) is read and updated in place; the
/// caller keeps it between calls.
enum class ArgumentRole { Input, Param, State, Output };

/// `input`, `param`, `state`, `output`: the DSL's keywords, the values of
/// the `attn.role` argument attribute, the signatures' JSON and messages.
llvm::StringRef nameOf(ArgumentRole role);
/// The role `name` spells (nameOf), if any.
std::optional<ArgumentRole> roleNamed(llvm::StringRef name);

/// Whether a kernel writes a buffer of `role` (outputs and states): a
/// non-`const` pointer in the header, copied back from a GPU.
inline bool isWritten(ArgumentRole role) {
  return role == ArgumentRole::State || role == ArgumentRole::Output;
}

/// The kinds of object attnc makes; they export different entries. Objects
/// of the Halide backend are CPU objects.
enum class ObjectKind { Cpu, Gpu };

/// An exported entry of block NAME.
enum class Entry {
  /// int NAME(buffers...): the kernel.
  Run,
  /// int NAME_prepare(params..., packed): fills the packed params.
  Prepare,
  /// int NAME_prepared(inputs and params..., packed, outputs...).
  Prepared,
  /// int NAME_cuda(stream, buffers...): device pointers, on a CUstream.
  Cuda,
  /// const char *NAME_cuda_last_error(void).
  CudaLastError,
};

/// The order of an entry's parameters.
enum class Layout {
  /// Every buffer in ABI order.
  Buffers,
  /// The params in ABI order, then `packed` (written).
  ParamsThenPacked,
  /// The inputs and params, then `packed` (read), then the outputs.
  PackedBeforeOutputs,
  /// The stream, then every buffer.
  StreamThenBuffers,
  /// None (the entry returns a message, not a status).
  None,
};

struct EntryDescription {
  Entry entry;
  /// NAME + suffix is the entry's symbol.
  llvm::StringLiteral suffix;
  Layout layout;
  /// Also exported as packedEntrySymbol(its symbol): int (void **args).
  bool hasPackedForm;
};

const EntryDescription &describe(Entry entry);

/// The entries an object of `kind` exports for each block, NAME first.
llvm::ArrayRef<Entry> entriesOf(ObjectKind kind);

/// Every entry of every object kind (the names Sema reserves whatever the
/// target: a spec compiles for any of them).
llvm::ArrayRef<EntryDescription> allEntries();

/// `NAME_prepare` for (NAME, Prepare).
std::string entrySymbol(llvm::StringRef block, Entry entry);

/// `int attnc_packed_SYMBOL(void **args)`: entry SYMBOL with its pointer
/// parameters in one array (args[i] the i-th parameter of SYMBOL's
/// layout), for hosts that call kernels of any arity.
std::string packedEntrySymbol(llvm::StringRef symbol);

/// The symbols an object of `kind` exports for `block`: each entry and
/// its packed form.
std::vector<std::string> exportedSymbols(llvm::StringRef block,
                                         ObjectKind kind);

/// A GPU object's internal function holding block NAME's lowered host code
/// (the entries wrap it). In the reserved `__attnc_` namespace, so that no
/// block's name can take it.
std::string deviceFunctionSymbol(llvm::StringRef block);

/// One parameter of an entry: a buffer (by its index among the kernel's
/// buffers), the packed params, or the stream.
struct Parameter {
  enum class Kind { Buffer, Packed, Stream };
  Kind kind = Kind::Buffer;
  unsigned buffer = 0;
};

/// `entry`'s parameters for a kernel whose buffers have `roles`.
llvm::SmallVector<Parameter> parametersOf(Entry entry,
                                          llvm::ArrayRef<ArgumentRole> roles);

/// Where `packed` goes in `parametersOf(Prepared, roles)`: before the first
/// output (after the last buffer when there is none).
unsigned packedPosition(llvm::ArrayRef<ArgumentRole> roles);

//===----------------------------------------------------------------------===//
// Status codes (values in KernelStatus.h)
//===----------------------------------------------------------------------===//

struct StatusDescription {
  int value;
  /// NAME_STATUS_<macroSuffix> in the header.
  llvm::StringLiteral macroSuffix;
  /// The object kind that returns it (the header defines it there); none:
  /// every kind.
  std::optional<ObjectKind> kind;
};

/// The non-zero statuses a header documents; Halide's internal failure
/// status is not one (HalideBackend says why).
llvm::ArrayRef<StatusDescription> documentedStatuses();

//===----------------------------------------------------------------------===//
// The header's names
//===----------------------------------------------------------------------===//

/// NAME -> the upper-case prefix of its header macros (`d2l_mha` ->
/// `D2L_MHA`; non-alphanumerics become `_`).
std::string macroPrefix(llvm::StringRef name);

/// `ATTNC_KERNEL_<PREFIX>_H`.
std::string includeGuard(llvm::StringRef block);

/// The macros each buffer gets: PREFIX_ARG_RANK, _SHAPE, _NUMEL.
llvm::ArrayRef<llvm::StringLiteral> bufferMacroSuffixes();

/// The buffers' names in the ABI (header parameters, signatures, `attnc
/// run`'s files): the inputs' and params' names, then the outputs', where an
/// output that is an input or param (`output X`) is a buffer of its own
/// called X_out (X_out_out, ... while taken).
std::vector<std::string> bufferNames(llvm::ArrayRef<std::string> arguments,
                                     llvm::ArrayRef<std::string> outputs);

/// The name of the header's `packed` parameter: `packed`, with `_`
/// appended while a buffer's macro name would be the same.
std::string packedParameterName(llvm::ArrayRef<std::string> buffers);

/// The name of NAME_cuda's stream parameter: `stream`, with `_` appended
/// while a buffer has that name.
std::string streamParameterName(llvm::ArrayRef<std::string> buffers);

/// PREFIX_<PACKED>_NUMEL: the floats of the packed buffer.
std::string packedNumelMacro(llvm::StringRef block,
                             llvm::ArrayRef<std::string> buffers);
/// PREFIX_<PACKED>_BYTES: its bytes (docs/spec.md §5 v3: its layout is the
/// kernel's business, f32 or bf16 pairs or AMX tiles).
std::string packedBytesMacro(llvm::StringRef block,
                             llvm::ArrayRef<std::string> buffers);

/// One identifier a block puts into its header, and where it comes from.
struct HeaderName {
  enum class Origin {
    /// An entry's symbol (a C function).
    Entry,
    /// The include guard, a status, the packed buffer's size.
    Abi,
    /// A dim's macro.
    Dim,
    /// A buffer's RANK/SHAPE/NUMEL macro.
    Buffer,
  };
  std::string name;
  Origin origin = Origin::Abi;
  /// The dim's or buffer's index for Dim and Buffer.
  unsigned index = 0;
  /// Entry and Abi: what it is (`the 'cuda' entry`, `the include guard`).
  std::string what;
};

/// Every function and macro name the header of `block` declares, for any
/// object kind: two blocks of one file whose names coincide, or a name that
/// coincides with one of its own block's, do not compile together.
std::vector<HeaderName> headerNames(llvm::StringRef block,
                                    llvm::ArrayRef<std::string> dims,
                                    llvm::ArrayRef<std::string> buffers);

/// Why `name` cannot be an exported kernel's symbol because objects or
/// their runtime use it themselves (the `attnc_`, `__attnc_`, `mgpu` and
/// `halide_` namespaces, the loader's libc and libdl functions), or an empty
/// string.
std::string reservedSymbolConflict(llvm::StringRef name);

} // namespace mlir::attn::abi

#endif // ATTN_TARGET_KERNELABI_H
