// callback.cc — the thread's stop flag that computations without iterations of their own poll.
#include "occam/callback.h"

namespace occam {
namespace {

thread_local const std::atomic<bool>* t_stop_flag = nullptr;

}  // namespace

ScopedStopFlag::ScopedStopFlag(const std::atomic<bool>* flag) : previous_(t_stop_flag) { t_stop_flag = flag; }

ScopedStopFlag::~ScopedStopFlag() { t_stop_flag = previous_; }

bool stop_requested() { return t_stop_flag != nullptr && t_stop_flag->load(std::memory_order_relaxed); }

}  // namespace occam
