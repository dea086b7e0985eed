//===- RuntimeTest.cpp - Compiling, checking, running and caching kernels -===//

#include "attnc/Runtime/Runtime.h"
#include "../../e2e/TestSupport.h"
#include "attnc/Codegen/GpuCompile.h"
#include "attnc/Halide/HalideBackend.h"

#include "attn/IR/PositionalEncoding.h"
#include "attnc/attnc.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include "gtest/gtest.h"

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>

using namespace attnc;

namespace {

// y = relu(x @ w^T + b), then an embedding lookup: small enough to check
// with three loops.
constexpr const char *kSpec = R"(
block small {
  dim N = 3, I = 5, O = 4, V = 6
  input x: f32[N, I]
  input ids: i32[N]
  param w: f32[O, I]
  param b: f32[O]
  param table: f32[V, O]
  h = relu(linear(x, w, b))
  e = embedding(ids, table)
  y = add(h, e)
  output y
}
)";

using test::randomValues;

/// A fresh cache directory per test.
class RuntimeTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("attnc-cache", dir));
    cacheDir = std::string(dir);
  }
  void TearDown() override { llvm::sys::fs::remove_directories(cacheDir); }

  std::string cacheDir;
  std::vector<float> x = randomValues(15, 1), w = randomValues(20, 2),
                     b = randomValues(4, 3), table = randomValues(24, 4);
  std::vector<int32_t> ids = {5, 0, 3};
  std::vector<float> y = std::vector<float>(12, NAN);

  std::vector<HostBuffer> buffers() {
    return {{"x", x.data(), ElementType::F32, {3, 5}},
            {"ids", ids.data(), ElementType::I32, {3}},
            {"w", w.data(), ElementType::F32, {4, 5}},
            {"b", b.data(), ElementType::F32, {4}},
            {"table", table.data(), ElementType::F32, {6, 4}},
            {"y", y.data(), ElementType::F32, {3, 4}}};
  }

  void expectCorrect(const std::vector<float> &out) {
    for (int n = 0; n < 3; ++n)
      for (int o = 0; o < 4; ++o) {
        double acc = b[o];
        for (int i = 0; i < 5; ++i)
          acc += double(x[n * 5 + i]) * w[o * 5 + i];
        double expected = std::max(acc, 0.0) + table[ids[n] * 4 + o];
        EXPECT_NEAR(out[n * 4 + o], expected, 1e-5) << n << "," << o;
      }
  }

  std::string message(llvm::Error error) {
    return test::errorMessage(std::move(error));
  }
};

TEST_F(RuntimeTest, CompilesRunsAndMatchesLoops) {
  Runtime runtime(cacheDir);
  auto kernel = runtime.compile(kSpec, "small.attn", "");
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  const KernelSignature &sig = (*kernel)->signature();
  EXPECT_EQ(sig.name, "small");
  ASSERT_EQ(sig.arguments.size(), 6u);
  EXPECT_EQ(sig.arguments[0].name, "x");
  EXPECT_EQ(sig.arguments[2].role, ArgumentRole::Param);
  EXPECT_EQ(sig.arguments[5].role, ArgumentRole::Output);
  EXPECT_EQ(sig.arguments[5].shape, (std::vector<int64_t>{3, 4}));
  ASSERT_EQ(message((*kernel)->run(buffers())), "");
  expectCorrect(y);
}

TEST_F(RuntimeTest, EveryBufferIsCheckedBeforeTheKernelRuns) {
  Runtime runtime(cacheDir);
  auto kernel = runtime.compile(kSpec, "small.attn", "small");
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  auto withChange = [&](auto change) {
    std::vector<HostBuffer> b = buffers();
    change(b);
    return message((*kernel)->run(b));
  };
  EXPECT_EQ(withChange([](auto &b) { b[0].shape = {5, 3}; }),
            "input 'x': expected f32[3, 5], got f32[5, 3]");
  EXPECT_EQ(withChange([](auto &b) { b[1].type = ElementType::F32; }),
            "input 'ids': expected i32[3], got f32[3]");
  EXPECT_EQ(withChange([](auto &b) { b.erase(b.begin() + 3); }),
            "kernel 'small' is missing param 'b' (f32[4])");
  EXPECT_EQ(withChange([](auto &b) { b[5].name = "z"; }),
            "kernel 'small' has no argument named 'z'; its arguments are x, "
            "ids, w, b, table, y");
  EXPECT_EQ(withChange([](auto &b) { b.push_back(b[0]); }),
            "'x' is given more than once");
  EXPECT_EQ(withChange([](auto &b) { b[5].data = nullptr; }),
            "output 'y': the buffer pointer is null");
  // Nothing ran: the output is untouched.
  for (float v : y)
    EXPECT_TRUE(std::isnan(v));
}

TEST_F(RuntimeTest, EmbeddingIdsOutOfRangeAreReportedWithTheirPosition) {
  Runtime runtime(cacheDir);
  auto kernel = runtime.compile(kSpec, "small.attn", "");
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  ids[2] = 6;
  EXPECT_EQ(message((*kernel)->run(buffers())),
            "input 'ids': id 6 at [2] is outside the embedding table [0, 6)");
  ids[2] = -1;
  EXPECT_EQ(message((*kernel)->run(buffers())),
            "input 'ids': id -1 at [2] is outside the embedding table [0, 6)");
}

TEST_F(RuntimeTest, BoundParamsAreCopiedOnce) {
  Runtime runtime(cacheDir);
  auto kernel = runtime.compile(kSpec, "small.attn", "");
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  std::vector<HostBuffer> all = buffers();
  for (int i : {2, 3, 4})
    ASSERT_EQ(message((*kernel)->bindParam(all[i])), "");
  EXPECT_EQ(message((*kernel)->bindParam(all[0])),
            "'x' is an input, not a param: only params can be bound");
  std::vector<float> originalW = w;
  std::fill(w.begin(), w.end(), 0.0f); // the kernel keeps its copy
  ASSERT_EQ(message((*kernel)->run({all[0], all[1], all[5]})), "");
  w = originalW;
  expectCorrect(y);
}

TEST_F(RuntimeTest, ParamsBoundTogetherAreBoundAllOrNone) {
  Runtime runtime(cacheDir);
  auto kernel = runtime.compile(kSpec, "small.attn", "");
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  std::vector<HostBuffer> all = buffers();
  HostBuffer wrongTable = all[4];
  wrongTable.shape = {6, 5};
  EXPECT_EQ(message((*kernel)->bindParams({all[2], all[3], wrongTable})),
            "param 'table': expected f32[6, 4], got f32[6, 5]");
  for (unsigned i : {2u, 3u, 4u})
    EXPECT_FALSE((*kernel)->isBound(i)) << i;
  EXPECT_EQ(message((*kernel)->bindParams({all[2], all[2]})),
            "'w' is given more than once");
  EXPECT_FALSE((*kernel)->isBound(2));
  ASSERT_EQ(message((*kernel)->bindParams({all[2], all[3], all[4]})), "");
  ASSERT_EQ(message((*kernel)->run({all[0], all[1], all[5]})), "");
  expectCorrect(y);
}

// A param's copy that cannot be allocated is an error, not std::bad_alloc
// (through the C API: std::terminate). A 4 TiB param (the size limit, 2^40
// elements) is more than any of these machines can allocate. Where the
// kernel overcommits every request (vm.overcommit_memory = 1) the
// allocation would succeed and the copy read 4 TiB, and ASan's operator new
// aborts on such a request: both are said and skipped.
TEST_F(RuntimeTest, AParamThatCannotBeCopiedIsAnError) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "ASan's operator new aborts on a 4 TiB request instead of "
                  "throwing std::bad_alloc (the default build runs this)";
#endif
#endif
  std::ifstream overcommit("/proc/sys/vm/overcommit_memory");
  int mode = 0;
  if (overcommit >> mode && mode == 1)
    GTEST_SKIP() << "vm.overcommit_memory = 1: a 4 TiB allocation succeeds";
  Runtime runtime(cacheDir);
  auto kernel = runtime.compile(R"(
block huge {
  dim N = 1099511627776
  input x: f32[N]
  param w: f32[N]
  y = add(x, w)
  output y
}
)",
                                "huge.attn", "");
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  float never = 0;
  HostBuffer w{"w", &never, ElementType::F32, {int64_t(1) << 40}};
  EXPECT_EQ(message((*kernel)->bindParam(w)),
            "binding param 'w': out of memory (4398046511104 bytes could not "
            "be allocated)");
  EXPECT_FALSE((*kernel)->isBound(1));
}

TEST_F(RuntimeTest, AnOutputMayNotOverlapAnotherBuffer) {
  Runtime runtime(cacheDir);
  auto kernel = runtime.compile(kSpec, "small.attn", "");
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  std::vector<HostBuffer> all = buffers();
  // y (12 floats) written over x (15 floats), then over its last float.
  HostBuffer overX = all[5];
  overX.data = x.data();
  EXPECT_EQ(
      message((*kernel)->run({all[0], all[1], all[2], all[3], all[4], overX})),
      "output 'y' overlaps input 'x' in memory: the kernel writes an "
      "output while it reads the other buffers; pass separate buffers");
  std::vector<float> wide(15 + 12);
  HostBuffer xInWide = all[0], yInWide = all[5];
  xInWide.data = wide.data();
  yInWide.data = wide.data() + 14;
  EXPECT_NE(message((*kernel)->run(
                {xInWide, all[1], all[2], all[3], all[4], yInWide})),
            "");
  yInWide.data = wide.data() + 15; // adjacent, apart
  EXPECT_EQ(message((*kernel)->run(
                {xInWide, all[1], all[2], all[3], all[4], yInWide})),
            "");
}

/// A state (docs/spec.md §2 v3): an argument in declaration order, read
/// (here: added) and kept by the caller; the kernel may write it, so it
/// may overlap no other buffer, and it is not a param to bind.
TEST_F(RuntimeTest, AStateIsAnArgumentThatMayOverlapNoOtherBuffer) {
  const char *spec = "block st {\n"
                     "  input x: f32[2, 3]\n"
                     "  state s: f32[2, 3]\n"
                     "  y = add(x, s)\n"
                     "  output y\n"
                     "}\n";
  Runtime runtime(cacheDir);
  auto kernel = runtime.compile(spec, "state.attn", "");
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  ::setenv("ATTNC_CACHE_DIR", cacheDir.c_str(), 1);
  attnc_kernel *c = attnc_compile_string(spec, nullptr, nullptr, 2);
  ASSERT_NE(c, nullptr) << attnc_last_error();
  EXPECT_EQ(attnc_kernel_arg_role(c, 1), ATTNC_STATE);
  attnc_kernel_free(c);
  const KernelSignature &signature = (*kernel)->signature();
  ASSERT_EQ(signature.arguments.size(), 3u);
  EXPECT_EQ(signature.arguments[1].role, ArgumentRole::State);
  auto roundTrip = KernelSignature::fromJSON(signature.toJSON());
  ASSERT_TRUE(!!roundTrip) << llvm::toString(roundTrip.takeError());
  EXPECT_EQ(roundTrip->arguments[1].role, ArgumentRole::State);

  std::vector<float> in = {1, 2, 3, 4, 5, 6}, state = {10, 20, 30, 40, 50, 60},
                     out(6, NAN);
  HostBuffer xBuffer{"x", in.data(), ElementType::F32, {2, 3}};
  HostBuffer sBuffer{"s", state.data(), ElementType::F32, {2, 3}};
  HostBuffer yBuffer{"y", out.data(), ElementType::F32, {2, 3}};
  ASSERT_EQ(message((*kernel)->run({xBuffer, sBuffer, yBuffer})), "");
  EXPECT_EQ(out, (std::vector<float>{11, 22, 33, 44, 55, 66}));

  HostBuffer sOverX = sBuffer;
  sOverX.data = in.data() + 2;
  EXPECT_EQ(message((*kernel)->run({xBuffer, sOverX, yBuffer})),
            "state 's' overlaps input 'x' in memory: the kernel writes a "
            "state while it reads the other buffers; pass separate buffers");
  HostBuffer yOverS = yBuffer;
  yOverS.data = state.data();
  EXPECT_EQ(message((*kernel)->run({xBuffer, sBuffer, yOverS})),
            "state 's' overlaps output 'y' in memory: the kernel writes a "
            "state while it reads the other buffers; pass separate buffers");
  EXPECT_EQ(message((*kernel)->bindParam(sBuffer)),
            "'s' is a state, not a param: only params can be bound");
}

TEST_F(RuntimeTest, KernelsFromTheCacheHaveParamsOfTheirOwn) {
  // Two compiles of one spec (the second a memory hit) share code, not
  // bound weights: two modules of one shape keep their own weights.
  Runtime runtime(cacheDir);
  auto first = runtime.compile(kSpec, "small.attn", "");
  auto second = runtime.compile(kSpec, "small.attn", "");
  ASSERT_TRUE(first && second);
  EXPECT_EQ(runtime.statistics().memoryHits, 1u);
  EXPECT_NE(first->get(), second->get());
  std::vector<HostBuffer> all = buffers();
  for (int i : {2, 3, 4})
    ASSERT_EQ(message((*first)->bindParam(all[i])), "");
  EXPECT_FALSE((*second)->isBound(2));
  EXPECT_EQ(message((*second)->run({all[0], all[1], all[5]})),
            "kernel 'small' is missing param 'w' (f32[4, 5]), param 'b' "
            "(f32[4]), param 'table' (f32[6, 4])");
  ASSERT_EQ(message((*first)->run({all[0], all[1], all[5]})), "");
  expectCorrect(y);
}

TEST_F(RuntimeTest, BoundParamsArePreparedAgainWhenRebound) {
  Runtime runtime(cacheDir);
  auto kernel = runtime.compile(kSpec, "small.attn", "");
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  // w is transposed once for the GEMM: 20 floats, at a 16-float boundary.
  EXPECT_EQ((*kernel)->signature().packedElements, 32);
  std::vector<HostBuffer> all = buffers();
  ASSERT_EQ(message((*kernel)->bindParam(all[2])), "");
  EXPECT_EQ(message((*kernel)->prepareParams()),
            "kernel 'small': cannot prepare its params before they are "
            "bound; not bound: 'b', 'table'");
  for (int i : {3, 4})
    ASSERT_EQ(message((*kernel)->bindParam(all[i])), "");
  ASSERT_EQ(message((*kernel)->prepareParams()), "");
  ASSERT_EQ(message((*kernel)->run({all[0], all[1], all[5]})), "");
  expectCorrect(y);

  // New weights (in the same storage, which `all` points to): bound again,
  // the next run prepares them again.
  std::vector<float> next = randomValues(20, 7);
  std::copy(next.begin(), next.end(), w.begin());
  ASSERT_EQ(message((*kernel)->bindParam(all[2])), "");
  std::fill(y.begin(), y.end(), NAN);
  ASSERT_EQ(message((*kernel)->run({all[0], all[1], all[5]})), "");
  expectCorrect(y);

  // A param passed to a run wins over the bound one.
  std::vector<float> bound = w;
  next = randomValues(20, 8);
  std::copy(next.begin(), next.end(), w.begin());
  std::fill(y.begin(), y.end(), NAN);
  ASSERT_EQ(message((*kernel)->run({all[0], all[1], all[2], all[5]})), "");
  expectCorrect(y);
  // ... for that run only.
  std::copy(bound.begin(), bound.end(), w.begin());
  std::fill(y.begin(), y.end(), NAN);
  ASSERT_EQ(message((*kernel)->run({all[0], all[1], all[5]})), "");
  expectCorrect(y);
}

/// A 1-D x with a bias: the bias broadcast to its own shape folds away, and
/// the GEMM must then accumulate into a copy, never into the bias buffer.
TEST_F(RuntimeTest, ParamsAreNeverWritten) {
  Runtime runtime(cacheDir);
  auto kernel = runtime.compile("block row {\n  input x: f32[5]\n"
                                "  param w: f32[4, 5]\n  param b: f32[4]\n"
                                "  y = linear(x, w, b)\n  output y\n}\n",
                                "row.attn", "");
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  std::vector<float> row(x.begin(), x.begin() + 5), out(4, NAN);
  std::vector<float> wCopy = w, bCopy = b;
  auto expect = [&] {
    for (int o = 0; o < 4; ++o) {
      double acc = bCopy[o];
      for (int i = 0; i < 5; ++i)
        acc += double(row[i]) * wCopy[o * 5 + i];
      EXPECT_NEAR(out[o], acc, 1e-5) << o;
    }
  };
  HostBuffer xBuf{"x", row.data(), ElementType::F32, {5}},
      wBuf{"w", w.data(), ElementType::F32, {4, 5}},
      bBuf{"b", b.data(), ElementType::F32, {4}},
      yBuf{"y", out.data(), ElementType::F32, {4}};
  // Passed on every call: the caller's buffers stay as they were.
  for (int call = 0; call < 2; ++call) {
    ASSERT_EQ(message((*kernel)->run({xBuf, wBuf, bBuf, yBuf})), "");
    expect();
    EXPECT_EQ(w, wCopy);
    EXPECT_EQ(b, bCopy);
  }
  // Bound and prepared: the kernel's copies stay as they were too.
  ASSERT_EQ(message((*kernel)->bindParam(wBuf)), "");
  ASSERT_EQ(message((*kernel)->bindParam(bBuf)), "");
  for (int call = 0; call < 3; ++call) {
    std::fill(out.begin(), out.end(), NAN);
    ASSERT_EQ(message((*kernel)->run({xBuf, yBuf})), "");
    expect();
  }
}

/// A kernel compiled without --parallel keeps its large temporaries in a
/// cache written into its object (guarded by a spinlock): four host threads
/// calling it at once keep getting the one-thread answer.
TEST_F(RuntimeTest, LibcOnlyKernelsShareTheirBlockCacheAcrossThreads) {
  Runtime runtime(cacheDir);
  CompileOptions options;
  options.pipeline.parallel = false;
  options.objectBlockCache = true; // as ahead of time
  // 128 KB temporaries: above the cache's 64 KB threshold.
  auto kernel = runtime.compile("block big {\n  input x: f32[64, 512]\n"
                                "  param w: f32[512, 512]\n"
                                "  y = relu(linear(relu(linear(x, w)), w))\n"
                                "  output y\n}\n",
                                "big.attn", "", options);
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  std::vector<float> input = randomValues(64 * 512, 11),
                     weight = randomValues(512 * 512, 12);
  for (float &v : weight)
    v *= 0.05f;
  ASSERT_EQ(message((*kernel)->bindParam(
                {"w", weight.data(), ElementType::F32, {512, 512}})),
            "");
  auto runOnce = [&](std::vector<float> &out) {
    return message(
        (*kernel)->run({{"x", input.data(), ElementType::F32, {64, 512}},
                        {"y", out.data(), ElementType::F32, {64, 512}}}));
  };
  std::vector<float> expected(64 * 512);
  ASSERT_EQ(runOnce(expected), "");
  std::atomic<int> mismatches{0};
  std::vector<std::thread> hosts;
  for (int t = 0; t < 4; ++t)
    hosts.emplace_back([&] {
      std::vector<float> out(64 * 512);
      for (int call = 0; call < 25; ++call) {
        std::fill(out.begin(), out.end(), NAN);
        if (!runOnce(out).empty() || out != expected)
          ++mismatches;
      }
    });
  for (std::thread &host : hosts)
    host.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST_F(RuntimeTest, DiskCacheIsReusedAndCorruptEntriesAreRebuilt) {
  {
    Runtime runtime(cacheDir);
    ASSERT_TRUE(!!runtime.compile(kSpec, "small.attn", ""));
    ASSERT_TRUE(!!runtime.compile(kSpec, "small.attn", ""));
    EXPECT_EQ(runtime.statistics().compilations, 1u);
    EXPECT_EQ(runtime.statistics().memoryHits, 1u);
  }
  // A new process (a new Runtime) finds the entry on disk.
  Runtime second(cacheDir);
  auto kernel = second.compile(kSpec, "small.attn", "");
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  EXPECT_EQ(second.statistics().diskHits, 1u);
  EXPECT_EQ(second.statistics().compilations, 0u);
  ASSERT_EQ(message((*kernel)->run(buffers())), "");
  expectCorrect(y);

  // Corrupt every object in the cache: the entry is rebuilt, not trusted.
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(cacheDir, ec), end;
       it != end && !ec; it.increment(ec))
    if (llvm::StringRef(it->path()).ends_with(".o")) {
      llvm::raw_fd_ostream os(it->path(), ec);
      os << "not an object";
    }
  Runtime third(cacheDir);
  kernel = third.compile(kSpec, "small.attn", "");
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  EXPECT_EQ(third.statistics().corruptEntries, 1u);
  EXPECT_EQ(third.statistics().compilations, 1u);
  std::fill(y.begin(), y.end(), NAN);
  ASSERT_EQ(message((*kernel)->run(buffers())), "");
  expectCorrect(y);
}

// An entry whose files were replaced by a device (/dev/zero, which never
// ends) is corrupt and rebuilt, not read without end (issue 15, item 7).
TEST_F(RuntimeTest, ACacheFileThatIsADeviceIsRebuilt) {
  {
    Runtime runtime(cacheDir);
    ASSERT_TRUE(!!runtime.compile(kSpec, "small.attn", ""));
  }
  std::error_code ec;
  int replaced = 0;
  for (llvm::sys::fs::directory_iterator it(cacheDir, ec), end;
       it != end && !ec; it.increment(ec)) {
    llvm::StringRef path(it->path());
    if (path.ends_with(".o") || path.ends_with(".json")) {
      ASSERT_FALSE(llvm::sys::fs::remove(path));
      ASSERT_FALSE(llvm::sys::fs::create_link("/dev/zero", path));
      ++replaced;
    }
  }
  ASSERT_EQ(replaced, 2);
  Runtime second(cacheDir);
  auto kernel = second.compile(kSpec, "small.attn", "");
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  EXPECT_EQ(second.statistics().corruptEntries, 1u);
  EXPECT_EQ(second.statistics().compilations, 1u);
  ASSERT_EQ(message((*kernel)->run(buffers())), "");
  expectCorrect(y);
}

/// Both APIs can empty the in-memory cache; a kernel the host holds stays
/// valid, and the next compile comes from the disk cache.
TEST_F(RuntimeTest, TheMemoryCacheCanBeClearedFromC) {
  Runtime &runtime = Runtime::global();
  attnc_kernel *held = attnc_compile_string(kSpec, nullptr, nullptr, 2);
  ASSERT_NE(held, nullptr) << attnc_last_error();
  attnc_kernel *again = attnc_compile_string(kSpec, nullptr, nullptr, 2);
  ASSERT_NE(again, nullptr) << attnc_last_error();
  RuntimeStatistics before = runtime.statistics();
  attnc_clear_memory_cache();
  attnc_kernel *third = attnc_compile_string(kSpec, nullptr, nullptr, 2);
  ASSERT_NE(third, nullptr) << attnc_last_error();
  RuntimeStatistics after = runtime.statistics();
  EXPECT_EQ(after.memoryHits, before.memoryHits);
  EXPECT_EQ(after.diskHits + after.compilations,
            before.diskHits + before.compilations + 1);
  EXPECT_STREQ(attnc_kernel_name(held), "small");
  attnc_kernel_free(held);
  attnc_kernel_free(again);
  attnc_kernel_free(third);
}

/// The whole entry is covered by its digest: a signature edited on disk
/// (here its packed size, which sizes the buffer the kernel writes) makes
/// the entry corrupt and rebuilt, never trusted.
TEST_F(RuntimeTest, AnEditedSignatureIsRebuiltNotTrusted) {
  {
    Runtime runtime(cacheDir);
    ASSERT_TRUE(!!runtime.compile(kSpec, "small.attn", ""));
  }
  std::error_code ec;
  int edited = 0;
  for (llvm::sys::fs::directory_iterator it(cacheDir, ec), end;
       it != end && !ec; it.increment(ec)) {
    if (!llvm::StringRef(it->path()).ends_with(".json"))
      continue;
    auto buffer = llvm::MemoryBuffer::getFile(it->path());
    ASSERT_TRUE(!!buffer);
    std::string text = (*buffer)->getBuffer().str();
    size_t at = text.find("packed_elements");
    ASSERT_NE(at, std::string::npos);
    at = text.find_first_of("0123456789", at);
    ASSERT_NE(at, std::string::npos);
    text[at] = text[at] == '1' ? '2' : '1';
    llvm::raw_fd_ostream os(it->path(), ec);
    os << text;
    ++edited;
  }
  ASSERT_EQ(edited, 1);
  Runtime second(cacheDir);
  auto kernel = second.compile(kSpec, "small.attn", "");
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  EXPECT_EQ(second.statistics().corruptEntries, 1u);
  EXPECT_EQ(second.statistics().compilations, 1u);
  ASSERT_EQ(
      message((*kernel)->bindParam({"w", w.data(), ElementType::F32, {4, 5}})),
      "");
  ASSERT_EQ(message((*kernel)->run(buffers())), "");
  expectCorrect(y);
}

/// The paths of the cache's entry files (.json and .o) in `dir`.
std::vector<std::string> entryFiles(const std::string &dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef path(it->path());
    if (path.ends_with(".o") || path.ends_with(".json"))
      files.push_back(path.str());
  }
  return files;
}

/// The permission bits of `path`.
unsigned modeOf(const std::string &path) {
  llvm::sys::fs::file_status status;
  EXPECT_FALSE(llvm::sys::fs::status(path, status, /*Follow=*/false));
  return status.permissions() & llvm::sys::fs::all_perms;
}

/// The cache trusts only this user (issue 31, item 1): a directory it
/// makes is 0700, its files 0600.
TEST_F(RuntimeTest, TheCacheIsCreatedPrivate) {
  std::string nested = cacheDir + "/a/b";
  Runtime runtime(nested);
  ASSERT_TRUE(!!runtime.compile(kSpec, "small.attn", ""));
  EXPECT_EQ(modeOf(cacheDir + "/a"), 0700u);
  EXPECT_EQ(modeOf(nested), 0700u);
  std::vector<std::string> files = entryFiles(nested);
  ASSERT_EQ(files.size(), 2u);
  for (const std::string &file : files)
    EXPECT_EQ(modeOf(file), 0600u) << file;
}

/// A cache directory that others may write (a shared one, /tmp-like) is
/// not used at all: nothing is read from it or written to it, a warning
/// names it, and kernels are compiled in memory.
TEST_F(RuntimeTest, ACacheDirectoryOthersCanWriteIsNotUsed) {
  {
    Runtime runtime(cacheDir);
    ASSERT_TRUE(!!runtime.compile(kSpec, "small.attn", ""));
  }
  ASSERT_FALSE(
      llvm::sys::fs::setPermissions(cacheDir, llvm::sys::fs::all_all)); // 0777
  ::testing::internal::CaptureStderr();
  Runtime second(cacheDir);
  auto kernel = second.compile(kSpec, "small.attn", "");
  std::string warning = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  EXPECT_EQ(second.statistics().diskHits, 0u);
  EXPECT_EQ(second.statistics().compilations, 1u);
  EXPECT_NE(warning.find("not using the kernel cache '" + cacheDir + "': '" +
                         cacheDir + "' is writable by other users (mode 0777)"),
            std::string::npos)
      << warning;
  ASSERT_EQ(message((*kernel)->run(buffers())), "");
  expectCorrect(y);
  // Group-writable is refused too; the warning is given once per
  // directory.
  ASSERT_FALSE(llvm::sys::fs::setPermissions(
      cacheDir, llvm::sys::fs::owner_all | llvm::sys::fs::group_all));
  ::testing::internal::CaptureStderr();
  Runtime third(cacheDir);
  ASSERT_TRUE(!!third.compile(kSpec, "small.attn", ""));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(third.statistics().diskHits, 0u);
}

/// An entry file others may write is not read: it is rebuilt, and the new
/// one is private again.
TEST_F(RuntimeTest, CacheFilesOthersCanWriteAreRebuilt) {
  {
    Runtime runtime(cacheDir);
    ASSERT_TRUE(!!runtime.compile(kSpec, "small.attn", ""));
  }
  for (const std::string &file : entryFiles(cacheDir))
    if (llvm::StringRef(file).ends_with(".o"))
      ASSERT_FALSE(llvm::sys::fs::setPermissions(
          file, llvm::sys::fs::all_read | llvm::sys::fs::all_write));
  Runtime second(cacheDir);
  auto kernel = second.compile(kSpec, "small.attn", "");
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  EXPECT_EQ(second.statistics().corruptEntries, 1u);
  EXPECT_EQ(second.statistics().compilations, 1u);
  for (const std::string &file : entryFiles(cacheDir))
    EXPECT_EQ(modeOf(file), 0600u) << file;
}

/// The attack of issue 31: another user who can write the files (here:
/// given them, which needs root) plants an entry whose digests are right
/// (a real entry of the same key). It is not loaded, whether the files or
/// the whole directory are theirs.
TEST_F(RuntimeTest, AnotherUsersCacheFilesAreNotTrusted) {
  if (geteuid() != 0)
    GTEST_SKIP() << "giving files to another uid needs root (chown); this "
                    "runs as uid "
                 << geteuid();
  constexpr uid_t kOther = 65534; // nobody
  {
    Runtime runtime(cacheDir);
    ASSERT_TRUE(!!runtime.compile(kSpec, "small.attn", ""));
  }
  for (const std::string &file : entryFiles(cacheDir))
    ASSERT_EQ(::chown(file.c_str(), kOther, kOther), 0) << file;
  Runtime second(cacheDir);
  auto kernel = second.compile(kSpec, "small.attn", "");
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  EXPECT_EQ(second.statistics().diskHits, 0u);
  EXPECT_EQ(second.statistics().corruptEntries, 1u);

  // The rebuilt entry is this user's; now the directory becomes another's.
  ASSERT_EQ(::chown(cacheDir.c_str(), kOther, kOther), 0);
  for (const std::string &file : entryFiles(cacheDir))
    ASSERT_EQ(::chown(file.c_str(), kOther, kOther), 0) << file;
  ::testing::internal::CaptureStderr();
  Runtime third(cacheDir);
  kernel = third.compile(kSpec, "small.attn", "");
  std::string warning = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  EXPECT_EQ(third.statistics().diskHits, 0u);
  EXPECT_EQ(third.statistics().compilations, 1u);
  EXPECT_NE(warning.find("belongs to uid 65534, not to this user"),
            std::string::npos)
      << warning;
  ASSERT_EQ(message((*kernel)->run(buffers())), "");
  expectCorrect(y);
}

/// A cache that cannot be written (a full disk: here a file-size limit
/// that makes every write fail with EFBIG) costs speed, never the host
/// program: the kernel compiles and runs (a stream left in its error state
/// used to end in report_fatal_error).
TEST_F(RuntimeTest, AFullCacheDiskIsNotFatal) {
  struct rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  void (*oldHandler)(int) = signal(SIGXFSZ, SIG_IGN);
  struct rlimit tiny = saved;
  tiny.rlim_cur = 64; // bytes: far below any object
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &tiny), 0);
  Runtime runtime(cacheDir);
  auto kernel = runtime.compile(kSpec, "small.attn", "");
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, oldHandler);
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  ASSERT_EQ(message((*kernel)->run(buffers())), "");
  expectCorrect(y);
  // Nothing half-written was left for a later process to trust.
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(cacheDir, ec), end;
       it != end && !ec; it.increment(ec))
    EXPECT_FALSE(llvm::StringRef(it->path()).ends_with(".json")) << it->path();
}

TEST_F(RuntimeTest, SpecErrorsComeBackAsErrors) {
  Runtime runtime(cacheDir);
  auto kernel = runtime.compile("block b {\n  dim D = 3\n  input x: f32[D]\n"
                                "  y = frobnicate(x)\n  output y\n}\n",
                                "bad.attn", "");
  ASSERT_FALSE(!!kernel);
  std::string text = llvm::toString(kernel.takeError());
  EXPECT_NE(text.find("bad.attn:4:"), std::string::npos) << text;
  EXPECT_NE(text.find("unknown op 'frobnicate'"), std::string::npos) << text;
}

// The JIT loads its objects into this process: another triple's code is
// refused before anything is compiled, whatever the cache holds.
TEST_F(RuntimeTest, AnotherTripleIsRefused) {
  Runtime runtime(cacheDir);
  CompileOptions options = Runtime::defaultOptions();
  options.target.triple = "aarch64-linux-gnu";
  auto kernel = runtime.compile(kSpec, "small.attn", "", options);
  ASSERT_FALSE(!!kernel);
  std::string text = llvm::toString(kernel.takeError());
  EXPECT_NE(text.find("--triple=aarch64-linux-gnu is for objects"),
            std::string::npos)
      << text;
  // The host's own triple, spelled out, is this machine.
  options.target.triple = llvm::sys::getDefaultTargetTriple();
  EXPECT_TRUE(!!runtime.compile(kSpec, "small.attn", "", options));
}

TEST_F(RuntimeTest, KernelsRunConcurrently) {
  Runtime runtime(cacheDir);
  auto kernel = runtime.compile(kSpec, "small.attn", "");
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  std::vector<std::vector<float>> outputs(8, std::vector<float>(12, NAN));
  std::vector<std::string> errors(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::vector<HostBuffer> b = buffers();
      b[5].data = outputs[t].data();
      for (int repeat = 0; repeat < 50 && errors[t].empty(); ++repeat)
        errors[t] = message((*kernel)->run(b));
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < 8; ++t) {
    EXPECT_EQ(errors[t], "");
    expectCorrect(outputs[t]);
  }
}

TEST_F(RuntimeTest, CApiCompilesQueriesAndRuns) {
  ::setenv("ATTNC_CACHE_DIR", cacheDir.c_str(), 1);
  attnc_kernel *kernel = attnc_compile_string(kSpec, nullptr, nullptr, 3);
  ASSERT_NE(kernel, nullptr) << attnc_last_error();
  EXPECT_STREQ(attnc_kernel_name(kernel), "small");
  ASSERT_EQ(attnc_kernel_num_args(kernel), 6);
  EXPECT_STREQ(attnc_kernel_arg_name(kernel, 1), "ids");
  EXPECT_EQ(attnc_kernel_arg_dtype(kernel, 1), ATTNC_I32);
  EXPECT_EQ(attnc_kernel_arg_role(kernel, 4), ATTNC_PARAM);
  EXPECT_EQ(attnc_kernel_arg_role(kernel, 5), ATTNC_OUTPUT);
  ASSERT_EQ(attnc_kernel_arg_rank(kernel, 0), 2);
  EXPECT_EQ(attnc_kernel_arg_shape(kernel, 0)[1], 5);
  EXPECT_EQ(attnc_kernel_arg_name(kernel, 6), nullptr);
  EXPECT_STREQ(attnc_last_error(),
               "attnc: argument index 6 is out of range [0, 6)");

  std::vector<attnc_buffer> c;
  std::vector<HostBuffer> all = buffers();
  for (const HostBuffer &h : all)
    c.push_back({h.name.c_str(), h.data,
                 h.type == ElementType::F32 ? ATTNC_F32 : ATTNC_I32,
                 static_cast<int>(h.shape.size()), h.shape.data()});
  ASSERT_EQ(attnc_kernel_run(kernel, c.data(), static_cast<int>(c.size())), 0)
      << attnc_last_error();
  expectCorrect(y);
  c[0].rank = 1;
  EXPECT_EQ(attnc_kernel_run(kernel, c.data(), static_cast<int>(c.size())), 1);
  EXPECT_STREQ(attnc_last_error(), "input 'x': expected f32[3, 5], got f32[3]");
  c[0].rank = 2;

  // Params bound and prepared once; runs then pass inputs and outputs.
  EXPECT_EQ(attnc_kernel_prepare_params(kernel), 1);
  EXPECT_STREQ(attnc_last_error(),
               "kernel 'small': cannot prepare its params before they are "
               "bound; not bound: 'w', 'b', 'table'");
  for (int i : {2, 3, 4})
    ASSERT_EQ(attnc_kernel_bind_param(kernel, &c[i]), 0) << attnc_last_error();
  ASSERT_EQ(attnc_kernel_prepare_params(kernel), 0) << attnc_last_error();
  std::fill(y.begin(), y.end(), NAN);
  attnc_buffer perCall[] = {c[0], c[1], c[5]};
  ASSERT_EQ(attnc_kernel_run(kernel, perCall, 3), 0) << attnc_last_error();
  expectCorrect(y);
  EXPECT_EQ(attnc_kernel_prepare_params(nullptr), 1);
  attnc_kernel_free(kernel);
}

// bf16 and f16 arguments have C dtypes of their own (asking for one reached
// llvm_unreachable and answered ATTNC_I32), and such kernels run through the
// C API on 16-bit patterns.
TEST_F(RuntimeTest, CApiNamesBf16AndF16) {
  ::setenv("ATTNC_CACHE_DIR", cacheDir.c_str(), 1);
  struct Case {
    const char *type;
    attnc_dtype dtype;
    uint16_t one, minusOne, two;
  };
  for (const Case &t : {Case{"bf16", ATTNC_BF16, 0x3F80, 0xBF80, 0x4000},
                        Case{"f16", ATTNC_F16, 0x3C00, 0xBC00, 0x4000}}) {
    SCOPED_TRACE(t.type);
    std::string spec = std::string("block h {\n  input x: ") + t.type +
                       "[2, 2]\n  y = relu(x)\n  output y\n}\n";
    attnc_kernel *kernel =
        attnc_compile_string(spec.c_str(), nullptr, nullptr, 2);
    ASSERT_NE(kernel, nullptr) << attnc_last_error();
    EXPECT_EQ(attnc_kernel_arg_dtype(kernel, 0), t.dtype);
    EXPECT_EQ(attnc_kernel_arg_dtype(kernel, 1), t.dtype);
    uint16_t x[4] = {t.one, t.minusOne, t.two, t.minusOne};
    uint16_t y[4] = {0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF};
    const int64_t shape[2] = {2, 2};
    attnc_buffer buffers[2] = {{"x", x, t.dtype, 2, shape},
                               {"y", y, t.dtype, 2, shape}};
    ASSERT_EQ(attnc_kernel_run(kernel, buffers, 2), 0) << attnc_last_error();
    // relu: the positive values as they are, the negative ones zero (of
    // either sign).
    EXPECT_EQ(y[0], t.one);
    EXPECT_EQ(y[1] & 0x7FFF, 0);
    EXPECT_EQ(y[2], t.two);
    EXPECT_EQ(y[3] & 0x7FFF, 0);
    buffers[0].dtype = ATTNC_F32;
    EXPECT_EQ(attnc_kernel_run(kernel, buffers, 2), 1);
    EXPECT_NE(
        std::string(attnc_last_error()).find(std::string("expected ") + t.type),
        std::string::npos)
        << attnc_last_error();
    attnc_kernel_free(kernel);
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// GPU kernels (TargetKind::Nvptx) through the runtime, without a GPU
//===----------------------------------------------------------------------===//

namespace {

constexpr const char *kGpuSpec = R"(
block g {
  input x: f32[3, 5]
  param w: f32[4, 5]
  y = relu(linear(x, w))
  output y
}
)";

/// Compiles kGpuSpec for the GPU, or skips the test where attnc cannot
/// (no CUDA toolkit: libdevice).
std::shared_ptr<Kernel> compileGpuKernel(Runtime &runtime) {
  if (llvm::Expected<CudaToolkit> toolkit = findCudaToolkit(); !toolkit) {
    llvm::consumeError(toolkit.takeError());
    return nullptr;
  }
  CompileOptions options = Runtime::defaultOptions();
  options.target.kind = TargetKind::Nvptx;
  auto kernel = runtime.compile(kGpuSpec, "gpu.attn", "", options);
  EXPECT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  return kernel ? *kernel : nullptr;
}

/// Sets an environment variable for the scope (each JIT-loaded GPU object
/// reads ATTNC_CUDA_DRIVER at its first call).
struct ScopedEnvironment {
  std::string name;
  ScopedEnvironment(std::string name, const std::string &value)
      : name(std::move(name)) {
    setenv(this->name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnvironment() { unsetenv(name.c_str()); }
};

} // namespace

TEST_F(RuntimeTest, AGpuKernelWithoutADriverSaysSo) {
  ScopedEnvironment driver("ATTNC_CUDA_DRIVER",
                           cacheDir + "/no-such-libcuda.so.1");
  Runtime runtime(cacheDir);
  std::shared_ptr<Kernel> kernel = compileGpuKernel(runtime);
  if (!kernel)
    GTEST_SKIP() << "no CUDA toolkit (libdevice): GPU code is not compiled";
  std::vector<float> x(15, 0.5f), w(20, 0.25f), y(12, -1.0f);
  llvm::Error error = kernel->run({{"x", x.data(), ElementType::F32, {3, 5}},
                                   {"w", w.data(), ElementType::F32, {4, 5}},
                                   {"y", y.data(), ElementType::F32, {3, 4}}});
  std::string text = message(std::move(error));
  EXPECT_NE(text.find("kernel 'g': no CUDA driver/GPU: "), std::string::npos)
      << text;
  EXPECT_NE(text.find("no-such-libcuda.so.1"), std::string::npos) << text;
  for (float v : y)
    EXPECT_EQ(v, -1.0f);
  // The argument checks come first, as on the CPU.
  std::string misshapen =
      message(kernel->run({{"x", x.data(), ElementType::F32, {5, 3}},
                           {"w", w.data(), ElementType::F32, {4, 5}},
                           {"y", y.data(), ElementType::F32, {3, 4}}}));
  EXPECT_NE(misshapen.find("'x'"), std::string::npos) << misshapen;
  EXPECT_EQ(misshapen.find("CUDA"), std::string::npos) << misshapen;
}

TEST_F(RuntimeTest, AGpuKernelRunsOnTheFakeDriver) {
  ScopedEnvironment driver("ATTNC_CUDA_DRIVER", ATTNC_FAKE_CUDA_DRIVER);
  Runtime runtime(cacheDir);
  std::shared_ptr<Kernel> kernel = compileGpuKernel(runtime);
  if (!kernel)
    GTEST_SKIP() << "no CUDA toolkit (libdevice): GPU code is not compiled";
  EXPECT_EQ(kernel->signature().packedElements, 0);
  std::vector<float> x(15, 0.5f), w(20, 0.25f), y(12, -1.0f);
  // The fake device's memory starts as 0x7f bytes and its launches run
  // nothing: an output that came back from the device holds that pattern.
  auto copiedBack = [&] {
    for (float v : y) {
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      if (bits != 0x7f7f7f7fu)
        return false;
    }
    return true;
  };
  EXPECT_EQ(message(kernel->run({{"x", x.data(), ElementType::F32, {3, 5}},
                                 {"w", w.data(), ElementType::F32, {4, 5}},
                                 {"y", y.data(), ElementType::F32, {3, 4}}})),
            "");
  EXPECT_TRUE(copiedBack());
  // A bound param is passed on every call (GPU objects prepare nothing).
  ASSERT_EQ(
      message(kernel->bindParam({"w", w.data(), ElementType::F32, {4, 5}})),
      "");
  EXPECT_EQ(message(kernel->prepareParams()), "");
  std::fill(y.begin(), y.end(), -1.0f);
  EXPECT_EQ(message(kernel->run({{"x", x.data(), ElementType::F32, {3, 5}},
                                 {"y", y.data(), ElementType::F32, {3, 4}}})),
            "");
  EXPECT_TRUE(copiedBack());
}

TEST_F(RuntimeTest, AGpuKernelRunsOnDeviceBuffers) {
  std::string log = cacheDir + "/fake_cuda.log";
  ScopedEnvironment driver("ATTNC_CUDA_DRIVER", ATTNC_FAKE_CUDA_DRIVER);
  ScopedEnvironment logged("FAKE_CUDA_LOG", log);
  Runtime runtime(cacheDir);
  std::shared_ptr<Kernel> kernel = compileGpuKernel(runtime);
  if (!kernel)
    GTEST_SKIP() << "no CUDA toolkit (libdevice): GPU code is not compiled";
  // The fake driver's device memory is host memory: host buffers serve.
  std::vector<float> x(15, 0.5f), w(20, 0.25f), y(12, -1.0f);
  void *stream = reinterpret_cast<void *>(0x5eed);
  std::vector<HostBuffer> device = {{"x", x.data(), ElementType::F32, {3, 5}},
                                    {"w", w.data(), ElementType::F32, {4, 5}},
                                    {"y", y.data(), ElementType::F32, {3, 4}}};
  EXPECT_EQ(message(kernel->runOnDevice(device, stream)), "");
  auto text = llvm::MemoryBuffer::getFile(log);
  ASSERT_TRUE(!!text);
  llvm::StringRef calls = (*text)->getBuffer();
  EXPECT_NE(calls.find("launch "), llvm::StringRef::npos) << calls.str();
  EXPECT_NE(calls.find("stream=0x5eed"), llvm::StringRef::npos) << calls.str();
  // Device buffers are not copied: no transfer, no wait.
  EXPECT_EQ(calls.find("cuMemcpyAsync"), llvm::StringRef::npos) << calls.str();
  EXPECT_EQ(calls.find("cuStreamSynchronize"), llvm::StringRef::npos)
      << calls.str();

  // The same checks as a host run; a bound param is not enough.
  std::string misshapen =
      message(kernel->runOnDevice({{"x", x.data(), ElementType::F32, {15}},
                                   {"w", w.data(), ElementType::F32, {4, 5}},
                                   {"y", y.data(), ElementType::F32, {3, 4}}},
                                  stream));
  EXPECT_NE(misshapen.find("input 'x': expected f32[3, 5], got f32[15]"),
            std::string::npos)
      << misshapen;
  ASSERT_EQ(
      message(kernel->bindParam({"w", w.data(), ElementType::F32, {4, 5}})),
      "");
  std::string missing =
      message(kernel->runOnDevice({{"x", x.data(), ElementType::F32, {3, 5}},
                                   {"y", y.data(), ElementType::F32, {3, 4}}},
                                  stream));
  EXPECT_NE(missing.find("is missing param 'w' (f32[4, 5]) (bound params are "
                         "host memory: pass every param)"),
            std::string::npos)
      << missing;
}

TEST_F(RuntimeTest, CpuKernelsTakeNoDeviceBuffers) {
  Runtime runtime(cacheDir);
  auto kernel = runtime.compile(kSpec, "small.attn", "");
  ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
  std::string text = message((*kernel)->runOnDevice(buffers(), nullptr));
  EXPECT_NE(text.find("is CPU code: device buffers need a kernel compiled for "
                      "the GPU (--target=nvptx)"),
            std::string::npos)
      << text;
}

TEST_F(RuntimeTest, CApiCompilesForTheGpuAndRunsOnDeviceBuffers) {
  EXPECT_EQ(attnc_compile_string_for(kGpuSpec, nullptr, "tpu", nullptr, 2),
            nullptr);
  EXPECT_STREQ(attnc_last_error(),
               "attnc: unknown target 'tpu' (cpu or nvptx)");
  if (llvm::Expected<CudaToolkit> toolkit = findCudaToolkit(); !toolkit) {
    llvm::consumeError(toolkit.takeError());
    GTEST_SKIP() << "no CUDA toolkit (libdevice): GPU code is not compiled";
  }
  ScopedEnvironment driver("ATTNC_CUDA_DRIVER", ATTNC_FAKE_CUDA_DRIVER);
  attnc_kernel *kernel =
      attnc_compile_string_for(kGpuSpec, nullptr, "nvptx", "sm_80", 2);
  ASSERT_NE(kernel, nullptr) << attnc_last_error();
  std::vector<float> x(15, 0.5f), w(20, 0.25f), y(12, -1.0f);
  const int64_t xShape[] = {3, 5}, wShape[] = {4, 5}, yShape[] = {3, 4};
  const attnc_buffer buffers[] = {{"x", x.data(), ATTNC_F32, 2, xShape},
                                  {"w", w.data(), ATTNC_F32, 2, wShape},
                                  {"y", y.data(), ATTNC_F32, 2, yShape}};
  // The fake driver's device memory is host memory: host buffers serve.
  EXPECT_EQ(attnc_kernel_run_cuda(kernel, nullptr, buffers, 3), 0)
      << attnc_last_error();
  EXPECT_EQ(attnc_kernel_run_cuda(kernel, nullptr, buffers, 2), 1);
  EXPECT_NE(std::string(attnc_last_error()).find("is missing output 'y'"),
            std::string::npos)
      << attnc_last_error();
  attnc_kernel_free(kernel);
}

// A positional-encoding table past kMaxConstantTableElements is computed by
// the kernel from indices (it was a constant: a [262144, 1024] table made a
// 1 GB object in 36 s; issue 15, item 6). Both backends give the table's
// entries bit for bit, in every batch.
TEST_F(RuntimeTest, LargePositionalEncodingTablesAreComputedByTheKernel) {
  constexpr int64_t kRows = 1100, kWidth = 1024;
  static_assert(kRows * kWidth > mlir::attn::kMaxConstantTableElements);
  std::vector<float> table = mlir::attn::positionalEncodingTable(kRows, kWidth);
  std::vector<Backend> backends = {Backend::Mlir};
  if (haveHalideBackend())
    backends.push_back(Backend::Halide);
  for (Backend backend : backends) {
    Runtime runtime(cacheDir);
    CompileOptions options = Runtime::defaultOptions();
    options.backend = backend;
    auto kernel = runtime.compile("block pe {\n  input x: f32[2, 1100, 1024]\n"
                                  "  y = positional_encoding(x, max_len=2000)\n"
                                  "  output y\n}\n",
                                  "pe.attn", "", options);
    ASSERT_TRUE(!!kernel) << llvm::toString(kernel.takeError());
    std::vector<float> zeros(2 * kRows * kWidth, 0.0f), out(zeros.size(), NAN);
    ASSERT_EQ(message((*kernel)->run(
                  {{"x", zeros.data(), ElementType::F32, {2, kRows, kWidth}},
                   {"y", out.data(), ElementType::F32, {2, kRows, kWidth}}})),
              "");
    int64_t mismatches = 0;
    for (size_t i = 0; i < out.size(); ++i)
      mismatches +=
          std::memcmp(&out[i], &table[i % table.size()], sizeof(float)) != 0;
    EXPECT_EQ(mismatches, 0)
        << (backend == Backend::Halide ? "Halide" : "MLIR");
  }
}
