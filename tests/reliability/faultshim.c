/* A fault injector for the reliability suite, loaded with LD_PRELOAD into a
 * child process. It fails (or kills the process at) the Nth call of one
 * system call whose file ends with a given suffix, for real: the library sees
 * exactly the errno a full disk, a dying disk or a crash would give it.
 *
 *   AT_FAULT_OP      write | pwrite | fsync | fdatasync | ftruncate | open |
 *                    rename | copy_file_range | symlink-on-open | statx (the
 *                    call Rust's File::metadata makes, an fstat of a descriptor)
 *   AT_FAULT_MATCH   suffix the file's path must end with (fd calls look the
 *                    path up in /proc/self/fd); empty matches everything
 *   AT_FAULT_NTH     the first matching call to hit (1-based, default 1)
 *   AT_FAULT_COUNT   how many matching calls to hit from there (default 1, 0 = all)
 *   AT_FAULT_ERRNO   errno to fail with (default EIO)
 *   AT_FAULT_PARTIAL write only: the first hit writes this many bytes for real
 *                    and returns a short count; the hits after it fail
 *   AT_FAULT_ACTION  fail (default) | kill (SIGKILL instead of the call) |
 *                    kill-after (do the call, then SIGKILL) | kill-partial
 *                    (write only: write AT_FAULT_PARTIAL bytes of the call for
 *                    real, then SIGKILL: a crash in the middle of a line)
 *   AT_FAULT_TARGET  symlink-on-open: the target of the symlink planted at the
 *                    matching path just before it is opened
 *   AT_FAULT_LOG     file to which one line per hit is appended
 *   AT_FAULT_ALSO    a second call (same names as AT_FAULT_OP) that fails on
 *                    every matching file from the first hit of AT_FAULT_OP on,
 *                    e.g. ftruncate, so a partial line cannot be cut back
 *   AT_FAULT_ALSO_ERRNO  errno for AT_FAULT_ALSO (default: AT_FAULT_ERRNO)
 *
 * Build: gcc -shared -fPIC -O2 -o faultshim.so faultshim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static const char *op = "";
static const char *match = "";
static long nth = 1, count = 1, partial = 0;
static int fault_errno = EIO;
static const char *action = "fail";
static const char *target = "";
static const char *logpath = NULL;
static const char *also = "";
static int also_errno = 0;
static long seen = 0;
static int armed = 0; /* AT_FAULT_OP has hit: AT_FAULT_ALSO fails from now on */
static int ready = 0;

static void init(void) {
    const char *v;
    if (ready) return;
    if ((v = getenv("AT_FAULT_OP"))) op = v;
    if ((v = getenv("AT_FAULT_MATCH"))) match = v;
    if ((v = getenv("AT_FAULT_NTH"))) nth = atol(v);
    if ((v = getenv("AT_FAULT_COUNT"))) count = atol(v);
    if ((v = getenv("AT_FAULT_ERRNO"))) fault_errno = atoi(v);
    if ((v = getenv("AT_FAULT_PARTIAL"))) partial = atol(v);
    if ((v = getenv("AT_FAULT_ACTION"))) action = v;
    if ((v = getenv("AT_FAULT_TARGET"))) target = v;
    logpath = getenv("AT_FAULT_LOG");
    if ((v = getenv("AT_FAULT_ALSO"))) also = v;
    also_errno = fault_errno;
    if ((v = getenv("AT_FAULT_ALSO_ERRNO")) && atoi(v)) also_errno = atoi(v);
    ready = 1;
}

__attribute__((constructor)) static void shim_init(void) { init(); }

static void *next(const char *name) { return dlsym(RTLD_NEXT, name); }

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int path_matches(const char *path) {
    if (!path) return 0;
    return ends_with(path, match);
}

static int fd_matches(int fd) {
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 0) return 0;
    path[n] = 0;
    if (ends_with(path, " (deleted)")) path[n - 10] = 0;
    return path_matches(path);
}

static void log_hit(const char *name, const char *what) {
    if (!logpath) return;
    int (*real_open)(const char *, int, ...) = next("open");
    ssize_t (*real_write)(int, const void *, size_t) = next("write");
    int fd = real_open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) return;
    char line[512];
    int n = snprintf(line, sizeof line, "%s %s %s\n", name, what, action);
    real_write(fd, line, (size_t)n);
    close(fd);
}

/* 0: not hit; 1: hit (fail or kill handled by the caller); 2: first hit of a partial
 * write; 3: AT_FAULT_ALSO hit */
static int hit(const char *name, int matches) {
    init();
    if (armed && also[0] && strcmp(also, name) == 0 && matches) {
        log_hit(name, "also");
        return 3;
    }
    if (strcmp(op, name) != 0 || !matches) return 0;
    armed = 1;
    long k = __sync_add_and_fetch(&seen, 1);
    if (k < nth || (count > 0 && k >= nth + count + (partial > 0 ? 1 : 0))) return 0;
    log_hit(name, match);
    if (strcmp(action, "kill") == 0) raise(SIGKILL);
    if (partial > 0 && k == nth) return 2;
    return 1;
}

/* Whether calls named `name` are watched at all (cheap test before any lookup). */
static int wants(const char *name) {
    init();
    return (op[0] && strcmp(op, name) == 0) || (also[0] && strcmp(also, name) == 0);
}

static void after(int h) {
    if ((h == 1 || h == 2) && strcmp(action, "kill-after") == 0) raise(SIGKILL);
}

#define FAIL_IF(h) do {                                                     \
        if ((h) == 3) { errno = also_errno; return -1; }                        \
        if ((h) == 1 && strcmp(action, "fail") == 0) { errno = fault_errno; return -1; } \
    } while (0)

ssize_t write(int fd, const void *buf, size_t n) {
    static ssize_t (*real)(int, const void *, size_t);
    if (!real) real = next("write");
    int h = wants("write") ? hit("write", fd_matches(fd)) : 0;
    if (h == 2) {
        ssize_t r = real(fd, buf, n < (size_t)partial ? n : (size_t)partial);
        if (strcmp(action, "kill-partial") == 0) raise(SIGKILL);
        return r;
    }
    FAIL_IF(h);
    ssize_t r = real(fd, buf, n);
    after(h);
    return r;
}

static ssize_t do_pwrite(const char *sym, int fd, const void *buf, size_t n, off_t off) {
    ssize_t (*real)(int, const void *, size_t, off_t) = next(sym);
    int h = wants("pwrite") ? hit("pwrite", fd_matches(fd)) : 0;
    if (h == 2) {
        ssize_t r = real(fd, buf, n < (size_t)partial ? n : (size_t)partial, off);
        if (strcmp(action, "kill-partial") == 0) raise(SIGKILL);
        return r;
    }
    FAIL_IF(h);
    ssize_t r = real(fd, buf, n, off);
    after(h);
    return r;
}
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) { return do_pwrite("pwrite", fd, buf, n, off); }
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) { return do_pwrite("pwrite64", fd, buf, n, off); }

#define FD_CALL(NAME, OPNAME, PROTO, ARGS, RET)                                  \
    RET NAME PROTO {                                                             \
        static RET (*real) PROTO;                                                \
        if (!real) real = next(#NAME);                                           \
        int h = wants(OPNAME) ? hit(OPNAME, fd_matches(fd)) : 0; \
        FAIL_IF(h);                                                              \
        RET r = real ARGS;                                                       \
        after(h);                                                                \
        return r;                                                                \
    }

FD_CALL(fsync, "fsync", (int fd), (fd), int)
FD_CALL(fdatasync, "fdatasync", (int fd), (fd), int)
FD_CALL(ftruncate, "ftruncate", (int fd, off_t len), (fd, len), int)
FD_CALL(ftruncate64, "ftruncate", (int fd, off_t len), (fd, len), int)

ssize_t copy_file_range(int fd, off_t *off_in, int fd_out, off_t *off_out, size_t len, unsigned flags) {
    static ssize_t (*real)(int, off_t *, int, off_t *, size_t, unsigned);
    if (!real) real = next("copy_file_range");
    int h = wants("copy_file_range") ? hit("copy_file_range", fd_matches(fd_out)) : 0;
    FAIL_IF(h);
    ssize_t r = real(fd, off_in, fd_out, off_out, len, flags);
    after(h);
    return r;
}

static int open_hit(const char *path) {
    if (!op[0]) return 0;
    if (strcmp(op, "symlink-on-open") == 0) {
        int h = hit("symlink-on-open", path_matches(path));
        if (h) {
            int (*real_symlink)(const char *, const char *) = next("symlink");
            real_symlink(target, path);
        }
        return 0;
    }
    if (strcmp(op, "open") != 0) return 0;
    return hit("open", path_matches(path));
}

#define OPEN_CALL(NAME, PRE, PREARGS)                                            \
    int NAME(PRE const char *path, int flags, ...) {                             \
        static int (*real)(PRE const char *, int, ...);                          \
        if (!real) real = next(#NAME);                                           \
        mode_t mode = 0;                                                         \
        if (flags & (O_CREAT | __O_TMPFILE)) {                                   \
            va_list ap;                                                          \
            va_start(ap, flags);                                                 \
            mode = (mode_t)va_arg(ap, int);                                      \
            va_end(ap);                                                          \
        }                                                                        \
        int h = open_hit(path);                                                  \
        FAIL_IF(h);                                                              \
        int r = real(PREARGS path, flags, mode);                                 \
        after(h);                                                                \
        return r;                                                                \
    }

#define NOTHING
#define COMMA ,
OPEN_CALL(open, NOTHING, NOTHING)
OPEN_CALL(open64, NOTHING, NOTHING)
OPEN_CALL(openat, int dirfd COMMA, dirfd COMMA)
OPEN_CALL(openat64, int dirfd COMMA, dirfd COMMA)

int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *buf) {
    static int (*real)(int, const char *, int, unsigned, struct statx *);
    if (!real) real = next("statx");
    int on_fd = (flags & AT_EMPTY_PATH) && path && !path[0];
    int h = wants("statx") ? hit("statx", on_fd ? fd_matches(dirfd) : path_matches(path)) : 0;
    FAIL_IF(h);
    int r = real(dirfd, path, flags, mask, buf);
    after(h);
    return r;
}

int rename(const char *from, const char *to) {
    static int (*real)(const char *, const char *);
    if (!real) real = next("rename");
    int h = wants("rename") ? hit("rename", path_matches(from)) : 0;
    FAIL_IF(h);
    int r = real(from, to);
    after(h);
    return r;
}

int renameat(int fd1, const char *from, int fd2, const char *to) {
    static int (*real)(int, const char *, int, const char *);
    if (!real) real = next("renameat");
    int h = wants("rename") ? hit("rename", path_matches(from)) : 0;
    FAIL_IF(h);
    int r = real(fd1, from, fd2, to);
    after(h);
    return r;
}
