//===- ParseAttnIR.cpp - Kernels written in the attn dialect --------------===//

#include "attnc/Gen/ParseAttnIR.h"

#include "attn/IR/AttnDialect.h"
#include "attn/IR/AttnOps.h"
#include "attn/IR/AttnShapeRules.h"
#include "attn/IR/AttnTypes.h"
#include "attn/Target/CNames.h"
#include "attn/Target/ElementType.h"
#include "attn/Target/KernelAbi.h"

#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

using namespace attnc;
using mlir::attn::AttnDialect;
using mlir::func::FuncOp;

bool attnc::isAttnIRFile(llvm::StringRef path) {
  return llvm::sys::path::extension(path) == ".mlir";
}

namespace {

using mlir::attn::abi::cNameConflict;
using mlir::attn::abi::CNameUse;
using mlir::attn::abi::printableName;

/// Whether `op` is one of the language's ops (AttnOps.def), not one that
/// attnc's passes make (fused_attention, decode_attention, cache_update).
bool isSpecOp(mlir::Operation *op) {
#define ATTN_OP(Kind, name, Class, rule, PARAMS)                               \
  if (mlir::isa<mlir::attn::Class>(op))                                        \
    return true;
#include "attn/IR/AttnOps.def"
  return false;
}

/// How deep brackets may nest in attn IR. MLIR's parser, verifier and
/// printer recurse once per level (regions, attributes, types): thousands
/// of nested modules overflowed the stack. What attnc writes nests less
/// than ten deep.
constexpr unsigned kMaxNesting = 256;

/// Where `text` first nests deeper than kMaxNesting, counting '{', '(', '['
/// and '<' outside string literals and comments (`->`, `<=` and `>=` are
/// no brackets), or null. A scan of the text, before the parser recurses.
const char *tooDeeplyNested(llvm::StringRef text) {
  unsigned depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    char next = i + 1 < text.size() ? text[i + 1] : '\0';
    if (c == '"') { // a string literal, with its escapes
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      continue;
    }
    if (c == '/' && next == '/') { // a comment, to the end of its line
      i = text.find('\n', i);
      if (i == llvm::StringRef::npos)
        break;
      continue;
    }
    if ((c == '-' || c == '<' || c == '>') && (next == '>' || next == '=')) {
      ++i;
      continue;
    }
    if (c == '{' || c == '(' || c == '[' || c == '<') {
      if (++depth > kMaxNesting)
        return text.data() + i;
    } else if ((c == '}' || c == ')' || c == ']' || c == '>') && depth > 0) {
      --depth;
    }
  }
  return nullptr;
}

/// The element types a kernel's buffers may have, for messages: "f32 or
/// i32".
std::string supportedElementTypes() {
  llvm::SmallVector<llvm::StringRef> names;
  for (const mlir::attn::ElementTypeInfo &row : mlir::attn::elementTypes())
    if (row.isSupported)
      names.push_back(row.name);
  return llvm::join(llvm::ArrayRef(names).drop_back(), ", ") + " or " +
         names.back().str();
}

/// Checks that a parsed module has the shape of MLIRGen's output (the
/// header's comment); each problem is an error at its operation.
class IRChecker {
public:
  explicit IRChecker(mlir::ModuleOp module) : module(module) {}

  /// True when no error was found.
  bool run() {
    for (mlir::Operation &op : *module.getBody()) {
      auto func = mlir::dyn_cast<FuncOp>(op);
      if (!func) {
        error(&op) << "'" << op.getName()
                   << "' at the top level: an attn module holds only "
                      "func.func (a public one per kernel, private ones "
                      "that kernels call)";
        continue;
      }
      if (func.isExternal()) {
        error(func) << "function '" << func.getName()
                    << "' has no body: attnc compiles functions defined in "
                       "the module";
        continue;
      }
      checkInterface(func);
      checkBody(func);
      checkStates(func);
    }
    if (ok)
      checkNoRecursion();
    return ok;
  }

private:
  mlir::InFlightDiagnostic error(mlir::Operation *op) {
    return error(op->getLoc());
  }
  mlir::InFlightDiagnostic error(mlir::Location loc) {
    ok = false;
    ++errors;
    return mlir::emitError(loc);
  }

  /// A buffer's type: a static tensor of a supported element type, of at
  /// most the size the language allows.
  void checkBufferType(FuncOp func, mlir::Location loc, mlir::Type type,
                       llvm::StringRef what) {
    auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(type);
    std::optional<mlir::attn::ElementType> element =
        tensor ? mlir::attn::elementTypeOf(tensor.getElementType())
               : std::nullopt;
    if (!tensor || !tensor.hasStaticShape() || !element ||
        !mlir::attn::describe(*element).isSupported) {
      error(loc) << what << " of '" << func.getName() << "' has type " << type
                 << "; a kernel's arguments and results are tensors of "
                    "static shape with elements "
                 << supportedElementTypes();
      return;
    }
    int64_t elements = 1;
    for (int64_t size : tensor.getShape()) {
      if (size != 0 && elements > mlir::attn::rules::kMaxElements / size) {
        error(loc) << what << " of '" << func.getName() << "' (" << type
                   << ") is too large; at most 2^40 elements are supported";
        return;
      }
      elements *= size;
    }
  }

  /// The attn.name of argument or result `index` (the dialect's verifier
  /// has checked it as a C parameter name); empty after an error.
  std::string nameOf(FuncOp func, mlir::Location loc,
                     mlir::DictionaryAttr attrs, llvm::StringRef what) {
    auto name = attrs ? attrs.getAs<mlir::StringAttr>(AttnDialect::kNameAttr)
                      : mlir::StringAttr();
    if (!name) {
      error(loc) << what << " of '" << func.getName()
                 << "' has no attn.name: attnc names every buffer, e.g. "
                    "{attn.name = \"X\", attn.role = \"input\"}";
      return "";
    }
    return name.getValue().str();
  }

  /// The kernel's name, its buffers' names and roles, its dims (names,
  /// roles and dims already verified by the dialect where they are given).
  void checkInterface(FuncOp func) {
    std::string kernel = printableName(func.getName());
    if (func.isPublic()) {
      std::string conflict = cNameConflict(func.getName(), CNameUse::Function);
      if (conflict.empty())
        conflict = mlir::attn::abi::reservedSymbolConflict(func.getName());
      if (!conflict.empty())
        error(func) << "kernel '" << kernel << "' " << conflict
                    << "; rename it (the name is part of the kernel's C "
                       "interface)";
    }
    std::vector<std::string> arguments, results, dims;
    unsigned errorsBefore = errors;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      std::string what = "argument #" + std::to_string(i);
      mlir::Location loc = func.getArgument(i).getLoc();
      checkBufferType(func, loc, func.getArgument(i).getType(), what);
      std::string name = nameOf(func, loc, func.getArgAttrDict(i), what);
      auto role =
          func.getArgAttrOfType<mlir::StringAttr>(i, AttnDialect::kRoleAttr);
      std::optional<mlir::attn::abi::ArgumentRole> named =
          role ? mlir::attn::abi::roleNamed(role.getValue()) : std::nullopt;
      if (!named || *named == mlir::attn::abi::ArgumentRole::Output)
        error(loc) << what << " of '" << kernel
                   << "' needs attn.role = \"input\", \"param\" or \"state\"";
      arguments.push_back(name);
    }
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      std::string what = "result #" + std::to_string(i);
      checkBufferType(func, func.getLoc(), func.getResultTypes()[i], what);
      std::string name =
          nameOf(func, func.getLoc(), func.getResultAttrDict(i), what);
      results.push_back(name);
    }
    if (func.getNumResults() == 0)
      error(func) << "'" << kernel << "' has no results";

    if (auto dimNames =
            func->getAttrOfType<mlir::ArrayAttr>(AttnDialect::kDimNamesAttr)) {
      for (mlir::Attribute dim : dimNames)
        dims.push_back(mlir::cast<mlir::StringAttr>(dim).getValue().str());
    } else {
      // Dims only name sizes in the header: a hand-written kernel may leave
      // them out (the verifier allows both or neither).
      mlir::Builder b(func.getContext());
      func->setAttr(AttnDialect::kDimNamesAttr, b.getArrayAttr({}));
      func->setAttr(AttnDialect::kDimValuesAttr, b.getDenseI64ArrayAttr({}));
    }
    if (!func.isPublic() || errors != errorsBefore)
      return;
    // Two kernels whose headers declare one name do not compile together,
    // nor does one whose names give one of its header's own.
    std::vector<std::string> buffers =
        mlir::attn::abi::bufferNames(arguments, results);
    for (const mlir::attn::abi::HeaderName &name :
         mlir::attn::abi::headerNames(kernel, dims, buffers)) {
      auto [it, inserted] = headerNames.try_emplace(name.name, kernel);
      if (!inserted)
        error(func) << "the header of '" << kernel << "' declares '"
                    << name.name << "', as "
                    << (it->second == kernel
                            ? "it already does for another of its names"
                            : "the header of '" + it->second + "' does")
                    << "; rename one";
    }
  }

  /// The marks attnc's passes leave (attn-split-prepare's parts, its
  /// packed size, attn-compute-in-f32's rounding, the offset calls) are
  /// theirs to set: a kernel read from a file does not carry them.
  void checkNoPassMarks(mlir::Operation *op) {
    for (llvm::StringRef mark :
         {AttnDialect::kPackedElementsAttr, AttnDialect::kKernelPartAttr,
          AttnDialect::kOffsetCallOfAttr, AttnDialect::kOffsetCallBytesAttr,
          AttnDialect::kInnerRoundingAttr, AttnDialect::kBf16PairGemmAttr})
      if (op->hasAttr(mark))
        error(op) << "'" << mark
                  << "' is set by attnc's passes, not by hand; remove it";
  }

  void checkBody(FuncOp func) {
    checkNoPassMarks(func);
    if (!func.getBody().hasOneBlock())
      error(func) << "'" << func.getName()
                  << "' has several blocks: a kernel's body is one block of "
                     "ops";
    func.getBody().walk([&](mlir::Operation *op) {
      checkNoPassMarks(op);
      if (mlir::isa<mlir::func::ReturnOp>(op))
        return;
      if (mlir::isa_and_nonnull<AttnDialect>(op->getDialect())) {
        if (!isSpecOp(op))
          error(op) << "'" << op->getName()
                    << "' is made by attnc's passes, not written by hand: a "
                       "kernel's body holds the ops of the language "
                       "(docs/language.md)";
        return;
      }
      if (auto call = mlir::dyn_cast<mlir::func::CallOp>(op)) {
        calls[func].push_back(symbols.lookup<FuncOp>(call.getCallee()));
        return;
      }
      error(op) << "'" << op->getName()
                << "' is not an attn op: a kernel's body is attn ops, "
                   "func.call and func.return (attnc compiles the attn "
                   "dialect, not the levels below it)";
    });
  }

  /// A state (attn.updates = i on a result) is updated in place: its
  /// result returns the state argument itself, or the cache an attention
  /// op with that argument as its cache wrote, which nothing reads after
  /// it (one-shot bufferization would update a copy: the caller would never
  /// see the update).
  void checkStates(FuncOp func) {
    if (!func.getBody().hasOneBlock())
      return; // reported by checkBody
    auto ret = mlir::cast<mlir::func::ReturnOp>(
        func.getBody().front().getTerminator());
    for (unsigned r = 0; r < func.getNumResults(); ++r) {
      auto updates = func.getResultAttrOfType<mlir::IntegerAttr>(
          r, AttnDialect::kUpdatesAttr);
      if (!updates)
        continue;
      mlir::BlockArgument state = func.getArgument(updates.getInt());
      mlir::Value returned = ret.getOperand(r);
      if (returned == state)
        continue;
      auto updater = returned.getDefiningOp<mlir::attn::MultiheadAttentionOp>();
      bool writes = updater && updater.hasCache() &&
                    ((updater.getCacheK() == state &&
                      updater.getUpdatedCacheK() == returned) ||
                     (updater.getCacheV() == state &&
                      updater.getUpdatedCacheV() == returned));
      if (!writes) {
        error(ret) << "result #" << r << " of '" << func.getName()
                   << "' (attn.updates = " << updates.getInt()
                   << ") returns neither state argument #" << updates.getInt()
                   << " nor the cache an attn.multihead_attention with it as "
                      "its cache wrote: a state is updated in place";
        continue;
      }
      for (mlir::Operation *user : state.getUsers())
        if (user != updater.getOperation() &&
            updater->isBeforeInBlock(
                updater->getBlock()->findAncestorOpInBlock(*user))) {
          error(user) << "reads state argument #" << updates.getInt()
                      << " after the op that updates it in place";
          break;
        }
    }
  }

  /// A block may not call itself, directly or through others (the language
  /// refuses it too: calls are inlined into their callers' schedules).
  void checkNoRecursion() {
    enum class Mark { Visiting, Done };
    llvm::DenseMap<mlir::Operation *, Mark> marks;
    std::function<bool(FuncOp)> visit = [&](FuncOp func) {
      auto [it, inserted] = marks.try_emplace(func, Mark::Visiting);
      if (!inserted)
        return it->second == Mark::Done;
      for (FuncOp callee : calls[func])
        if (callee && !visit(callee)) {
          if (ok)
            error(func) << "'" << func.getName() << "' calls itself through '"
                        << callee.getName() << "'; blocks may not be recursive";
          return false;
        }
      marks[func] = Mark::Done;
      return true;
    };
    for (FuncOp func : module.getOps<FuncOp>())
      if (!visit(func))
        return;
  }

  mlir::ModuleOp module;
  mlir::SymbolTable symbols{module};
  bool ok = true;
  unsigned errors = 0;
  llvm::StringMap<std::string> headerNames;
  llvm::DenseMap<mlir::Operation *, llvm::SmallVector<FuncOp>> calls;
};

} // namespace

void attnc::keepOnlyKernel(mlir::ModuleOp module, llvm::StringRef kernel) {
  mlir::SymbolTable symbols(module);
  auto keep = symbols.lookup<FuncOp>(kernel);
  llvm::SmallVector<FuncOp> work{keep};
  llvm::DenseSet<mlir::Operation *> reachable{keep};
  while (!work.empty()) {
    FuncOp func = work.pop_back_val();
    func.walk([&](mlir::func::CallOp call) {
      auto callee = symbols.lookup<FuncOp>(call.getCallee());
      if (reachable.insert(callee).second)
        work.push_back(callee);
    });
  }
  // What the kernel calls becomes private, as MLIRGen makes a selected
  // block's callees: part of its object, not kernels of their own.
  for (FuncOp func : llvm::make_early_inc_range(module.getOps<FuncOp>())) {
    if (!reachable.contains(func))
      func.erase();
    else if (func != keep)
      func.setPrivate();
  }
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
attnc::parseAttnIR(mlir::MLIRContext &context, llvm::StringRef text,
                   llvm::StringRef sourceName, llvm::StringRef block,
                   llvm::raw_ostream &diagnostics, bool allBlocks) {
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, sourceName), llvm::SMLoc());
  unsigned errors = 0;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context, diagnostics);
  mlir::ScopedDiagnosticHandler counter(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      ++errors;
    return mlir::failure(); // on to the handler that prints it
  });
  auto failure = [&]() {
    return llvm::createStringError("'" + sourceName + "' has " +
                                   llvm::Twine(errors) + " error" +
                                   (errors == 1 ? "" : "s"));
  };
  // The located message is enough; the operation's generic form is not
  // what the user wrote.
  context.printOpOnDiagnostic(false);
  context
      .loadDialect<AttnDialect, mlir::func::FuncDialect, mlir::DLTIDialect>();
  if (const char *deep = tooDeeplyNested(text)) {
    auto [line, column] =
        sourceMgr.getLineAndColumn(llvm::SMLoc::getFromPointer(
            sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())
                ->getBufferStart() +
            (deep - text.data())));
    mlir::emitError(
        mlir::FileLineColLoc::get(&context, sourceName, line, column))
        << "nested more than " << kMaxNesting
        << " levels deep; attnc reads attn IR nested at most that deep";
    return failure();
  }
  // attnc reads the attn dialect, func and DLTI; `context` holds every
  // dialect attnc lowers through, whose parsers are not all written for
  // hostile input (linalg.transpose's dereferenced a null attribute). So the
  // text is parsed and verified first where only those three exist: an op,
  // type or attribute of another dialect is an error there, and the parse
  // into `context` reads only what that one accepted.
  {
    mlir::DialectRegistry allowed;
    allowed.insert<AttnDialect, mlir::func::FuncDialect, mlir::DLTIDialect>();
    mlir::MLIRContext gate(allowed, mlir::MLIRContext::Threading::DISABLED);
    gate.printOpOnDiagnostic(false);
    mlir::SourceMgrDiagnosticHandler gateHandler(sourceMgr, &gate, diagnostics);
    mlir::ScopedDiagnosticHandler gateCounter(&gate, [&](mlir::Diagnostic &d) {
      if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
        ++errors;
      return mlir::failure();
    });
    if (!mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &gate)) {
      errors = std::max(errors, 1u);
      return failure();
    }
  }
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module) {
    errors = std::max(errors, 1u);
    return failure();
  }
  if (!IRChecker(*module).run())
    return failure();
  // The target is the compile options' (an --emit=attn output names the
  // CPU it was printed for).
  (*module)->removeAttr(mlir::DLTIDialect::kTargetSystemDescAttrName);

  llvm::SmallVector<FuncOp> kernels;
  llvm::SmallVector<llvm::StringRef> names;
  for (FuncOp func : module->getOps<FuncOp>())
    if (func.isPublic()) {
      kernels.push_back(func);
      names.push_back(func.getName());
    }
  if (kernels.empty())
    return llvm::createStringError(
        "'" + sourceName +
        "' has no kernel: attnc compiles each public func.func of the "
        "module");
  if (allBlocks)
    return module;
  if (block.empty() && kernels.size() > 1)
    return llvm::createStringError(
        "'" + sourceName + "' has " + llvm::Twine(kernels.size()) +
        " kernels; choose one (" + llvm::join(names, ", ") + ")");
  FuncOp selected = block.empty() ? kernels.front() : FuncOp();
  for (FuncOp kernel : kernels)
    if (kernel.getName() == block)
      selected = kernel;
  if (!selected)
    return llvm::createStringError(
        "no kernel named '" + block + "' in '" + sourceName +
        "'; available kernels: " + llvm::join(names, ", "));
  keepOnlyKernel(*module, selected.getName());
  return module;
}
