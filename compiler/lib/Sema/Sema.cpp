//===- Sema.cpp - Semantic checks of .attn files --------------------------===//

#include "attnc/Sema/Sema.h"

#include "attnc/Sema/OpTable.h"
#include "attnc/Support/Diagnostics.h"

#include "attn/Target/CNames.h"
#include "attn/Target/KernelAbi.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <limits>

using namespace attnc;
using namespace attnc::ast;
using llvm::SMLoc;
using llvm::SMRange;
using llvm::StringRef;
using llvm::Twine;
namespace rules = mlir::attn::rules;
namespace abi = mlir::attn::abi;

namespace {

/// Largest tensor a declaration may have; the rules use the same bound so
/// that no product of dims overflows int64 downstream.
using mlir::attn::abi::cNameConflict;
using mlir::attn::abi::CNameUse;
using mlir::attn::rules::kMaxElements;
using mlir::attn::rules::kMaxRank;

StringRef sourceText(SMRange range) {
  return StringRef(range.Start.getPointer(),
                   range.End.getPointer() - range.Start.getPointer());
}

struct Symbol {
  enum class Kind { Dim, Input, Param, State, Value };
  Symbol(Kind kind, SMRange defRange) : kind(kind), defRange(defRange) {}

  Kind kind;
  SMRange defRange;
  int64_t dimValue = 0;
  /// Tensors: the shape; unset when the definition failed (poisoned).
  std::optional<TensorShape> shape;
  bool poisoned = false;
  bool used = false;
  /// States: where a call takes it as a KV cache (cache_k=, cache_v=),
  /// which writes it, and where another argument reads it; a state has
  /// either one cache use or only reads.
  std::optional<SMRange> cacheUse, readUse;

  bool isTensor() const { return kind != Kind::Dim; }
};

/// "an input", "a param", ...: for "'X' is an input, not a dim".
StringRef describeWithArticle(Symbol::Kind kind) {
  switch (kind) {
  case Symbol::Kind::Dim:
    return "a dim";
  case Symbol::Kind::Input:
    return "an input";
  case Symbol::Kind::Param:
    return "a param";
  case Symbol::Kind::State:
    return "a state";
  case Symbol::Kind::Value:
    return "a tensor value";
  }
  return "a name";
}

StringRef describeSymbol(Symbol::Kind kind) {
  switch (kind) {
  case Symbol::Kind::Dim:
    return "dim";
  case Symbol::Kind::Input:
    return "input";
  case Symbol::Kind::Param:
    return "param";
  case Symbol::Kind::State:
    return "state";
  case Symbol::Kind::Value:
    return "value";
  }
  return "name";
}

/// The second result of an accepted call with return_weights=true.
std::optional<TensorShape> attentionWeights(const CallExpr &call) {
  std::optional<unsigned> slot = call.op->indexOf("return_weights");
  if (!slot || !call.bound[*slot].boolValue)
    return std::nullopt;
  const TensorShape &q = *call.get("q").tensor->shape;
  const TensorShape &k = *call.get("k").tensor->shape;
  if (call.op->kind == OpKind::MultiheadAttention)
    return rules::multiheadAttentionWeightsShape(q, k,
                                                 call.get("heads").intValue);
  return rules::attentionWeightsShape(q, k);
}

/// `Y, A`: the output names of a checked block.
std::string outputList(const Block &block) {
  std::string text;
  for (const Ident *output : block.outputs)
    text += (text.empty() ? "" : ", ") + output->name;
  return text;
}

/// `encoder(X, valid_lens, W_q=, W_k=)`: a block's call signature, inputs
/// positional or by keyword, params by keyword.
std::string blockSignature(const Block &block) {
  std::string text = block.name.name + "(";
  bool first = true;
  for (const DeclStmt *decl : block.arguments) {
    text +=
        (first ? "" : ", ") + decl->name.name + (decl->isParam() ? "=" : "");
    first = false;
  }
  return text + ")";
}

/// Calls every CallExpr of `block`, nested ones included.
void forEachCall(const Block &block,
                 llvm::function_ref<void(const CallExpr &)> visit) {
  llvm::SmallVector<const Expr *, 16> work;
  for (const auto &stmt : block.stmts)
    if (auto *assign = llvm::dyn_cast<AssignStmt>(stmt.get()))
      work.push_back(assign->value.get());
  while (!work.empty()) {
    const Expr *expr = work.pop_back_val();
    if (auto *call = llvm::dyn_cast<CallExpr>(expr)) {
      visit(*call);
      for (const Argument &arg : call->args)
        work.push_back(arg.value.get());
    }
  }
}

/// Checks one block: a scope of dims and tensors filled statement by
/// statement.
class BlockChecker {
public:
  BlockChecker(DiagnosticEngine &diag, Sema &sema, Block &block)
      : diag(diag), sema(sema), block(block) {}

  void run();

  /// The names the block's header declares, as run() found them.
  std::vector<Sema::HeaderName> takeHeaderNames() {
    return std::move(headerNames);
  }

private:
  // Names.
  bool define(const Ident &name, Symbol symbol);
  /// Looks `name` up for a use; reports undefined names (with a suggestion
  /// among names for which `wanted` holds) and returns null.
  Symbol *resolve(const Ident &name, bool wantTensor);
  std::vector<StringRef> namesOfKind(bool tensors) const;

  // Statements.
  void checkDims(DimStmt &stmt);
  void checkDecl(DeclStmt &stmt);
  /// The C header names each dim, input, param and output in macros
  /// (BLOCK_NAME, BLOCK_NAME_SHAPE, ...), upper-cased: two names that give
  /// one macro are an error at the later one.
  void checkHeaderMacros();
  void checkAssign(AssignStmt &stmt);
  /// Reports names that do not match the value's `results` one for one.
  void reportResultCount(const AssignStmt &stmt, const CallExpr *call,
                         size_t results);
  std::optional<TensorShape> checkType(const TypeExpr &type);
  void checkOutputs();
  void checkUnused();

  // Expressions.
  const TensorShape *checkTensor(Expr &expr, const Twine &role);
  const TensorShape *checkCall(CallExpr &call);
  /// A call of another block of the file.
  const TensorShape *checkBlockCall(CallExpr &call, const Block &callee);
  bool bindBlockArguments(CallExpr &call, const Block &callee,
                          llvm::SmallVectorImpl<const Argument *> &given);
  bool bindArguments(CallExpr &call,
                     llvm::SmallVectorImpl<const Argument *> &given);
  bool evaluateAttribute(const ParamInfo &param, const Argument &arg,
                         const OpInfo &op, BoundArgument &out);
  std::optional<TensorShape> applyRules(CallExpr &call);
  /// A tensor argument of an op: a cache must be a state, and a state
  /// written as a cache is used nowhere else.
  bool checkStateUse(const ParamInfo &param, const Expr &value);
  /// Marks every name under `expr` as used, silently (after a failed call,
  /// so that its operands do not become "unused" errors too).
  void markUses(const Expr &expr);

  DiagnosticEngine &diag;
  Sema &sema;
  Block &block;
  llvm::StringMap<Symbol> scope;
  /// Definition order, for the unused-name check.
  std::vector<StringRef> order;
  /// Every name the block defines anywhere, for "used before definition".
  llvm::StringMap<SMRange> allDefinitions;
  llvm::StringSet<> usedEarly;
  std::vector<const Ident *> outputNames;
  bool sawOutputStmt = false;
  std::vector<Sema::HeaderName> headerNames;
};

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

bool BlockChecker::define(const Ident &name, Symbol symbol) {
  // A use before the definition was reported already; it still is a use.
  symbol.used = usedEarly.contains(name.name);
  auto [it, inserted] = scope.try_emplace(name.name, symbol);
  if (!inserted) {
    diag.error(name.range, "redefinition of " + quoted(name.name));
    diag.note(it->second.defRange.Start,
              quoted(name.name) + " was first defined here",
              it->second.defRange);
    return false;
  }
  order.push_back(it->first());
  return true;
}

std::vector<StringRef> BlockChecker::namesOfKind(bool tensors) const {
  std::vector<StringRef> names;
  for (const auto &entry : scope)
    if (entry.second.isTensor() == tensors)
      names.push_back(entry.first());
  return names;
}

Symbol *BlockChecker::resolve(const Ident &name, bool wantTensor) {
  auto it = scope.find(name.name);
  if (it != scope.end()) {
    it->second.used = true;
    return &it->second;
  }
  if (llvm::any_of(block.brokenNames, [&](const Ident &broken) {
        return broken.name == name.name;
      }))
    return nullptr; // its definition had a syntax error, already reported
  auto later = allDefinitions.find(name.name);
  if (later != allDefinitions.end()) {
    usedEarly.insert(name.name);
    diag.error(name.range,
               quoted(name.name) + " is used before its definition");
    diag.note(later->second.Start, quoted(name.name) + " is defined here",
              later->second);
    return nullptr;
  }
  std::vector<StringRef> candidates = namesOfKind(wantTensor);
  StringRef meant = closestMatch(name.name, candidates);
  diag.error(name.range,
             Twine(wantTensor ? "undefined name " : "undefined dim ") +
                 quoted(name.name) + didYouMean(name.name, candidates));
  // The suggested name counts as used: 'output y' for 'Y' is one mistake,
  // not also "'Y' is never used".
  if (!meant.empty())
    if (auto symbol = scope.find(meant); symbol != scope.end())
      symbol->second.used = true;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

void BlockChecker::run() {
  for (const auto &stmt : block.stmts) {
    auto note = [&](const Ident &name) {
      allDefinitions.try_emplace(name.name, name.range);
    };
    if (auto *dims = llvm::dyn_cast<DimStmt>(stmt.get()))
      for (const DimStmt::Def &def : dims->defs)
        note(def.name);
    else if (auto *decl = llvm::dyn_cast<DeclStmt>(stmt.get()))
      note(decl->name);
    else if (auto *assign = llvm::dyn_cast<AssignStmt>(stmt.get()))
      for (const Ident &name : assign->names)
        note(name);
  }

  for (const auto &stmt : block.stmts) {
    if (diag.tooManyErrors())
      return;
    if (auto *dims = llvm::dyn_cast<DimStmt>(stmt.get())) {
      checkDims(*dims);
    } else if (auto *decl = llvm::dyn_cast<DeclStmt>(stmt.get())) {
      checkDecl(*decl);
    } else if (auto *assign = llvm::dyn_cast<AssignStmt>(stmt.get())) {
      checkAssign(*assign);
    } else if (auto *output = llvm::dyn_cast<OutputStmt>(stmt.get())) {
      sawOutputStmt = true;
      for (const Ident &name : output->names)
        outputNames.push_back(&name);
    }
  }
  checkOutputs();
  checkHeaderMacros();
  // Without outputs everything is unused: that is one error, not many.
  if (!block.hadSyntaxErrors && sawOutputStmt)
    checkUnused();

  // What a call of this block binds and returns.
  block.arguments.clear();
  for (const auto &stmt : block.stmts)
    if (auto *decl = llvm::dyn_cast<DeclStmt>(stmt.get()))
      block.arguments.push_back(decl);
  block.outputShapes.clear();
  for (const Ident *output : block.outputs) {
    auto it = scope.find(output->name);
    if (it != scope.end() && it->second.shape)
      block.outputShapes.push_back(*it->second.shape);
  }
}

void BlockChecker::checkDims(DimStmt &stmt) {
  for (const DimStmt::Def &def : stmt.defs) {
    Symbol symbol{Symbol::Kind::Dim, def.name.range};
    symbol.dimValue = def.value;
    if (def.value <= 0) {
      diag.error(def.valueRange, "dim " + quoted(def.name.name) +
                                     " must be positive, got " +
                                     Twine(def.value));
      symbol.poisoned = true;
    }
    define(def.name, symbol);
  }
}

std::optional<TensorShape> BlockChecker::checkType(const TypeExpr &type) {
  TensorShape shape;
  StringRef element = type.element.name;
  // The element-type table's rows that specs may use.
  std::vector<StringRef> supported;
  for (const mlir::attn::ElementTypeInfo &info : mlir::attn::elementTypes())
    if (info.isSupported)
      supported.push_back(info.name);
  std::string expected =
      llvm::join(llvm::ArrayRef(supported).drop_back(), ", ") + " or " +
      supported.back().str();
  std::optional<mlir::attn::ElementType> parsed =
      mlir::attn::elementTypeNamed(element);
  if (!parsed) {
    diag.error(type.element.range, "unknown element type " + quoted(element) +
                                       "; expected " + expected +
                                       didYouMean(element, supported));
    return std::nullopt;
  }
  if (!mlir::attn::describe(*parsed).isSupported) {
    diag.error(type.element.range, "element type " + quoted(element) +
                                       " is reserved but not supported yet; "
                                       "use " +
                                       expected);
    return std::nullopt;
  }
  shape.element = *parsed;
  bool ok = true;
  for (const TypeExpr::DimRef &dim : type.dims) {
    int64_t size = dim.value;
    if (!dim.name.empty()) {
      Symbol *symbol = resolve({dim.name, dim.range}, /*wantTensor=*/false);
      if (!symbol) {
        ok = false;
        continue;
      }
      if (symbol->isTensor()) {
        diag.error(dim.range, quoted(dim.name) + " is " +
                                  describeWithArticle(symbol->kind) +
                                  ", not a dim; tensor shapes take integers "
                                  "or dim names");
        ok = false;
        continue;
      }
      if (symbol->poisoned) {
        ok = false;
        continue;
      }
      size = symbol->dimValue;
    } else if (size <= 0) {
      diag.error(dim.range,
                 "dimension sizes must be positive, got " + Twine(size));
      ok = false;
      continue;
    }
    shape.dims.push_back(size);
  }
  if (!ok)
    return std::nullopt;
  if (shape.rank() > kMaxRank) {
    diag.error(type.range, "tensor type has rank " + Twine(shape.rank()) +
                               "; at most rank " + Twine(kMaxRank) +
                               " is supported");
    return std::nullopt;
  }
  int64_t elements = 1;
  for (int64_t size : shape.dims) {
    if (size > kMaxElements / elements) {
      diag.error(type.range, "tensor type " + rules::formatShape(shape) +
                                 " is too large; at most 2^40 elements are "
                                 "supported");
      return std::nullopt;
    }
    elements *= size;
  }
  return shape;
}

/// Reports a name that would break the kernel's C interface (CNames.h).
void checkCName(DiagnosticEngine &diag, const Ident &name, CNameUse use,
                StringRef what) {
  std::string conflict = cNameConflict(name.name, use);
  if (!conflict.empty())
    diag.error(name.range, Twine(what) + " " + quoted(name.name) + " " +
                               conflict +
                               "; rename it (the name is part of the "
                               "kernel's C interface)");
}

void BlockChecker::checkDecl(DeclStmt &stmt) {
  checkCName(diag, stmt.name, CNameUse::Parameter, abi::nameOf(stmt.role));
  stmt.shape = checkType(stmt.type);
  Symbol::Kind kind =
      stmt.role == abi::ArgumentRole::Param   ? Symbol::Kind::Param
      : stmt.role == abi::ArgumentRole::State ? Symbol::Kind::State
                                              : Symbol::Kind::Input;
  Symbol symbol{kind, stmt.name.range};
  symbol.shape = stmt.shape;
  symbol.poisoned = !stmt.shape;
  define(stmt.name, symbol);
}

void BlockChecker::checkAssign(AssignStmt &stmt) {
  // A call is checked here rather than by checkTensor, which accepts
  // calls of one result only.
  llvm::SmallVector<TensorShape, 2> results;
  auto *call = llvm::dyn_cast<CallExpr>(stmt.value.get());
  if (call) {
    if (checkCall(*call))
      results = call->results;
  } else {
    std::string targets;
    for (const Ident &name : stmt.names)
      targets += (targets.empty() ? "" : ", ") + name.name;
    if (const TensorShape *shape = checkTensor(
            *stmt.value, "the value assigned to " + quoted(targets)))
      results.push_back(*shape);
  }
  if (!results.empty() && results.size() != stmt.names.size()) {
    reportResultCount(stmt, call, results.size());
    results.clear();
  }
  for (auto [i, name] : llvm::enumerate(stmt.names)) {
    Symbol symbol{Symbol::Kind::Value, name.range};
    if (!results.empty())
      symbol.shape = results[i];
    symbol.poisoned = results.empty();
    define(name, symbol);
  }
}

void BlockChecker::reportResultCount(const AssignStmt &stmt,
                                     const CallExpr *call, size_t results) {
  size_t names = stmt.names.size();
  std::string what;
  if (!call)
    what = quoted(sourceText(stmt.value->getRange())) + " is one tensor";
  else if (call->block)
    what = "block " + quoted(call->callee.name) + " has " +
           (results == 1 ? std::string("one result")
                         : std::to_string(results) + " results") +
           " (its output" + (results == 1 ? " " : "s ") +
           outputList(*call->block) + ")";
  else if (results == 1)
    what = quoted(call->callee.name) + " has one result";
  else
    what = quoted(call->callee.name) + " with return_weights=true has " +
           std::to_string(results) +
           " results (the output and the attention weights)";
  std::string message = what + ", but " + std::to_string(names) +
                        (names == 1 ? " name is" : " names are") + " bound";
  if (call && call->block)
    message += "; bind one name per output: " + outputList(*call->block) +
               " = " + call->callee.name + "(...)";
  else if (call && names < results)
    message += "; bind both: NAME, WEIGHTS = " + call->callee.name + "(...)";
  else if (call && results == 1 && names == 2 &&
           call->op->indexOf("return_weights"))
    message += "; pass return_weights=true to also get the attention weights";
  // At the first name without a result, or at the name given for several.
  const Ident &at = names > results ? stmt.names[results] : stmt.names[0];
  diag.error(at.range, message);
}

void BlockChecker::checkOutputs() {
  llvm::StringMap<SMRange> listed;
  for (const Ident *name : outputNames) {
    auto [it, inserted] = listed.try_emplace(name->name, name->range);
    if (!inserted) {
      diag.error(name->range,
                 quoted(name->name) + " is listed as an output twice");
      diag.note(it->second.Start, "first listed here", it->second);
      continue;
    }
    Symbol *symbol = resolve(*name, /*wantTensor=*/true);
    if (!symbol)
      continue;
    if (!symbol->isTensor()) {
      diag.error(name->range, quoted(name->name) +
                                  " is a dim, not a tensor; only tensors can "
                                  "be outputs");
      continue;
    }
    if (symbol->kind == Symbol::Kind::State) {
      diag.error(name->range,
                 quoted(name->name) +
                     " is a state: the kernel updates it in place and the "
                     "caller keeps it, so it is never an output");
      diag.note(symbol->defRange.Start, "declared here", symbol->defRange);
      continue;
    }
    if (symbol->kind == Symbol::Kind::Value)
      checkCName(diag, *name, CNameUse::Parameter, "output");
    block.outputs.push_back(name);
  }
  if (!sawOutputStmt)
    diag.error(block.name.range,
               "block " + quoted(block.name.name) +
                   " has no outputs; list its results with 'output NAME'");
  size_t arguments = block.outputs.size();
  for (const auto &stmt : block.stmts)
    arguments += llvm::isa<DeclStmt>(stmt.get());
  if (arguments > Sema::kMaxBlockArguments)
    diag.error(block.name.range,
               "block " + quoted(block.name.name) + " has " + Twine(arguments) +
                   " arguments (inputs, params and outputs); at most " +
                   Twine(Sema::kMaxBlockArguments) + " are supported");
}

/// What a header name is, for messages: `dim 'N'`, `output 'X'`, ... (with
/// the header's name of an output renamed in the ABI).
std::string describeSource(const abi::HeaderName &name, const Ident &source,
                           StringRef kind, StringRef bufferName) {
  switch (name.origin) {
  case abi::HeaderName::Origin::Dim:
    return "dim " + quoted(source.name);
  case abi::HeaderName::Origin::Buffer:
    return (kind + " " + quoted(source.name) +
            (bufferName != source.name
                 ? " (called " + quoted(bufferName) + " in the header)"
                 : std::string()))
        .str();
  case abi::HeaderName::Origin::Entry:
  case abi::HeaderName::Origin::Abi:
    return name.what;
  }
  return name.what;
}

/// Every name the header of `block` declares, each with its source name
/// (the block's name for the ABI's own), once its outputs are known.
std::vector<Sema::HeaderName> headerNamesOf(const Block &block) {
  std::vector<const Ident *> dimSources, bufferSources;
  std::vector<std::string> dims, arguments, outputs;
  std::vector<StringRef> kinds;
  for (const auto &stmt : block.stmts) {
    if (auto *dimStmt = llvm::dyn_cast<DimStmt>(stmt.get())) {
      for (const DimStmt::Def &def : dimStmt->defs) {
        dimSources.push_back(&def.name);
        dims.push_back(def.name.name);
      }
    } else if (auto *decl = llvm::dyn_cast<DeclStmt>(stmt.get())) {
      bufferSources.push_back(&decl->name);
      arguments.push_back(decl->name.name);
      kinds.push_back(abi::nameOf(decl->role));
    }
  }
  for (const Ident *output : block.outputs) {
    bufferSources.push_back(output);
    outputs.push_back(output->name);
    kinds.push_back("output");
  }
  std::vector<std::string> buffers = abi::bufferNames(arguments, outputs);
  std::vector<Sema::HeaderName> names;
  for (const abi::HeaderName &name :
       abi::headerNames(block.name.name, dims, buffers)) {
    Sema::HeaderName named;
    named.name = name.name;
    named.block = &block;
    named.isEntry = name.origin == abi::HeaderName::Origin::Entry;
    switch (name.origin) {
    case abi::HeaderName::Origin::Dim:
      named.source = dimSources[name.index];
      named.what = describeSource(name, *named.source, "", "");
      break;
    case abi::HeaderName::Origin::Buffer:
      named.source = bufferSources[name.index];
      named.what = describeSource(name, *named.source, kinds[name.index],
                                  buffers[name.index]);
      break;
    case abi::HeaderName::Origin::Entry:
    case abi::HeaderName::Origin::Abi:
      named.source = &block.name;
      named.what = name.what;
      break;
    }
    names.push_back(std::move(named));
  }
  return names;
}

void BlockChecker::checkHeaderMacros() {
  // The ABI's own names come first: a dim or buffer whose macro is one of
  // them is reported; of two sources with one macro, the later.
  llvm::StringMap<const Sema::HeaderName *> claimed;
  llvm::SmallPtrSet<const Ident *, 8> reported;
  headerNames = headerNamesOf(block);
  for (const Sema::HeaderName &name : headerNames) {
    if (name.isEntry)
      continue;
    auto [it, inserted] = claimed.try_emplace(name.name, &name);
    const Sema::HeaderName &other = *it->second;
    if (inserted || other.source->name == name.source->name ||
        !reported.insert(name.source).second)
      continue;
    if (other.source == &block.name)
      diag.error(name.source->range, name.what + " gives the header macro " +
                                         quoted(name.name) +
                                         ", which the header defines itself (" +
                                         other.what + "); rename it");
    else {
      diag.error(name.source->range, quoted(name.source->name) + " and " +
                                         quoted(other.source->name) +
                                         " both give the header macro " +
                                         quoted(name.name) + "; rename one");
      diag.note(other.source->range.Start,
                quoted(other.source->name) + " is here", other.source->range);
    }
  }
}

void BlockChecker::checkUnused() {
  for (StringRef name : order) {
    const Symbol &symbol = scope.find(name)->second;
    if (symbol.used || symbol.poisoned || symbol.kind == Symbol::Kind::Dim)
      continue;
    if (symbol.kind == Symbol::Kind::Value)
      diag.error(symbol.defRange, quoted(name) +
                                      " is computed but never used (pass it "
                                      "to an op or list it in 'output')");
    else
      diag.error(symbol.defRange, Twine(describeSymbol(symbol.kind)) + " " +
                                      quoted(name) + " is never used");
  }
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

void BlockChecker::markUses(const Expr &expr) {
  // Iterative: the parser bounds nesting, but this also runs on failed calls.
  llvm::SmallVector<const Expr *, 8> work{&expr};
  while (!work.empty()) {
    const Expr *e = work.pop_back_val();
    if (auto *name = llvm::dyn_cast<NameExpr>(e)) {
      auto it = scope.find(name->name);
      if (it != scope.end())
        it->second.used = true;
    } else if (auto *call = llvm::dyn_cast<CallExpr>(e)) {
      for (const Argument &arg : call->args)
        work.push_back(arg.value.get());
    }
  }
}

const TensorShape *BlockChecker::checkTensor(Expr &expr, const Twine &role) {
  if (auto *call = llvm::dyn_cast<CallExpr>(&expr)) {
    const TensorShape *shape = checkCall(*call);
    if (shape && call->results.size() > 1 && call->block) {
      diag.error(call->callee.range,
                 "block " + quoted(call->callee.name) + " has " +
                     Twine(call->results.size()) + " results (its outputs " +
                     outputList(*call->block) + "), so it cannot be used as " +
                     role + "; bind them first: " + outputList(*call->block) +
                     " = " + call->callee.name + "(...)");
      return nullptr;
    }
    if (shape && call->results.size() > 1) {
      diag.error(call->callee.range,
                 quoted(call->callee.name) +
                     " with return_weights=true has 2 results (the output "
                     "and the attention weights), so it cannot be used as " +
                     role + "; bind them first: NAME, WEIGHTS = " +
                     call->callee.name + "(...)");
      return nullptr;
    }
    return shape;
  }
  if (auto *name = llvm::dyn_cast<NameExpr>(&expr)) {
    Symbol *symbol = resolve({name->name, name->getRange()}, true);
    if (!symbol)
      return nullptr;
    if (!symbol->isTensor()) {
      diag.error(name->getRange(),
                 role + " must be a tensor, but " + quoted(name->name) +
                     " is a dim (= " + Twine(symbol->dimValue) + ")");
      return nullptr;
    }
    if (!symbol->shape)
      return nullptr; // poisoned: already reported
    expr.shape = symbol->shape;
    return &*expr.shape;
  }
  diag.error(expr.getRange(), role + " must be a tensor, got " +
                                  quoted(sourceText(expr.getRange())));
  return nullptr;
}

const TensorShape *BlockChecker::checkCall(CallExpr &call) {
  const OpInfo *op = lookupOp(call.callee.name);
  if (!op && sema.isBlockName(call.callee.name)) {
    const Block *callee = sema.lookupBlock(call.callee.name);
    if (!callee) { // its definition did not parse (reported)
      markUses(call);
      return nullptr;
    }
    return checkBlockCall(call, *callee);
  }
  if (!op) {
    std::vector<StringRef> names;
    for (const OpInfo &info : allOps())
      names.push_back(info.name);
    for (StringRef name : sema.blockNameList())
      names.push_back(name);
    diag.error(call.callee.range, "unknown op " + quoted(call.callee.name) +
                                      didYouMean(call.callee.name, names));
    markUses(call);
    return nullptr;
  }
  call.op = op;
  llvm::SmallVector<const Argument *, 8> given;
  if (!bindArguments(call, given)) {
    markUses(call);
    return nullptr;
  }

  // Evaluate every argument, even after a failure, to report each mistake.
  bool ok = true;
  call.bound.assign(op->params.size(), BoundArgument());
  for (unsigned i = 0, e = op->params.size(); i != e; ++i) {
    const ParamInfo &param = op->params[i];
    BoundArgument &bound = call.bound[i];
    bound.source = given[i];
    bound.intValue = param.defaultInt;
    bound.floatValue = param.defaultFloat;
    bound.boolValue = param.defaultBool;
    if (!given[i])
      continue;
    if (param.kind == ParamKind::Tensor) {
      bound.tensor = given[i]->value.get();
      if (!checkTensor(*given[i]->value,
                       "argument '" + param.name + "' of '" + op->name + "'") ||
          !checkStateUse(param, *given[i]->value))
        ok = false;
    } else if (!evaluateAttribute(param, *given[i], *op, bound)) {
      ok = false;
    }
  }
  if (!ok)
    return nullptr;
  // A cache implies causal attention: `causal=true` may be left out.
  if (std::optional<unsigned> cache = op->indexOf("cache_k"))
    if (call.bound[*cache].tensor) {
      BoundArgument &causal = call.bound[*op->indexOf("causal")];
      if (!causal.source)
        causal.boolValue = true;
    }
  call.shape = applyRules(call);
  if (!call.shape)
    return nullptr;
  call.results.assign(1, *call.shape);
  if (std::optional<TensorShape> weights = attentionWeights(call))
    call.results.push_back(*weights);
  return &*call.shape;
}

const TensorShape *BlockChecker::checkBlockCall(CallExpr &call,
                                                const Block &callee) {
  StringRef name = call.callee.name;
  if (&callee == &block || !callee.checked) {
    // Not checked yet although checked callees first: a cycle.
    std::vector<std::string> chain = sema.callChain(callee, block.name.name);
    if (&callee == &block || chain.size() < 2) {
      diag.error(call.callee.range,
                 "block " + quoted(name) +
                     " calls itself; a block cannot be recursive");
    } else {
      std::string path = block.name.name;
      for (const std::string &step : chain)
        path += " -> " + step;
      diag.error(call.callee.range,
                 "recursive call of block " + quoted(name) + " (" + path +
                     "); blocks cannot call each other in a cycle");
      diag.note(callee.name.range.Start,
                "block " + quoted(name) + " is defined here",
                callee.name.range);
    }
    markUses(call);
    return nullptr;
  }
  if (!callee.valid) { // its errors were reported
    markUses(call);
    return nullptr;
  }
  for (const DeclStmt *decl : callee.arguments)
    if (decl->role == abi::ArgumentRole::State) {
      diag.error(call.callee.range,
                 "block " + quoted(name) + " has a state (" +
                     quoted(decl->name.name) +
                     "), and a block with states cannot be called from "
                     "another block yet; compile it as a kernel of its own");
      diag.note(decl->name.range.Start, "declared here", decl->name.range);
      markUses(call);
      return nullptr;
    }
  call.block = &callee;
  llvm::SmallVector<const Argument *, 8> given;
  if (!bindBlockArguments(call, callee, given)) {
    markUses(call);
    return nullptr;
  }

  // Every argument is checked against the callee's declared type.
  bool ok = true;
  call.bound.assign(callee.arguments.size(), BoundArgument());
  for (auto [decl, bound, arg] :
       llvm::zip_equal(callee.arguments, call.bound, given)) {
    bound.source = arg;
    bound.tensor = arg->value.get();
    std::string role =
        "argument " + quoted(decl->name.name) + " of block " + quoted(name);
    const TensorShape *shape = checkTensor(*arg->value, role);
    if (!shape) {
      ok = false;
      continue;
    }
    const TensorShape &declared = *decl->shape;
    if (shape->element == declared.element && shape->dims == declared.dims)
      continue;
    std::string declaredText = sourceText(decl->type.range).str();
    std::string expected = rules::formatShape(declared);
    diag.error(arg->getRange(), role + " must be " + expected +
                                    (declaredText == expected
                                         ? std::string()
                                         : " (declared " + declaredText + ")") +
                                    ", got " + rules::formatShape(*shape));
    diag.note(decl->name.range.Start,
              quoted(decl->name.name) + " is declared here",
              SMRange(decl->name.range.Start, decl->type.range.End));
    ok = false;
  }
  if (!ok)
    return nullptr;
  call.results.assign(callee.outputShapes.begin(), callee.outputShapes.end());
  call.shape = call.results.front();
  if (!llvm::is_contained(block.callees, &callee))
    block.callees.push_back(&callee);
  return &*call.shape;
}

bool BlockChecker::bindBlockArguments(
    CallExpr &call, const Block &callee,
    llvm::SmallVectorImpl<const Argument *> &given) {
  StringRef name = call.callee.name;
  const std::vector<const DeclStmt *> &params = callee.arguments;
  given.assign(params.size(), nullptr);
  // Inputs are positional or keyword, params keyword-only.
  llvm::SmallVector<unsigned, 8> positionalSlots;
  for (unsigned i = 0, e = params.size(); i != e; ++i)
    if (!params[i]->isParam())
      positionalSlots.push_back(i);
  std::string signature = blockSignature(callee);

  bool ok = true;
  unsigned nextPositional = 0;
  const Argument *firstKeyword = nullptr;
  for (const Argument &arg : call.args) {
    if (!arg.isKeyword()) {
      if (firstKeyword) {
        diag.error(arg.getRange(), "positional argument after keyword "
                                   "argument " +
                                       quoted(firstKeyword->keyword.name) +
                                       " in the call of block " + quoted(name));
        ok = false;
        break;
      }
      if (nextPositional == positionalSlots.size()) {
        unsigned total = 0;
        for (const Argument &a : call.args)
          total += !a.isKeyword();
        diag.error(arg.getRange(),
                   "block " + quoted(name) + " takes " +
                       Twine(positionalSlots.size()) + " positional argument" +
                       (positionalSlots.size() == 1 ? "" : "s") +
                       " (its inputs), got " + Twine(total) +
                       "; its params are given by keyword (signature: " +
                       signature + ")");
        ok = false;
        break;
      }
      given[positionalSlots[nextPositional++]] = &arg;
      continue;
    }
    if (!firstKeyword)
      firstKeyword = &arg;
    auto slot = llvm::find_if(params, [&](const DeclStmt *decl) {
      return decl->name.name == arg.keyword.name;
    });
    if (slot == params.end()) {
      std::vector<StringRef> names;
      for (const DeclStmt *decl : params)
        names.push_back(decl->name.name);
      diag.error(arg.keyword.range, "block " + quoted(name) +
                                        " has no input or param " +
                                        quoted(arg.keyword.name) +
                                        didYouMean(arg.keyword.name, names) +
                                        " (signature: " + signature + ")");
      ok = false;
      continue;
    }
    unsigned index = slot - params.begin();
    if (const Argument *previous = given[index]) {
      if (previous->isKeyword())
        diag.error(arg.keyword.range, "keyword '" + arg.keyword.name +
                                          "' is given twice in the call of "
                                          "block " +
                                          quoted(name));
      else
        diag.error(arg.keyword.range,
                   "input '" + arg.keyword.name + "' of block " + quoted(name) +
                       " is given both positionally and as a keyword");
      diag.note(previous->getRange().Start, "first given here",
                previous->getRange());
      ok = false;
      continue;
    }
    given[index] = &arg;
  }
  if (!ok)
    return false;
  for (unsigned i = 0, e = params.size(); i != e; ++i) {
    if (given[i])
      continue;
    const DeclStmt &decl = *params[i];
    diag.error(call.callee.range,
               "the call of block " + quoted(name) + " is missing its " +
                   (decl.isParam() ? "param '" + decl.name.name + "=...'"
                                   : "input '" + decl.name.name + "'") +
                   "; its signature is " + signature);
    ok = false;
  }
  return ok;
}

bool BlockChecker::bindArguments(
    CallExpr &call, llvm::SmallVectorImpl<const Argument *> &given) {
  const OpInfo &op = *call.op;
  given.assign(op.params.size(), nullptr);
  llvm::SmallVector<unsigned, 8> positionalSlots;
  for (unsigned i = 0, e = op.params.size(); i != e; ++i)
    if (op.params[i].positional)
      positionalSlots.push_back(i);

  bool ok = true;
  unsigned nextPositional = 0;
  const Argument *firstKeyword = nullptr;
  for (const Argument &arg : call.args) {
    if (!arg.isKeyword()) {
      if (firstKeyword) {
        diag.error(arg.getRange(),
                   "positional argument after keyword argument " +
                       quoted(firstKeyword->keyword.name) +
                       " in the call to '" + op.name + "'");
        ok = false;
        break;
      }
      if (nextPositional == positionalSlots.size()) {
        unsigned total = 0;
        for (const Argument &a : call.args)
          total += !a.isKeyword();
        diag.error(arg.getRange(),
                   "'" + op.name + "' takes " + Twine(positionalSlots.size()) +
                       " positional argument" +
                       (positionalSlots.size() == 1 ? "" : "s") + ", got " +
                       Twine(total) + "; its signature is " + op.signature());
        ok = false;
        break;
      }
      given[positionalSlots[nextPositional++]] = &arg;
      continue;
    }
    if (!firstKeyword)
      firstKeyword = &arg;
    std::optional<unsigned> slot = op.indexOf(arg.keyword.name);
    if (!slot) {
      std::vector<StringRef> names;
      for (const ParamInfo &p : op.params)
        names.push_back(p.name);
      diag.error(arg.keyword.range, "'" + op.name + "' has no argument " +
                                        quoted(arg.keyword.name) +
                                        didYouMean(arg.keyword.name, names) +
                                        " (signature: " + op.signature() + ")");
      ok = false;
      continue;
    }
    if (const Argument *previous = given[*slot]) {
      if (previous->isKeyword())
        diag.error(arg.keyword.range, "keyword '" + arg.keyword.name +
                                          "' is given twice in the call to '" +
                                          op.name + "'");
      else
        diag.error(arg.keyword.range,
                   "argument '" + arg.keyword.name + "' of '" + op.name +
                       "' is given both positionally and as a keyword");
      diag.note(previous->getRange().Start, "first given here",
                previous->getRange());
      ok = false;
      continue;
    }
    given[*slot] = &arg;
  }
  if (!ok)
    return false;
  for (unsigned i = 0, e = op.params.size(); i != e; ++i) {
    const ParamInfo &param = op.params[i];
    if (given[i] || !param.required)
      continue;
    diag.error(call.callee.range,
               "'" + op.name + "' is missing its required argument '" +
                   param.name + (param.positional ? "'" : "=...'") +
                   "; its signature is " + op.signature());
    ok = false;
  }
  return ok;
}

bool BlockChecker::evaluateAttribute(const ParamInfo &param,
                                     const Argument &arg, const OpInfo &op,
                                     BoundArgument &out) {
  const Expr &value = *arg.value;
  std::string what =
      ("argument '" + param.name + "' of '" + op.name + "'").str();
  auto wrongKind = [&](const Twine &found) {
    diag.error(value.getRange(), what + " must be " +
                                     describeParamKind(param.kind) + ", got " +
                                     found);
    return false;
  };

  // A dtype is a type's name, not a value.
  if (param.kind == ParamKind::Dtype) {
    auto *name = llvm::dyn_cast<NameExpr>(&value);
    std::optional<mlir::attn::ElementType> type =
        name ? mlir::attn::elementTypeNamed(name->name) : std::nullopt;
    if (!type || !mlir::attn::isFloat(*type) ||
        !mlir::attn::describe(*type).isSupported)
      return wrongKind(quoted(sourceText(value.getRange())));
    out.intValue = static_cast<int64_t>(*type);
    return true;
  }
  // A dim name stands for its integer value.
  std::optional<double> number;
  bool isInteger = false;
  if (auto *name = llvm::dyn_cast<NameExpr>(&value)) {
    Symbol *symbol = resolve({name->name, name->getRange()}, false);
    if (!symbol)
      return false;
    if (symbol->isTensor())
      return wrongKind("the " + describeSymbol(symbol->kind) + " " +
                       quoted(name->name));
    if (symbol->poisoned)
      return false;
    out.intValue = symbol->dimValue;
    number = static_cast<double>(symbol->dimValue);
    isInteger = true;
  } else if (auto *integer = llvm::dyn_cast<IntegerExpr>(&value)) {
    out.intValue = integer->value;
    number = static_cast<double>(integer->value);
    isInteger = true;
  } else if (auto *real = llvm::dyn_cast<FloatExpr>(&value)) {
    number = real->value;
  } else if (auto *boolean = llvm::dyn_cast<BoolExpr>(&value)) {
    if (param.kind == ParamKind::Bool) {
      out.boolValue = boolean->value;
      return true;
    }
    return wrongKind(boolean->value ? "true" : "false");
  } else if (auto *call = llvm::dyn_cast<CallExpr>(&value)) {
    markUses(*call);
    return wrongKind("a call to " + quoted(call->callee.name));
  }

  switch (param.kind) {
  case ParamKind::Tensor:
  case ParamKind::Bool:
  case ParamKind::Dtype:
    return wrongKind(quoted(sourceText(value.getRange())));
  case ParamKind::Int:
    if (!isInteger)
      return wrongKind(quoted(sourceText(value.getRange())));
    return true;
  case ParamKind::Float: {
    // The attribute is an f32: the value must survive the conversion.
    float single = static_cast<float>(*number);
    if (!std::isfinite(single)) {
      diag.error(value.getRange(), quoted(sourceText(value.getRange())) +
                                       " is out of the range of f32 (" + what +
                                       ")");
      return false;
    }
    if (single == 0 && *number != 0) {
      diag.error(value.getRange(),
                 quoted(sourceText(value.getRange())) +
                     " is too small for f32, it would become 0 (" + what + ")");
      return false;
    }
    out.floatValue = single;
    return true;
  }
  }
  return false;
}

bool BlockChecker::checkStateUse(const ParamInfo &param, const Expr &value) {
  bool isCache = param.name == "cache_k" || param.name == "cache_v";
  auto *name = llvm::dyn_cast<NameExpr>(&value);
  auto it = name ? scope.find(name->name) : scope.end();
  Symbol *symbol = it == scope.end() ? nullptr : &it->second;
  if (isCache && (!symbol || symbol->kind != Symbol::Kind::State)) {
    diag.error(value.getRange(),
               "'" + param.name +
                   "' must be a state (declared 'state NAME: TYPE'): the call "
                   "writes the new keys and values into it in place" +
                   (symbol ? ", but " + quoted(name->name) + " is " +
                                 describeWithArticle(symbol->kind)
                           : Twine("")));
    if (symbol)
      diag.note(symbol->defRange.Start, "declared here", symbol->defRange);
    return false;
  }
  if (!symbol || symbol->kind != Symbol::Kind::State)
    return true;
  SMRange here = value.getRange();
  if (isCache && (symbol->cacheUse || symbol->readUse)) {
    diag.error(here, "state " + quoted(name->name) +
                         " is a cache here, so it can be used nowhere else "
                         "in the block (the call updates it in place)");
    SMRange other = symbol->cacheUse ? *symbol->cacheUse : *symbol->readUse;
    diag.note(other.Start, "also used here", other);
    return false;
  }
  if (!isCache && symbol->cacheUse) {
    diag.error(here, "state " + quoted(name->name) +
                         " is a cache updated in place by another call, so "
                         "it can be used nowhere else in the block");
    diag.note(symbol->cacheUse->Start, "the cache use", *symbol->cacheUse);
    return false;
  }
  (isCache ? symbol->cacheUse : symbol->readUse) = here;
  return true;
}

std::optional<TensorShape> BlockChecker::applyRules(CallExpr &call) {
  const OpInfo &op = *call.op;
  // Points a rule's complaint about `argument` at that argument's source.
  auto error = [&](StringRef argument, const Twine &message) {
    std::optional<unsigned> slot = op.indexOf(argument);
    const Argument *source = slot ? call.bound[*slot].source : nullptr;
    if (source && source->isKeyword())
      diag.error(source->keyword.range.Start, message, source->getRange());
    else if (source)
      diag.error(source->getRange(), message);
    else
      diag.error(call.callee.range, message);
  };
  // The bound arguments in parameter order, as the rule takes them.
  llvm::SmallVector<rules::RuleValue, 8> args(op.params.size());
  for (auto [param, bound, arg] : llvm::zip_equal(op.params, call.bound, args))
    switch (param.kind) {
    case ParamKind::Tensor:
      if (bound.tensor)
        arg.tensor = *bound.tensor->shape;
      break;
    case ParamKind::Int:
    case ParamKind::Dtype:
      arg.integer = bound.intValue;
      break;
    case ParamKind::Float:
      arg.number = bound.floatValue;
      break;
    case ParamKind::Bool:
      arg.flag = bound.boolValue;
      break;
    }
  return rules::applyRule(op.kind, args, error);
}

} // namespace

/// Beside NAME, objects export NAME_prepare, NAME_prepared, NAME_cuda, ...
/// (the ABI's entries, for any target): a block of such a name clashes with
/// the block NAME, whichever comes first.
void Sema::checkExportedEntries(const Ident &name) {
  for (const abi::EntryDescription &entry : abi::allEntries()) {
    StringRef suffix = entry.suffix;
    if (suffix.empty())
      continue;
    StringRef base = name.name;
    std::string derived = (name.name + suffix).str();
    StringRef owner, step = suffix.drop_front();
    if (base.consume_back(suffix) && blockNames.count(base))
      owner = base;
    else if (blockNames.count(derived))
      owner = name.name;
    else
      continue;
    SMRange other = blockNames.lookup(owner == name.name ? derived : owner);
    diag.error(name.range, "block " + quoted(name.name) + " clashes with " +
                               quoted((owner + suffix).str()) +
                               ", the exported " + quoted(step) +
                               " entry of block " + quoted(owner) +
                               "; choose another name");
    diag.note(other.Start, "the other block is defined here", other);
    return;
  }
}

void Sema::checkHeaderNamesAcrossBlocks(const Block &block,
                                        std::vector<HeaderName> names) {
  // A block whose macros are all another's was reported at its name.
  auto owner = blockMacros.find(StringRef(block.name.name).upper());
  if (owner == blockMacros.end() || owner->second != &block.name)
    return;
  llvm::SmallPtrSet<const Ident *, 8> reported;
  for (HeaderName &name : names) {
    auto [it, inserted] = fileHeaderNames.try_emplace(name.name, name);
    const Sema::HeaderName &other = it->second;
    // Two entries are checkExportedEntries' (and its block names').
    if (inserted || other.block == &block || (name.isEntry && other.isEntry) ||
        !reported.insert(name.source).second)
      continue;
    diag.error(name.source->range,
               "the header of block " + quoted(block.name.name) +
                   " and that of block " + quoted(other.block->name.name) +
                   " both declare " + quoted(name.name) + " (" + name.what +
                   "; " + other.what +
                   "), so they do not compile together; "
                   "rename one");
    diag.note(other.source->range.Start, "the other is here",
              other.source->range);
  }
}

void Sema::checkBlock(Block &block) {
  if (blockNames.size() == kMaxBlocks)
    diag.error(block.name.range,
               "a file may define at most " + Twine(kMaxBlocks) + " blocks; " +
                   quoted(block.name.name) + " is one more (split the file)");
  auto [it, inserted] =
      blockNames.try_emplace(block.name.name, block.name.range);
  if (!inserted) {
    diag.error(block.name.range,
               "redefinition of block " + quoted(block.name.name));
    diag.note(it->second.Start, "first defined here", it->second);
  } else {
    blocksByName[block.name.name] = &block;
    fileBlockNames.insert(block.name.name);
    // The header's include guard and macros upper-case the block's name.
    auto [other, fresh] = blockMacros.try_emplace(
        StringRef(block.name.name).upper(), &block.name);
    if (!fresh) {
      diag.error(block.name.range,
                 "blocks " + quoted(block.name.name) + " and " +
                     quoted(other->second->name) +
                     " give the same header macros (" +
                     quoted(("ATTNC_KERNEL_" + other->first() + "_H").str()) +
                     ", ...); rename one");
      diag.note(other->second->range.Start, "the other block is defined here",
                other->second->range);
    }
  }
  // A call of the name would be the op's.
  if (lookupOp(block.name.name))
    diag.error(block.name.range,
               "block " + quoted(block.name.name) +
                   " has the name of an op, so calls of it would call the "
                   "op; rename the block");
  checkCName(diag, block.name, CNameUse::Function, "block");
  checkExportedEntries(block.name);
  if (waitsForCallee(block)) {
    waiting.push_back(&block);
    return;
  }
  runChecker(block);
}

void Sema::runChecker(Block &block) {
  unsigned errorsBefore = diag.errorCount();
  BlockChecker checker(diag, *this, block);
  checker.run();
  block.checked = true;
  block.valid = !block.hadSyntaxErrors && diag.errorCount() == errorsBefore &&
                !block.outputs.empty() &&
                block.outputShapes.size() == block.outputs.size();
  if (block.valid) {
    checkHeaderNamesAcrossBlocks(block, checker.takeHeaderNames());
    block.valid = diag.errorCount() == errorsBefore;
  }
}

bool Sema::waitsForCallee(const Block &block) const {
  bool waits = false;
  forEachCall(block, [&](const CallExpr &call) {
    StringRef name = call.callee.name;
    if (waits || lookupOp(name) || !fileBlockNames.contains(name) ||
        name == block.name.name)
      return;
    const Block *callee = blocksByName.lookup(name);
    waits = !callee || !callee->checked;
  });
  return waits;
}

void Sema::finish() {
  // The waiting blocks in an order where each comes after the blocks it
  // calls (depth first, iteratively: a chain of calls may be long). An edge
  // back to a block on the stack is a cycle, reported at that call.
  llvm::DenseMap<const Block *, unsigned> state; // 1: on the stack, 2: done
  llvm::SmallPtrSet<const Block *, 8> isWaiting(waiting.begin(), waiting.end());
  auto calleesOf = [&](const Block &block) {
    std::vector<Block *> callees;
    forEachCall(block, [&](const CallExpr &call) {
      if (lookupOp(call.callee.name))
        return;
      Block *callee = blocksByName.lookup(call.callee.name);
      if (callee && callee != &block && isWaiting.contains(callee) &&
          !llvm::is_contained(callees, callee))
        callees.push_back(callee);
    });
    return callees;
  };
  std::vector<Block *> order;
  for (Block *root : waiting) {
    if (state.lookup(root))
      continue;
    struct Frame {
      Block *block;
      std::vector<Block *> callees;
      size_t next = 0;
    };
    std::vector<Frame> stack;
    stack.push_back({root, calleesOf(*root)});
    state[root] = 1;
    while (!stack.empty()) {
      Frame &top = stack.back();
      if (top.next < top.callees.size()) {
        Block *callee = top.callees[top.next++];
        if (!state.lookup(callee)) {
          state[callee] = 1;
          std::vector<Block *> callees = calleesOf(*callee);
          stack.push_back({callee, std::move(callees)});
        }
        continue;
      }
      state[top.block] = 2;
      order.push_back(top.block);
      stack.pop_back();
    }
  }
  waiting.clear();
  for (Block *block : order) {
    if (diag.tooManyErrors())
      return;
    runChecker(*block);
  }
}

void Sema::declareBlockNames(StringRef text) {
  // `block` is a keyword: wherever it is followed by a name, that name is a
  // block's (comments skipped; anything else is the parser's to report).
  size_t i = 0, n = text.size();
  auto isNameChar = [](char c) { return llvm::isAlnum(c) || c == '_'; };
  while (i < n) {
    char c = text[i];
    if (c == '#') {
      while (i < n && text[i] != '\n')
        ++i;
      continue;
    }
    if (!isNameChar(c)) {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < n && isNameChar(text[i]))
      ++i;
    if (text.slice(start, i) != "block" || llvm::isDigit(text[start]))
      continue;
    size_t j = i;
    while (j < n && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r'))
      ++j;
    size_t nameStart = j;
    if (j < n && !llvm::isDigit(text[j]))
      while (j < n && isNameChar(text[j]))
        ++j;
    if (j > nameStart)
      fileBlockNames.insert(text.slice(nameStart, j));
    i = j;
  }
}

std::vector<StringRef> Sema::blockNameList() const {
  std::vector<StringRef> names;
  for (const auto &entry : fileBlockNames)
    names.push_back(entry.getKey());
  llvm::sort(names);
  return names;
}

std::vector<std::string> Sema::callChain(const Block &from,
                                         StringRef to) const {
  // Breadth first over the blocks' calls: the shortest chain.
  llvm::StringMap<std::string> cameFrom;
  std::vector<const Block *> queue{&from};
  cameFrom[from.name.name] = "";
  for (size_t i = 0; i < queue.size(); ++i) {
    const Block *block = queue[i];
    bool found = false;
    forEachCall(*block, [&](const CallExpr &call) {
      StringRef name = call.callee.name;
      if (found || lookupOp(name) || !fileBlockNames.contains(name))
        return;
      if (name == to) {
        found = true;
        return;
      }
      const Block *callee = blocksByName.lookup(name);
      if (callee && cameFrom.try_emplace(name, block->name.name).second)
        queue.push_back(callee);
    });
    if (!found)
      continue;
    std::vector<std::string> chain{to.str()};
    for (std::string at = block->name.name; !at.empty();
         at = cameFrom.lookup(at))
      chain.push_back(at);
    std::reverse(chain.begin(), chain.end());
    return chain;
  }
  return {};
}

bool Sema::check(Module &module) {
  for (auto &block : module.blocks)
    fileBlockNames.insert(block->name.name);
  for (auto &block : module.blocks) {
    if (diag.tooManyErrors())
      break;
    checkBlock(*block);
  }
  if (!diag.tooManyErrors())
    finish();
  return !diag.hadErrors();
}
