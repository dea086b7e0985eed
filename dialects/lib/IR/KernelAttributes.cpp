//===- KernelAttributes.cpp - Verifying the attn.* attributes -------------===//
//
// The attributes MLIRGen and attnc's passes put on kernels (their names,
// roles, state updates, dims; the passes' marks), verified wherever the
// MLIR verifier runs: when a .mlir file is parsed (attnc, attn-opt, the
// Python module) and between passes. Passes and code generators read them
// without checking again, so nothing unverified may reach them: an
// `attn.updates` that was not an i64 index of a state argument used to be
// an ABI mismatch or an out-of-bounds read, and a name holding a newline
// landed in the generated header.
//
//===----------------------------------------------------------------------===//

#include "attn/IR/AttnDialect.h"
#include "attn/IR/AttnShapeRules.h"
#include "attn/Target/CNames.h"
#include "attn/Target/KernelAbi.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The attribute's name in messages: `attn.updates`.
std::string quoted(NamedAttribute attribute) {
  return "'" + attribute.getName().str() + "'";
}

/// An error at `op` about `attribute`.
InFlightDiagnostic attributeError(Operation *op, NamedAttribute attribute) {
  return op->emitError() << quoted(attribute) << " ";
}

/// A function's argument and result attributes only stand on functions.
FunctionOpInterface functionOf(Operation *op, NamedAttribute attribute) {
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function)
    attributeError(op, attribute)
        << "stands on an argument or result of '" << op->getName()
        << "'; the attn dialect gives them to functions only";
  return function;
}

std::string argumentName(FunctionOpInterface function, unsigned index) {
  auto name =
      function.getArgAttrOfType<StringAttr>(index, AttnDialect::kNameAttr);
  return "argument #" + std::to_string(index) +
         (name ? " ('" + abi::printableName(name.getValue()) + "')" : "");
}

/// `attribute` must be a name of the kernel's C interface.
LogicalResult verifyCName(Operation *op, NamedAttribute attribute,
                          StringRef what) {
  auto name = dyn_cast<StringAttr>(attribute.getValue());
  if (!name)
    return attributeError(op, attribute)
           << "of " << what << " must be a string, e.g. \"X\"";
  std::string conflict =
      abi::cNameConflict(name.getValue(), abi::CNameUse::Parameter);
  if (!conflict.empty())
    return attributeError(op, attribute)
           << "of " << what << " is '" << abi::printableName(name.getValue())
           << "', which " << conflict
           << "; rename it (the name is part of the kernel's C interface)";
  return success();
}

/// Two buffers of one side (arguments, results) may not share a name;
/// reported at the later one. Arguments without a role (attn-split-
/// prepare's `packed`) are the pipeline's own and not in the interface.
LogicalResult verifyUniqueName(FunctionOpInterface function, bool arguments,
                               unsigned index, StringAttr name) {
  for (unsigned other = 0; other < index; ++other) {
    DictionaryAttr attrs = arguments ? function.getArgAttrDict(other)
                                     : function.getResultAttrDict(other);
    if (!attrs || attrs.get(AttnDialect::kNameAttr) != name)
      continue;
    if (arguments && (!attrs.get(AttnDialect::kRoleAttr) ||
                      !function.getArgAttr(index, AttnDialect::kRoleAttr)))
      continue;
    return function->emitError()
           << (arguments ? "arguments #" : "results #") << other << " and #"
           << index << " are both named '"
           << abi::printableName(name.getValue())
           << "'; each buffer of a kernel needs a name of its own";
  }
  return success();
}

/// `attn.name` of argument or result `index`: a C name, its side's own.
LogicalResult verifyName(FunctionOpInterface function, bool arguments,
                         unsigned index, NamedAttribute attribute) {
  std::string what =
      (arguments ? "argument #" : "result #") + std::to_string(index);
  if (failed(verifyCName(function, attribute, what)))
    return failure();
  return verifyUniqueName(function, arguments, index,
                          cast<StringAttr>(attribute.getValue()));
}

/// Whether two buffer types hold the same elements in the same shape (a
/// tensor and its bufferized memref do).
bool sameElements(Type a, Type b) {
  auto shapedA = dyn_cast<ShapedType>(a), shapedB = dyn_cast<ShapedType>(b);
  if (!shapedA || !shapedB)
    return true; // pointers after the LLVM lowering: nothing left to compare
  return shapedA.getElementType() == shapedB.getElementType() &&
         shapedA.hasRank() && shapedB.hasRank() &&
         shapedA.getShape() == shapedB.getShape();
}

/// `attn.updates = N : i64` on result `index`: N is the index of a state
/// argument of the same type, updated by no other result.
LogicalResult verifyUpdates(FunctionOpInterface function, unsigned index,
                            NamedAttribute attribute) {
  auto value = dyn_cast<IntegerAttr>(attribute.getValue());
  if (!value || !value.getType().isSignlessInteger(64))
    return attributeError(function, attribute)
           << "of result #" << index
           << " must be the index of the state argument it updates, an i64 "
              "(e.g. 2 : i64), got "
           << attribute.getValue();
  int64_t argument = value.getInt();
  unsigned arguments = function.getNumArguments();
  if (argument < 0 || argument >= static_cast<int64_t>(arguments))
    return attributeError(function, attribute)
           << "of result #" << index << " is " << argument
           << ", which is not an argument of '" << function.getName()
           << "' (it has " << arguments << ")";
  auto role =
      function.getArgAttrOfType<StringAttr>(argument, AttnDialect::kRoleAttr);
  if (!role || role.getValue() != abi::nameOf(abi::ArgumentRole::State))
    return attributeError(function, attribute)
           << "of result #" << index << " names "
           << argumentName(function, argument)
           << ", which is not a state (attn.role = \"state\"): only a state "
              "is updated in place";
  Type argumentType = function.getArgumentTypes()[argument];
  Type resultType = function.getResultTypes()[index];
  if (!sameElements(argumentType, resultType))
    return attributeError(function, attribute)
           << "of result #" << index << " (" << resultType << ") names "
           << argumentName(function, argument) << " of another type ("
           << argumentType << "): a state's new value has its type";
  for (unsigned other = 0; other < index; ++other)
    if (function.getResultAttr(other, AttnDialect::kUpdatesAttr) == value)
      return attributeError(function, attribute)
             << "of results #" << other << " and #" << index << " both name "
             << argumentName(function, argument)
             << "; a state is updated by one result";
  return success();
}

/// attn.dim_names and attn.dim_values: one C name and one size (1 to the
/// largest tensor the ops take) per dim, in one order.
LogicalResult verifyDims(Operation *op, NamedAttribute attribute) {
  auto names = op->getAttr(AttnDialect::kDimNamesAttr);
  auto values = op->getAttr(AttnDialect::kDimValuesAttr);
  auto nameArray = dyn_cast_or_null<ArrayAttr>(names);
  auto valueArray = dyn_cast_or_null<DenseI64ArrayAttr>(values);
  if (!nameArray || !valueArray ||
      !llvm::all_of(nameArray, llvm::IsaPred<StringAttr>) ||
      nameArray.size() != static_cast<size_t>(valueArray.size()))
    return attributeError(op, attribute)
           << "needs its companion: attn.dim_names (an array of strings) and "
              "attn.dim_values (array<i64: ...>) of one length, together";
  if (attribute.getName() != AttnDialect::kDimNamesAttr)
    return success(); // checked once, at attn.dim_names
  for (auto [name, value] : llvm::zip(nameArray, valueArray.asArrayRef())) {
    StringRef dim = cast<StringAttr>(name).getValue();
    std::string conflict = abi::cNameConflict(dim, abi::CNameUse::MacroSuffix);
    if (!conflict.empty())
      return attributeError(op, attribute)
             << "holds dim '" << abi::printableName(dim) << "', which "
             << conflict << "; rename it (dims name the header's macros)";
    if (value < 1 || value > rules::kMaxElements)
      return attributeError(op, attribute)
             << "gives dim '" << dim << "' the size " << value
             << "; a dim is a size from 1 to 2^40";
  }
  for (auto [i, name] : llvm::enumerate(nameArray))
    for (unsigned other = 0; other < i; ++other)
      if (nameArray[other] == name)
        return attributeError(op, attribute)
               << "names two dims '" << cast<StringAttr>(name).getValue()
               << "'";
  return success();
}

} // namespace

LogicalResult AttnDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attribute) {
  FunctionOpInterface function = functionOf(op, attribute);
  if (!function)
    return failure();
  std::string what = "argument #" + std::to_string(argIndex);
  if (attribute.getName() == kNameAttr)
    return verifyName(function, /*arguments=*/true, argIndex, attribute);
  if (attribute.getName() == kRoleAttr) {
    auto role = dyn_cast<StringAttr>(attribute.getValue());
    std::optional<abi::ArgumentRole> named =
        role ? abi::roleNamed(role.getValue()) : std::nullopt;
    if (!named || *named == abi::ArgumentRole::Output)
      return attributeError(op, attribute)
             << "of " << what
             << " must be \"input\", \"param\" or \"state\", got "
             << attribute.getValue();
    return success();
  }
  return attributeError(op, attribute)
         << "on " << what
         << " is not an attribute of the attn dialect (arguments take "
            "attn.name and attn.role)";
}

LogicalResult
AttnDialect::verifyRegionResultAttribute(Operation *op, unsigned regionIndex,
                                         unsigned resultIndex,
                                         NamedAttribute attribute) {
  FunctionOpInterface function = functionOf(op, attribute);
  if (!function)
    return failure();
  std::string what = "result #" + std::to_string(resultIndex);
  if (attribute.getName() == kNameAttr)
    return verifyName(function, /*arguments=*/false, resultIndex, attribute);
  if (attribute.getName() == kUpdatesAttr)
    return verifyUpdates(function, resultIndex, attribute);
  return attributeError(op, attribute)
         << "on " << what
         << " is not an attribute of the attn dialect (results take "
            "attn.name and attn.updates)";
}

LogicalResult AttnDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attribute) {
  StringAttr name = attribute.getName();
  Attribute value = attribute.getValue();
  if (name == kDimNamesAttr || name == kDimValuesAttr)
    return verifyDims(op, attribute);
  if (name == kPackedElementsAttr) {
    auto elements = dyn_cast<IntegerAttr>(value);
    if (!elements || !elements.getType().isSignlessInteger(64) ||
        elements.getInt() < 0)
      return attributeError(op, attribute)
             << "must be a count of elements, an i64 of at least 0";
    return success();
  }
  if (name == kKernelPartAttr) {
    auto part = dyn_cast<StringAttr>(value);
    if (!part ||
        (part.getValue() != "prepare" && part.getValue() != "prepared"))
      return attributeError(op, attribute)
             << "must be \"prepare\" or \"prepared\"";
    return success();
  }
  if (name == kOffsetCallOfAttr) {
    if (!isa<FlatSymbolRefAttr>(value))
      return attributeError(op, attribute)
             << "must name the function called, e.g. @k";
    return success();
  }
  if (name == kOffsetCallBytesAttr) {
    auto bytes = dyn_cast<DenseI64ArrayAttr>(value);
    if (!bytes || llvm::any_of(bytes.asArrayRef(),
                               [](int64_t offset) { return offset < 0; }))
      return attributeError(op, attribute)
             << "must be the arguments' offsets in bytes, array<i64: ...> "
                "of values at least 0";
    return success();
  }
  if (name == kBf16PairGemmAttr) {
    if (!isa<UnitAttr>(value))
      return attributeError(op, attribute) << "is a unit attribute";
    return success();
  }
  if (name == kInnerRoundingAttr) {
    auto type = dyn_cast<TypeAttr>(value);
    if (!type || !isa<FloatType>(type.getValue()))
      return attributeError(op, attribute) << "must be a float type, e.g. bf16";
    return success();
  }
  return attributeError(op, attribute)
         << "is not an attribute of the attn dialect";
}
