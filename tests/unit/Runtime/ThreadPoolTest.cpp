//===- ThreadPoolTest.cpp - attnc_rt: the OpenMP entry points -------------===//

#include "attnc_rt.h"

#include "gtest/gtest.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

extern "C" {
typedef void (*Microtask)(int32_t *, int32_t *, ...);
void __kmpc_fork_call(void *, int32_t, Microtask, ...);
int32_t __kmpc_global_thread_num(void *);
void __kmpc_barrier(void *, int32_t);
void __kmpc_for_static_init_8u(void *, int32_t, int32_t, int32_t *, uint64_t *,
                               uint64_t *, int64_t *, int64_t, int64_t);
void __kmpc_for_static_fini(void *, int32_t);
}

namespace {

struct Region {
  std::mutex mutex;
  std::set<std::thread::id> threads;
  std::vector<int> hits = std::vector<int>(1000, 0);
  std::atomic<int> beforeBarrier{0};
  std::atomic<bool> barrierHeld{true};
};

/// What MLIR's omp.wsloop lowering does in an outlined body: ask for this
/// thread's iterations of [0, 999] and run them. The runtime calls it as
/// `void (int32_t *, int32_t *, void *)`, so that is its type (another one
/// is undefined behaviour: UBSan's -fsanitize=function).
void loopBody(int32_t *gtid, int32_t *, void *argument) {
  auto *region = static_cast<Region *>(argument);
  {
    std::lock_guard<std::mutex> lock(region->mutex);
    region->threads.insert(std::this_thread::get_id());
  }
  int32_t id = __kmpc_global_thread_num(nullptr);
  EXPECT_EQ(id, *gtid);
  int32_t last = 0;
  uint64_t lower = 0, upper = 999;
  int64_t stride = 1;
  __kmpc_for_static_init_8u(nullptr, id, 34, &last, &lower, &upper, &stride, 1,
                            0);
  for (uint64_t i = lower; i <= upper && i < 1000; ++i)
    region->hits[i] += 1;
  __kmpc_for_static_fini(nullptr, id);
  // Everyone reaches the barrier before anyone leaves it.
  region->beforeBarrier.fetch_add(1);
  __kmpc_barrier(nullptr, id);
  if (region->beforeBarrier.load() != static_cast<int>(region->threads.size()))
    region->barrierHeld = false;
}

void runRegion(Region &region) {
  __kmpc_fork_call(nullptr, 1, reinterpret_cast<Microtask>(&loopBody), &region);
}

class ThreadPoolTest : public ::testing::Test {
protected:
  void TearDown() override { attnc_rt_set_num_threads(saved); }
  int saved = attnc_rt_get_num_threads();
};

TEST_F(ThreadPoolTest, TwoThreadsShareTheIterationsExactlyOnce) {
  attnc_rt_set_num_threads(2);
  for (int repeat = 0; repeat < 20; ++repeat) {
    Region region;
    runRegion(region);
    EXPECT_EQ(region.threads.size(), 2u);
    for (int i = 0; i < 1000; ++i)
      ASSERT_EQ(region.hits[i], 1) << "iteration " << i;
    EXPECT_TRUE(region.barrierHeld.load());
  }
}

/// Regions back to back, as a kernel runs them: workers still spinning
/// from one region must join the next, and one that slept must wake.
TEST_F(ThreadPoolTest, ManyRegionsInARowWithSpinsAndSleeps) {
  attnc_rt_set_num_threads(2);
  for (int repeat = 0; repeat < 2000; ++repeat) {
    Region region;
    runRegion(region);
    for (int i = 0; i < 1000; ++i)
      ASSERT_EQ(region.hits[i], 1)
          << "region " << repeat << ", iteration " << i;
    ASSERT_TRUE(region.barrierHeld.load()) << "region " << repeat;
    // Now and then long enough for the workers to fall asleep.
    if (repeat % 500 == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

/// A smaller team after a larger one: the extra worker sits the region out.
TEST_F(ThreadPoolTest, TheTeamCanShrink) {
  for (int threads : {3, 2, 3, 1, 2}) {
    attnc_rt_set_num_threads(threads);
    Region region;
    runRegion(region);
    EXPECT_EQ(region.threads.size(), static_cast<size_t>(threads));
    for (int i = 0; i < 1000; ++i)
      ASSERT_EQ(region.hits[i], 1) << threads << " threads, iteration " << i;
    EXPECT_TRUE(region.barrierHeld.load());
  }
}

TEST_F(ThreadPoolTest, OneThreadRunsOnTheCaller) {
  attnc_rt_set_num_threads(1);
  Region region;
  runRegion(region);
  ASSERT_EQ(region.threads.size(), 1u);
  EXPECT_EQ(*region.threads.begin(), std::this_thread::get_id());
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(region.hits[i], 1);
}

TEST_F(ThreadPoolTest, ConcurrentRegionsFromHostThreadsAllComplete) {
  attnc_rt_set_num_threads(2);
  std::vector<Region> regions(6);
  std::vector<std::thread> hosts;
  for (Region &region : regions)
    hosts.emplace_back([&region] { runRegion(region); });
  for (std::thread &host : hosts)
    host.join();
  for (Region &region : regions)
    for (int i = 0; i < 1000; ++i)
      ASSERT_EQ(region.hits[i], 1);
}

TEST_F(ThreadPoolTest, EveryEntryPointIsInTheSymbolTable) {
  std::set<std::string> names;
  for (const attnc_rt_symbol *s = attnc_rt_symbols(); s->name; ++s) {
    EXPECT_NE(s->address, nullptr) << s->name;
    names.insert(s->name);
  }
  for (const char *name :
       {"__kmpc_fork_call", "__kmpc_global_thread_num", "__kmpc_barrier",
        "__kmpc_for_static_init_4", "__kmpc_for_static_init_4u",
        "__kmpc_for_static_init_8", "__kmpc_for_static_init_8u",
        "__kmpc_for_static_fini"})
    EXPECT_TRUE(names.count(name)) << name;
}

} // namespace

namespace {

TEST(BlockCacheTest, LargeBlocksAreReusedAndSmallOnesAreNot) {
  // A large block comes back for the same size.
  void *large = attnc_rt_malloc(4 << 20);
  ASSERT_NE(large, nullptr);
  static_cast<char *>(large)[(4 << 20) - 1] = 1;
  attnc_rt_free(large);
  void *again = attnc_rt_malloc(4 << 20);
  EXPECT_EQ(again, large);
  // A different size is a different block.
  void *other = attnc_rt_malloc(3 << 20);
  EXPECT_NE(other, again);
  attnc_rt_free(other);
  attnc_rt_free(again);
  // Payloads are 16-byte aligned, small blocks (under 64 KB) are plain
  // malloc.
  void *small = attnc_rt_malloc(100);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small) % 16, 0u);
  attnc_rt_free(small);
  attnc_rt_free(nullptr);
}

} // namespace

/// A child forked after the parent used a 2-thread pool starts a pool of its
/// own: its first parallel region completes (it used to wait forever for
/// the parent's workers, which a child does not have).
TEST_F(ThreadPoolTest, AForkedChildRunsParallelRegions) {
  attnc_rt_set_num_threads(2);
  Region parent;
  runRegion(parent);
  ASSERT_EQ(parent.threads.size(), 2u);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20); // a hang ends the child with SIGALRM, not the test run
    Region region;
    runRegion(region);
    bool ok = region.threads.size() == 2 && region.barrierHeld.load();
    for (int i = 0; i < 1000; ++i)
      ok = ok && region.hits[i] == 1;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status))
      << "the child died of signal "
      << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // The parent's pool still works.
  Region after;
  runRegion(after);
  EXPECT_EQ(after.threads.size(), 2u);
}

TEST(ThreadDefault, ACgroupQuotaIsReadAsCpusRoundedUp) {
  EXPECT_EQ(attnc_rt_cpu_quota("max 100000\n"), 0);
  EXPECT_EQ(attnc_rt_cpu_quota("200000 100000\n"), 2);
  EXPECT_EQ(attnc_rt_cpu_quota("150000 100000"), 2);
  EXPECT_EQ(attnc_rt_cpu_quota("50000 100000"), 1);
  EXPECT_EQ(attnc_rt_cpu_quota("-1 100000"), 0); // cgroup v1: no quota
  EXPECT_EQ(attnc_rt_cpu_quota("100000 0"), 0);
  EXPECT_EQ(attnc_rt_cpu_quota(""), 0);
  EXPECT_EQ(attnc_rt_cpu_quota("lots 100000"), 0);
  EXPECT_EQ(attnc_rt_cpu_quota("100000000000 1"), 256); // the pool's cap
}

TEST(ThreadDefault, IsTheCpusThisThreadMayRunOn) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  int threads = attnc_rt_default_threads();
  EXPECT_GE(threads, 1);
  EXPECT_LE(threads, CPU_COUNT(&all)); // a cgroup quota may cap it
  // As `taskset -c FIRST`: one CPU.
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &all)) {
      CPU_SET(cpu, &one);
      break;
    }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  EXPECT_EQ(attnc_rt_default_threads(), 1);
  ASSERT_EQ(sched_setaffinity(0, sizeof all, &all), 0);
  EXPECT_EQ(attnc_rt_default_threads(), threads);
}
