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
//
// Fork: a child gets only the thread that called fork(). GNU libgomp keeps its
// parent's idle team and waits forever for it in the child's first parallel
// region, and the pool's threads are gone too. So a forked child (told by a
// pthread_atfork handler) runs every loop on a pool of its own, made on its
// first parallel call: the same items and results, whichever backend.
//
// Failures never leave a thread: a body that throws (std::bad_alloc, a kernel's
// size limit, an interrupt) stops the loop (no thread starts another item) and
// the failure of the lowest-numbered item is rethrown once every thread is
// done, its message prefixed with the item ("segment 12: ..."). The bindings
// declare every kernel `except +`, so Python sees MemoryError / ValueError.
//
// Cancellation: the bindings set `poll_hook` (on Python's main thread: take
// the GIL, run Python's signal handlers; true when one raised, e.g.
// KeyboardInterrupt). The calling thread runs it at most every 50 ms (the
// first time 50 ms into a call) from checkpoint(), between items and wherever
// a long item calls checkpoint(), and while it waits for the other threads;
// then every thread stops at its next checkpoint and the call throws
// Interrupted (the Python exception is already set).
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <condition_variable>
#include <functional>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifndef _WIN32
#include <pthread.h>
#endif

namespace tmthreads {

// A Python exception is set (by a signal handler run from poll_hook); the bindings leave it as it is.
struct Interrupted : std::exception {
  const char* what() const noexcept override { return "interrupted"; }
};

// std::bad_alloc with a message naming the item (Cython maps bad_alloc to MemoryError, keeping what()).
struct OutOfMemory : std::bad_alloc {
  std::string msg;
  explicit OutOfMemory(std::string m) : msg(std::move(m)) {}
  const char* what() const noexcept override { return msg.c_str(); }
};

using PollFn = bool (*)();
inline std::atomic<PollFn> poll_hook{nullptr};  // set once by each extension module at import

// The state of one parallel_for call, shared by its threads.
struct Call {
  std::atomic<bool> stop{false};
  std::mutex mu;
  int64_t item = -1;  // the failing item kept: the lowest-numbered real failure, else the first interrupt
  bool interrupted = false;
  std::exception_ptr error;

  void fail(int64_t i, std::exception_ptr e) {
    bool intr = false;
    try {
      std::rethrow_exception(e);
    } catch (const Interrupted&) { intr = true; } catch (...) {
    }
    std::lock_guard<std::mutex> lock(mu);
    if (!error || (interrupted && !intr) || (!intr && i < item)) {
      error = e;
      item = i;
      interrupted = intr;
    }
    stop.store(true, std::memory_order_relaxed);
  }

  // Rethrow the kept failure, naming the item ("segment 12: ...") where the message can carry it.
  void rethrow(const char* noun) {
    if (!error) return;
    const std::string at = std::string(noun) + " " + std::to_string(item) + ": ";
    try {
      std::rethrow_exception(error);
    } catch (const Interrupted&) { throw; } catch (const std::bad_alloc&) {
      throw OutOfMemory(at + "out of memory");
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(at + e.what());
    } catch (const std::exception& e) { throw std::runtime_error(at + e.what()); }
  }
};

inline thread_local Call* tl_call = nullptr;  // the call this thread works for (nullptr: outside parallel_for)
inline thread_local bool tl_caller = true;    // this thread made the call (the Python thread)
inline thread_local int64_t tl_next_poll = 0;
inline thread_local bool tl_polling = false;  // inside poll_hook (it may run Python code: no second poll)

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr int64_t POLL_NS = 50000000;

// On the calling thread, once 50 ms have passed since the last time: run the poll hook; true when a
// Python signal handler raised.
inline bool poll_due() {
  if (!tl_caller || tl_polling) return false;
  const PollFn f = poll_hook.load(std::memory_order_relaxed);
  if (!f) return false;
  const int64_t t = now_ns();
  if (t < tl_next_poll) return false;
  tl_next_poll = t + POLL_NS;
  tl_polling = true;
  const bool raised = f();
  tl_polling = false;
  return raised;
}

// Throws Interrupted if the call is to stop or a signal handler raised (~20 ns: a clock read).
inline void checkpoint() {
  Call* c = tl_call;
  if (c && c->stop.load(std::memory_order_relaxed)) throw Interrupted();
  if (poll_due()) {
    if (c) c->stop.store(true, std::memory_order_relaxed);
    throw Interrupted();
  }
}

// Long kernels report their work here (DP cells, tokens, bit-vector words): every 2^20 units, about
// a millisecond, it runs checkpoint(), so that frequent calls cost an addition, not a clock read.
inline thread_local int64_t tl_work = 0;
inline void tick(int64_t units) {
  if ((tl_work += units) < ((int64_t)1 << 20)) return;
  tl_work = 0;
  checkpoint();
}

// A thread is done with its items: the caller then waits for the others, polling meanwhile (an
// OpenMP barrier or a condition variable would leave Ctrl-C waiting for the slowest item).
inline void finish(Call& call, std::atomic<int>& finished, int team) {
  finished.fetch_add(1, std::memory_order_acq_rel);
  if (!tl_caller) return;
  const int64_t start = now_ns();
  while (finished.load(std::memory_order_acquire) < team) {
    if (poll_due()) call.fail(INT64_MAX, std::make_exception_ptr(Interrupted()));
    if (now_ns() - start < 1000000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

// A call's first poll comes 50 ms in: short calls never take the GIL.
inline void start_polling() {
  if (tl_caller) tl_next_poll = std::max(tl_next_poll, now_ns() + POLL_NS);
}

// Sets a thread's tl_call / tl_caller for the scope of one call, restoring them after.
struct Enter {
  Call* prev_call;
  bool prev_caller;
  Enter(Call* c, bool caller) : prev_call(tl_call), prev_caller(tl_caller) {
    tl_call = c;
    tl_caller = caller;
  }
  ~Enter() {
    tl_call = prev_call;
    tl_caller = prev_caller;
  }
};

// One thread's share of a call: build its state (a failure there fails the thread's first item),
// then run the items it is handed until the call stops (checked at the start of each chunk: a
// checkpoint per short row cost 5% of a small call).
template <class Init, class Body> struct Worker {
  Call& call;
  Init& init;
  Body& body;
  int64_t chunk;
  std::optional<std::invoke_result_t<Init&>> state;
  void operator()(int64_t i) {
    if (call.stop.load(std::memory_order_relaxed)) return;
    try {
      if (!state) state.emplace(init());
      if (i % chunk == 0) checkpoint();
      body(*state, i);
    } catch (...) { call.fail(i, std::current_exception()); }
  }
};

// ---------------------------------------------------------------- the std::thread pool
// Workers wait on a condition variable between calls; a call wakes as many as
// it needs and works itself. The pool is created on first use and never
// destroyed (no joins at interpreter exit). The build without OpenMP runs every
// loop here; the OpenMP build only in a forked child.
inline thread_local bool tl_in_run = false;  // this thread is in Pool::run (a nested call runs inline)

class Pool;
inline Pool* g_pool = nullptr;             // this process's pool; a forked child drops (leaks) its parent's
inline std::mutex g_pool_mu;               // guards g_pool; held across fork() (the atfork handlers below)
inline std::atomic<bool> g_forked{false};  // this process is a fork of one that loaded the module

class Pool {
 public:
  static Pool& get() {
    std::lock_guard<std::mutex> lock(g_pool_mu);
    if (!g_pool) g_pool = new Pool();
    return *g_pool;
  }

  // Run task() on `helpers` pool threads and on the caller; return when all are done.
  // Concurrent callers take turns (each call already uses the cores it asked for).
  void run(int helpers, const std::function<void()>& task) {
    std::lock_guard<std::mutex> turn(call_);
    struct InRun {
      InRun() { tl_in_run = true; }
      ~InRun() { tl_in_run = false; }
    } in_run;
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

  std::mutex call_, mu_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  const std::function<void()>* task_ = nullptr;
  uint64_t generation_ = 0;
  int wanted_ = 0, pending_ = 0;
};

#ifndef _WIN32
// fork() while another thread is in Pool::get would leave g_pool_mu locked in the child: the forking
// thread holds it across fork() instead, and both sides release it. The child's parent pool (its
// mutexes may be held by threads that no longer exist) is never touched again.
inline void fork_prepare() { g_pool_mu.lock(); }
inline void fork_parent() { g_pool_mu.unlock(); }
inline void fork_child() {
  g_pool_mu.unlock();
  g_pool = nullptr;
  tl_in_run = false;
  g_forked.store(true);
}
// Registered when an extension module is loaded (GCC makes these inline variables one per process,
// shared by _dense and _text; where a linker keeps one per module, each copy has its own handlers).
inline const bool g_atfork = pthread_atfork(fork_prepare, fork_parent, fork_child) == 0;
#endif

template <class Init, class Body>
static inline void pool_for(int64_t n, int64_t chunk, int t, Init& init, Body& body, const char* noun) {
  // a call made while the pool runs one of this thread's (from Python code a poll ran) runs inline
  const int team = tl_in_run ? 1 : t;
  std::atomic<int64_t> next{0};
  std::atomic<int> finished{0};
  Call call;
  const std::thread::id me = std::this_thread::get_id();
  const bool caller = tl_caller;
  start_polling();
  std::function<void()> task = [&] {
    Enter enter(&call, caller && std::this_thread::get_id() == me);
    Worker<Init, Body> w{call, init, body, chunk};
    for (int64_t lo; (lo = next.fetch_add(chunk, std::memory_order_relaxed)) < n && !call.stop.load();)
      for (int64_t i = lo, hi = std::min(n, lo + chunk); i < hi; ++i) w(i);
    finish(call, finished, team);
  };
  if (team == 1)
    task();
  else
    Pool::get().run(team - 1, task);
  call.rethrow(noun);
}

#ifdef _OPENMP
constexpr const char* BACKEND = "OpenMP";

// The loop as one OpenMP team of t threads (this process has not forked: its team is alive).
template <class Init, class Body>
static inline void omp_for(int64_t n, int64_t chunk, int t, Init& init, Body& body, const char* noun) {
  Call call;
  std::atomic<int> finished{0};
  const bool caller = tl_caller;
  start_polling();
#pragma omp parallel num_threads(t)
  {
    Enter enter(&call, caller && omp_get_thread_num() == 0);  // the master thread is the caller
    Worker<Init, Body> w{call, init, body, chunk};
#pragma omp for schedule(dynamic, chunk) nowait
    for (int64_t i = 0; i < n; ++i) w(i);
    finish(call, finished, omp_get_num_threads());  // the team may be smaller than t (nested, limits)
  }
  call.rethrow(noun);
}

static inline int max_threads() { return omp_get_max_threads(); }
#else
constexpr const char* BACKEND = "std::thread pool";

static inline int max_threads() { return (int)std::max(1u, std::thread::hardware_concurrency()); }
#endif

template <class Init, class Body> static inline void parallel_for(int64_t n, int64_t chunk, int nthreads, Init init,
                                                                  Body body, const char* noun = "item") {
  if (n <= 0) return;
  const int t = (int)std::max<int64_t>(1, std::min<int64_t>(nthreads, (n + chunk - 1) / chunk));
#ifdef _OPENMP
  if (!g_forked.load(std::memory_order_relaxed)) return omp_for(n, chunk, t, init, body, noun);
#endif
  pool_for(n, chunk, t, init, body, noun);
}

}  // namespace tmthreads
