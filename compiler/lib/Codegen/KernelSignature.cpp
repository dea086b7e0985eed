//===- KernelSignature.cpp - A kernel's arguments, as hosts see them ------===//

#include "attnc/Codegen/Compile.h"

#include "attn/IR/AttnDialect.h"
#include "attn/IR/AttnOps.h"
#include "attn/IR/AttnTypes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace attnc;
using mlir::attn::AttnDialect;

llvm::StringRef attnc::roleName(ArgumentRole role) {
  return mlir::attn::abi::nameOf(role);
}

llvm::StringRef attnc::elementTypeName(ElementType type) {
  return mlir::attn::nameOf(type);
}

size_t attnc::elementSize(ElementType type) {
  return mlir::attn::bytesOf(type);
}

std::vector<ArgumentRole> KernelSignature::roles() const {
  std::vector<ArgumentRole> result;
  for (const KernelArgument &a : arguments)
    result.push_back(a.role);
  return result;
}

std::vector<std::string> KernelSignature::argumentNames() const {
  std::vector<std::string> result;
  for (const KernelArgument &a : arguments)
    result.push_back(a.name);
  return result;
}

int64_t KernelArgument::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string KernelArgument::typeString() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << elementTypeName(type) << "[";
  llvm::interleaveComma(shape, os);
  os << "]";
  return text;
}

//===----------------------------------------------------------------------===//
// From IR
//===----------------------------------------------------------------------===//

static llvm::Expected<KernelArgument>
argumentOf(mlir::Type type, mlir::DictionaryAttr attrs, std::string fallback,
           ArgumentRole role, llvm::StringRef kernel) {
  auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(type);
  std::optional<ElementType> element =
      tensor ? mlir::attn::elementTypeOf(tensor.getElementType())
             : std::nullopt;
  if (!tensor || !tensor.hasStaticShape() || !element)
    return llvm::createStringError(
        "kernel '" + kernel +
        "': every argument and result must be a static tensor of an "
        "element type of attn/Target/ElementType.h");
  KernelArgument argument;
  argument.name = std::move(fallback);
  argument.role = role;
  argument.type = *element;
  argument.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  if (attrs) {
    if (auto name = attrs.getAs<mlir::StringAttr>(AttnDialect::kNameAttr))
      argument.name = name.str();
    if (auto roleAttr = attrs.getAs<mlir::StringAttr>(AttnDialect::kRoleAttr))
      if (auto named = mlir::attn::abi::roleNamed(roleAttr.getValue());
          named && *named != ArgumentRole::Output)
        argument.role = *named;
  }
  return argument;
}

/// The embedding ids and attention lengths among `kernel`'s arguments, also
/// where they are passed on to another block's function (func.call), whose
/// checks then hold for them too.
static void collectArgumentUses(mlir::func::FuncOp kernel,
                                KernelSignature &signature) {
  // (function, its argument i is the kernel's argument), worked through
  // without recursion: calls may nest as deep as the blocks do.
  struct Item {
    mlir::func::FuncOp func;
    llvm::SmallVector<std::optional<unsigned>> kernelArgument;
  };
  std::vector<Item> work;
  {
    Item top{kernel, {}};
    for (unsigned i = 0; i < kernel.getNumArguments(); ++i)
      top.kernelArgument.push_back(i);
    work.push_back(std::move(top));
  }
  llvm::DenseSet<std::tuple<mlir::Operation *, unsigned, unsigned>> seen;
  while (!work.empty()) {
    Item item = std::move(work.back());
    work.pop_back();
    auto argumentOf = [&](mlir::Value value) -> std::optional<unsigned> {
      auto arg = mlir::dyn_cast_or_null<mlir::BlockArgument>(value);
      if (!arg || arg.getOwner()->getParentOp() != item.func)
        return std::nullopt;
      return item.kernelArgument[arg.getArgNumber()];
    };
    auto keysOf = [](mlir::Value keys, unsigned dim) {
      return mlir::cast<mlir::RankedTensorType>(keys.getType()).getDimSize(dim);
    };
    item.func.walk([&](mlir::Operation *op) {
      if (auto embedding = mlir::dyn_cast<mlir::attn::EmbeddingOp>(op)) {
        if (auto arg = argumentOf(embedding.getIds()))
          signature.embeddingIds.push_back(
              {*arg, embedding.getTable().getType().getDimSize(0)});
      } else if (auto mha =
                     mlir::dyn_cast<mlir::attn::MultiheadAttentionOp>(op)) {
        if (auto arg = argumentOf(mha.getValidLens()))
          signature.validLens.push_back({*arg, keysOf(mha.getK(), 1)});
        if (auto arg = argumentOf(mha.getCachePos())) {
          signature.validLens.push_back(
              {*arg, keysOf(mha.getCacheK(), 1) - keysOf(mha.getQ(), 1)});
          signature.positions.push_back({*arg, keysOf(mha.getCacheK(), 1),
                                         keysOf(mha.getQ(), 1),
                                         argumentOf(mha.getCacheK())});
        }
      } else if (auto encoding =
                     mlir::dyn_cast<mlir::attn::PositionalEncodingOp>(op)) {
        if (auto arg = argumentOf(encoding.getOffset()))
          signature.positions.push_back(
              {*arg, static_cast<int64_t>(encoding.getMaxLen()),
               keysOf(encoding.getX(), 1), std::nullopt});
      } else if (auto attention = mlir::dyn_cast<mlir::attn::AttentionOp>(op)) {
        if (auto arg = argumentOf(attention.getValidLens()))
          signature.validLens.push_back({*arg, keysOf(attention.getK(), 1)});
      } else if (auto masked =
                     mlir::dyn_cast<mlir::attn::MaskedSoftmaxOp>(op)) {
        if (auto arg = argumentOf(masked.getValidLens()))
          signature.validLens.push_back({*arg, keysOf(masked.getX(), 2)});
      } else if (auto call = mlir::dyn_cast<mlir::func::CallOp>(op)) {
        auto callee =
            mlir::SymbolTable::lookupNearestSymbolFrom<mlir::func::FuncOp>(
                call, call.getCalleeAttr());
        if (!callee || callee.isExternal())
          return;
        Item next{callee, {}};
        bool any = false;
        for (auto [i, operand] : llvm::enumerate(call.getOperands())) {
          std::optional<unsigned> arg = argumentOf(operand);
          // Each (callee, its argument, kernel argument) once: a 12-layer
          // stack passes the same lengths to one callee 12 times.
          if (arg &&
              !seen.insert({callee, static_cast<unsigned>(i), *arg}).second)
            arg = std::nullopt;
          any |= arg.has_value();
          next.kernelArgument.push_back(arg);
        }
        if (any)
          work.push_back(std::move(next));
      }
    });
  }
}

llvm::Expected<KernelSignature> attnc::signatureOf(mlir::func::FuncOp kernel) {
  KernelSignature signature;
  signature.name = kernel.getSymName().str();
  auto names =
      kernel->getAttrOfType<mlir::ArrayAttr>(AttnDialect::kDimNamesAttr);
  auto values = kernel->getAttrOfType<mlir::DenseI64ArrayAttr>(
      AttnDialect::kDimValuesAttr);
  if (names && values && names.size() == values.asArrayRef().size())
    for (auto [name, value] : llvm::zip(names, values.asArrayRef()))
      if (auto text = mlir::dyn_cast<mlir::StringAttr>(name))
        signature.dims.emplace_back(text.str(), value);

  mlir::FunctionType type = kernel.getFunctionType();
  for (unsigned i = 0; i < type.getNumInputs(); ++i) {
    auto argument = argumentOf(type.getInput(i), kernel.getArgAttrDict(i),
                               "arg" + std::to_string(i), ArgumentRole::Input,
                               signature.name);
    if (!argument)
      return argument.takeError();
    signature.arguments.push_back(std::move(*argument));
  }
  for (unsigned i = 0; i < type.getNumResults(); ++i) {
    // A state's new value is written into the state itself.
    if (kernel.getResultAttr(i, AttnDialect::kUpdatesAttr))
      continue;
    auto argument = argumentOf(type.getResult(i), kernel.getResultAttrDict(i),
                               "result" + std::to_string(i),
                               ArgumentRole::Output, signature.name);
    if (!argument)
      return argument.takeError();
    signature.arguments.push_back(std::move(*argument));
  }
  collectArgumentUses(kernel, signature);
  return signature;
}

//===----------------------------------------------------------------------===//
// JSON (the runtime's on-disk cache stores it beside the object)
//===----------------------------------------------------------------------===//

std::string KernelSignature::toJSON() const {
  llvm::json::Array dimsJson, argsJson, idsJson, lensJson, positionsJson;
  for (const auto &[name, value] : dims)
    dimsJson.push_back(llvm::json::Object{{"name", name}, {"value", value}});
  for (const KernelArgument &a : arguments)
    argsJson.push_back(
        llvm::json::Object{{"name", a.name},
                           {"role", roleName(a.role)},
                           {"type", elementTypeName(a.type)},
                           {"shape", llvm::json::Array(a.shape)}});
  for (const EmbeddingIds &e : embeddingIds)
    idsJson.push_back(
        llvm::json::Object{{"argument", e.argument}, {"vocab", e.vocabSize}});
  for (const ValidLens &v : validLens)
    lensJson.push_back(
        llvm::json::Object{{"argument", v.argument}, {"keys", v.keys}});
  for (const Positions &p : positions) {
    llvm::json::Object entry{
        {"argument", p.argument}, {"rows", p.rows}, {"tokens", p.tokens}};
    if (p.cache)
      entry["cache"] = *p.cache;
    positionsJson.push_back(std::move(entry));
  }
  llvm::json::Value root =
      llvm::json::Object{{"name", name},
                         {"dims", std::move(dimsJson)},
                         {"arguments", std::move(argsJson)},
                         {"embedding_ids", std::move(idsJson)},
                         {"valid_lens", std::move(lensJson)},
                         {"positions", std::move(positionsJson)},
                         {"packed_elements", packedElements}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << root;
  return text;
}

llvm::Expected<KernelSignature>
KernelSignature::fromJSON(llvm::StringRef text) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed)
    return parsed.takeError();
  auto bad = [](const llvm::Twine &what) {
    return llvm::createStringError("malformed kernel signature: " + what);
  };
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return bad("not an object");
  KernelSignature signature;
  std::optional<llvm::StringRef> name = root->getString("name");
  const llvm::json::Array *dims = root->getArray("dims");
  const llvm::json::Array *args = root->getArray("arguments");
  const llvm::json::Array *ids = root->getArray("embedding_ids");
  const llvm::json::Array *lens = root->getArray("valid_lens");
  std::optional<int64_t> packed = root->getInteger("packed_elements");
  if (!name || !dims || !args || !ids || !lens || !packed)
    return bad("missing name, dims, arguments, embedding_ids, valid_lens or "
               "packed_elements");
  if (*packed < 0)
    return bad("packed_elements is negative");
  signature.name = name->str();
  signature.packedElements = *packed;
  for (const llvm::json::Value &d : *dims) {
    const llvm::json::Object *o = d.getAsObject();
    std::optional<llvm::StringRef> dimName =
        o ? o->getString("name") : std::nullopt;
    std::optional<int64_t> value = o ? o->getInteger("value") : std::nullopt;
    if (!dimName || !value)
      return bad("a dim needs a name and a value");
    signature.dims.emplace_back(dimName->str(), *value);
  }
  for (const llvm::json::Value &a : *args) {
    const llvm::json::Object *o = a.getAsObject();
    if (!o)
      return bad("an argument is not an object");
    std::optional<llvm::StringRef> argName = o->getString("name"),
                                   role = o->getString("role"),
                                   type = o->getString("type");
    const llvm::json::Array *shape = o->getArray("shape");
    if (!argName || !role || !type || !shape)
      return bad("an argument needs name, role, type and shape");
    KernelArgument argument;
    argument.name = argName->str();
    std::optional<ArgumentRole> named = mlir::attn::abi::roleNamed(*role);
    if (!named)
      return bad("unknown role '" + *role + "'");
    argument.role = *named;
    std::optional<ElementType> element = mlir::attn::elementTypeNamed(*type);
    if (!element)
      return bad("unknown type '" + *type + "'");
    argument.type = *element;
    for (const llvm::json::Value &d : *shape) {
      std::optional<int64_t> dim = d.getAsInteger();
      if (!dim || *dim <= 0)
        return bad("a dimension must be a positive integer");
      argument.shape.push_back(*dim);
    }
    signature.arguments.push_back(std::move(argument));
  }
  for (const llvm::json::Value &e : *ids) {
    const llvm::json::Object *o = e.getAsObject();
    std::optional<int64_t> argument =
        o ? o->getInteger("argument") : std::nullopt;
    std::optional<int64_t> vocab = o ? o->getInteger("vocab") : std::nullopt;
    if (!argument || !vocab || *argument < 0 ||
        *argument >= static_cast<int64_t>(signature.arguments.size()))
      return bad("an embedding_ids entry needs a valid argument and vocab");
    signature.embeddingIds.push_back(
        {static_cast<unsigned>(*argument), *vocab});
  }
  for (const llvm::json::Value &e : *lens) {
    const llvm::json::Object *o = e.getAsObject();
    std::optional<int64_t> argument =
        o ? o->getInteger("argument") : std::nullopt;
    std::optional<int64_t> keys = o ? o->getInteger("keys") : std::nullopt;
    if (!argument || !keys || *argument < 0 ||
        *argument >= static_cast<int64_t>(signature.arguments.size()))
      return bad("a valid_lens entry needs a valid argument and keys");
    signature.validLens.push_back({static_cast<unsigned>(*argument), *keys});
  }
  auto isArgument = [&](std::optional<int64_t> i) {
    return i && *i >= 0 &&
           *i < static_cast<int64_t>(signature.arguments.size());
  };
  if (const llvm::json::Array *positions = root->getArray("positions"))
    for (const llvm::json::Value &e : *positions) {
      const llvm::json::Object *o = e.getAsObject();
      std::optional<int64_t> argument =
          o ? o->getInteger("argument") : std::nullopt;
      std::optional<int64_t> rows = o ? o->getInteger("rows") : std::nullopt;
      std::optional<int64_t> tokens =
          o ? o->getInteger("tokens") : std::nullopt;
      std::optional<int64_t> cache = o ? o->getInteger("cache") : std::nullopt;
      if (!isArgument(argument) || !rows || !tokens ||
          (o->get("cache") && !isArgument(cache)))
        return bad("a positions entry needs a valid argument, rows and tokens");
      Positions p{static_cast<unsigned>(*argument), *rows, *tokens,
                  std::nullopt};
      if (cache)
        p.cache = static_cast<unsigned>(*cache);
      signature.positions.push_back(p);
    }
  return signature;
}
