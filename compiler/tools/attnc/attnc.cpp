//===- attnc.cpp - The attnc compiler driver ------------------------------===//
//
// `attnc SPEC.attn [--emit=KIND] ...` compiles a .attn spec; `attnc run SPEC`
// JIT-runs one of its blocks (docs/spec.md §4). Exit status: 0 success, 1 user
// error (bad spec, flags or files), 2 internal error.
//
//===----------------------------------------------------------------------===//

#include "attnc/Codegen/CodeGenerator.h"
#include "attnc/Codegen/Pipeline.h"
#include "attnc/Gen/SpecToModule.h"
#include "attnc/Halide/HalideBackend.h"
#include "attnc/InitAttn.h"
#include "attnc/Runtime/Runtime.h"
#include "attnc/Support/ReadFile.h"
#include "attnc/Support/Version.h"

#include "Progress.h"
#include "RunCommand.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <optional>

using namespace attnc;
namespace cl = llvm::cl;

namespace {

enum ExitCode { kSuccess = 0, kUserError = 1, kInternalError = 2 };

enum class EmitKind { Attn, Lowered, Llvm, Asm, Obj, Header, Ptx };
enum class AttentionLowering { Auto, Fused, Decomposed };
enum class HalideScheduleFlag { Attnc, Adams2019, Mullapudi2016, Li2018 };
enum class GpuMath { F32, Tf32 };

/// A parser for enum flags whose error names the closest valid value and
/// lists them all (LLVM's says only "Cannot find option named 'X'!").
template <typename T> struct ListedValuesParser : cl::parser<T> {
  using cl::parser<T>::parser;

  bool parse(cl::Option &option, llvm::StringRef argName, llvm::StringRef arg,
             T &value) {
    llvm::SmallVector<llvm::StringRef> names;
    for (const auto &known : this->Values) {
      if (known.Name == arg) {
        value = known.V.getValue();
        return false;
      }
      names.push_back(known.Name);
    }
    std::string message = "invalid value '" + arg.str() + "'";
    llvm::StringRef closest;
    unsigned best = 3; // at most 2 edits away
    for (llvm::StringRef name : names) {
      unsigned distance = arg.edit_distance_insensitive(name, true, best);
      if (distance < best) {
        best = distance;
        closest = name;
      }
    }
    if (!closest.empty())
      message += "; did you mean '" + closest.str() + "'?";
    message += " (valid values: " + llvm::join(names, ", ") + ")";
    return option.error(message);
  }
};

// --help lists these three groups only (cl::HideUnrelatedOptions): attnc's
// own options, not the hundreds that LLVM's libraries register.
cl::OptionCategory outputCategory("Compiling (attnc SPEC)");
cl::OptionCategory codegenCategory("Common (attnc SPEC and attnc run)");
cl::OptionCategory runCategory("attnc run");

cl::SubCommand runSubcommand("run",
                             "JIT-compile a block, run it on .npy inputs and "
                             "write its outputs as .npy files");

// Shared by `attnc SPEC` and `attnc run SPEC`.
// Required unless --print-schedule (checked in main).
cl::opt<std::string> inputFile(cl::Positional, cl::Optional,
                               cl::desc("<SPEC.attn | KERNELS.mlir>"),
                               cl::sub(cl::SubCommand::getTopLevel()),
                               cl::sub(runSubcommand), cl::cat(outputCategory));

cl::opt<std::string>
    blockName("block", cl::desc("Compile only the block called NAME"),
              cl::value_desc("NAME"), cl::sub(cl::SubCommand::getTopLevel()),
              cl::sub(runSubcommand), cl::cat(codegenCategory));

cl::opt<TargetKind, false, ListedValuesParser<TargetKind>>
    target("target", cl::desc("Code generation target (default: cpu)"),
           cl::values(clEnumValN(TargetKind::Cpu, "cpu", "the host CPU"),
                      clEnumValN(TargetKind::Nvptx, "nvptx",
                                 "NVIDIA GPUs (--mcpu=sm_90a by default)")),
           cl::init(TargetKind::Cpu), cl::sub(cl::SubCommand::getTopLevel()),
           cl::sub(runSubcommand), cl::cat(codegenCategory));

cl::opt<GpuMath, false, ListedValuesParser<GpuMath>> gpuMath(
    "gpu-math",
    cl::desc("With --target=nvptx: how f32 GEMMs compute (default: f32)"),
    cl::values(clEnumValN(GpuMath::F32, "f32", "f32 FMAs, the CPU's results"),
               clEnumValN(GpuMath::Tf32, "tf32",
                          "tensor cores on operands rounded to tf32 (10 "
                          "mantissa bits; the header states the error)")),
    cl::init(GpuMath::F32), cl::sub(cl::SubCommand::getTopLevel()),
    cl::sub(runSubcommand), cl::cat(codegenCategory));

cl::opt<std::string>
    mcpu("mcpu",
         cl::desc("Target CPU: an LLVM CPU name (znver4, x86-64-v3, ...) or "
                  "native, the features of this machine (default: native). "
                  "With --target=nvptx: the GPU's compute capability "
                  "(sm_90a by default, sm_90, sm_80, ...)"),
         cl::value_desc("CPU"), cl::sub(cl::SubCommand::getTopLevel()),
         cl::sub(runSubcommand), cl::cat(codegenCategory));

// `attnc SPEC` only: a kernel for another machine is not run here.
cl::opt<std::string> triple(
    "triple",
    cl::desc("Target triple to cross-compile for (aarch64-linux-gnu, ...; "
             "default: this machine's). --mcpu then names a CPU of that "
             "triple (default: generic)"),
    cl::value_desc("TRIPLE"), cl::cat(outputCategory));

// A string, checked by checkOptLevel: LLVM's char parser reads -Ofast as
// -Of and -O22 as -O2.
cl::opt<std::string>
    optLevel("O",
             cl::desc("Optimization level: -O0 (scalar loops), -O1, -O2 "
                      "(LLVM cleans up what attnc vectorized; the default) or "
                      "-O3 (LLVM's full O3 on top; slower to compile)"),
             cl::value_desc("0|1|2|3"), cl::Prefix, cl::init("2"),
             cl::sub(cl::SubCommand::getTopLevel()), cl::sub(runSubcommand),
             cl::cat(codegenCategory));

cl::opt<AttentionLowering, false, ListedValuesParser<AttentionLowering>>
    attentionLowering(
        "attention", cl::desc("How attention is lowered (default: auto)"),
        cl::values(clEnumValN(AttentionLowering::Auto, "auto",
                              "fused or decomposed, by shape"),
                   clEnumValN(AttentionLowering::Fused, "fused",
                              "flash-style: online softmax over key tiles"),
                   clEnumValN(AttentionLowering::Decomposed, "decomposed",
                              "scores materialized, then softmax, then @ v")),
        cl::init(AttentionLowering::Auto),
        cl::sub(cl::SubCommand::getTopLevel()), cl::sub(runSubcommand),
        cl::cat(codegenCategory));

cl::opt<Backend, false, ListedValuesParser<Backend>> backend(
    "backend", cl::desc("Code generator of CPU kernels (default: mlir)"),
    cl::values(clEnumValN(Backend::Mlir, "mlir",
                          "attnc's MLIR pipeline (attn dialect -> LLVM)"),
               clEnumValN(Backend::Halide, "halide",
                          "Halide: the same ABI and header, another "
                          "compiler (docs/halide.md)")),
    cl::init(Backend::Mlir), cl::sub(cl::SubCommand::getTopLevel()),
    cl::sub(runSubcommand), cl::cat(codegenCategory));

cl::opt<HalideScheduleFlag, false, ListedValuesParser<HalideScheduleFlag>>
    halideSchedule(
        "halide-schedule",
        cl::desc("With --backend=halide: whose schedules (default: attnc)"),
        cl::values(clEnumValN(HalideScheduleFlag::Attnc, "attnc",
                              "attnc's own, tiled from the target"),
                   clEnumValN(HalideScheduleFlag::Adams2019, "Adams2019",
                              "Halide's learned-cost-model autoscheduler"),
                   clEnumValN(HalideScheduleFlag::Mullapudi2016,
                              "Mullapudi2016",
                              "Halide's greedy grouping autoscheduler"),
                   clEnumValN(HalideScheduleFlag::Li2018, "Li2018",
                              "Halide's gradient autoscheduler")),
        cl::init(HalideScheduleFlag::Attnc),
        cl::sub(cl::SubCommand::getTopLevel()), cl::sub(runSubcommand),
        cl::cat(codegenCategory));

// `attnc SPEC` only.
cl::opt<std::string> outputFile("o", cl::desc("Output file ('-': stdout)"),
                                cl::value_desc("OUT"), cl::init("-"),
                                cl::cat(outputCategory));

cl::opt<EmitKind, false, ListedValuesParser<EmitKind>> emitKind(
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
    cl::init(EmitKind::Obj), cl::cat(outputCategory));

cl::opt<bool> parallelLoops(
    "parallel",
    cl::desc("Emit parallel loops that run on attnc_rt's thread pool "
             "(ATTNC_NUM_THREADS); the object then links with libattnc_rt.a"),
    cl::cat(outputCategory));

cl::opt<bool> printSchedule(
    "print-schedule",
    cl::desc("Print the target description of --mcpu (default: this "
             "machine) and the tiling schedule derived from it, then exit"),
    cl::cat(outputCategory));

cl::opt<bool> printIrAfterAll("print-ir-after-all",
                              cl::desc("Print the IR after every pass"),
                              cl::cat(outputCategory));

cl::opt<bool> verbose("v",
                      cl::desc("Print each compile stage as it starts, with "
                               "the time since the start"),
                      cl::cat(outputCategory));
cl::opt<bool> quiet("quiet",
                    cl::desc("No progress report (by default a compile that "
                             "takes more than a second reports its stages "
                             "when stderr is a terminal)"),
                    cl::cat(outputCategory));

// `attnc run SPEC` only.
cl::list<std::string> runInputs("input",
                                cl::desc("Read argument NAME from a .npy file "
                                         "(wins over --input-dir)"),
                                cl::value_desc("NAME=FILE.npy"),
                                cl::sub(runSubcommand), cl::cat(runCategory));
cl::opt<std::string> inputDir("input-dir",
                              cl::desc("Read every input, param and state "
                                       "NAME that DIR/NAME.npy holds"),
                              cl::value_desc("DIR"), cl::sub(runSubcommand),
                              cl::cat(runCategory));
cl::opt<bool> randomInputs("random-inputs",
                           cl::desc("Fill every argument not given with "
                                    "random values (floats in [-1, 1), "
                                    "weights in +-1/sqrt(last dim), "
                                    "valid_lens in [0, T], ids in range; "
                                    "states: zeros)"),
                           cl::sub(runSubcommand), cl::cat(runCategory));
cl::opt<uint64_t> seed("seed", cl::desc("Seed of --random-inputs (default: 0)"),
                       cl::init(0), cl::sub(runSubcommand),
                       cl::cat(runCategory));
cl::opt<std::string>
    saveInputs("save-inputs",
               cl::desc("Also write every input, param and state the run "
                        "used to DIR/NAME.npy (to reproduce it, e.g. in "
                        "PyTorch)"),
               cl::value_desc("DIR"), cl::sub(runSubcommand),
               cl::cat(runCategory));
cl::opt<std::string> outputDir("output-dir",
                               cl::desc("Where NAME.npy outputs (and states, "
                                        "as the run left them) are written "
                                        "(default: .)"),
                               cl::value_desc("DIR"), cl::init("."),
                               cl::sub(runSubcommand), cl::cat(runCategory));
cl::opt<unsigned> repeat("repeat",
                         cl::desc("Run N times and print the median time "
                                  "(default: 1)"),
                         cl::value_desc("N"), cl::init(1),
                         cl::sub(runSubcommand), cl::cat(runCategory));
cl::opt<unsigned> threads(
    "threads",
    cl::desc("Threads the kernel runs on (default: ATTNC_NUM_THREADS if set, "
             "else every core this process may use)"),
    cl::value_desc("N"), cl::sub(runSubcommand), cl::cat(runCategory));

llvm::raw_ostream &error() {
  return llvm::WithColor::error(llvm::errs(), "attnc");
}

/// Internal failures (LLVM fatal errors) exit with 2, never 1.
void fatalErrorHandler(void *, const char *reason, bool) {
  llvm::errs() << "attnc: internal error: " << reason << "\n";
  llvm::sys::RunInterruptHandlers();
  llvm::sys::Process::Exit(kInternalError, /*NoCleanup=*/true);
}

/// The checked spec (the front end's AST or the .mlir file's attn IR) and
/// the context its IR goes into.
struct LoadedSpec {
  std::unique_ptr<mlir::MLIRContext> context;
  std::optional<CheckedSpec> checked;
};

std::unique_ptr<mlir::MLIRContext> newContext() {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  return std::make_unique<mlir::MLIRContext>(registry);
}

/// Reads and checks `inputFile`; reports and returns false on any error.
bool loadSpec(LoadedSpec &spec) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      readSpecFile(inputFile);
  if (!buffer) {
    error() << llvm::toString(buffer.takeError()) << "\n";
    return false;
  }
  spec.context = newContext();
  llvm::Expected<CheckedSpec> checked = CheckedSpec::check(
      *spec.context, (*buffer)->getBuffer(), inputFile, llvm::errs());
  if (!checked) {
    // The front end has printed the spec's errors; attn IR's is the message.
    llvm::handleAllErrors(
        checked.takeError(), [](const FrontEndErrors &) {},
        [](const llvm::ErrorInfoBase &bad) {
          error() << bad.message() << "\n";
        });
    return false;
  }
  spec.checked.emplace(std::move(*checked));
  if (!blockName.empty()) {
    llvm::Expected<std::string> selected = spec.checked->selectBlock(blockName);
    if (!selected) {
      error() << llvm::toString(selected.takeError()) << "\n";
      return false;
    }
  }
  return true;
}

/// The -O level, or an error naming the bad flag.
std::optional<unsigned> checkOptLevel() {
  if (optLevel.size() == 1 && optLevel[0] >= '0' && optLevel[0] <= '3')
    return static_cast<unsigned>(optLevel[0] - '0');
  error() << "invalid optimization level '-O" << optLevel
          << "'; valid levels: -O0, -O1, -O2, -O3\n";
  return std::nullopt;
}

llvm::StringRef attentionName(AttentionLowering lowering) {
  switch (lowering) {
  case AttentionLowering::Fused:
    return "fused";
  case AttentionLowering::Decomposed:
    return "decomposed";
  case AttentionLowering::Auto:
    break;
  }
  return "auto";
}

/// The target and pipeline options the flags ask for (both commands).
CompileOptions compileOptions(CompileOptions options, unsigned level) {
  options.setOptLevel(level);
  options.target.kind = target;
  if (!mcpu.empty())
    options.target.cpu = mcpu;
  options.target.triple = triple;
  options.pipeline.attention = attentionName(attentionLowering).str();
  options.pipeline.tf32 = gpuMath == GpuMath::Tf32;
  options.backend = backend;
  options.halideSchedule =
      kHalideSchedules[static_cast<int>(halideSchedule.getValue())];
  return options;
}

/// The flags that only one backend reads, given with the other; reports
/// and returns false when they do not fit.
bool checkBackendFlags() {
  if (gpuMath.getNumOccurrences() && target != TargetKind::Nvptx) {
    error() << "--gpu-math applies to --target=nvptx only\n";
    return false;
  }
  if (backend != Backend::Halide) {
    if (halideSchedule.getNumOccurrences()) {
      error() << "--halide-schedule needs --backend=halide\n";
      return false;
    }
    return true;
  }
  if (attentionLowering.getNumOccurrences()) {
    error() << "--attention chooses the MLIR backend's lowering; the Halide "
               "backend schedules attention itself (--halide-schedule)\n";
    return false;
  }
  return true;
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

/// The code --emit asks for, or none (attn, header).
std::optional<OutputKind> outputKind() {
  switch (emitKind) {
  case EmitKind::Lowered:
    return OutputKind::Lowered;
  case EmitKind::Llvm:
    return OutputKind::LlvmIr;
  case EmitKind::Asm:
    return OutputKind::Assembly;
  case EmitKind::Obj:
    return OutputKind::Object;
  case EmitKind::Ptx:
    return OutputKind::Ptx;
  case EmitKind::Attn:
  case EmitKind::Header:
    break;
  }
  return std::nullopt;
}

/// The attn module of --block (every block without it), verified; null
/// after an internal error (reported).
mlir::OwningOpRef<mlir::ModuleOp> attnModule(LoadedSpec &spec) {
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> module =
      spec.checked->generate(blockName);
  if (!module) {
    llvm::errs() << "attnc: " << llvm::toString(module.takeError()) << "\n";
    return nullptr;
  }
  return std::move(*module);
}

int emitCode(LoadedSpec &spec, unsigned optLevelValue, Progress &progress) {
  progress.stage("generating MLIR");
  mlir::OwningOpRef<mlir::ModuleOp> module = attnModule(spec);
  if (!module)
    return kInternalError;
  // Everything below is code generation: its failures are attnc's (the
  // target and the output kind were checked before).
  CompileOptions options = compileOptions(CompileOptions(), optLevelValue);
  options.printIRAfterAll = printIrAfterAll;
  options.pipeline.parallel = parallelLoops;
  options.onStage = [&progress](llvm::StringRef stage) {
    progress.stage(stage);
  };
  std::unique_ptr<CodeGenerator> generator = createCodeGenerator(options);
  if (llvm::Error bad = generator->checkModule(*module)) {
    error() << llvm::toString(std::move(bad)) << "\n";
    return kUserError;
  }
  auto internal = [](llvm::Error error) {
    llvm::errs() << "attnc: internal error: "
                 << llvm::toString(std::move(error)) << "\n";
    return kInternalError;
  };
  if (emitKind == EmitKind::Attn) {
    // With what the target's passes will read (the CPU's DLTI description).
    if (llvm::Error error = generator->annotate(*module))
      return internal(std::move(error));
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    os << "\n";
    return writeOutput(text, /*binary=*/false);
  }
  if (emitKind == EmitKind::Header) {
    auto text =
        generator->emitHeader(*module, llvm::sys::path::filename(inputFile));
    if (!text)
      return internal(text.takeError());
    return writeOutput(*text, /*binary=*/false);
  }
  auto compiled = generator->compile(*module, *outputKind());
  if (!compiled)
    return internal(compiled.takeError());
  return writeOutput(compiled->code, emitKind == EmitKind::Obj);
}

/// --print-schedule: what the code generator's schedules choose for each
/// CPU of --mcpu (or the GPU), and with a spec, for its ops.
int printScheduleMain(unsigned level) {
  LoadedSpec spec;
  if (!inputFile.empty() && !loadSpec(spec))
    return kUserError;
  std::unique_ptr<CodeGenerator> generator =
      createCodeGenerator(compileOptions({}, level));
  auto text = generator->describeSchedule();
  if (!text) {
    error() << llvm::toString(text.takeError()) << "\n";
    return kUserError;
  }
  // The options as the kernel cache's key reads them, then the schedules.
  llvm::outs() << "options: " << describeCodeOptions(generator->options())
               << "\n"
               << *text;
  if (inputFile.empty())
    return kSuccess;
  mlir::OwningOpRef<mlir::ModuleOp> module = attnModule(spec);
  if (!module)
    return kInternalError;
  llvm::outs() << generator->describeKernels(*module)
               << describeRoundingPoints(*module);
  return kSuccess;
}

int compileMain() {
  std::optional<unsigned> level = checkOptLevel();
  if (!level)
    return kUserError;
  if (printSchedule)
    return printScheduleMain(*level);
  if (inputFile.empty()) {
    error() << "no spec given: attnc SPEC.attn [options] (see attnc "
               "--help)\n";
    return kUserError;
  }
  if (verbose && quiet) {
    error() << "-v and --quiet contradict each other; give one\n";
    return kUserError;
  }
  Progress progress(quiet     ? Progress::Mode::Quiet
                    : verbose ? Progress::Mode::Verbose
                              : Progress::Mode::Auto);
  // The spec is checked first, whatever is emitted: errors in it are the
  // most useful thing attnc can say.
  progress.stage("parsing and checking " +
                 llvm::sys::path::filename(inputFile).str());
  LoadedSpec spec;
  if (!loadSpec(spec))
    return kUserError;
  std::unique_ptr<CodeGenerator> generator =
      createCodeGenerator(compileOptions({}, *level));
  if (llvm::Error bad = generator->check()) {
    error() << llvm::toString(std::move(bad)) << "\n";
    return kUserError;
  }
  if (!checkBackendFlags())
    return kUserError;
  if (std::optional<OutputKind> kind = outputKind())
    if (llvm::Error bad = generator->checkOutput(*kind)) {
      error() << llvm::toString(std::move(bad)) << "\n";
      return kUserError;
    }
  return emitCode(spec, *level, progress);
}

/// LLVM's command line lets a subcommand take the top level's options too;
/// `attnc run` takes only those it uses and rejects the others by name.
bool checkRunFlags() {
  struct Unused {
    const cl::Option &option;
    const char *why;
  };
  const Unused unused[] = {
      {outputFile, "outputs go to --output-dir DIR as NAME.npy"},
      {emitKind, "it runs the kernel; use 'attnc SPEC --emit=...' to see "
                 "its code"},
      {parallelLoops, "its kernels always run on the thread pool; see "
                      "--threads"},
      {printIrAfterAll, "use 'attnc SPEC --emit=... --print-ir-after-all'"},
      {printSchedule, "use 'attnc --print-schedule [--mcpu=CPU]'"},
      {verbose, "it reports only what it runs; compile with 'attnc SPEC -v' "
                "to see the stages"},
      {quiet, "it prints no progress report"},
      {triple, "it runs the kernel on this machine; cross-compile with "
               "'attnc SPEC --triple=TRIPLE -o OBJ'"},
  };
  bool ok = true;
  for (const Unused &flag : unused) {
    if (!flag.option.getNumOccurrences())
      continue;
    error() << "'attnc run' does not take "
            << (flag.option.ArgStr.size() == 1 ? "-" : "--")
            << flag.option.ArgStr << ": " << flag.why << "\n";
    ok = false;
  }
  if (repeat.getNumOccurrences() && repeat == 0) {
    error() << "--repeat must be at least 1\n";
    ok = false;
  }
  if (threads.getNumOccurrences() && (threads == 0 || threads > 256)) {
    error() << "--threads must be in [1, 256] (attnc_rt's pool), got "
            << threads << "\n";
    ok = false;
  }
  return ok;
}

int runMain() {
  if (!checkRunFlags())
    return kUserError;
  if (inputFile.empty()) {
    error() << "no spec given: attnc run SPEC.attn [options] (see attnc run "
               "--help)\n";
    return kUserError;
  }
  std::optional<unsigned> level = checkOptLevel();
  if (!level)
    return kUserError;
  LoadedSpec spec;
  if (!loadSpec(spec))
    return kUserError;
  if (llvm::SmallVector<llvm::StringRef> names = spec.checked->blockNames();
      blockName.empty() && names.size() > 1) {
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
  options.specText = spec.checked->text().str();
  options.block = blockName;
  options.inputs.assign(runInputs.begin(), runInputs.end());
  options.inputDir = inputDir;
  options.randomInputs = randomInputs;
  options.seed = seed;
  options.saveInputsDir = saveInputs;
  options.outputDir = outputDir;
  options.repeat = repeat;
  options.threads = threads;
  options.compile = compileOptions(Runtime::defaultOptions(), *level);
  std::unique_ptr<CodeGenerator> generator =
      createCodeGenerator(options.compile);
  if (llvm::Error bad = generator->check()) {
    error() << llvm::toString(std::move(bad)) << "\n";
    return kUserError;
  }
  if (!checkBackendFlags())
    return kUserError;
  // The kernel runs here: code for a CPU this machine lacks would stop
  // with an illegal instruction.
  if (llvm::Error bad = generator->checkRunsHere()) {
    error() << llvm::toString(std::move(bad)) << "\n";
    return kUserError;
  }
  return attnc::runCommand(options);
}

void printVersion(llvm::raw_ostream &os) {
  os << "attnc " << version() << " (git " << gitCommit() << ")\n"
     << "  LLVM/MLIR " << LLVM_VERSION_STRING << "\n"
     << "  Halide "
     << (haveHalideBackend() ? halideVersion() : "not in this build") << "\n"
     << "  default target: " << llvm::sys::getDefaultTargetTriple()
     << ", host CPU: " << llvm::sys::getHostCPUName() << "\n";
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::install_fatal_error_handler(fatalErrorHandler);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  cl::SetVersionPrinter(printVersion);
  // MLIR's printer flag that --emit=attn|lowered users want (the source
  // locations of every op) goes into attnc's own --help.
  if (cl::Option *debugInfo =
          cl::getRegisteredOptions().lookup("mlir-print-debuginfo"))
    debugInfo->addCategory(outputCategory);
  for (cl::SubCommand *sub : {&cl::SubCommand::getTopLevel(), &runSubcommand})
    cl::HideUnrelatedOptions({&outputCategory, &codegenCategory, &runCategory},
                             *sub);
  cl::ParseCommandLineOptions(
      argc, argv,
      "attnc: compiles D2L-style attention blocks (.attn specs, or attn IR "
      "in .mlir files) into specialized kernels\n\n"
      "  attnc SPEC.attn [-o OUT] [--emit=KIND] [--block NAME] "
      "[--target=cpu|nvptx]\n"
      "        [--mcpu=CPU[,CPU...]|sm_XX] [--triple=TRIPLE] "
      "[-O0|-O1|-O2|-O3]\n"
      "        [--attention=auto|fused|decomposed] [--parallel] "
      "[--gpu-math=f32|tf32]\n"
      "        [--backend=mlir|halide] "
      "[--halide-schedule=attnc|Adams2019|Mullapudi2016|Li2018]\n"
      "  attnc run SPEC.attn [--block NAME] [--target=cpu|nvptx] "
      "[--input NAME=FILE.npy]...\n"
      "        [--input-dir DIR] [--random-inputs [--seed N]] "
      "[--save-inputs DIR] [--output-dir DIR]\n"
      "        [--repeat N] [--threads N]   ('attnc run --help' for more)\n");
  if (runSubcommand)
    return runMain();
  return compileMain();
}
