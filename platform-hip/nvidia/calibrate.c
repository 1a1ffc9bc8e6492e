/* Driver cost calibration through the HIP entry points of this shim.
 *
 * Measures, on the current device, what the memory calls cost and how the
 * driver charges memory, so the counting storage's cost table can be taken
 * from a real GPU:
 *
 *   A. the device: name, memory, virtual-memory support, granularity
 *   B. small calls: hipMemGetInfo, a 64 KiB hipMemsetAsync, event
 *      record + query, an idle stream synchronize
 *   C. hipMalloc and hipFree by size (idle device), and hipFree with work
 *      queued on another stream
 *   D. what hipMalloc charges: hipMemGetInfo before and after many
 *      allocations of one size
 *   E. hipMallocAsync + hipFreeAsync (the device's default pool): warm
 *      pairs, cycles with a stream sync (the pool trims at a sync), charge
 *   F. the virtual-memory calls one by one, by chunk size; large address
 *      reservations; set-access over many chunks at once; the same range
 *      mapped again (a fresh range against one mapped before); the charge
 *      of a chunk; whether unmap / release / map wait for queued work
 *
 * Every figure is a median over repetitions unless the line says
 * otherwise; times in microseconds. Lines starting with "cal " are
 * machine-readable: cal SECTION KEY VALUE.
 *
 * Build and run: calibrate.sh (next to this file). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hip_vmm.h"

/* The HIP entry points used (implemented by this shim). */
hipError_t hipInit(unsigned int);
hipError_t hipSetDevice(int);
hipError_t hipDeviceGetName(char *, int, int);
hipError_t hipDeviceGetAttribute(int *, int, int);
hipError_t hipDeviceSynchronize(void);
hipError_t hipMemGetInfo(size_t *, size_t *);
hipError_t hipMalloc(void **, size_t);
hipError_t hipFree(void *);
hipError_t hipMallocAsync(void **, size_t, hipStream_t);
hipError_t hipFreeAsync(void *, hipStream_t);
hipError_t hipMemsetAsync(void *, int, size_t, hipStream_t);
hipError_t hipStreamCreateWithFlags(hipStream_t *, unsigned int);
hipError_t hipStreamSynchronize(hipStream_t);
hipError_t hipStreamDestroy(hipStream_t);
hipError_t hipEventCreateWithFlags(hipEvent_t *, unsigned int);
hipError_t hipEventRecord(hipEvent_t, hipStream_t);
hipError_t hipEventQuery(hipEvent_t);
hipError_t hipEventDestroy(hipEvent_t);
const char *hipGetErrorName(hipError_t);
hipError_t hipMemGetAllocationGranularity(size_t *, const struct hoc_hipMemAllocationProp *, int);
hipError_t hipMemAddressReserve(void **, size_t, size_t, void *, unsigned long long);
hipError_t hipMemAddressFree(void *, size_t);
hipError_t hipMemCreate(hoc_hipMemGenericAllocationHandle_t *, size_t, const struct hoc_hipMemAllocationProp *,
                        unsigned long long);
hipError_t hipMemRelease(hoc_hipMemGenericAllocationHandle_t);
hipError_t hipMemMap(void *, size_t, size_t, hoc_hipMemGenericAllocationHandle_t, unsigned long long);
hipError_t hipMemUnmap(void *, size_t);
hipError_t hipMemSetAccess(void *, size_t, const struct hoc_hipMemAccessDesc *, size_t);

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)
#define MAXREP 256

static int failures;

#define CHECK(call)                                                                                   \
    do {                                                                                              \
        hipError_t s_ = (call);                                                                       \
        if (s_ != hipSuccess) {                                                                       \
            fprintf(stderr, "calibrate: %s failed: %s (%d) at line %d\n", #call, hipGetErrorName(s_), \
                    s_, __LINE__);                                                                    \
            failures++;                                                                               \
            goto fail;                                                                                \
        }                                                                                             \
    } while (0)

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    if (n <= 0) {
        return 0.0;
    }
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double minimum(const double *v, int n) {
    double m = n > 0 ? v[0] : 0.0;
    for (int i = 1; i < n; i++) {
        m = v[i] < m ? v[i] : m;
    }
    return m;
}

static size_t used_bytes(void) {
    size_t free_b = 0, total_b = 0;
    if (hipMemGetInfo(&free_b, &total_b) != hipSuccess) {
        return 0;
    }
    return total_b - free_b;
}

static const char *human(size_t b, char *buf, size_t len) {
    if (b >= GiB && b % GiB == 0) {
        snprintf(buf, len, "%zu GiB", b / GiB);
    } else if (b >= MiB && b % (MiB / 4) == 0) {
        snprintf(buf, len, "%.2f MiB", (double)b / (double)MiB);
    } else if (b >= KiB && b % KiB == 0) {
        snprintf(buf, len, "%zu KiB", b / KiB);
    } else {
        snprintf(buf, len, "%zu B", b);
    }
    return buf;
}

static struct hoc_hipMemAllocationProp device_prop(int device) {
    struct hoc_hipMemAllocationProp p;
    memset(&p, 0, sizeof(p));
    p.type = 1;          /* hipMemAllocationTypePinned */
    p.location.type = 1; /* hipMemLocationTypeDevice */
    p.location.id = device;
    return p;
}

static struct hoc_hipMemAccessDesc device_rw(int device) {
    struct hoc_hipMemAccessDesc d;
    memset(&d, 0, sizeof(d));
    d.location.type = 1;
    d.location.id = device;
    d.flags = 3; /* ReadWrite */
    return d;
}

/* Keeps the device busy for a while: `n` memsets over `buf` on `s`. */
static void queue_busy_work(void *buf, size_t bytes, int n, hipStream_t s) {
    for (int i = 0; i < n; i++) {
        hipMemsetAsync(buf, i & 0xff, bytes, s);
    }
}

int main(int argc, char **argv) {
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    int reps = quick ? 5 : 31;
    int device = 0;
    char buf[64], buf2[64];
    double t[MAXREP], t2[MAXREP];
    hipStream_t s = NULL, busy = NULL;
    void *busy_buf = NULL;
    size_t busy_bytes = 8 * GiB;

    CHECK(hipInit(0));
    CHECK(hipSetDevice(device));
    CHECK(hipStreamCreateWithFlags(&s, 1));
    CHECK(hipStreamCreateWithFlags(&busy, 1));

    /* ---- A ---------------------------------------------------------------- */
    {
        char name[256];
        size_t free_b = 0, total_b = 0;
        int vmm = -1;
        CHECK(hipDeviceGetName(name, sizeof(name), device));
        CHECK(hipMemGetInfo(&free_b, &total_b));
        CHECK(hipDeviceGetAttribute(&vmm, 89, device));
        struct hoc_hipMemAllocationProp p = device_prop(device);
        size_t gmin = 0, grec = 0;
        CHECK(hipMemGetAllocationGranularity(&gmin, &p, 0));
        CHECK(hipMemGetAllocationGranularity(&gmin, &p, 0));
        CHECK(hipMemGetAllocationGranularity(&grec, &p, 1));
        printf("A. device\n");
        printf("  %s: total %zu B, free %zu B, virtual memory management %d\n", name, total_b, free_b, vmm);
        printf("  hipMemGetAllocationGranularity: minimum %zu B, recommended %zu B\n", gmin, grec);
        printf("cal device total %zu\ncal device free %zu\ncal device vmm %d\n", total_b, free_b, vmm);
        printf("cal device granularity_min %zu\ncal device granularity_rec %zu\n", gmin, grec);
        for (int i = 0; i < reps; i++) {
            double a = now_us();
            hipMemGetAllocationGranularity(&gmin, &p, 0);
            t[i] = now_us() - a;
        }
        printf("  hipMemGetAllocationGranularity call: %.2f us\n", median(t, reps));
        printf("cal small granularity_call_us %.3f\n", median(t, reps));
    }

    /* ---- B ---------------------------------------------------------------- */
    {
        printf("\nB. small calls (median of %d, us)\n", reps * 8);
        int n = reps * 8 > MAXREP ? MAXREP : reps * 8;
        size_t f, tt;
        for (int i = 0; i < n; i++) {
            double a = now_us();
            hipMemGetInfo(&f, &tt);
            t[i] = now_us() - a;
        }
        printf("  hipMemGetInfo                 %8.2f (fastest %.2f)\n", median(t, n), minimum(t, n));
        printf("cal small meminfo_us %.3f\n", t[n / 2]);
        void *p = NULL;
        CHECK(hipMalloc(&p, 4 * MiB));
        for (int i = 0; i < n; i++) {
            double a = now_us();
            hipMemsetAsync(p, 0, 64 * KiB, s);
            t[i] = now_us() - a;
        }
        CHECK(hipStreamSynchronize(s));
        printf("  hipMemsetAsync 64 KiB submit  %8.2f\n", median(t, n));
        printf("cal small memset64k_us %.3f\n", t[n / 2]);
        hipEvent_t e = NULL;
        CHECK(hipEventCreateWithFlags(&e, 2)); /* DisableTiming */
        for (int i = 0; i < n; i++) {
            double a = now_us();
            hipEventRecord(e, s);
            hipEventQuery(e);
            t[i] = now_us() - a;
        }
        CHECK(hipStreamSynchronize(s));
        printf("  hipEventRecord + hipEventQuery %7.2f\n", median(t, n));
        printf("cal small event_record_query_us %.3f\n", t[n / 2]);
        for (int i = 0; i < n; i++) {
            double a = now_us();
            hipStreamSynchronize(s);
            t[i] = now_us() - a;
        }
        printf("  hipStreamSynchronize (idle)   %8.2f\n", median(t, n));
        printf("cal small stream_sync_idle_us %.3f\n", t[n / 2]);
        for (int i = 0; i < n; i++) {
            double a = now_us();
            hipDeviceSynchronize();
            t[i] = now_us() - a;
        }
        printf("  hipDeviceSynchronize (idle)   %8.2f\n", median(t, n));
        printf("cal small device_sync_idle_us %.3f\n", t[n / 2]);
        CHECK(hipEventDestroy(e));
        CHECK(hipFree(p));
    }

    CHECK(hipMalloc(&busy_buf, busy_bytes));
    {
        /* How long the busy work runs. */
        CHECK(hipDeviceSynchronize());
        double a = now_us();
        queue_busy_work(busy_buf, busy_bytes, 4, busy);
        CHECK(hipStreamSynchronize(busy));
        double busy_us = now_us() - a;
        printf("\n  busy work (4 memsets of %s on another stream) runs %.0f us\n", human(busy_bytes, buf, 64),
               busy_us);
        printf("cal small busy_work_us %.1f\n", busy_us);
    }

    /* ---- C ---------------------------------------------------------------- */
    {
        static const size_t sizes[] = {256 * KiB, 512 * KiB, 1 * MiB, 2 * MiB, 4 * MiB, 8 * MiB,
                                       16 * MiB,  20 * MiB,  64 * MiB, 256 * MiB, 1 * GiB};
        printf("\nC. hipMalloc / hipFree, idle device (median of %d, us)\n", reps);
        printf("  %-12s %10s %10s %10s %12s\n", "size", "malloc", "free", "pair", "pair fastest");
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            double pair[MAXREP];
            for (int i = 0; i < reps; i++) {
                void *p = NULL;
                double a = now_us();
                CHECK(hipMalloc(&p, sizes[k]));
                double b = now_us();
                CHECK(hipFree(p));
                double c = now_us();
                t[i] = b - a;
                t2[i] = c - b;
                pair[i] = c - a;
            }
            double pm = median(pair, reps), pf = minimum(pair, reps);
            printf("  %-12s %10.1f %10.1f %10.1f %12.1f\n", human(sizes[k], buf, 64), median(t, reps),
                   median(t2, reps), pm, pf);
            printf("cal malloc %zu %.2f %.2f %.2f\n", sizes[k], t[reps / 2], t2[reps / 2], pm);
        }
        /* hipFree of an unrelated buffer while work is queued elsewhere. */
        int n = reps < 9 ? reps : 9;
        for (int i = 0; i < n; i++) {
            void *p = NULL;
            CHECK(hipMalloc(&p, 4 * MiB));
            CHECK(hipDeviceSynchronize());
            queue_busy_work(busy_buf, busy_bytes, 4, busy);
            double a = now_us();
            CHECK(hipFree(p));
            t[i] = now_us() - a;
            double b = now_us();
            CHECK(hipStreamSynchronize(busy));
            t2[i] = now_us() - b;
        }
        printf("  hipFree 4 MiB with unrelated work queued: %.0f us (then the busy stream's sync waited %.0f "
               "us more)\n",
               median(t, n), median(t2, n));
        printf("cal malloc free_with_work_queued_us %.1f\ncal malloc free_with_work_after_us %.1f\n", t[n / 2],
               t2[n / 2]);
    }

    /* ---- D ---------------------------------------------------------------- */
    {
        static const size_t sizes[] = {4 * KiB,         64 * KiB,        256 * KiB,         512 * KiB,
                                       768 * KiB,       1 * MiB,         1 * MiB + 256,     1 * MiB + MiB / 2,
                                       2 * MiB,         2 * MiB + 256,   3 * MiB,           4 * MiB,
                                       5 * MiB,         6 * MiB + 256,   20 * MiB + 256,    64 * MiB + 256,
                                       100 * MiB + 256, 256 * MiB + 256};
        static void *ptrs[1024];
        printf("\nD. what hipMalloc charges (hipMemGetInfo before/after n allocations of one size)\n");
        printf("  %-14s %6s %16s %14s %8s\n", "size", "n", "charged each", "2 MiB units", "ratio");
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            size_t sz = sizes[k];
            size_t n = (512 * MiB) / sz;
            n = n < 8 ? 8 : n > 1024 ? 1024 : n;
            CHECK(hipDeviceSynchronize());
            size_t before = used_bytes();
            size_t made = 0;
            for (; made < n; made++) {
                if (hipMalloc(&ptrs[made], sz) != hipSuccess) {
                    break;
                }
            }
            size_t after = used_bytes();
            for (size_t i = 0; i < made; i++) {
                hipFree(ptrs[i]);
            }
            double each = made ? (double)(after - before) / (double)made : 0.0;
            printf("  %-14s %6zu %16.0f %14.3f %8.3f\n", human(sz, buf, 64), made, each, each / (double)(2 * MiB),
                   each / (double)sz);
            printf("cal charge %zu %zu %.0f\n", sz, made, each);
        }
    }

    /* ---- E ---------------------------------------------------------------- */
    {
        static const size_t sizes[] = {256 * KiB, 1 * MiB, 4 * MiB, 20 * MiB, 64 * MiB, 256 * MiB};
        printf("\nE. hipMallocAsync / hipFreeAsync on one stream (default pool; us)\n");
        printf("  %-12s %12s %12s %16s %14s\n", "size", "warm malloc", "warm free", "cycle+sync", "charged");
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            size_t sz = sizes[k];
            void *p = NULL;
            /* Warm: the pool holds the memory between pairs (no sync). */
            CHECK(hipMallocAsync(&p, sz, s));
            CHECK(hipFreeAsync(p, s));
            for (int i = 0; i < reps; i++) {
                double a = now_us();
                CHECK(hipMallocAsync(&p, sz, s));
                double b = now_us();
                CHECK(hipFreeAsync(p, s));
                t[i] = b - a;
                t2[i] = now_us() - b;
            }
            CHECK(hipStreamSynchronize(s));
            double wm = median(t, reps), wf = median(t2, reps);
            /* Cycle: alloc, free, sync: the pool gives memory back at the
             * sync (release threshold 0), so each alloc grows it again. */
            for (int i = 0; i < reps; i++) {
                double a = now_us();
                CHECK(hipMallocAsync(&p, sz, s));
                CHECK(hipFreeAsync(p, s));
                CHECK(hipStreamSynchronize(s));
                t[i] = now_us() - a;
            }
            double cyc = median(t, reps);
            size_t before = used_bytes();
            CHECK(hipMallocAsync(&p, sz, s));
            CHECK(hipStreamSynchronize(s));
            size_t after = used_bytes();
            CHECK(hipFreeAsync(p, s));
            CHECK(hipStreamSynchronize(s));
            printf("  %-12s %12.2f %12.2f %16.1f %14s\n", human(sz, buf, 64), wm, wf, cyc,
                   human(after - before, buf2, 64));
            printf("cal async %zu %.3f %.3f %.2f %zu\n", sz, wm, wf, cyc, after - before);
        }
    }

    /* ---- F ---------------------------------------------------------------- */
    {
        static const size_t chunks[] = {2 * MiB,   4 * MiB,   8 * MiB,   16 * MiB,  32 * MiB,
                                        64 * MiB,  128 * MiB, 256 * MiB, 512 * MiB, 1 * GiB};
        struct hoc_hipMemAllocationProp prop = device_prop(device);
        struct hoc_hipMemAccessDesc rw = device_rw(device);
        double c_res[MAXREP], c_cre[MAXREP], c_map[MAXREP], c_acc[MAXREP], c_unm[MAXREP], c_rel[MAXREP],
            c_fre[MAXREP];
        printf("\nF. virtual-memory calls, one chunk at a time (median of %d, us)\n", reps);
        printf("  %-8s %8s %8s %8s %8s %8s %8s %8s %10s %10s %10s\n", "chunk", "reserve", "create", "map", "access",
               "unmap", "release", "addrfree", "grow", "shrink", "charged");
        for (size_t k = 0; k < sizeof(chunks) / sizeof(chunks[0]); k++) {
            size_t sz = chunks[k];
            size_t charged = 0;
            int reps_k = sz >= 256 * MiB ? (reps + 3) / 4 : reps;
            for (int i = 0; i < reps_k; i++) {
                void *va = NULL;
                hoc_hipMemGenericAllocationHandle_t h = NULL;
                size_t before = i == 0 ? used_bytes() : 0;
                double a = now_us();
                CHECK(hipMemAddressReserve(&va, sz, 0, NULL, 0));
                double b = now_us();
                CHECK(hipMemCreate(&h, sz, &prop, 0));
                double c = now_us();
                CHECK(hipMemMap(va, sz, 0, h, 0));
                double d = now_us();
                CHECK(hipMemSetAccess(va, sz, &rw, 1));
                double e = now_us();
                if (i == 0) {
                    charged = used_bytes() - before;
                }
                CHECK(hipMemsetAsync(va, 0, 64 * KiB, s));
                CHECK(hipStreamSynchronize(s));
                double f = now_us();
                CHECK(hipMemUnmap(va, sz));
                double g = now_us();
                CHECK(hipMemRelease(h));
                double hh = now_us();
                CHECK(hipMemAddressFree(va, sz));
                double ii = now_us();
                c_res[i] = b - a;
                c_cre[i] = c - b;
                c_map[i] = d - c;
                c_acc[i] = e - d;
                c_unm[i] = g - f;
                c_rel[i] = hh - g;
                c_fre[i] = ii - hh;
                t[i] = (c - b) + (d - c) + (e - d);
                t2[i] = (g - f) + (hh - g);
            }
            double r = median(c_res, reps_k), cr = median(c_cre, reps_k), m = median(c_map, reps_k),
                   ac = median(c_acc, reps_k), u = median(c_unm, reps_k), rl = median(c_rel, reps_k),
                   fr = median(c_fre, reps_k), gr = median(t, reps_k), sh = median(t2, reps_k);
            printf("  %-8s %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %10.1f %10.1f %10s\n", human(sz, buf, 64), r, cr,
                   m, ac, u, rl, fr, gr, sh, human(charged, buf2, 64));
            printf("cal vmm %zu %.2f %.2f %.2f %.2f %.2f %.2f %.2f %zu\n", sz, r, cr, m, ac, u, rl, fr, charged);
        }
        printf("  grow = create + map + set access; shrink = unmap + release\n");

        /* Large address reservations (no memory behind them). */
        static const size_t ranges[] = {1 * GiB, 64 * GiB, 256 * GiB, 1024 * GiB};
        printf("\n  address reservations (median of %d, us)\n", reps);
        for (size_t k = 0; k < sizeof(ranges) / sizeof(ranges[0]); k++) {
            int ok = 1;
            for (int i = 0; i < reps; i++) {
                void *va = NULL;
                double a = now_us();
                hipError_t st = hipMemAddressReserve(&va, ranges[k], 0, NULL, 0);
                double b = now_us();
                if (st != hipSuccess) {
                    printf("  reserve %s: %s\n", human(ranges[k], buf, 64), hipGetErrorName(st));
                    ok = 0;
                    break;
                }
                CHECK(hipMemAddressFree(va, ranges[k]));
                t[i] = b - a;
                t2[i] = now_us() - b;
            }
            if (ok) {
                printf("  reserve %-8s %8.1f   free %8.1f\n", human(ranges[k], buf, 64), median(t, reps),
                       median(t2, reps));
                printf("cal vmm_reserve %zu %.2f %.2f\n", ranges[k], t[reps / 2], t2[reps / 2]);
            }
        }

        /* Many chunks in one reservation: map one by one, set access per
         * chunk or once over the whole range. */
        {
            const size_t chunk = 2 * MiB;
            const int nchunks = 64;
            void *va = NULL;
            hoc_hipMemGenericAllocationHandle_t hs[64];
            CHECK(hipMemAddressReserve(&va, chunk * nchunks, 0, NULL, 0));
            for (int round = 0; round < 2; round++) {
                double a = now_us();
                for (int i = 0; i < nchunks; i++) {
                    CHECK(hipMemCreate(&hs[i], chunk, &prop, 0));
                    CHECK(hipMemMap((char *)va + (size_t)i * chunk, chunk, 0, hs[i], 0));
                    if (round == 0) {
                        CHECK(hipMemSetAccess((char *)va + (size_t)i * chunk, chunk, &rw, 1));
                    }
                }
                if (round == 1) {
                    CHECK(hipMemSetAccess(va, chunk * nchunks, &rw, 1));
                }
                double b = now_us();
                CHECK(hipMemsetAsync(va, 1, chunk * nchunks, s));
                CHECK(hipStreamSynchronize(s));
                double c = now_us();
                for (int i = 0; i < nchunks; i++) {
                    CHECK(hipMemUnmap((char *)va + (size_t)i * chunk, chunk));
                    CHECK(hipMemRelease(hs[i]));
                }
                double d = now_us();
                printf("  %d chunks of 2 MiB into one range, access %s: grow %.1f us/chunk, shrink %.1f us/chunk\n",
                       nchunks, round == 0 ? "per chunk" : "once for all", (b - a) / nchunks, (d - c) / nchunks);
                printf("cal vmm_many %s %.2f %.2f\n", round == 0 ? "per_chunk" : "once", (b - a) / nchunks,
                       (d - c) / nchunks);
            }
            CHECK(hipMemAddressFree(va, chunk * nchunks));
        }

        /* The same address range mapped again: is setting access on a
         * range mapped before cheaper than on a fresh one (the rows above
         * reserve a fresh range every time)? Whole replays, which map into
         * long-lived reservations, fit 0.13 us/MiB; the rows above charge
         * ~2.4 us/MiB. One range per size, kept for all repetitions; its
         * first map is timed apart from the later ones. */
        {
            static const size_t again[] = {16 * MiB, 128 * MiB, 512 * MiB};
            printf("\n  the same range mapped again (us; first map, then the median of the later ones)\n");
            printf("  %-8s %12s %12s %12s\n", "chunk", "first grow", "later grow", "later shrink");
            for (size_t k = 0; k < sizeof(again) / sizeof(again[0]); k++) {
                size_t sz = again[k];
                int reps_k = sz >= 256 * MiB ? (reps + 3) / 4 : reps;
                void *va = NULL;
                double first = 0;
                CHECK(hipMemAddressReserve(&va, sz, 0, NULL, 0));
                for (int i = 0; i <= reps_k; i++) {
                    hoc_hipMemGenericAllocationHandle_t h = NULL;
                    double a = now_us();
                    CHECK(hipMemCreate(&h, sz, &prop, 0));
                    CHECK(hipMemMap(va, sz, 0, h, 0));
                    CHECK(hipMemSetAccess(va, sz, &rw, 1));
                    double b = now_us();
                    CHECK(hipMemsetAsync(va, 0, 64 * KiB, s));
                    CHECK(hipStreamSynchronize(s));
                    double c = now_us();
                    CHECK(hipMemUnmap(va, sz));
                    CHECK(hipMemRelease(h));
                    double d = now_us();
                    if (i == 0) {
                        first = b - a;
                    } else {
                        t[i - 1] = b - a;
                        t2[i - 1] = d - c;
                    }
                }
                CHECK(hipMemAddressFree(va, sz));
                double g = median(t, reps_k), sh = median(t2, reps_k);
                printf("  %-8s %12.1f %12.1f %12.1f\n", human(sz, buf, 64), first, g, sh);
                printf("cal vmm_again %zu %.2f %.2f %.2f\n", sz, first, g, sh);
            }
        }

        /* Do the calls wait for unrelated queued work? */
        {
            const size_t sz = 2 * MiB;
            int n = reps < 9 ? reps : 9;
            double w_unmap[MAXREP], w_release[MAXREP], w_create[MAXREP], w_map[MAXREP], w_access[MAXREP];
            for (int i = 0; i < n; i++) {
                void *va = NULL;
                hoc_hipMemGenericAllocationHandle_t h = NULL, h2 = NULL;
                CHECK(hipMemAddressReserve(&va, 2 * sz, 0, NULL, 0));
                CHECK(hipMemCreate(&h, sz, &prop, 0));
                CHECK(hipMemMap(va, sz, 0, h, 0));
                CHECK(hipMemSetAccess(va, sz, &rw, 1));
                CHECK(hipDeviceSynchronize());
                queue_busy_work(busy_buf, busy_bytes, 4, busy);
                double a = now_us();
                CHECK(hipMemCreate(&h2, sz, &prop, 0));
                double b = now_us();
                CHECK(hipMemMap((char *)va + sz, sz, 0, h2, 0));
                double c = now_us();
                CHECK(hipMemSetAccess((char *)va + sz, sz, &rw, 1));
                double d = now_us();
                CHECK(hipMemUnmap(va, sz));
                double e = now_us();
                CHECK(hipMemRelease(h));
                double f = now_us();
                w_create[i] = b - a;
                w_map[i] = c - b;
                w_access[i] = d - c;
                w_unmap[i] = e - d;
                w_release[i] = f - e;
                CHECK(hipStreamSynchronize(busy));
                CHECK(hipMemUnmap((char *)va + sz, sz));
                CHECK(hipMemRelease(h2));
                CHECK(hipMemAddressFree(va, 2 * sz));
            }
            printf("\n  with unrelated work queued on another stream (busy work above), us:\n");
            printf("  create %.1f, map %.1f, set access %.1f, unmap %.1f, release %.1f\n", median(w_create, n),
                   median(w_map, n), median(w_access, n), median(w_unmap, n), median(w_release, n));
            printf("cal vmm_busy %.1f %.1f %.1f %.1f %.1f\n", w_create[n / 2], w_map[n / 2], w_access[n / 2],
                   w_unmap[n / 2], w_release[n / 2]);
        }
    }

fail:
    if (busy_buf != NULL) {
        hipDeviceSynchronize();
        hipFree(busy_buf);
    }
    if (s != NULL) {
        hipStreamDestroy(s);
    }
    if (busy != NULL) {
        hipStreamDestroy(busy);
    }
    printf("\ncalibrate: %s\n", failures ? "FAILED" : "done");
    return failures ? 1 : 0;
}
