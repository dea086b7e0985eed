//===- BlockCallTest.cpp - Encoders of block calls against the reference --===//
//
// tests/data/goldens/encoder_block's block (a D2L TransformerEncoderBlock)
// called 2, 4 (two calls of a 2-layer block) and 6 times
// (block_calls/encoder_stacks.attn, put after the golden's spec), against:
//   - the naive reference's encoderBlock applied as many times;
//   - the 2-layer encoder written out inline, which must give the same
//     bits;
//   - the golden itself: layer 0 takes the golden's weights, so a stack's
//     first layer is checked against PyTorch's output too.
// Through the JIT (several lowerings and ISA classes, params bound and
// prepared once), and through objects compiled at build time
// (ATTNC_BLOCK_CALL_AOT: plain, and multi-ISA in a second executable).
//
//===----------------------------------------------------------------------===//

#include "GoldenCase.h"
#include "NaiveReference.h"
#include "TestSupport.h"

#include "attnc/Codegen/CpuDescription.h"
#include "attnc/Codegen/KernelSignature.h"
#ifdef ATTNC_BLOCK_CALL_JIT
#include "GpuEmulation.h"
#include "attnc/Codegen/GpuCompile.h"
#include "attnc/Runtime/Runtime.h"
#endif

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

using namespace attnc;
using namespace attnc::test;

#ifdef ATTNC_BLOCK_CALL_AOT
// The objects' headers and packed entries (BlockCallKernels.inc lists
// ATTNC_AOT_STACK(name, NAME, layers) for each; see CMakeLists.txt).
#include "BlockCallHeaders.inc"
#define ATTNC_AOT_STACK(name, NAME, layers)                                    \
  extern "C" int attnc_packed_##name(void **);                                 \
  extern "C" int attnc_packed_##name##_prepare(void **);                       \
  extern "C" int attnc_packed_##name##_prepared(void **);
#include "BlockCallKernels.inc"
#undef ATTNC_AOT_STACK
#endif

namespace {

/// The encoder_block golden's params, in its ABI order.
const char *const kParams[] = {
    "W_q",    "W_k",    "W_v",    "W_o",    "ln1_gamma", "ln1_beta",
    "ffn_w1", "ffn_b1", "ffn_w2", "ffn_b2", "ln2_gamma", "ln2_beta"};
constexpr int64_t kHeads = 8;

/// X, valid_lens and every layer's params of an N-layer stack, with the
/// reference's result.
struct Stack {
  int layers = 0;
  ref::Tensor x;
  ref::IntTensor validLens;
  /// Per layer, the params in kParams order.
  std::vector<std::vector<ref::Tensor>> params;
  ref::Tensor expected;
  /// The golden's output (PyTorch's) of one layer on X with layer 0's
  /// params.
  ref::Tensor goldenFirstLayer;
  ref::Tensor referenceFirstLayer;
};

ref::Tensor tensorOf(const KernelArgument &argument,
                     const std::vector<char> &bytes) {
  ref::Tensor tensor(argument.shape);
  std::memcpy(tensor.data.data(), bytes.data(), bytes.size());
  return tensor;
}

/// Layer 0: the golden's weights; layer i > 0: the weight formula of
/// tests/data/README.md with salts of its own (norm gains around 1).
Stack makeStack(int layers) {
  Stack stack;
  stack.layers = layers;
  auto golden = loadGoldenCase("encoder_block");
  if (!golden) {
    ADD_FAILURE() << llvm::toString(golden.takeError());
    return stack;
  }
  const std::vector<KernelArgument> &args = golden->signature.arguments;
  stack.x = tensorOf(args[0], golden->values[0]);
  stack.validLens.shape = args[1].shape;
  stack.validLens.data.resize(args[1].numElements());
  std::memcpy(stack.validLens.data.data(), golden->values[1].data(),
              golden->values[1].size());
  for (int layer = 0; layer < layers; ++layer) {
    std::vector<ref::Tensor> params;
    for (unsigned i = 0; i < std::size(kParams); ++i) {
      const KernelArgument &arg = args[2 + i];
      EXPECT_EQ(arg.name, kParams[i]);
      if (layer == 0) {
        params.push_back(tensorOf(arg, golden->values[2 + i]));
        continue;
      }
      llvm::StringRef name = kParams[i];
      bool gain = name.ends_with("gamma");
      bool weight = name.contains("W_") || name.contains("_w");
      params.push_back(ref::formulaTensor(arg.shape, 1000 + 16 * layer + i,
                                          weight ? 0.8 : 0.2,
                                          gain ? 1.0 : 0.0));
    }
    stack.params.push_back(std::move(params));
  }
  auto referenceLayer = [&](const ref::Tensor &x,
                            const std::vector<ref::Tensor> &p) {
    ref::EncoderBlockParams block{p[0], p[1], p[2], p[3], p[4],  p[5],
                                  p[6], p[7], p[8], p[9], p[10], p[11]};
    return ref::encoderBlock(x, &stack.validLens, kHeads, block);
  };
  stack.expected = stack.x;
  for (const std::vector<ref::Tensor> &p : stack.params)
    stack.expected = referenceLayer(stack.expected, p);
  stack.referenceFirstLayer = referenceLayer(stack.x, stack.params[0]);
  stack.goldenFirstLayer = ref::Tensor(args.back().shape);
  const std::vector<double> &expected = golden->expected.back();
  std::copy(expected.begin(), expected.end(),
            stack.goldenFirstLayer.data.begin());
  return stack;
}

/// Pointers in the ABI order of an N-layer stack (X, valid_lens, L0_...,
/// ..., the output).
std::vector<void *> pointersOf(Stack &stack, std::vector<float> &output) {
  std::vector<void *> pointers = {stack.x.data.data(),
                                  stack.validLens.data.data()};
  for (std::vector<ref::Tensor> &layer : stack.params)
    for (ref::Tensor &param : layer)
      pointers.push_back(param.data.data());
  output.assign(stack.x.numElements(), NAN);
  pointers.push_back(output.data());
  return pointers;
}

double maxError(const std::vector<float> &output, const ref::Tensor &want) {
  double worst = 0;
  for (size_t i = 0; i < output.size(); ++i) {
    double d = std::fabs(double(output[i]) - want.data[i]);
    if (std::isnan(d))
      return NAN;
    worst = std::max(worst, d);
  }
  return worst;
}

/// docs/spec.md's 1e-4, however many layers: LayerNorm keeps the error of each
/// from growing (about 2e-6 after six layers, measured).
double toleranceOf(int) { return 1e-4; }

TEST(BlockCallStack, TheReferenceMatchesTheGoldenOnLayerZero) {
  Stack stack = makeStack(1);
  std::vector<float> golden = stack.goldenFirstLayer.data;
  EXPECT_LE(maxError(golden, stack.referenceFirstLayer), 1e-4);
}

#ifdef ATTNC_BLOCK_CALL_JIT

std::string readFile(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    ADD_FAILURE() << "cannot read " << path;
    return "";
  }
  return (*buffer)->getBuffer().str();
}

/// The golden's spec, then the stacks: what the AOT objects are built from.
std::string stacksSpec() {
  return readFile(std::string(ATTNC_TEST_DATA_DIR) +
                  "/goldens/encoder_block/encoder_block.attn") +
         "\n" + readFile(ATTNC_BLOCK_CALL_STACKS);
}

Runtime &testRuntime() { return sharedTestRuntime(); }

struct Lowering {
  const char *name;
  int optLevel;
  const char *attention;
  const char *cpu = "native";
  bool parallel = false;
  bool gpuEmulation = false;
};
const Lowering kLowerings[] = {
    {"O2_parallel", 2, "auto", "native", true},
    {"O3_fused", 3, "fused"},
    {"O2_decomposed", 2, "decomposed"},
    {"O0", 0, "decomposed"},
    {"O2_avx512", 2, "auto", "x86-64-v4"},
    {"O2_avx2", 2, "auto", "x86-64-v3"},
    {"O2_sse2", 2, "auto", "x86-64"},
    {"gpu_emulation", 2, "decomposed", "native", false, true}};

std::string loweringName(const ::testing::TestParamInfo<Lowering> &info) {
  return info.param.name;
}

/// Runs `block` (an N-layer stack) once with every buffer passed, then,
/// in another Kernel, with its params bound (prepared once) twice: the bound
/// runs must give the bits of the first.
llvm::Expected<std::vector<float>>
runJit(const std::string &block, Stack &stack, const Lowering &lowering) {
  CompileOptions options;
  options.setOptLevel(lowering.optLevel);
  options.target.cpu = lowering.cpu;
  options.pipeline.attention = lowering.attention;
  options.pipeline.parallel = lowering.parallel;
  if (lowering.gpuEmulation)
    attnc::test::useGpuEmulation(options.pipeline);
  std::vector<std::shared_ptr<Kernel>> kernels;
  for (int i = 0; i < 2; ++i) {
    auto kernel = testRuntime().compile(stacksSpec(), "encoder_stacks.attn",
                                        block, options);
    if (!kernel)
      return kernel.takeError();
    kernels.push_back(std::move(*kernel));
  }
  const KernelSignature &signature = kernels[0]->signature();
  std::vector<float> output;
  std::vector<void *> pointers = pointersOf(stack, output);
  if (pointers.size() != signature.arguments.size())
    return llvm::createStringError(
        "the stack has " + std::to_string(signature.arguments.size()) +
        " arguments, expected " + std::to_string(pointers.size()));
  std::vector<HostBuffer> all, unbound;
  for (auto [pointer, argument] : llvm::zip(pointers, signature.arguments)) {
    HostBuffer buffer{argument.name, pointer, argument.type, argument.shape};
    all.push_back(buffer);
    if (argument.role == ArgumentRole::Param) {
      if (llvm::Error error = kernels[1]->bindParam(buffer))
        return std::move(error);
    } else {
      unbound.push_back(buffer);
    }
  }
  if (llvm::Error error = kernels[0]->run(all))
    return std::move(error);
  std::vector<float> first = output;
  for (int run = 0; run < 2; ++run) {
    std::fill(output.begin(), output.end(), NAN);
    if (llvm::Error error = kernels[1]->run(unbound))
      return std::move(error);
    if (bytesDiffer(output.data(), first.data(), output.size() * 4))
      return llvm::createStringError(
          "the run with params bound and prepared once differs from the run "
          "with every param passed");
  }
  return first;
}

struct JitBlockCalls : ::testing::TestWithParam<Lowering> {
  void SetUp() override {
    if (llvm::Error lacks = checkRunsOnHost([&] {
          TargetOptions target;
          target.cpu = GetParam().cpu;
          return target;
        }()))
      GTEST_SKIP() << "this machine cannot run " << GetParam().cpu
                   << " code: " << llvm::toString(std::move(lacks));
  }
};

TEST_P(JitBlockCalls, TwoLayersEqualTheLayersWrittenOut) {
  Stack stack = makeStack(2);
  auto calls = runJit("encoder_2", stack, GetParam());
  ASSERT_TRUE(!!calls) << llvm::toString(calls.takeError());
  auto inlined = runJit("encoder_2_inline", stack, GetParam());
  ASSERT_TRUE(!!inlined) << llvm::toString(inlined.takeError());
  EXPECT_LE(maxError(*calls, stack.expected), toleranceOf(2));
  // The callee's code is the layers' code: the same bits.
  EXPECT_EQ(bytesDiffer(calls->data(), inlined->data(), calls->size() * 4), 0)
      << "max |calls - inline| = "
      << maxError(*calls, ref::Tensor(stack.x.shape, *inlined));
}

TEST_P(JitBlockCalls, SixLayersMatchTheReference) {
  Stack stack = makeStack(6);
  auto calls = runJit("encoder_6", stack, GetParam());
  ASSERT_TRUE(!!calls) << llvm::toString(calls.takeError());
  double worst = maxError(*calls, stack.expected);
  EXPECT_FALSE(std::isnan(worst));
  EXPECT_LE(worst, toleranceOf(6));
}

TEST_P(JitBlockCalls, CallsOfCallsMatchTheReference) {
  Stack stack = makeStack(4);
  auto calls = runJit("encoder_4_nested", stack, GetParam());
  ASSERT_TRUE(!!calls) << llvm::toString(calls.takeError());
  EXPECT_LE(maxError(*calls, stack.expected), toleranceOf(4));
}

INSTANTIATE_TEST_SUITE_P(Lowerings, JitBlockCalls,
                         ::testing::ValuesIn(kLowerings), loweringName);

TEST(JitBlockCallSignature, OnlyTheKernelsArguments) {
  auto kernel = testRuntime().compile(stacksSpec(), "encoder_stacks.attn",
                                      "encoder_2", Runtime::defaultOptions());
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  const KernelSignature &signature = (*kernel)->signature();
  EXPECT_EQ(signature.name, "encoder_2");
  ASSERT_EQ(signature.arguments.size(), 2u + 2 * std::size(kParams) + 1);
  EXPECT_EQ(signature.arguments[2].name, "L0_W_q");
  EXPECT_EQ(signature.arguments.back().name, "Z");
  // The lengths reach the callee's attention: checked as lengths.
  ASSERT_FALSE(signature.validLens.empty());
  EXPECT_EQ(signature.validLens.front().argument, 1u);
  EXPECT_EQ(signature.validLens.front().keys, 4);
  // Both layers' weights prepared (24 x 24 and 48 x 24 transposes, each
  // cache-line aligned), nothing else.
  EXPECT_GT(signature.packedElements, 0);
  auto layer =
      testRuntime().compile(stacksSpec(), "encoder_stacks.attn",
                            "encoder_block", Runtime::defaultOptions());
  ASSERT_TRUE(!!layer) << llvm::toString(layer.takeError());
  EXPECT_EQ(signature.packedElements,
            2 * llvm::alignTo((*layer)->signature().packedElements, 16));
}

/// The GPU object of a block that calls another: every call's kernels are
/// launched, on the caller's stream (NAME_cuda's), from the callee's code
/// (its kernels exist once, named after it). The fake driver runs no
/// kernel: this checks the host code's calls, not numbers (the JIT's
/// gpu_emulation lowering runs the same kernels on the CPU above).
TEST(JitBlockCallGpu, CallsLaunchTheCalleesKernelsOnTheCallersStream) {
  if (llvm::Expected<CudaToolkit> toolkit = findCudaToolkit(); !toolkit) {
    llvm::consumeError(toolkit.takeError());
    GTEST_SKIP() << "no CUDA toolkit (libdevice): GPU code is not compiled";
  }
  llvm::SmallString<128> log;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("fake-cuda", "log", log));
  setenv("ATTNC_CUDA_DRIVER", ATTNC_FAKE_CUDA_DRIVER, 1);
  setenv("FAKE_CUDA_LOG", log.c_str(), 1);
  CompileOptions options = Runtime::defaultOptions();
  options.target.kind = TargetKind::Nvptx;
  Stack stack = makeStack(2);
  std::vector<float> output;
  std::vector<void *> pointers = pointersOf(stack, output);
  auto launches = [&](const std::string &block,
                      size_t arguments) -> std::vector<std::string> {
    auto kernel = testRuntime().compile(stacksSpec(), "encoder_stacks.attn",
                                        block, options);
    EXPECT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
    if (!kernel)
      return {};
    const KernelSignature &signature = (*kernel)->signature();
    std::vector<HostBuffer> buffers;
    for (size_t i = 0; i < arguments; ++i) {
      // The layer alone: layer 0's params, then the output.
      size_t at = i + 1 == arguments ? pointers.size() - 1 : i;
      const KernelArgument &argument = signature.arguments[i];
      buffers.push_back(
          {argument.name, pointers[at], argument.type, argument.shape});
    }
    (void)llvm::sys::fs::remove(log);
    llvm::Error error =
        (*kernel)->runOnDevice(buffers, reinterpret_cast<void *>(0x5eed));
    EXPECT_FALSE(!!error) << llvm::toString(std::move(error));
    std::vector<std::string> launched;
    auto text = llvm::MemoryBuffer::getFile(log);
    if (!text)
      return launched;
    llvm::SmallVector<llvm::StringRef> lines;
    (*text)->getBuffer().split(lines, '\n');
    for (llvm::StringRef line : lines)
      if (line.consume_front("launch ")) {
        EXPECT_TRUE(line.ends_with("stream=0x5eed")) << line.str();
        launched.push_back(line.split(' ').first.str());
      }
    return launched;
  };
  std::vector<std::string> layer =
      launches("encoder_block", 2 + std::size(kParams) + 1);
  std::vector<std::string> stacked =
      launches("encoder_2", 2 + 2 * std::size(kParams) + 1);
  unsetenv("ATTNC_CUDA_DRIVER");
  unsetenv("FAKE_CUDA_LOG");
  (void)llvm::sys::fs::remove(log);
  ASSERT_FALSE(layer.empty());
  // Both calls run the layer's kernels, each in the layer's order.
  std::vector<std::string> twice;
  for (const std::string &name : stacked)
    if (llvm::StringRef(name).starts_with("encoder_block_kernel"))
      twice.push_back(name);
  std::vector<std::string> expected = layer;
  expected.insert(expected.end(), layer.begin(), layer.end());
  EXPECT_EQ(twice, expected);
  for (const std::string &name : stacked)
    EXPECT_TRUE(llvm::StringRef(name).starts_with("encoder_block_kernel") ||
                llvm::StringRef(name).starts_with("encoder_2_kernel"))
        << name;
}

#endif // ATTNC_BLOCK_CALL_JIT

#ifdef ATTNC_BLOCK_CALL_AOT

struct AotStack {
  int (*kernel)(void **);
  int (*prepare)(void **);
  int (*prepared)(void **);
  int64_t packedElements;
  int layers;
};

const std::map<std::string, AotStack> &aotStacks() {
  static const std::map<std::string, AotStack> stacks = {
#define ATTNC_AOT_STACK(name, NAME, layers)                                    \
  {#name,                                                                      \
   {&attnc_packed_##name, &attnc_packed_##name##_prepare,                      \
    &attnc_packed_##name##_prepared, NAME##_PACKED_NUMEL, layers}},
#include "BlockCallKernels.inc"
#undef ATTNC_AOT_STACK
  };
  return stacks;
}

/// NAME(...), and NAME_prepare once then NAME_prepared: the same bits.
std::vector<float> runAot(const std::string &name, Stack &stack) {
  const AotStack &entries = aotStacks().at(name);
  std::vector<float> output;
  std::vector<void *> pointers = pointersOf(stack, output);
  EXPECT_EQ(entries.kernel(pointers.data()), 0);
  std::vector<float> plain = output;

  std::vector<void *> params(pointers.begin() + 2, pointers.end() - 1);
  std::vector<float> packed(entries.packedElements, NAN);
  params.push_back(packed.data());
  EXPECT_EQ(entries.prepare(params.data()), 0);
  std::vector<void *> prepared = {pointers[0], pointers[1]};
  prepared.insert(prepared.end(), params.begin(), params.end() - 1);
  prepared.push_back(packed.data());
  std::fill(output.begin(), output.end(), NAN);
  prepared.push_back(output.data());
  EXPECT_EQ(entries.prepared(prepared.data()), 0);
  EXPECT_EQ(bytesDiffer(output.data(), plain.data(), output.size() * 4), 0)
      << name << ": NAME_prepare + NAME_prepared differ from NAME";
  return plain;
}

TEST(AotBlockCalls, TwoLayersEqualTheLayersWrittenOut) {
  Stack stack = makeStack(2);
  std::vector<float> calls = runAot("encoder_2", stack);
  std::vector<float> inlined = runAot("encoder_2_inline", stack);
  EXPECT_LE(maxError(calls, stack.expected), toleranceOf(2));
  EXPECT_EQ(bytesDiffer(calls.data(), inlined.data(), calls.size() * 4), 0)
      << "max |calls - inline| = "
      << maxError(calls, ref::Tensor(stack.x.shape, inlined));
}

TEST(AotBlockCalls, SixLayersMatchTheReference) {
  Stack stack = makeStack(6);
  std::vector<float> calls = runAot("encoder_6", stack);
  double worst = maxError(calls, stack.expected);
  EXPECT_FALSE(std::isnan(worst));
  EXPECT_LE(worst, toleranceOf(6));
}

TEST(AotBlockCalls, CallsOfCallsMatchTheReference) {
  Stack stack = makeStack(4);
  std::vector<float> calls = runAot("encoder_4_nested", stack);
  EXPECT_LE(maxError(calls, stack.expected), toleranceOf(4));
}

#endif // ATTNC_BLOCK_CALL_AOT

} // namespace
