/* exit_app.cpp — what must survive the end of a process whose blocks were placed
 * (tests/c/test_hmalloc.c, test_exit_safety). Usage: exit_app MODE [FILE], MODE one of:
 *   stdout   text on stdout without a newline, return from main (stdio's buffer is
 *            flushed by libc after every destructor)
 *   setvbuf  a 2 MiB stdout buffer from malloc, 1 MiB of text left in it
 *   file     a file written with stdio and never closed
 *   atexit   an atexit handler reads and frees a 2 MiB block
 *   cxx      a C++ static object's destructor sums and frees a 1 MiB vector and a
 *            2 MiB block
 *   needed   a DT_NEEDED library's destructor (libexit_needed.so) reads and frees a block
 *   plugin   a dlopen'ed library's destructor (libexit_plugin.so, FILE) reads and frees
 *            the block it was given and one of its own
 *   thread   a thread calls exit(7) while three others allocate and free
 *   fork     a child writes without a newline and exits 3; the parent reports it
 * stdout (and FILE in mode file) must be byte-identical with and without
 * libhmalloc.so, whatever backend the blocks were placed on. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vector>

extern "C" void needed_keep(unsigned char *p, size_t n);

static uint32_t sum(const unsigned char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

static unsigned char *filled(size_t n, unsigned seed)
{
    unsigned char *p = static_cast<unsigned char *>(malloc(n));
    if (!p) {
        fprintf(stderr, "exit_app: malloc(%zu) failed\n", n);
        exit(99);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = static_cast<unsigned char>(seed * 31u + i * 7u + (i >> 11));
    return p;
}

/* mode cxx: destroyed after main returns, before stdio is flushed */
static unsigned char *filled(size_t n, unsigned seed);
static struct Keeper {
    std::vector<unsigned char> *v = nullptr;
    unsigned char *raw = nullptr;   /* from malloc: under ASan, operator new is not */
    ~Keeper()
    {
        if (!v)
            return;
        printf("cxx destructor sums=%08x,%08x", sum(v->data(), v->size()), sum(raw, 2u << 20));
        delete v;
        free(raw);
    }
} g_keeper;

static unsigned char *g_atexit_block;
static void at_exit(void)
{
    printf("atexit sum=%08x", sum(g_atexit_block, 2u << 20));
    free(g_atexit_block);
}

static void *churn(void *arg)
{
    uint64_t x = reinterpret_cast<uintptr_t>(arg) * 0x9e3779b97f4a7c15ull + 1;
    void *keep[16] = {};
    for (;;) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t size = (x & 7) == 0 ? (1u << 20) + (x >> 40) % (1u << 20) : 16 + (x >> 32) % 20000;
        unsigned k = (x >> 20) % 16;
        free(keep[k]);
        keep[k] = malloc(size);
        if (keep[k])
            memset(keep[k], static_cast<int>(x), size < 4096 ? size : 4096);
    }
    return nullptr;
}

static void *exiter(void *)
{
    struct timespec t = { 0, 80 * 1000 * 1000 };
    nanosleep(&t, nullptr);
    printf(" exiting from a thread");
    exit(7);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "stdout")) {
        printf("exit_app stdout: %d buffered bytes, no newline", 42);
        return 0;
    }
    if (!strcmp(mode, "setvbuf")) {
        char *buf = static_cast<char *>(malloc(2u << 20));
        setvbuf(stdout, buf, _IOFBF, 2u << 20);
        for (int i = 0; i < 16384; i++)
            printf("line %05d of the buffered text, 64 bytes long..............\n", i);
        return 0;       /* the buffer is never freed: libc flushes it at exit */
    }
    if (!strcmp(mode, "file")) {
        if (argc < 3)
            return 2;
        FILE *f = fopen(argv[2], "w");
        if (!f)
            return 2;
        for (int i = 0; i < 3000; i++)
            fprintf(f, "record %d: %u\n", i, static_cast<unsigned>(i) * 2654435761u);
        printf("file written, not closed");
        return 0;
    }
    if (!strcmp(mode, "atexit")) {
        g_atexit_block = filled(2u << 20, 1);
        atexit(at_exit);
        printf("main returns; ");
        return 0;
    }
    if (!strcmp(mode, "cxx")) {
        g_keeper.v = new std::vector<unsigned char>(1u << 20);
        for (size_t i = 0; i < g_keeper.v->size(); i++)
            (*g_keeper.v)[i] = static_cast<unsigned char>(i * 13u + (i >> 9));
        g_keeper.raw = filled(2u << 20, 5);
        printf("main returns; ");
        return 0;
    }
    if (!strcmp(mode, "needed")) {
        needed_keep(filled(2u << 20, 2), 2u << 20);
        printf("main returns; ");
        return 0;
    }
    if (!strcmp(mode, "plugin")) {
        if (argc < 3)
            return 2;
        void *h = dlopen(argv[2], RTLD_NOW);
        void *f = h ? dlsym(h, "plugin_keep") : nullptr;
        if (!f) {
            fprintf(stderr, "exit_app: %s\n", dlerror());
            return 2;
        }
        void (*keep)(unsigned char *, size_t);
        memcpy(&keep, &f, sizeof f);
        keep(filled(2u << 20, 3), 2u << 20);
        printf("main returns; ");
        return 0;       /* never dlclose'd: its destructor runs at exit */
    }
    if (!strcmp(mode, "thread")) {
        printf("threads start;");
        pthread_t t[4];
        for (uintptr_t i = 0; i < 3; i++)
            pthread_create(&t[i], nullptr, churn, reinterpret_cast<void *>(i + 1));
        pthread_create(&t[3], nullptr, exiter, nullptr);
        pthread_join(t[3], nullptr);
        return 1;       /* not reached: the thread exits the process */
    }
    if (!strcmp(mode, "fork")) {
        unsigned char *b = filled(2u << 20, 4);
        printf("parent before fork;\n");
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            printf("child sum=%08x", sum(b, 2u << 20));
            free(b);
            exit(3);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        printf(" parent: child exit %d, sum=%08x", WIFEXITED(st) ? WEXITSTATUS(st) : -1,
               sum(b, 2u << 20));
        return 0;
    }
    fprintf(stderr, "usage: exit_app stdout|setvbuf|file FILE|atexit|cxx|needed|plugin LIB|"
                    "thread|fork\n");
    return 2;
}
