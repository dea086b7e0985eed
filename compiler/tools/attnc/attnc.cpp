//===- attnc.cpp - The attnc compiler driver ------------------------------===//
//
// `attnc SPEC.attn [--emit=KIND] ...` compiles a .attn spec; `attnc run SPEC`
// JIT-runs one of its blocks (SPEC §4). Exit status: 0 success, 1 user error
// (bad spec, flags or files), 2 internal error.
//
//===----------------------------------------------------------------------===//

#include "attnc/Codegen/Compile.h"
#include "attnc/Frontend/Frontend.h"
#include "attnc/Gen/MLIRGen.h"
#include "attnc/InitAttn.h"
#include "attnc/Runtime/Runtime.h"
#include "attnc/Support/Diagnostics.h"

#include "RunCommand.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace attnc;
namespace cl = llvm::cl;

namespace {

enum ExitCode { kSuccess = 0, kUserError = 1, kInternalError = 2 };

enum class EmitKind { Attn, Lowered, Llvm, Asm, Obj, Header, Ptx };
enum class Target { Cpu, Nvptx };

cl::OptionCategory attncCategory("attnc options");
cl::SubCommand runSubcommand("run",
                             "JIT-compile a block, run it on .npy inputs and "
                             "write its outputs as .npy files");

cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                               cl::desc("<SPEC.attn>"),
                               cl::sub(cl::SubCommand::getTopLevel()),
                               cl::sub(runSubcommand), cl::cat(attncCategory));

cl::opt<std::string> blockName("block",
                               cl::desc("Compile only the block called NAME"),
                               cl::value_desc("NAME"),
                               cl::sub(cl::SubCommand::getTopLevel()),
                               cl::sub(runSubcommand), cl::cat(attncCategory));

// `attnc SPEC` options.
cl::opt<std::string> outputFile("o", cl::desc("Output file ('-': stdout)"),
                                cl::value_desc("OUT"), cl::init("-"),
                                cl::cat(attncCategory));

cl::opt<EmitKind> emitKind(
    "emit", cl::desc("What to produce (default: obj)"),
    cl::values(clEnumValN(EmitKind::Attn, "attn", "MLIR in the attn dialect"),
               clEnumValN(EmitKind::Lowered, "lowered",
                          "MLIR just before translation to LLVM IR"),
               clEnumValN(EmitKind::Llvm, "llvm", "LLVM IR"),
               clEnumValN(EmitKind::Asm, "asm", "assembly"),
               clEnumValN(EmitKind::Obj, "obj", "an object file"),
               clEnumValN(EmitKind::Header, "header",
                          "the C header of the kernels"),
               clEnumValN(EmitKind::Ptx, "ptx", "PTX (with --target=nvptx)")),
    cl::init(EmitKind::Obj), cl::cat(attncCategory));

cl::opt<Target>
    target("target", cl::desc("Code generation target (default: cpu)"),
           cl::values(clEnumValN(Target::Cpu, "cpu", "the host CPU"),
                      clEnumValN(Target::Nvptx, "nvptx", "NVIDIA GPUs (PTX)")),
           cl::init(Target::Cpu), cl::cat(attncCategory));

cl::opt<std::string> mcpu("mcpu",
                          cl::desc("Target CPU or GPU (default: the host "
                                   "CPU, sm_90 for nvptx)"),
                          cl::value_desc("CPU"), cl::cat(attncCategory));

cl::opt<char> optLevel("O",
                       cl::desc("Optimization level: -O0 (scalar loops), "
                                "-O1, -O2 (LLVM cleans up what attnc "
                                "vectorized) or -O3 (LLVM's full O3 on top; "
                                "slower to compile) (default: -O2)"),
                       cl::Prefix, cl::init('2'),
                       cl::sub(cl::SubCommand::getTopLevel()),
                       cl::sub(runSubcommand), cl::cat(attncCategory));

cl::opt<std::string> attentionLowering(
    "attention",
    cl::desc("How attention is lowered: auto (by shape, the default), fused "
             "(flash-style) or decomposed (scores materialized)"),
    cl::value_desc("auto|fused|decomposed"), cl::init("auto"),
    cl::sub(cl::SubCommand::getTopLevel()), cl::sub(runSubcommand),
    cl::cat(attncCategory));

cl::opt<bool> parallelLoops(
    "parallel",
    cl::desc("Emit parallel loops that run on attnc_rt's thread pool "
             "(ATTNC_NUM_THREADS); the object then links with libattnc_rt.a"),
    cl::cat(attncCategory));

cl::opt<bool> printIrAfterAll("print-ir-after-all",
                              cl::desc("Print the IR after every pass"),
                              cl::cat(attncCategory));

// `attnc run SPEC` options.
cl::list<std::string> runInputs("input",
                                cl::desc("Read argument NAME from a .npy file"),
                                cl::value_desc("NAME=FILE.npy"),
                                cl::sub(runSubcommand), cl::cat(attncCategory));
cl::opt<bool> randomInputs("random-inputs",
                           cl::desc("Fill every argument not given with "
                                    "random values"),
                           cl::sub(runSubcommand), cl::cat(attncCategory));
cl::opt<uint64_t> seed("seed", cl::desc("Seed of --random-inputs"), cl::init(0),
                       cl::sub(runSubcommand), cl::cat(attncCategory));
cl::opt<std::string> outputDir("output-dir",
                               cl::desc("Where NAME.npy outputs are written"),
                               cl::value_desc("DIR"), cl::init("."),
                               cl::sub(runSubcommand), cl::cat(attncCategory));
cl::opt<unsigned> repeat("repeat",
                         cl::desc("Run N times and print the median time"),
                         cl::init(1), cl::sub(runSubcommand),
                         cl::cat(attncCategory));

llvm::raw_ostream &error() {
  return llvm::WithColor::error(llvm::errs(), "attnc");
}

/// Internal failures (LLVM fatal errors) exit with 2, never 1.
void fatalErrorHandler(void *, const char *reason, bool) {
  llvm::errs() << "attnc: internal error: " << reason << "\n";
  llvm::sys::RunInterruptHandlers();
  llvm::sys::Process::Exit(kInternalError, /*NoCleanup=*/true);
}

/// The parsed and checked spec, with the SourceMgr that owns its text.
struct LoadedSpec {
  llvm::SourceMgr sourceMgr;
  std::unique_ptr<ast::Module> module;
};

/// Reads and checks `inputFile`; reports and returns false on any error.
bool loadSpec(LoadedSpec &spec) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileOrSTDIN(inputFile, /*IsText=*/true);
  if (std::error_code ec = buffer.getError()) {
    error() << "cannot read '" << inputFile << "': " << ec.message() << "\n";
    return false;
  }
  unsigned id =
      spec.sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  DiagnosticEngine diag(spec.sourceMgr, llvm::errs());
  spec.module = parseAndCheck(diag, id);
  if (!spec.module)
    return false;
  if (!blockName.empty() && !spec.module->lookup(blockName)) {
    llvm::SmallVector<llvm::StringRef> names;
    for (const auto &block : spec.module->blocks)
      names.push_back(block->name.name);
    error() << "no block named '" << blockName << "' in '" << inputFile
            << "'; available blocks: " << llvm::join(names, ", ") << "\n";
    return false;
  }
  return true;
}

/// The code generation options the flags ask for.
CompileOptions compileOptions() {
  CompileOptions options;
  options.setOptLevel(static_cast<unsigned>(optLevel - '0'));
  if (!mcpu.empty())
    options.target.cpu = mcpu;
  options.printIRAfterAll = printIrAfterAll;
  options.pipeline.attention = attentionLowering;
  options.pipeline.parallel = parallelLoops;
  return options;
}

/// Writes `text` to -o (stdout by default); binary for objects.
int writeOutput(llvm::StringRef text, bool binary) {
  std::string message;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &message);
  if (!output) {
    error() << message << "\n";
    return kUserError;
  }
  if (binary && outputFile == "-" &&
      llvm::sys::Process::StandardOutIsDisplayed()) {
    error() << "refusing to write an object file to a terminal; use -o "
               "FILE.o\n";
    return kUserError;
  }
  output->os() << text;
  output->keep();
  return kSuccess;
}

int emitCode(const LoadedSpec &spec) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlirGen(context, *spec.module, spec.sourceMgr, blockName);
  if (failed(mlir::verify(*module))) {
    llvm::errs() << "attnc: internal error: the IR generated for '" << inputFile
                 << "' does not verify\n";
    return kInternalError;
  }
  if (emitKind == EmitKind::Attn) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    os << "\n";
    return writeOutput(text, /*binary=*/false);
  }

  CompileOptions options = compileOptions();
  // Everything below is code generation: its failures are attnc's, except a
  // CPU name the user got wrong, which is checked first.
  if (llvm::Error bad = checkTarget(options.target)) {
    error() << llvm::toString(std::move(bad)) << "\n";
    return kUserError;
  }
  auto internal = [](llvm::Error error) {
    llvm::errs() << "attnc: internal error: "
                 << llvm::toString(std::move(error)) << "\n";
    return kInternalError;
  };
  if (emitKind == EmitKind::Header) {
    // The size of each kernel's packed params is known once lowered.
    auto signatures = kernelSignatures(*module);
    if (!signatures)
      return internal(signatures.takeError());
    if (llvm::Error error = lowerToLLVMDialect(*module, options))
      return internal(std::move(error));
    if (llvm::Error error = readPackedElements(*module, *signatures))
      return internal(std::move(error));
    return writeOutput(
        emitCHeader(*signatures, llvm::sys::path::filename(inputFile)),
        /*binary=*/false);
  }
  if (emitKind == EmitKind::Lowered) {
    if (llvm::Error error = lowerToLLVMDialect(*module, options))
      return internal(std::move(error));
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    os << "\n";
    return writeOutput(text, /*binary=*/false);
  }
  if (emitKind == EmitKind::Llvm) {
    auto text = compileToLLVMIRText(*module, options);
    if (!text)
      return internal(text.takeError());
    return writeOutput(*text, /*binary=*/false);
  }
  bool object = emitKind == EmitKind::Obj;
  auto code = compileToMachineCode(*module, options,
                                   object ? MachineCodeKind::Object
                                          : MachineCodeKind::Assembly);
  if (!code)
    return internal(code.takeError());
  return writeOutput(*code, object);
}

/// Reports a bad --attention value; true when it is fine.
bool checkAttentionFlag() {
  if (attentionLowering == "auto" || attentionLowering == "fused" ||
      attentionLowering == "decomposed")
    return true;
  error() << "invalid --attention=" << attentionLowering
          << "; expected auto, fused or decomposed\n";
  return false;
}

int compileMain() {
  if (!checkAttentionFlag())
    return kUserError;
  if (optLevel < '0' || optLevel > '3') {
    error() << "invalid optimization level -O" << optLevel
            << "; expected -O0, -O1, -O2 or -O3\n";
    return kUserError;
  }
  if (emitKind == EmitKind::Ptx && target != Target::Nvptx) {
    error() << "--emit=ptx needs --target=nvptx\n";
    return kUserError;
  }
  // The spec is checked first, whatever is emitted: errors in it are the
  // most useful thing attnc can say.
  LoadedSpec spec;
  if (!loadSpec(spec))
    return kUserError;
  if (target == Target::Nvptx && emitKind != EmitKind::Attn &&
      emitKind != EmitKind::Header) {
    error() << "--target=nvptx is not supported yet (it lands with the GPU "
               "code generation work); the CPU target works\n";
    return kUserError;
  }
  return emitCode(spec);
}

int runMain() {
  if (!checkAttentionFlag())
    return kUserError;
  LoadedSpec spec;
  if (!loadSpec(spec))
    return kUserError;
  if (blockName.empty() && spec.module->blocks.size() > 1) {
    llvm::SmallVector<llvm::StringRef> names;
    for (const auto &b : spec.module->blocks)
      names.push_back(b->name.name);
    error() << "'" << inputFile << "' has " << names.size()
            << " blocks; choose one with --block (" << llvm::join(names, ", ")
            << ")\n";
    return kUserError;
  }
  for (const std::string &input : runInputs) {
    llvm::StringRef name, file;
    std::tie(name, file) = llvm::StringRef(input).split('=');
    if (name.empty() || file.empty()) {
      error() << "--input expects NAME=FILE.npy, got '" << input << "'\n";
      return kUserError;
    }
  }
  RunOptions options;
  options.specPath = inputFile;
  options.block = blockName;
  options.inputs.assign(runInputs.begin(), runInputs.end());
  options.randomInputs = randomInputs;
  options.seed = seed;
  options.outputDir = outputDir;
  options.repeat = repeat;
  if (optLevel < '0' || optLevel > '3') {
    error() << "invalid optimization level -O" << optLevel
            << "; expected -O0, -O1, -O2 or -O3\n";
    return kUserError;
  }
  options.compile = Runtime::defaultOptions();
  options.compile.setOptLevel(static_cast<unsigned>(optLevel - '0'));
  options.compile.pipeline.attention = attentionLowering;
  return attnc::runCommand(options);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::install_fatal_error_handler(fatalErrorHandler);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  cl::ParseCommandLineOptions(
      argc, argv,
      "attnc: compiles D2L-style attention blocks (.attn specs) into "
      "specialized kernels\n\n"
      "  attnc SPEC.attn [-o OUT] [--emit=KIND] [--block NAME] "
      "[--target=cpu|nvptx]\n"
      "        [--mcpu=CPU] [-O0|-O1|-O2|-O3] [--print-ir-after-all]\n"
      "  attnc run SPEC.attn [--block NAME] [--input NAME=FILE.npy]... "
      "[--random-inputs]\n"
      "        [--seed N] [--output-dir DIR] [--repeat N]\n");
  if (runSubcommand)
    return runMain();
  return compileMain();
}
