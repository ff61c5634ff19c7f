// The scheduling priority of the threads that compute: lower than the JavaScript thread's, so
// that the event loop (request handling, the health probes) gets a core first when the engine's
// threads keep every core busy. On a 2-core host under 50 concurrent requests, /healthz answered
// in ~350 ms (median) with the engine's threads at the process's priority and ~30 ms with them at
// nice +10, and more requests were answered (the event loop feeds the engine sooner).
// Linux only (a nice value per thread); elsewhere a no-op: setpriority there would lower the
// whole process.
#pragma once

namespace decide {

// Raises the calling thread's nice value by `increment` (at most to 19), once per thread: a
// thread of the libuv pool runs many calls, and an unprivileged process cannot lower it back.
// Threads the calling thread creates afterwards (ONNX Runtime's intra-op pool, made when a
// session is created; the CPU device's copy helpers) inherit it. 0 leaves the thread alone.
void LowerThisThreadPriority(int increment);

}  // namespace decide
