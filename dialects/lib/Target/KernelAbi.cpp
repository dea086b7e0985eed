//===- KernelAbi.cpp - How hosts call a compiled kernel -------------------===//

#include "attn/Target/KernelAbi.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir::attn::abi;

namespace {

constexpr EntryDescription kEntries[] = {
    {Entry::Run, "", Layout::Buffers, /*hasPackedForm=*/true},
    {Entry::Prepare, "_prepare", Layout::ParamsThenPacked, true},
    {Entry::Prepared, "_prepared", Layout::PackedBeforeOutputs, true},
    {Entry::Cuda, "_cuda", Layout::StreamThenBuffers, true},
    {Entry::CudaLastError, "_cuda_last_error", Layout::None, false},
};

constexpr Entry kCpuEntries[] = {Entry::Run, Entry::Prepare, Entry::Prepared};
constexpr Entry kGpuEntries[] = {Entry::Run, Entry::Cuda, Entry::CudaLastError};

constexpr StatusDescription kStatuses[] = {
    {ATTNC_STATUS_UNSUPPORTED_CPU, "UNSUPPORTED_CPU", ObjectKind::Cpu},
    {ATTNC_STATUS_NO_CUDA_DRIVER, "NO_CUDA_DRIVER", ObjectKind::Gpu},
    {ATTNC_STATUS_WRONG_GPU, "WRONG_GPU", ObjectKind::Gpu},
    {ATTNC_STATUS_CUDA_ERROR, "CUDA_ERROR", ObjectKind::Gpu},
    {ATTNC_STATUS_CACHE_POSITION, "CACHE_POSITION", std::nullopt},
    {ATTNC_STATUS_OUT_OF_MEMORY, "OUT_OF_MEMORY", ObjectKind::Cpu},
};

constexpr llvm::StringLiteral kBufferMacroSuffixes[] = {"_RANK", "_SHAPE",
                                                        "_NUMEL"};

/// Internal symbols of objects (GPU host functions), never declared in a
/// header.
constexpr llvm::StringLiteral kInternalPrefix = "__attnc_";

/// The packed entries' prefix: declared in headers, so an identifier C and
/// C++ leave to programs (not `__`, which is the implementation's), in the
/// `attnc_` namespace that no block name may take.
constexpr llvm::StringLiteral kPackedPrefix = "attnc_packed_";

/// The C library and libdl functions that objects and their CUDA loader
/// call (beyond the C standard library, which Sema's C-name checks know):
/// a kernel exported under one of these names would be called instead.
const llvm::StringSet<> &loaderFunctions() {
  static const llvm::StringSet<> set = {
      "dlopen",  "dlsym",  "dlerror",        "dlclose",       "dladdr",
      "dlvsym",  "calloc", "getenv",         "secure_getenv", "vsnprintf",
      "strncmp", "strtol", "posix_memalign", "aligned_alloc"};
  return set;
}

} // namespace

const EntryDescription &mlir::attn::abi::describe(Entry entry) {
  for (const EntryDescription &description : kEntries)
    if (description.entry == entry)
      return description;
  llvm_unreachable("an Entry without a description");
}

llvm::ArrayRef<Entry> mlir::attn::abi::entriesOf(ObjectKind kind) {
  return kind == ObjectKind::Cpu ? llvm::ArrayRef<Entry>(kCpuEntries)
                                 : llvm::ArrayRef<Entry>(kGpuEntries);
}

llvm::ArrayRef<EntryDescription> mlir::attn::abi::allEntries() {
  return kEntries;
}

std::string mlir::attn::abi::entrySymbol(llvm::StringRef block, Entry entry) {
  return (block + describe(entry).suffix).str();
}

std::string mlir::attn::abi::packedEntrySymbol(llvm::StringRef symbol) {
  return (kPackedPrefix + symbol).str();
}

std::vector<std::string> mlir::attn::abi::exportedSymbols(llvm::StringRef block,
                                                          ObjectKind kind) {
  std::vector<std::string> symbols;
  for (Entry entry : entriesOf(kind)) {
    symbols.push_back(entrySymbol(block, entry));
    if (describe(entry).hasPackedForm)
      symbols.push_back(packedEntrySymbol(symbols.back()));
  }
  return symbols;
}

std::string mlir::attn::abi::deviceFunctionSymbol(llvm::StringRef block) {
  return (kInternalPrefix + "device_" + block).str();
}

llvm::StringRef mlir::attn::abi::nameOf(ArgumentRole role) {
  switch (role) {
  case ArgumentRole::Input:
    return "input";
  case ArgumentRole::Param:
    return "param";
  case ArgumentRole::State:
    return "state";
  case ArgumentRole::Output:
    return "output";
  }
  llvm_unreachable("an ArgumentRole");
}

std::optional<ArgumentRole> mlir::attn::abi::roleNamed(llvm::StringRef name) {
  for (ArgumentRole role : {ArgumentRole::Input, ArgumentRole::Param,
                            ArgumentRole::State, ArgumentRole::Output})
    if (nameOf(role) == name)
      return role;
  return std::nullopt;
}

unsigned mlir::attn::abi::packedPosition(llvm::ArrayRef<ArgumentRole> roles) {
  return llvm::find(roles, ArgumentRole::Output) - roles.begin();
}

llvm::SmallVector<Parameter>
mlir::attn::abi::parametersOf(Entry entry, llvm::ArrayRef<ArgumentRole> roles) {
  llvm::SmallVector<Parameter> parameters;
  auto buffer = [&](unsigned i) {
    parameters.push_back({Parameter::Kind::Buffer, i});
  };
  auto packed = [&] { parameters.push_back({Parameter::Kind::Packed, 0}); };
  switch (describe(entry).layout) {
  case Layout::Buffers:
    for (unsigned i = 0; i < roles.size(); ++i)
      buffer(i);
    break;
  case Layout::ParamsThenPacked:
    for (unsigned i = 0; i < roles.size(); ++i)
      if (roles[i] == ArgumentRole::Param)
        buffer(i);
    packed();
    break;
  case Layout::PackedBeforeOutputs: {
    unsigned at = packedPosition(roles);
    for (unsigned i = 0; i < roles.size(); ++i) {
      if (i == at)
        packed();
      buffer(i);
    }
    if (at == roles.size())
      packed();
    break;
  }
  case Layout::StreamThenBuffers:
    parameters.push_back({Parameter::Kind::Stream, 0});
    for (unsigned i = 0; i < roles.size(); ++i)
      buffer(i);
    break;
  case Layout::None:
    break;
  }
  return parameters;
}

llvm::ArrayRef<StatusDescription> mlir::attn::abi::documentedStatuses() {
  return kStatuses;
}

std::string mlir::attn::abi::macroPrefix(llvm::StringRef name) {
  std::string result;
  for (char c : name)
    result += llvm::isAlnum(c) ? llvm::toUpper(c) : '_';
  return result;
}

std::string mlir::attn::abi::includeGuard(llvm::StringRef block) {
  return "ATTNC_KERNEL_" + macroPrefix(block) + "_H";
}

llvm::ArrayRef<llvm::StringLiteral> mlir::attn::abi::bufferMacroSuffixes() {
  return kBufferMacroSuffixes;
}

std::vector<std::string>
mlir::attn::abi::bufferNames(llvm::ArrayRef<std::string> arguments,
                             llvm::ArrayRef<std::string> outputs) {
  llvm::StringSet<> argumentNames, taken;
  for (const std::string &name : arguments)
    argumentNames.insert(name);
  taken = argumentNames;
  for (const std::string &name : outputs)
    taken.insert(name);
  std::vector<std::string> names(arguments.begin(), arguments.end());
  for (std::string name : outputs) {
    if (argumentNames.contains(name)) {
      do
        name += "_out";
      while (taken.contains(name));
      taken.insert(name);
    }
    names.push_back(std::move(name));
  }
  return names;
}

std::string
mlir::attn::abi::packedParameterName(llvm::ArrayRef<std::string> buffers) {
  std::string packed = "packed";
  while (llvm::any_of(buffers, [&](const std::string &name) {
    return macroPrefix(name) == macroPrefix(packed);
  }))
    packed += "_";
  return packed;
}

std::string
mlir::attn::abi::streamParameterName(llvm::ArrayRef<std::string> buffers) {
  std::string stream = "stream";
  while (llvm::is_contained(buffers, stream))
    stream += "_";
  return stream;
}

std::string
mlir::attn::abi::packedNumelMacro(llvm::StringRef block,
                                  llvm::ArrayRef<std::string> buffers) {
  return macroPrefix(block) + "_" + macroPrefix(packedParameterName(buffers)) +
         "_NUMEL";
}

std::string
mlir::attn::abi::packedBytesMacro(llvm::StringRef block,
                                  llvm::ArrayRef<std::string> buffers) {
  return macroPrefix(block) + "_" + macroPrefix(packedParameterName(buffers)) +
         "_BYTES";
}

std::vector<HeaderName>
mlir::attn::abi::headerNames(llvm::StringRef block,
                             llvm::ArrayRef<std::string> dims,
                             llvm::ArrayRef<std::string> buffers) {
  std::vector<HeaderName> names;
  std::string prefix = macroPrefix(block);
  for (const EntryDescription &entry : kEntries) {
    std::string symbol = entrySymbol(block, entry.entry);
    names.push_back({symbol, HeaderName::Origin::Entry, 0,
                     entry.entry == Entry::Run
                         ? "the kernel"
                         : ("the exported '" + entry.suffix.drop_front() +
                            "' entry of block '" + block + "'")
                               .str()});
  }
  names.push_back(
      {includeGuard(block), HeaderName::Origin::Abi, 0, "the include guard"});
  for (const StatusDescription &status : kStatuses)
    names.push_back({prefix + "_STATUS_" + status.macroSuffix.str(),
                     HeaderName::Origin::Abi, 0, "a status code"});
  names.push_back({packedNumelMacro(block, buffers), HeaderName::Origin::Abi, 0,
                   "the size of the packed params"});
  names.push_back({packedBytesMacro(block, buffers), HeaderName::Origin::Abi, 0,
                   "the bytes of the packed params"});
  for (auto [i, dim] : llvm::enumerate(dims))
    names.push_back({prefix + "_" + macroPrefix(dim), HeaderName::Origin::Dim,
                     static_cast<unsigned>(i), ""});
  for (auto [i, buffer] : llvm::enumerate(buffers))
    for (llvm::StringLiteral suffix : kBufferMacroSuffixes)
      names.push_back({prefix + "_" + macroPrefix(buffer) + suffix.str(),
                       HeaderName::Origin::Buffer, static_cast<unsigned>(i),
                       ""});
  return names;
}

std::string mlir::attn::abi::reservedSymbolConflict(llvm::StringRef name) {
  if (name.starts_with("attnc_"))
    return "begins with 'attnc_', the prefix of attnc's runtime functions";
  if (name.starts_with("mgpu"))
    return "begins with 'mgpu', the prefix of the GPU loader's functions";
  if (name.starts_with("halide_"))
    return "begins with 'halide_', the prefix of the Halide runtime's "
           "functions";
  if (name.starts_with("pthread_"))
    return "is in the 'pthread_' namespace, which objects' threads use";
  if (loaderFunctions().contains(name))
    return "is a C library function that objects or their CUDA loader call";
  return "";
}
