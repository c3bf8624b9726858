#include "tally/common/interrupt.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstring>

namespace tally::interrupt {
namespace {

// Slots of temporary paths: the handler may only read what is fully written (state ready).
constexpr std::size_t path_max = 4096;
enum : int { slot_free = 0, slot_busy = 1, slot_ready = 2 };
struct Slot {
  std::atomic<int> state{slot_free};
  char path[path_max];
};
std::array<Slot, 16> slots;

volatile std::sig_atomic_t pending = 0;
std::atomic<bool> immediate{false};
std::atomic<bool> installed{false};

void remove_temps() {
  for (auto& s : slots)
    if (s.state.load(std::memory_order_acquire) == slot_ready) unlink(s.path);
}

void say(const char* msg) {
  const ssize_t r = write(STDERR_FILENO, msg, std::strlen(msg));
  (void)r;
}

extern "C" void on_signal(int sig) {
  if (pending != 0 || immediate.load(std::memory_order_relaxed)) {
    remove_temps();
    say(sig == SIGINT ? "interrupted (SIGINT): stopping now\n" : "terminated (SIGTERM): stopping now\n");
    _exit(128 + sig);
  }
  pending = sig;
  say(sig == SIGINT ? "interrupted (SIGINT): stopping at the next safe point (again to stop at once)\n"
                    : "terminated (SIGTERM): stopping at the next safe point (again to stop at once)\n");
}

}  // namespace

void install() {
  if (installed.exchange(true)) return;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking wait returns, so the app reaches its safe point
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int requested() { return pending; }

void set_immediate(bool on) { immediate.store(on, std::memory_order_relaxed); }

std::string signal_name(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "signal " + std::to_string(signal);
  }
}

void check(const std::string& where) {
  if (const int sig = pending; sig != 0)
    throw Interrupted(sig, "interrupted by " + signal_name(sig) + (where.empty() ? "" : " " + where));
}

int register_temp(const std::string& path) {
  if (path.size() + 1 > path_max) return -1;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    int expected = slot_free;
    if (slots[i].state.compare_exchange_strong(expected, slot_busy, std::memory_order_acq_rel)) {
      std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
      slots[i].state.store(slot_ready, std::memory_order_release);
      return static_cast<int>(i);
    }
  }
  return -1;
}

void release_temp(int slot) {
  if (slot >= 0 && static_cast<std::size_t>(slot) < slots.size())
    slots[static_cast<std::size_t>(slot)].state.store(slot_free, std::memory_order_release);
}

}  // namespace tally::interrupt
