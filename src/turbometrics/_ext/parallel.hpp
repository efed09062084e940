// parallel_for: the one parallel loop of the C++ kernels.
//
// Items [0, n) are handed out in fixed chunks of `chunk` to up to `nthreads`
// threads; each thread builds its own scratch state with init() and calls
// body(state, i). Every kernel writes item i's result to its own slot, so the
// result never depends on which thread ran which chunk.
//
// With OpenMP this is `omp for schedule(dynamic, chunk)`. Without it (Apple's
// clang ships none) a small persistent std::thread pool runs the same loop, so
// a Mac build still uses every core.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#ifdef _OPENMP
#include <omp.h>
#else
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>
#ifdef _WIN32
#include <process.h>
#define getpid _getpid
#else
#include <unistd.h>
#endif
#endif

namespace tmp {

#ifdef _OPENMP
constexpr const char* BACKEND = "OpenMP";

template <class Init, class Body>
static inline void parallel_for(int64_t n, int64_t chunk, int nthreads, Init init, Body body) {
  if (n <= 0) return;
  const int t = (int)std::max<int64_t>(1, std::min<int64_t>(nthreads, (n + chunk - 1) / chunk));
#pragma omp parallel num_threads(t)
  {
    auto state = init();
#pragma omp for schedule(dynamic, chunk)
    for (int64_t i = 0; i < n; ++i) body(state, i);
  }
}

static inline int max_threads() { return omp_get_max_threads(); }

#else
constexpr const char* BACKEND = "std::thread pool";

// Workers wait on a condition variable between calls; a call wakes as many as
// it needs and works itself. The pool is created on first use and never
// destroyed (no joins at interpreter exit); a forked child, which inherits the
// pool's memory but not its threads, starts a new one.
class Pool {
 public:
  static Pool& get() {
    static std::mutex guard;
    static Pool* pool = nullptr;
    std::lock_guard<std::mutex> lock(guard);
    if (!pool || pool->pid_ != getpid()) pool = new Pool();  // the old one is deliberately leaked
    return *pool;
  }

  // Run task() on `helpers` pool threads and on the caller; return when all are done.
  // Concurrent callers take turns (each call already uses the cores it asked for).
  void run(int helpers, const std::function<void()>& task) {
    std::lock_guard<std::mutex> turn(call_);
    {
      std::unique_lock<std::mutex> lock(mu_);
      while ((int)threads_.size() < helpers) {
        threads_.emplace_back([this, id = (int)threads_.size()] { work(id); });
        threads_.back().detach();
      }
      task_ = &task;
      wanted_ = helpers;
      pending_ = helpers;
      ++generation_;
    }
    wake_.notify_all();
    task();
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return pending_ == 0; });
    task_ = nullptr;
  }

 private:
  Pool() : pid_(getpid()) {}

  void work(int id) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void()>* task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return generation_ != seen && id < wanted_; });
        seen = generation_;
        task = task_;
      }
      (*task)();
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_.notify_all();
    }
  }

  decltype(getpid()) pid_;
  std::mutex call_, mu_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  const std::function<void()>* task_ = nullptr;
  uint64_t generation_ = 0;
  int wanted_ = 0, pending_ = 0;
};

template <class Init, class Body>
static inline void parallel_for(int64_t n, int64_t chunk, int nthreads, Init init, Body body) {
  if (n <= 0) return;
  const int t = (int)std::max<int64_t>(1, std::min<int64_t>(nthreads, (n + chunk - 1) / chunk));
  std::atomic<int64_t> next{0};
  std::function<void()> task = [&] {
    auto state = init();
    for (int64_t lo; (lo = next.fetch_add(chunk, std::memory_order_relaxed)) < n;)
      for (int64_t i = lo, hi = std::min(n, lo + chunk); i < hi; ++i) body(state, i);
  };
  if (t == 1) task();
  else Pool::get().run(t - 1, task);
}

static inline int max_threads() { return (int)std::max(1u, std::thread::hardware_concurrency()); }
#endif

}  // namespace tmp
