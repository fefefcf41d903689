// LD_PRELOAD library for scripts/suite_programs.sh: logs, per process, every compute program a run
// compiles from source or loads as a program binary (accepted or rejected by the driver), and the CPU
// of each program's first dispatch (on llvmpipe its LLVM compile, unless Mesa's shader cache holds
// it, plus that one dispatch's run). No change to gltensor: the GL entry points it calls are
// interposed (dlsym RTLD_NEXT).
//
//   cc -O2 -shared -fPIC -o program_log.so scripts/program_log.c -ldl
//   PROGRAM_LOG=DIR LD_PRELOAD=$PWD/program_log.so COMMAND...
//
// DIR/log.tsv, a line per event (appended by every process): pid, wall s, event, key, CPU s of the
// call, process CPU s at its end, tag (argv[0]'s name and 3 arguments | GALLIVM_PERF | GLTENSOR_CHECK_LOOPS).
// Events: `compile` (glCompileShader + glLinkProgram of a source; key: FNV-1a of the source),
// `binary_ok` / `binary_rejected` (glProgramBinary; key: FNV-1a of the blob), `binmap` (a blob read
// back by glGetProgramBinary: key = blob hash, the tag column holds the source key), `dispatch` (a
// program's first dispatch in its context; key: its source key, or b:<blob hash>), `exit`.
// DIR/src/<key>.glsl: each source, written once (scripts/suite_programs.py names its kernel file).
#define _GNU_SOURCE
#include <EGL/egl.h>
#include <GLES3/gl32.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char tag[600];

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t fnv1a(const void* p, size_t n, uint64_t h) {
  const unsigned char* s = p;
  for (size_t i = 0; i < n; ++i) {
    h ^= s[i];
    h *= 1099511628211ull;
  }
  return h;
}

static void make_tag(void) {
  if (tag[0]) return;
  // argv[0]'s name and the next three arguments, joined by spaces
  char args[4][200] = {"", "", "", ""};
  FILE* f = fopen("/proc/self/cmdline", "r");
  if (f) {
    for (int i = 0; i < 4; ++i) {
      size_t n = 0;
      int c;
      while ((c = fgetc(f)) != EOF && c != 0)
        if (n + 1 < sizeof args[i]) args[i][n++] = (c == '\t' || c == '\n' || c == '|') ? ' ' : (char)c;
      args[i][n] = 0;
      if (c == EOF) break;
    }
    fclose(f);
  }
  const char* base = strrchr(args[0], '/');
  const char* perf = getenv("GALLIVM_PERF");
  const char* loops = getenv("GLTENSOR_CHECK_LOOPS");
  snprintf(tag, sizeof tag, "%.100s %.120s %.120s %.120s|%s|%s", base ? base + 1 : args[0], args[1], args[2], args[3],
           perf ? perf : "-", loops ? loops : "-");
}

static void log_event(const char* event, const char* key, double cpu, const char* extra) {
  const char* dir = getenv("PROGRAM_LOG");
  if (!dir) return;
  make_tag();
  char path[4096];
  snprintf(path, sizeof path, "%s/log.tsv", dir);
  FILE* f = fopen(path, "a");
  if (!f) return;
  fprintf(f, "%d\t%.3f\t%s\t%s\t%.4f\t%.4f\t%s\n", (int)getpid(), wall_now(), event, key, cpu, cpu_now(),
          extra ? extra : tag);
  fclose(f);
}

// (context, GL name) -> key and state; GL names repeat across contexts.
struct Entry {
  void* ctx;
  GLuint id;
  int used;
  int dispatched;
  double compile_cpu;  // a shader's glCompileShader CPU
  char key[24];
};
#define SLOTS 65536
static struct Entry shaders[SLOTS], programs[SLOTS];

static struct Entry* find(struct Entry* t, GLuint id, int create) {
  void* ctx = eglGetCurrentContext();
  size_t h = (size_t)(fnv1a(&ctx, sizeof ctx, fnv1a(&id, sizeof id, 14695981039346656037ull)) % SLOTS);
  for (size_t i = 0; i < SLOTS; ++i, h = (h + 1) % SLOTS) {
    struct Entry* e = &t[h];
    if (e->used && e->ctx == ctx && e->id == id) return e;
    if (!e->used) {
      if (!create) return NULL;
      memset(e, 0, sizeof *e);
      e->used = 1;
      e->ctx = ctx;
      e->id = id;
      return e;
    }
  }
  return NULL;
}

// The driver's entry point of that name (GLES3/gl32.h's prototype).
#define REAL(name)                      \
  static __typeof__(name)* real_##name; \
  if (!real_##name) real_##name = (__typeof__(name)*)dlsym(RTLD_NEXT, #name)

static GLuint current_program(void) {
  GLint p = 0;
  REAL(glGetIntegerv);
  real_glGetIntegerv(GL_CURRENT_PROGRAM, &p);
  return (GLuint)p;
}

static void save_source(const char* key, const char* text, size_t n) {
  const char* dir = getenv("PROGRAM_LOG");
  if (!dir) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/src/%s.glsl", dir, key);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) return;
  for (size_t off = 0; off < n;) {
    ssize_t w = write(fd, text + off, n - off);
    if (w <= 0) break;
    off += (size_t)w;
  }
  close(fd);
}

void glShaderSource(GLuint shader, GLsizei count, const GLchar* const* string, const GLint* length) {
  REAL(glShaderSource);
  real_glShaderSource(shader, count, string, length);
  size_t total = 0;
  for (GLsizei i = 0; i < count; ++i) total += length && length[i] >= 0 ? (size_t)length[i] : strlen(string[i]);
  char* text = malloc(total + 1);
  if (!text) return;
  size_t off = 0;
  for (GLsizei i = 0; i < count; ++i) {
    size_t n = length && length[i] >= 0 ? (size_t)length[i] : strlen(string[i]);
    memcpy(text + off, string[i], n);
    off += n;
  }
  char key[24];
  snprintf(key, sizeof key, "%016llx", (unsigned long long)fnv1a(text, total, 14695981039346656037ull));
  save_source(key, text, total);
  free(text);
  pthread_mutex_lock(&lock);
  struct Entry* e = find(shaders, shader, 1);
  if (e) snprintf(e->key, sizeof e->key, "%s", key), e->compile_cpu = 0;
  pthread_mutex_unlock(&lock);
}

void glCompileShader(GLuint shader) {
  REAL(glCompileShader);
  const double c0 = cpu_now();
  real_glCompileShader(shader);
  const double c = cpu_now() - c0;
  pthread_mutex_lock(&lock);
  struct Entry* e = find(shaders, shader, 0);
  if (e) e->compile_cpu += c;
  pthread_mutex_unlock(&lock);
}

void glAttachShader(GLuint program, GLuint shader) {
  REAL(glAttachShader);
  real_glAttachShader(program, shader);
  pthread_mutex_lock(&lock);
  struct Entry* s = find(shaders, shader, 0);
  struct Entry* p = find(programs, program, 1);
  if (s && p) {
    snprintf(p->key, sizeof p->key, "%s", s->key);
    p->compile_cpu = s->compile_cpu;
  }
  pthread_mutex_unlock(&lock);
}

void glLinkProgram(GLuint program) {
  REAL(glLinkProgram);
  const double c0 = cpu_now();
  real_glLinkProgram(program);
  const double c = cpu_now() - c0;
  pthread_mutex_lock(&lock);
  struct Entry* p = find(programs, program, 0);
  char key[24] = "?";
  double total = c;
  if (p) {
    snprintf(key, sizeof key, "%s", p->key);
    total += p->compile_cpu;
    p->dispatched = 0;
  }
  pthread_mutex_unlock(&lock);
  log_event("compile", key, total, NULL);
}

void glGetProgramBinary(GLuint program, GLsizei bufSize, GLsizei* length, GLenum* binaryFormat, void* binary) {
  REAL(glGetProgramBinary);
  GLsizei n = 0;
  real_glGetProgramBinary(program, bufSize, &n, binaryFormat, binary);
  if (length) *length = n;
  if (n <= 0) return;
  char key[24], src[24] = "?";
  snprintf(key, sizeof key, "%016llx", (unsigned long long)fnv1a(binary, (size_t)n, 14695981039346656037ull));
  pthread_mutex_lock(&lock);
  struct Entry* p = find(programs, program, 0);
  if (p) snprintf(src, sizeof src, "%s", p->key);
  pthread_mutex_unlock(&lock);
  log_event("binmap", key, 0.0, src);
}

void glProgramBinary(GLuint program, GLenum binaryFormat, const void* binary, GLsizei length) {
  REAL(glProgramBinary);
  REAL(glGetProgramiv);
  const double c0 = cpu_now();
  real_glProgramBinary(program, binaryFormat, binary, length);
  GLint ok = 0;
  real_glGetProgramiv(program, GL_LINK_STATUS, &ok);
  const double c = cpu_now() - c0;
  char key[24];
  snprintf(key, sizeof key, "b:%016llx",
           (unsigned long long)fnv1a(binary, length > 0 ? (size_t)length : 0, 14695981039346656037ull));
  pthread_mutex_lock(&lock);
  struct Entry* p = find(programs, program, 1);
  if (p) {
    snprintf(p->key, sizeof p->key, "%s", key);
    p->dispatched = 0;
  }
  pthread_mutex_unlock(&lock);
  log_event(ok ? "binary_ok" : "binary_rejected", key + 2, c, NULL);
}

static void first_dispatch(double c) {
  const GLuint prog = current_program();
  pthread_mutex_lock(&lock);
  struct Entry* p = find(programs, prog, 1);
  int first = p && !p->dispatched;
  char key[24] = "?";
  if (p) {
    p->dispatched = 1;
    snprintf(key, sizeof key, "%s", p->key[0] ? p->key : "?");
  }
  pthread_mutex_unlock(&lock);
  if (first) log_event("dispatch", key, c, NULL);
}

void glDispatchCompute(GLuint x, GLuint y, GLuint z) {
  REAL(glDispatchCompute);
  const double c0 = cpu_now();
  real_glDispatchCompute(x, y, z);
  first_dispatch(cpu_now() - c0);
}

void glDispatchComputeIndirect(GLintptr indirect) {
  REAL(glDispatchComputeIndirect);
  const double c0 = cpu_now();
  real_glDispatchComputeIndirect(indirect);
  first_dispatch(cpu_now() - c0);
}

__attribute__((destructor)) static void at_exit(void) {
  if (getenv("PROGRAM_LOG")) log_event("exit", "-", 0.0, NULL);
}
