/* A persistent thread pool: workers are started on first need and then wait for jobs; a job is a
 * range [0, n) handed out in chunks through an atomic counter. Jobs are serialized (one at a time),
 * so concurrent callers simply queue. After fork() the child starts with no workers. */
#include "pyprecision.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#define PP_MAX_THREADS 64

static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t cv_done = PTHREAD_COND_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static int nworkers;
static unsigned long generation;
static unsigned long start_seen[PP_MAX_THREADS]; /* the generation a worker was born in */
static int pending;

static struct {
    pp_task_fn fn;
    void *ctx;
    size_t n, chunk;
    int active; /* workers with index < active take part */
} job;
static atomic_size_t next_chunk;

static void run_chunks(void) {
    for (;;) {
        size_t b = atomic_fetch_add(&next_chunk, job.chunk);
        if (b >= job.n) return;
        size_t e = job.n - b < job.chunk ? job.n : b + job.chunk;
        job.fn(job.ctx, b, e);
    }
}

static void *worker(void *arg) {
    const int index = (int)(intptr_t)arg;
    pthread_mutex_lock(&mu);
    /* Not `generation`: the job that started this worker may have been posted already. */
    unsigned long seen = start_seen[index];
    for (;;) {
        while (generation == seen) pthread_cond_wait(&cv_work, &mu);
        seen = generation;
        if (index >= job.active) continue;
        pthread_mutex_unlock(&mu);
        run_chunks();
        pthread_mutex_lock(&mu);
        if (--pending == 0) pthread_cond_signal(&cv_done);
    }
    return NULL;
}

static void after_fork_child(void) {
    /* The workers did not survive the fork; start afresh. */
    pthread_mutex_init(&job_lock, NULL);
    pthread_mutex_init(&mu, NULL);
    pthread_cond_init(&cv_work, NULL);
    pthread_cond_init(&cv_done, NULL);
    nworkers = 0;
    pending = 0;
}

static void install_atfork(void) { pthread_atfork(NULL, NULL, after_fork_child); }

/* The cores this process may run on (its affinity mask, which taskset, cgroups' cpusets and
 * os.sched_setaffinity narrow), else the online cores; at most PP_MAX_THREADS. */
int pp_cpu_count(void) {
    long c = 0;
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) c = CPU_COUNT(&set);
#endif
    if (c < 1) c = sysconf(_SC_NPROCESSORS_ONLN);
    if (c < 1) c = 1;
    if (c > PP_MAX_THREADS) c = PP_MAX_THREADS;
    return (int)c;
}

/* Start workers until there are `want` (the caller holds mu). */
static int grow(int want) {
    while (nworkers < want) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        start_seen[nworkers] = generation;
        int rc = pthread_create(&t, &attr, worker, (void *)(intptr_t)nworkers);
        pthread_attr_destroy(&attr);
        if (rc) return PP_ETHREAD;
        nworkers++;
    }
    return PP_OK;
}

int pp_parallel_for(size_t n, size_t grain, int threads, pp_task_fn fn, void *ctx) {
    if (threads < 0) return PP_EINVAL;
    if (threads == 0) threads = pp_cpu_count();
    if (threads > PP_MAX_THREADS) threads = PP_MAX_THREADS;
    if (grain == 0) grain = 1;
    /* Small jobs stay on the calling thread. */
    size_t useful = (n + grain - 1) / grain;
    if ((size_t)threads > useful) threads = (int)useful;
    if (threads <= 1) {
        fn(ctx, 0, n);
        return PP_OK;
    }
    pthread_once(&atfork_once, install_atfork);
    pthread_mutex_lock(&job_lock);
    pthread_mutex_lock(&mu);
    int st = grow(threads - 1);
    int helpers = nworkers < threads - 1 ? nworkers : threads - 1;
    size_t chunks = (size_t)(helpers + 1) * 4;
    size_t chunk = (n + chunks - 1) / chunks;
    if (chunk < grain) chunk = grain;
    job.fn = fn;
    job.ctx = ctx;
    job.n = n;
    job.chunk = chunk;
    job.active = helpers;
    atomic_store(&next_chunk, 0);
    pending = helpers;
    generation++;
    pthread_cond_broadcast(&cv_work);
    pthread_mutex_unlock(&mu);
    run_chunks();
    pthread_mutex_lock(&mu);
    while (pending > 0) pthread_cond_wait(&cv_done, &mu);
    pthread_mutex_unlock(&mu);
    pthread_mutex_unlock(&job_lock);
    /* A worker that could not be started costs speed, not correctness. */
    (void)st;
    return PP_OK;
}
