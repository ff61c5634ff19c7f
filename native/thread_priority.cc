#include "thread_priority.h"

#include <algorithm>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#endif

namespace decide {

#if defined(__linux__)
namespace {
id_t ThisThreadId() { return static_cast<id_t>(syscall(SYS_gettid)); }
thread_local bool lowered = false;
}  // namespace

void LowerThisThreadPriority(int increment) {
  if (increment <= 0 || lowered) return;
  lowered = true;
  errno = 0;
  const int current = getpriority(PRIO_PROCESS, ThisThreadId());
  if (current == -1 && errno != 0) return;
  // Best effort: a refusal (a sandbox that forbids setpriority) leaves the thread as it was.
  setpriority(PRIO_PROCESS, ThisThreadId(), std::min(19, current + increment));
}

#else
void LowerThisThreadPriority(int) {}
#endif

}  // namespace decide
