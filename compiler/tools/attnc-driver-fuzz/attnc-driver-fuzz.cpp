//===- attnc-driver-fuzz.cpp - libFuzzer harness of the whole driver ------===//
//
// Takes whatever the front end accepts through what `attnc` does with it up
// to LLVM IR: MLIRGen and the verifier (specToModule), the kernels'
// signatures, the CPU pipeline to the LLVM dialect, the packed-params sizes
// and the translation to LLVM IR (verified). LLVM's optimizer and code
// generator are not run: they would take most of the time of every input.
//
// The contract is the driver's exit-status rule (attnc.cpp, RunCommand.cpp):
// a spec the front end rejects is the user's error (exit 1), and once the
// front end has accepted it, every failure is attnc's own, an internal
// error (exit 2). A rejection is fine here; anything after it that fails
// is a finding and aborts (internalError below, the one place).
//
// Built twice: attnc-driver-fuzz takes .attn specs, attnc-mlir-fuzz
// (ATTNC_FUZZ_ATTN_IR) takes attn IR as `attnc KERNELS.mlir` reads it: the
// dialect's verifier and attnc's checks of hand-written kernels are its
// front end, and whatever they accept must compile (docs/security.md).
//
//===----------------------------------------------------------------------===//

#include "attnc/Codegen/Compile.h"
#include "attnc/Codegen/LLVMTranslation.h"
#include "attnc/Gen/SpecToModule.h"
#include "attnc/InitAttn.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace attnc;

namespace {

/// specToModule reads a spec or attn IR by the input's extension.
#ifdef ATTNC_FUZZ_ATTN_IR
constexpr const char *kInputName = "fuzz.mlir";
#else
constexpr const char *kInputName = "fuzz.attn";
#endif

/// The MLIR diagnostics of the current input (the lowering's, the
/// verifier's), captured instead of printed; at most this many bytes.
constexpr size_t kMaxCaptured = 8192;
std::string mlirDiagnostics;

/// The stage the current input is in, for LLVM fatal errors, and the
/// options it is lowered with (variantOf).
const char *currentStage = "startup";
const char *currentVariant = "none yet";

/// A spec the front end accepted failed: abort with what failed and the
/// diagnostics that came with it.
[[noreturn]] void internalError(llvm::StringRef stage,
                                llvm::StringRef message) {
  fprintf(stderr,
          "attnc-driver-fuzz: driver contract violated: a spec the front end "
          "accepted failed in %.*s (attnc would exit 2, internal error), "
          "lowered with %s: %.*s\n",
          static_cast<int>(stage.size()), stage.data(), currentVariant,
          static_cast<int>(message.size()), message.data());
  if (!mlirDiagnostics.empty())
    fprintf(stderr, "MLIR diagnostics:\n%s\n", mlirDiagnostics.c_str());
  abort();
}

[[noreturn]] void internalError(llvm::StringRef stage, llvm::Error error) {
  internalError(stage, llvm::toString(std::move(error)));
}

/// attnc's fatalErrorHandler exits 2: a finding too.
void fatalErrorHandler(void *, const char *reason, bool) {
  internalError(currentStage, std::string("LLVM fatal error: ") + reason);
}

/// The dialects and translations attnc registers, once.
const mlir::DialectRegistry &registry() {
  static const mlir::DialectRegistry *registry = [] {
    auto *registry = new mlir::DialectRegistry;
    registerAllDialects(*registry);
    return registry;
  }();
  return *registry;
}

/// A fresh context per input, single-threaded as the runtime's, whose
/// diagnostics are captured. Reusing one would save nothing measurable
/// (the dialects load in about a millisecond) but keep every uniqued type
/// and attribute of every input (positional-encoding tables are dense
/// constants), so memory would only grow and libFuzzer would rerun each
/// input to look for the leak.
std::unique_ptr<mlir::MLIRContext> makeContext() {
  auto context = std::make_unique<mlir::MLIRContext>(
      registry(), mlir::MLIRContext::Threading::DISABLED);
  context->getDiagEngine().registerHandler([](mlir::Diagnostic &d) {
    if (mlirDiagnostics.size() < kMaxCaptured) {
      llvm::raw_string_ostream os(mlirDiagnostics);
      os << d.getLocation() << ": " << d << "\n";
      for (const mlir::Diagnostic &note : d.getNotes())
        os << "  note: " << note << "\n";
    }
    if (mlirDiagnostics.size() > kMaxCaptured)
      mlirDiagnostics.resize(kMaxCaptured);
    return mlir::success();
  });
  return context;
}

/// The options an input is lowered with, chosen by a hash of its bytes (one
/// lowering per input, and a reproducer carries its choice): half of them
/// with attnc's defaults (-O2, the host CPU), a quarter with the runtime's
/// (the JIT: OpenMP loops on attnc_rt's pool), a quarter at -O0 (the
/// scalar path, attention always decomposed).
struct Variant {
  const char *name;
  CompileOptions options;
};

Variant variantOf(llvm::StringRef text) {
  uint32_t hash = 2166136261u; // FNV-1a
  for (char c : text)
    hash = (hash ^ static_cast<uint8_t>(c)) * 16777619u;
  Variant variant{"attnc's default options (-O2, host CPU)", {}};
  variant.options.setOptLevel(2);
  switch (hash % 4) {
  case 2:
    variant.name = "the runtime's options (-O2, host CPU, parallel)";
    variant.options.pipeline.parallel = true;
    variant.options.objectBlockCache = false;
    break;
  case 3:
    variant.name = "-O0 (host CPU)";
    variant.options.setOptLevel(0);
    break;
  default:
    break;
  }
  return variant;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  llvm::install_fatal_error_handler(fatalErrorHandler);
  registry();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlirDiagnostics.clear();
  currentVariant = "none yet";
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);

  // Front end, MLIRGen and the verifier. The front end prints every error
  // it reports (attnc-fuzz checks that); MLIRGen's and the verifier's go
  // to the context.
  currentStage = "MLIRGen";
  std::string frontEnd;
  llvm::raw_string_ostream frontEndStream(frontEnd);
  std::unique_ptr<mlir::MLIRContext> context = makeContext();
  auto module = specToModule(*context, text, kInputName, "", frontEndStream,
                             /*allBlocks=*/true);
  if (!module) {
    std::string message = llvm::toString(module.takeError());
#ifdef ATTNC_FUZZ_ATTN_IR
    // attnc reports every failure of parseAttnIR as the user's error (the
    // parser's, the verifier's and attnc's checks of hand-written kernels).
    return 0;
#endif
    if (frontEnd.find("error: ") != std::string::npos &&
        mlirDiagnostics.empty())
      return 0; // rejected by the front end: the user's error
    internalError("MLIRGen or the verifier", message);
  }

  currentStage = "kernelSignatures";
  auto signatures = kernelSignatures(**module);
  if (!signatures)
    internalError(currentStage, signatures.takeError());

  Variant variant = variantOf(text);
  currentVariant = variant.name;
  currentStage = "the lowering to the LLVM dialect";
  if (llvm::Error error = lowerToLLVMDialect(**module, variant.options))
    internalError(currentStage, std::move(error));

  // What --emit=header and the runtime read from the lowered module.
  currentStage = "readPackedElements";
  if (llvm::Error error = readPackedElements(**module, *signatures))
    internalError(currentStage, std::move(error));

  currentStage = "the translation to LLVM IR";
  llvm::LLVMContext llvmContext;
  // As every translation of the product does (Target.h).
  dropAttnArgumentAttrs(**module);
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(**module, llvmContext, "fuzz");
  if (!llvmModule)
    internalError(currentStage, "translateModuleToLLVMIR returned null");
  std::string broken;
  llvm::raw_string_ostream brokenStream(broken);
  if (llvm::verifyModule(*llvmModule, &brokenStream))
    internalError("the LLVM IR verifier", broken);
  currentStage = "between inputs";
  return 0;
}
