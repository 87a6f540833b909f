/*
 * A power cut, played back: preloaded (LD_PRELOAD) into a process writing files under the
 * directory HILBENCH_POWER_CUT_DIR, it keeps beside each regular file there a copy of what an
 * fsync or fdatasync of it has made durable (`<file>.durable`). After the process is killed, those
 * copies are the files as a power cut would leave them if the disk kept nothing it was not asked
 * to sync: every write since a file's last sync lost (test/support/power-cut.ts builds that
 * directory; wal-checkpoint-crash.test.ts opens it).
 *
 * What it models, and what not: the copy is taken when the sync is called (what was written before
 * it is what the sync must make durable) and written in place, so a process killed during a sync
 * leaves part of it, as a disk may. A real disk may also keep some unsynced writes, in any order;
 * this plays back one outcome, the one that loses them all. Names are not played back: directory
 * syncs are not tracked, and a file deleted before the cut stays deleted (a rollback journal SQLite
 * unlinked would otherwise come back hot and undo its commit, which no fsync of a file prevents,
 * only of its directory, SQLite's `synchronous = EXTRA`); a file never synced has no copy. A file
 * deleted and made again under the same name keeps the old file's last synced copy until the new
 * one is synced: unlink and rename are not intercepted. The crash test's files (the database and
 * its WAL) are never made again under an old name while it runs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Syncs run one at a time: two threads syncing one file must not interleave their copies. */
static pthread_mutex_t one_sync = PTHREAD_MUTEX_INITIALIZER;
static char now_bytes[1 << 16];
static char kept_bytes[1 << 16];

static void fail(const char *what, const char *path) {
  fprintf(stderr, "power-cut-shim: %s %s\n", what, path);
  abort();
}

/* Copies what `fd` holds now into its `.durable` twin, when it is a regular file under the directory. */
static void keep_durable(int fd) {
  const char *dir = getenv("HILBENCH_POWER_CUT_DIR");
  if (dir == NULL || *dir == 0) return;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
  char link[64];
  char path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t length = readlink(link, path, sizeof path - 1);
  if (length <= 0) return;
  path[length] = 0;
  size_t dir_length = strlen(dir);
  if (strncmp(path, dir, dir_length) != 0 || path[dir_length] != '/') return;
  char twin[PATH_MAX + 16];
  snprintf(twin, sizeof twin, "%s.durable", path);
  int kept = open(twin, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (kept < 0) fail("cannot open", twin);
  off_t offset = 0;
  while (offset < st.st_size) {
    ssize_t got = pread(fd, now_bytes, sizeof now_bytes, offset);
    if (got < 0) fail("cannot read", path);
    if (got == 0) break; /* cut back meanwhile */
    ssize_t had = pread(kept, kept_bytes, (size_t)got, offset);
    if (had != got || memcmp(now_bytes, kept_bytes, (size_t)got) != 0) {
      if (pwrite(kept, now_bytes, (size_t)got, offset) != got) fail("cannot write", twin);
    }
    offset += got;
  }
  if (ftruncate(kept, offset) != 0) fail("cannot cut", twin);
  close(kept);
}

static int synced(int fd, const char *name) {
  int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, name);
  if (real == NULL) fail("no libc symbol", name);
  pthread_mutex_lock(&one_sync);
  keep_durable(fd);
  int result = real(fd);
  pthread_mutex_unlock(&one_sync);
  return result;
}

int fsync(int fd) { return synced(fd, "fsync"); }

int fdatasync(int fd) { return synced(fd, "fdatasync"); }
