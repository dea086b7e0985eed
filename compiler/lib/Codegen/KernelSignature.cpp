//===- KernelSignature.cpp - A kernel's arguments, as hosts see them ------===//

#include "attnc/Codegen/Compile.h"
#include "attnc/Codegen/Dispatch.h"
#include "attnc/Codegen/Target.h"

#include "attn/IR/AttnDialect.h"
#include "attn/IR/AttnOps.h"

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
  switch (role) {
  case ArgumentRole::Input:
    return "input";
  case ArgumentRole::Param:
    return "param";
  case ArgumentRole::Output:
    return "output";
  }
  return "?";
}

llvm::StringRef attnc::elementTypeName(ElementType type) {
  return type == ElementType::F32 ? "f32" : "i32";
}

size_t attnc::elementSize(ElementType) { return 4; }

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
  if (!tensor || !tensor.hasStaticShape() ||
      !(tensor.getElementType().isF32() ||
        tensor.getElementType().isSignlessInteger(32)))
    return llvm::createStringError(
        "kernel '" + kernel +
        "': every argument and result must be a static f32 or i32 tensor");
  KernelArgument argument;
  argument.name = std::move(fallback);
  argument.role = role;
  argument.type =
      tensor.getElementType().isF32() ? ElementType::F32 : ElementType::I32;
  argument.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  if (attrs) {
    if (auto name = attrs.getAs<mlir::StringAttr>(AttnDialect::kNameAttr))
      argument.name = name.str();
    if (auto roleAttr = attrs.getAs<mlir::StringAttr>(AttnDialect::kRoleAttr))
      if (roleAttr.getValue() == "param")
        argument.role = ArgumentRole::Param;
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
  llvm::json::Array dimsJson, argsJson, idsJson, lensJson;
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
  llvm::json::Value root =
      llvm::json::Object{{"name", name},
                         {"dims", std::move(dimsJson)},
                         {"arguments", std::move(argsJson)},
                         {"embedding_ids", std::move(idsJson)},
                         {"valid_lens", std::move(lensJson)},
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
    if (*role == "input")
      argument.role = ArgumentRole::Input;
    else if (*role == "param")
      argument.role = ArgumentRole::Param;
    else if (*role == "output")
      argument.role = ArgumentRole::Output;
    else
      return bad("unknown role '" + *role + "'");
    if (*type == "f32")
      argument.type = ElementType::F32;
    else if (*type == "i32")
      argument.type = ElementType::I32;
    else
      return bad("unknown type '" + *type + "'");
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
  return signature;
}

//===----------------------------------------------------------------------===//
// C header
//===----------------------------------------------------------------------===//

/// NAME -> an upper-case C identifier prefix.
static std::string macroName(llvm::StringRef text) {
  std::string result;
  for (char c : text)
    result += llvm::isAlnum(c) ? llvm::toUpper(c) : '_';
  return result;
}

std::string attnc::emitCHeaderWith(const KernelSignature &signature,
                                   llvm::StringRef origin,
                                   llvm::StringRef entries) {
  std::string text;
  llvm::raw_string_ostream os(text);
  std::string prefix = macroName(signature.name);
  os << "/* " << signature.name << ": generated by attnc from " << origin
     << ". Do not edit. */\n";
  os << "#ifndef ATTNC_KERNEL_" << prefix << "_H\n";
  os << "#define ATTNC_KERNEL_" << prefix << "_H\n\n";
  os << "#include <stdint.h>\n\n";
  os << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  if (!signature.dims.empty()) {
    os << "/* dims */\n";
    for (const auto &[name, value] : signature.dims)
      os << "#define " << prefix << "_" << macroName(name) << " " << value
         << "\n";
    os << "\n";
  }
  for (const KernelArgument &a : signature.arguments) {
    std::string arg = prefix + "_" + macroName(a.name);
    os << "/* " << a.name << ": " << roleName(a.role) << " " << a.typeString()
       << " */\n";
    os << "#define " << arg << "_RANK " << a.shape.size() << "\n";
    os << "#define " << arg << "_SHAPE {";
    llvm::interleaveComma(a.shape, os);
    os << "}\n";
    os << "#define " << arg << "_NUMEL " << a.numElements() << "\n";
  }
  os << entries;
  os << "#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n\n";
  os << "#endif /* ATTNC_KERNEL_" << prefix << "_H */\n";
  return text;
}

std::string attnc::cParameters(const KernelSignature &signature) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(
      signature.arguments, os,
      [&](const KernelArgument &a) {
        bool output = a.role == ArgumentRole::Output;
        os << (output ? "" : "const ")
           << (a.type == ElementType::F32 ? "float" : "int32_t") << " *"
           << a.name;
      },
      ", ");
  return text;
}

/// The CPU object's entries: NAME, NAME_prepare, NAME_prepared and their
/// packed forms.
static std::string cpuEntries(const KernelSignature &signature) {
  std::string text;
  llvm::raw_string_ostream os(text);
  std::string prefix = macroName(signature.name);
  os << "\n/* Buffers are dense, row-major, any alignment, and must not\n"
        "   overlap. Returns 0, or non-zero on a run-time error: the number\n"
        "   of embeddings given an id out of range, or "
     << prefix
     << "_STATUS_UNSUPPORTED_CPU\n"
        "   when the machine lacks the instruction set of every CPU the\n"
        "   object was compiled for (x86-64: checked at the first call;\n"
        "   ATTNC_CPU_VARIANT=I in the environment picks the I-th CPU of the\n"
        "   --mcpu list, if the machine can run it). Safe to call from many\n"
        "   threads. */\n"
     << "#define " << prefix << "_STATUS_UNSUPPORTED_CPU ("
     << kUnsupportedCpuStatus << ")\n";
  auto pointer = [&](const KernelArgument &a) {
    bool output = a.role == ArgumentRole::Output;
    os << (output ? "" : "const ")
       << (a.type == ElementType::F32 ? "float" : "int32_t") << " *" << a.name;
  };
  os << "int " << signature.name << "(";
  llvm::interleave(signature.arguments, os, pointer, ", ");
  os << ");\n\n";

  // The same kernel in two steps, for params that stay the same over many
  // calls. `packed` is renamed if an argument has that name, or one that
  // gives its macro (PACKED).
  std::string packed = "packed";
  while (llvm::any_of(signature.arguments, [&](const KernelArgument &a) {
    return macroName(a.name) == macroName(packed);
  }))
    packed += "_";
  std::string packedNumel = prefix + "_" + macroName(packed) + "_NUMEL";
  os << "/* Params prepared once: " << signature.name
     << "_prepare reads the params and fills\n   `" << packed << "` ("
     << packedNumel << " floats: the weights laid out for the\n"
     << "   GEMMs; best 64-byte aligned). " << signature.name
     << "_prepared takes the arguments\n   of " << signature.name << " plus `"
     << packed
     << "` before the outputs and gives the same results\n"
        "   without redoing that work. Prepare again after a param "
        "changes. */\n";
  os << "#define " << packedNumel << " " << signature.packedElements << "\n";
  os << "int " << signature.name << "_prepare(";
  for (const KernelArgument &a : signature.arguments)
    if (a.role == ArgumentRole::Param) {
      pointer(a);
      os << ", ";
    }
  os << "float *" << packed << ");\n";
  os << "int " << signature.name << "_prepared(";
  bool packedWritten = false;
  for (const KernelArgument &a : signature.arguments) {
    if (a.role == ArgumentRole::Output && !packedWritten) {
      os << "const float *" << packed << ", ";
      packedWritten = true;
    }
    pointer(a);
    os << (&a == &signature.arguments.back() ? "" : ", ");
  }
  if (!packedWritten)
    os << (signature.arguments.empty() ? "" : ", ") << "const float *"
       << packed;
  os << ");\n\n";
  os << "/* The three entries above with their buffer pointers in one array,\n"
        "   in the order of their prototypes: for hosts that call kernels of\n"
        "   any arity (the runtime's JIT, foreign-function interfaces). */\n";
  for (const char *step : {"", "_prepare", "_prepared"})
    os << "int " << packedEntryName(signature.name + step)
       << "(void **args);\n";
  os << "\n";
  return text;
}

std::string attnc::emitCHeader(const KernelSignature &signature,
                               llvm::StringRef origin) {
  return emitCHeaderWith(signature, origin, cpuEntries(signature));
}

std::string attnc::headerMacroPrefix(llvm::StringRef name) {
  return macroName(name);
}
