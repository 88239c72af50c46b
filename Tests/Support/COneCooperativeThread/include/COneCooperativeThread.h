#ifndef C_ONE_COOPERATIVE_THREAD_H
#define C_ONE_COOPERATIVE_THREAD_H

/// Whether the test bundle runs Swift concurrency's global executor on one thread
/// (`FLAGSHIP_ONE_COOPERATIVE_THREAD=1`): set once the hooks are installed, at load time.
int flagship_one_cooperative_thread_installed(void);

#endif
