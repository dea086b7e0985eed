//===- GoldenCase.cpp - A case of tests/data/goldens, ready to run --------===//

#include "GoldenCase.h"

#include "NaiveReference.h"

#include "attnc/Codegen/Compile.h"
#include "attnc/Gen/SpecToModule.h"
#include "attnc/InitAttn.h"
#include "attnc/Runtime/Npy.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

using namespace attnc;
using namespace attnc::test;

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
  for (const KernelArgument &a : c.signature.arguments) {
    if (a.shape.size() && a.shape.back() >= 768)
      c.tolerance = 2e-4;
    bool output = a.role == ArgumentRole::Output;
    if (!output && generated->count(a.name)) {
      const ref::Tensor &t = generated->at(a.name);
      c.values.push_back(bytesOf(t.data.data(), t.data.size() * 4));
      continue;
    }
    llvm::SmallString<256> file(dir);
    llvm::sys::path::append(file,
                            (output ? "expected_" : "") + a.name + ".npy");
    auto array = readNpy(file);
    if (!array)
      return array.takeError();
    if (array->dtype == NpyDtype::I64) {
      array = narrowToI32(*array, file);
      if (!array)
        return array.takeError();
    }
    if (array->shape != a.shape)
      return llvm::createStringError(
          std::string(file) + ": shape does not match " + a.typeString());
    c.values.push_back(array->data);
  }

  // A case about the accuracy of one op states a tighter bound.
  llvm::SmallString<256> tolerance(dir);
  llvm::sys::path::append(tolerance, "tolerance.txt");
  if (llvm::sys::fs::exists(tolerance)) {
    auto buffer = llvm::MemoryBuffer::getFile(tolerance);
    double value = 0;
    if (!buffer || (*buffer)->getBuffer().trim().getAsDouble(value) ||
        !(value > 0))
      return llvm::createStringError(std::string(tolerance) +
                                     ": expected one positive number");
    c.tolerance = std::min(c.tolerance, value);
  }
  return c;
}

std::vector<std::vector<float>> GoldenCase::makeOutputs() const {
  std::vector<std::vector<float>> outputs(signature.arguments.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    if (signature.arguments[i].role == ArgumentRole::Output)
      outputs[i].assign(signature.arguments[i].numElements(), NAN);
  return outputs;
}

std::vector<void *>
GoldenCase::pointers(std::vector<std::vector<float>> &outputs) {
  std::vector<void *> result;
  for (size_t i = 0; i < signature.arguments.size(); ++i)
    result.push_back(signature.arguments[i].role == ArgumentRole::Output
                         ? static_cast<void *>(outputs[i].data())
                         : static_cast<void *>(values[i].data()));
  return result;
}

double
GoldenCase::maxError(const std::vector<std::vector<float>> &outputs) const {
  double worst = 0;
  for (size_t i = 0; i < signature.arguments.size(); ++i) {
    if (signature.arguments[i].role != ArgumentRole::Output)
      continue;
    std::vector<float> expected(outputs[i].size());
    std::memcpy(expected.data(), values[i].data(), expected.size() * 4);
    for (size_t j = 0; j < expected.size(); ++j) {
      double error = std::fabs(double(outputs[i][j]) - expected[j]);
      if (std::isnan(error))
        return NAN;
      worst = std::max(worst, error);
    }
  }
  return worst;
}
