//===- GoldenCase.cpp - A case of tests/data/goldens, ready to run --------===//

#include "GoldenCase.h"

#include "NaiveReference.h"

#include "attnc/Codegen/Compile.h"
#include "attnc/Gen/SpecToModule.h"
#include "attnc/InitAttn.h"
#include "attnc/Runtime/Npy.h"

#include "attn/Target/FloatConversions.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

using namespace attnc;
using namespace attnc::test;
using mlir::attn::ElementType;

namespace {

std::string caseDir(const std::string &name) {
  llvm::SmallString<256> dir(ATTNC_TEST_DATA_DIR);
  llvm::sys::path::append(dir, "goldens", name);
  return std::string(dir);
}

/// formula_params.txt: `NAME SALT SCALE OFFSET DIM...` per generated param.
llvm::Expected<std::map<std::string, ref::Tensor>>
formulaParams(const std::string &dir) {
  std::map<std::string, ref::Tensor> params;
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "formula_params.txt");
  if (!llvm::sys::fs::exists(path))
    return params;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::errorCodeToError(buffer.getError());
  llvm::SmallVector<llvm::StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (llvm::StringRef line : lines) {
    line = line.trim();
    if (line.empty() || line.starts_with("#"))
      continue;
    llvm::SmallVector<llvm::StringRef> f;
    line.split(f, ' ', -1, /*KeepEmpty=*/false);
    uint32_t salt = 0;
    double scale = 0, offset = 0;
    std::vector<int64_t> shape;
    bool bad = f.size() < 5 || f[1].getAsInteger(10, salt) ||
               f[2].getAsDouble(scale) || f[3].getAsDouble(offset);
    for (size_t i = 4; i < f.size() && !bad; ++i)
      bad = f[i].getAsInteger(10, shape.emplace_back());
    if (bad)
      return llvm::createStringError("malformed line in " + path + ": " + line);
    params[f[0].str()] = ref::formulaTensor(shape, salt, scale, offset);
  }
  return params;
}

std::vector<char> bytesOf(const void *data, size_t size) {
  const char *p = static_cast<const char *>(data);
  return std::vector<char>(p, p + size);
}

std::string filePath(const std::string &dir, const std::string &file) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, file);
  return std::string(path);
}

/// An input's or param's NAME.npy: its bytes, in the argument's type (i32
/// from an int64 file too).
llvm::Expected<std::vector<char>> readArgument(const std::string &dir,
                                               const KernelArgument &a) {
  std::string file = filePath(dir, a.name + ".npy");
  auto array = readNpy(file);
  if (!array)
    return array.takeError();
  if (array->dtype == NpyDtype::I64) {
    array = narrowToI32(*array, file);
    if (!array)
      return array.takeError();
  }
  if (npyDtypeOf(a.type) != array->dtype)
    return llvm::createStringError(file + ": dtype '" +
                                   npyDtypeDescr(array->dtype) +
                                   "' does not match " + a.typeString());
  if (array->shape != a.shape)
    return llvm::createStringError(file + ": shape does not match " +
                                   a.typeString());
  return std::move(array->data);
}

/// PREFIX + NAME.npy of an output: f32 values, or for a bf16/f16 output
/// the float64 reference (`expected_`) or PyTorch's values in the output's
/// type (`torch_`), as doubles; `stored`: the file's dtype.
llvm::Expected<std::vector<double>> readExpected(const std::string &dir,
                                                 const KernelArgument &a,
                                                 const char *prefix,
                                                 NpyDtype *stored = nullptr) {
  std::string file = filePath(dir, prefix + a.name + ".npy");
  auto array = readNpy(file);
  if (!array)
    return array.takeError();
  if (stored)
    *stored = array->dtype;
  if (array->shape != a.shape)
    return llvm::createStringError(file + ": shape does not match " +
                                   a.typeString());
  if (array->dtype == NpyDtype::F64)
    return array->toF64();
  if (array->dtype == NpyDtype::F32 || array->dtype == npyDtypeOf(a.type)) {
    std::vector<float> values = array->toFloats();
    return std::vector<double>(values.begin(), values.end());
  }
  return llvm::createStringError(file +
                                 ": expected float32 or float64 values, or " +
                                 mlir::attn::nameOf(a.type) + " ones, got '" +
                                 npyDtypeDescr(array->dtype) + "'");
}

/// `x` in 4 significant digits.
std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.4g", x);
  return text;
}

/// Bits of precision after the point of a float element type.
int fractionBits(ElementType type) {
  return type == ElementType::BF16 ? 7 : type == ElementType::F16 ? 10 : 23;
}

/// docs/spec.md §7's bar for the bf16/f16 output at `index`: PyTorch's own
/// error in that type (torch_NAME.npy, when PyTorch could run the code in
/// it) or one ulp of the type at the reference's largest magnitude,
/// whichever is larger.
llvm::Error setLowPrecisionBar(GoldenCase &c, size_t index,
                               const std::string &dir) {
  const KernelArgument &a = c.signature.arguments[index];
  const std::vector<double> &reference = c.expected[index];
  double magnitude = 0;
  for (double v : reference)
    magnitude = std::max(magnitude, std::fabs(v));
  double ulp =
      magnitude > 0
          ? std::ldexp(1.0, std::ilogb(magnitude) - fractionBits(a.type))
          : 0;
  std::string type = mlir::attn::nameOf(a.type).str();
  c.bounds[index] = ulp;
  c.boundReasons[index] = "one " + type +
                          " ulp at the reference's largest "
                          "magnitude " +
                          number(magnitude);
  if (!llvm::sys::fs::exists(filePath(dir, "torch_" + a.name + ".npy"))) {
    c.boundReasons[index] += " (PyTorch cannot run this code in " + type + ")";
    return llvm::Error::success();
  }
  auto own = readExpected(dir, a, "torch_");
  if (!own)
    return own.takeError();
  double torchError = 0;
  for (size_t i = 0; i < reference.size(); ++i)
    torchError = std::max(torchError, std::fabs((*own)[i] - reference[i]));
  std::string torchReason =
      "PyTorch " + type + "'s own error " + number(torchError);
  if (torchError > ulp) {
    c.bounds[index] = torchError;
    c.boundReasons[index] = torchReason + " (one ulp: " + number(ulp) + ")";
  } else {
    c.boundReasons[index] += " (" + torchReason + ")";
  }
  return llvm::Error::success();
}

/// The value of element `i` of a buffer of `type` (f32, bf16 or f16).
double valueAt(const std::vector<char> &bytes, ElementType type, size_t i) {
  if (type == ElementType::F32) {
    float v;
    std::memcpy(&v, bytes.data() + 4 * i, 4);
    return v;
  }
  uint16_t bits;
  std::memcpy(&bits, bytes.data() + 2 * i, 2);
  return mlir::attn::widenFrom(type, bits);
}

} // namespace

std::vector<std::string> attnc::test::goldenCaseNames() {
  std::vector<std::string> names;
  llvm::SmallString<256> root(ATTNC_TEST_DATA_DIR);
  llvm::sys::path::append(root, "goldens");
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(root, ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::fs::is_directory(it->path()))
      names.push_back(llvm::sys::path::filename(it->path()).str());
  std::sort(names.begin(), names.end());
  return names;
}

llvm::Expected<GoldenCase>
attnc::test::loadGoldenCase(const std::string &name) {
  GoldenCase c;
  c.name = name;
  std::string dir = caseDir(name);
  llvm::SmallString<256> spec(dir);
  llvm::sys::path::append(spec, name + ".attn");
  c.specPath = std::string(spec);
  auto text = llvm::MemoryBuffer::getFile(spec);
  if (!text)
    return llvm::createStringError("cannot read " + c.specPath);
  c.specText = (*text)->getBuffer().str();

  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  auto module = specToModule(context, c.specText, c.specPath, "", llvm::errs());
  if (!module)
    return module.takeError();
  auto signatures = kernelSignatures(**module);
  if (!signatures)
    return signatures.takeError();
  c.signature = signatures->front();

  auto generated = formulaParams(dir);
  if (!generated)
    return generated.takeError();
  size_t count = c.signature.arguments.size();
  c.values.resize(count);
  c.expected.resize(count);
  c.bounds.assign(count, 0);
  c.boundReasons.resize(count);
  double tolerance = 1e-4;
  for (const auto &[index, a] : llvm::enumerate(c.signature.arguments)) {
    if (a.shape.size() && a.shape.back() >= 768)
      tolerance = 2e-4;
    if (a.role == ArgumentRole::Output) {
      NpyDtype stored;
      auto reference = readExpected(dir, a, "expected_", &stored);
      if (!reference)
        return reference.takeError();
      // A bf16/f16 output is held to the float64 reference (§7).
      if (a.type != ElementType::F32 && stored != NpyDtype::F64)
        return llvm::createStringError(
            c.specPath + ": the expected values of the " + a.typeString() +
            " output " + a.name + " must be the float64 reference");
      c.expected[index] = std::move(*reference);
      continue;
    }
    if (generated->count(a.name)) {
      const ref::Tensor &t = generated->at(a.name);
      c.values[index] = bytesOf(t.data.data(), t.data.size() * 4);
      continue;
    }
    auto array = readArgument(dir, a);
    if (!array)
      return array.takeError();
    c.values[index] = std::move(*array);
  }

  // A case about the accuracy of one op states a tighter bound.
  std::string toleranceFile = filePath(dir, "tolerance.txt");
  if (llvm::sys::fs::exists(toleranceFile)) {
    auto buffer = llvm::MemoryBuffer::getFile(toleranceFile);
    double value = 0;
    if (!buffer || (*buffer)->getBuffer().trim().getAsDouble(value) ||
        !(value > 0))
      return llvm::createStringError(toleranceFile +
                                     ": expected one positive number");
    tolerance = std::min(tolerance, value);
  }
  for (const auto &[index, a] : llvm::enumerate(c.signature.arguments)) {
    if (a.role != ArgumentRole::Output)
      continue;
    if (a.type == ElementType::F32) {
      c.bounds[index] = tolerance;
      c.boundReasons[index] = "the f32 tolerance of docs/spec.md §7";
      continue;
    }
    llvm::Error error = setLowPrecisionBar(c, index, dir);
    if (error)
      return std::move(error);
  }
  return c;
}

Buffers GoldenCase::makeOutputs() const {
  Buffers outputs(signature.arguments.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const KernelArgument &a = signature.arguments[i];
    if (a.role == ArgumentRole::Output)
      outputs[i].assign(a.numElements() * mlir::attn::bytesOf(a.type),
                        char(0xff));
  }
  return outputs;
}

std::vector<void *> GoldenCase::pointers(Buffers &outputs) {
  std::vector<void *> result;
  for (size_t i = 0; i < signature.arguments.size(); ++i)
    result.push_back(signature.arguments[i].role == ArgumentRole::Output
                         ? static_cast<void *>(outputs[i].data())
                         : static_cast<void *>(values[i].data()));
  return result;
}

double GoldenCase::errorOf(size_t index, const Buffers &outputs) const {
  const KernelArgument &a = signature.arguments[index];
  const std::vector<double> &want = expected[index];
  double worst = 0;
  for (size_t j = 0; j < want.size(); ++j) {
    double error = std::fabs(valueAt(outputs[index], a.type, j) - want[j]);
    if (std::isnan(error))
      return NAN;
    worst = std::max(worst, error);
  }
  return worst;
}

std::string GoldenCase::mismatches(const Buffers &outputs) const {
  std::string lines;
  for (size_t i = 0; i < signature.arguments.size(); ++i) {
    if (signature.arguments[i].role != ArgumentRole::Output)
      continue;
    double error = errorOf(i, outputs);
    if (std::isnan(error) || error > bounds[i])
      lines +=
          name + ": output " + signature.arguments[i].name +
          (std::isnan(error) ? " has a NaN"
                             : ": max |error| " + number(error) + " > " +
                                   number(bounds[i]) + ", " + boundReasons[i]) +
          "\n";
  }
  return lines;
}

std::string GoldenCase::report(const Buffers &outputs) const {
  std::string lines;
  for (size_t i = 0; i < signature.arguments.size(); ++i)
    if (signature.arguments[i].role == ArgumentRole::Output)
      lines += name + ": output " + signature.arguments[i].name +
               ": max |error| " + number(errorOf(i, outputs)) + ", bound " +
               number(bounds[i]) + " (" + boundReasons[i] + ")\n";
  return lines;
}
